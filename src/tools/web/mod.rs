//! The web tools: WebFetch (a page's own content, as Markdown) and WebSearch (a search backend
//! the user configured, or the provider's own search). Both reach the network from keel's own
//! process, so they are governed by permission rules (`WebFetch(domain:…)`, `WebSearch`) and
//! by the address policy of [`address`], not by the shell sandbox. What they return is marked
//! untrusted in the model's view by the engine ([`crate::types::untrusted`]), as every result
//! from outside is.

pub mod address;
pub mod cache;
pub mod fetch;
pub mod page;
pub mod provider_search;
pub mod proxy;
pub mod search;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use address::{GuardedResolver, GuardedResolverHandle, Lookup, Policy};
use proxy::ProxyEnv;

/// How much of a page is read and given to the model, and for how long keel waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of a response body read; the rest is not downloaded.
    pub max_bytes: usize,
    /// Characters of content given to the model.
    pub max_chars: usize,
    /// The whole fetch, redirects included.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bytes: 10 * 1024 * 1024,
            max_chars: 100_000,
            timeout: Duration::from_secs(30),
        }
    }
}

/// The web tools' settings, read once at start-up (`webFetch`, `webSearch`).
#[derive(Clone, Default)]
pub struct WebConfig {
    pub policy: Policy,
    pub proxies: ProxyEnv,
    pub limits: Limits,
    pub search: search::Backend,
}

/// What both tools share in a session: the settings, one HTTP client (built when first used)
/// and the page cache.
pub struct Web {
    pub config: WebConfig,
    lookup: Lookup,
    client: OnceLock<Result<(reqwest::Client, Arc<GuardedResolver>), String>>,
    pub cache: cache::PageCache,
}

impl Web {
    pub fn new(config: WebConfig) -> Arc<Web> {
        Web::with_lookup(config, address::system_lookup())
    }

    /// With another name lookup than the system's (tests answer from a table).
    pub fn with_lookup(config: WebConfig, lookup: Lookup) -> Arc<Web> {
        Arc::new(Web {
            config,
            lookup,
            client: OnceLock::new(),
            cache: cache::PageCache::default(),
        })
    }

    /// The client every web request goes through: redirects are keel's to follow, proxies
    /// are the ones [`ProxyEnv`] chose, and names resolve through [`GuardedResolver`].
    pub fn client(&self) -> Result<(&reqwest::Client, &Arc<GuardedResolver>), String> {
        let built = self.client.get_or_init(|| {
            let resolver = Arc::new(GuardedResolver {
                policy: Arc::new(self.config.policy.clone()),
                proxy_hosts: self.config.proxies.hosts(),
                lookup: self.lookup.clone(),
            });
            let proxies = self.config.proxies.clone();
            let builder = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy()
                .proxy(reqwest::Proxy::custom(move |url| proxies.for_url(url).cloned()))
                .dns_resolver(GuardedResolverHandle(resolver.clone()))
                .connect_timeout(Duration::from_secs(10))
                .user_agent(concat!("keel/", env!("CARGO_PKG_VERSION"), " (WebFetch)"));
            // Any URL a model names, so the system's roots: built on the first fetch only.
            crate::provider::client::build(builder, crate::provider::client::Reach::Tls).map(|c| (c, resolver))
        });
        match built {
            Ok((client, resolver)) => Ok((client, resolver)),
            Err(e) => Err(e.clone()),
        }
    }
}

/// The web tools of a session sharing one [`Web`].
pub fn tools(web: &Arc<Web>) -> Vec<Arc<dyn super::Tool>> {
    vec![
        Arc::new(fetch::WebFetchTool::new(web.clone())),
        Arc::new(search::WebSearchTool::new(web.clone())),
    ]
}

#[cfg(test)]
mod tests;
