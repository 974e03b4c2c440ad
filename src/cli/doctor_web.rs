//! `keel doctor`'s web section: whether WebFetch may reach the private network, and which
//! search WebSearch uses.

use serde_json::Value;

use crate::config::settings::Settings;
use crate::console::out_line;
use crate::tools::web::search::Backend;

/// Prints the section; returns the number of problems found.
pub fn report(settings: &Settings) -> u32 {
    let mut problems = 0;
    out_line!("\nWeb tools");
    match settings.flag(&["webFetch", "allowPrivateNetwork"]) {
        Ok(Some(true)) => {
            let from = layer_of(settings, &["webFetch", "allowPrivateNetwork"]);
            out_line!(
                "  ok   WebFetch: private network allowed (webFetch.allowPrivateNetwork in {from}); cloud metadata \
                 addresses stay refused unless an allow rule names them"
            );
        }
        Ok(_) => out_line!(
            "  ok   WebFetch: public internet only (loopback, link-local, private ranges and cloud metadata are \
             refused; webFetch.allowPrivateNetwork allows the private ones)"
        ),
        Err(e) => {
            problems += 1;
            out_line!("  FAIL WebFetch: {e}");
        }
    }
    let provider = match settings.flag(&["webSearch", "provider"]) {
        Ok(v) => v,
        Err(e) => {
            problems += 1;
            out_line!("  FAIL WebSearch: {e}");
            None
        }
    };
    let own = match provider {
        Some(true) => "the provider's own search (webSearch.provider is true) for Anthropic-protocol models",
        Some(false) => "no provider search (webSearch.provider is false)",
        None => "the provider's own search with Anthropic's API",
    };
    match settings.nested(&["webSearch", "searxngUrl"]) {
        None => out_line!(
            "  --   WebSearch: {own}; no search backend for other models (webSearch.searxngUrl is not set), so \
             there WebSearch reports that no search is available"
        ),
        Some((Value::String(s), layer)) => match Backend::searxng(s) {
            Ok(_) => out_line!(
                "  ok   WebSearch: {own}; otherwise SearXNG at {} ({})",
                s.trim(),
                layer.label()
            ),
            Err(e) => {
                problems += 1;
                out_line!("  FAIL WebSearch: {e} ({})", layer.label());
            }
        },
        Some((other, layer)) => {
            problems += 1;
            out_line!(
                "  FAIL WebSearch: webSearch.searxngUrl must be a URL string, found {other} ({})",
                layer.label()
            );
        }
    }
    problems
}

fn layer_of(settings: &Settings, path: &[&str]) -> String {
    settings
        .nested(path)
        .map(|(_, layer)| layer.label())
        .unwrap_or_else(|| "the settings".into())
}
