//! Pages fetched in this session, kept for a short while: asking for the same URL again (often
//! with another question) does not fetch it again.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a fetched page is reused.
pub const TTL: Duration = Duration::from_secs(15 * 60);
/// Most pages kept, and most characters over all of them.
const MAX_ENTRIES: usize = 32;
const MAX_CHARS: usize = 4_000_000;

#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The URL finally read (after redirects within its host).
    pub url: String,
    pub status: u16,
    pub status_text: String,
    pub content_type: String,
    /// Bytes received.
    pub bytes: usize,
    /// What the model reads (Markdown or text), already capped.
    pub content: String,
    /// keel's notes on the content (cut by size or time, redirects followed).
    pub notes: Vec<String>,
}

#[derive(Default)]
pub struct PageCache {
    entries: Mutex<VecDeque<(String, Instant, Page)>>,
}

impl PageCache {
    /// The page fetched for `url` less than [`TTL`] ago, and how long ago.
    pub fn get(&self, url: &str) -> Option<(Page, Duration)> {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(_, at, _)| at.elapsed() < TTL);
        entries
            .iter()
            .find(|(u, _, _)| u == url)
            .map(|(_, at, page)| (page.clone(), at.elapsed()))
    }

    pub fn put(&self, url: &str, page: Page) {
        let mut entries = self.entries.lock().unwrap_or_else(|p| p.into_inner());
        entries.retain(|(u, at, _)| u != url && at.elapsed() < TTL);
        entries.push_back((url.to_string(), Instant::now(), page));
        let total = |e: &VecDeque<(String, Instant, Page)>| e.iter().map(|(_, _, p)| p.content.len()).sum::<usize>();
        while entries.len() > MAX_ENTRIES || (entries.len() > 1 && total(&entries) > MAX_CHARS) {
            entries.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(content: &str) -> Page {
        Page {
            url: "https://example.com/".into(),
            status: 200,
            status_text: "OK".into(),
            content_type: "text/plain".into(),
            bytes: content.len(),
            content: content.into(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn keeps_the_latest_and_bounds_the_rest() {
        let cache = PageCache::default();
        cache.put("a", page("one"));
        cache.put("a", page("two"));
        assert_eq!(cache.get("a").unwrap().0.content, "two");
        assert!(cache.get("b").is_none());
        for i in 0..40 {
            cache.put(&format!("u{i}"), page("x"));
        }
        assert!(cache.get("u0").is_none());
        assert!(cache.get("u39").is_some());
    }
}
