//! Syntax highlighting of code blocks (syntect, Sublime grammars).
//!
//! The grammar set is loaded once, off the UI thread at startup ([`preload`]), and highlighted
//! blocks are cached by content: a streamed message is re-rendered every frame, but only its
//! last, still-growing block needs highlighting again.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, OnceLock};

use ratatui::style::{Modifier, Style};
use ratatui::text::Span;
use syntect::easy::HighlightLines;
use syntect::highlighting::{FontStyle, Theme, ThemeSet};
use syntect::parsing::SyntaxSet;
use syntect::util::LinesWithEndings;

use super::theme;

/// Highlighted blocks kept; the cache is emptied when it grows past this.
const CACHE_LIMIT: usize = 512;
/// Longer blocks are shown without colours (highlighting them would stall a frame).
const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;

pub type Highlighted = Arc<Vec<Vec<Span<'static>>>>;

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

fn theme() -> Option<&'static Theme> {
    static THEME: OnceLock<Option<Theme>> = OnceLock::new();
    THEME
        .get_or_init(|| ThemeSet::load_defaults().themes.remove("base16-ocean.dark"))
        .as_ref()
}

fn cache() -> &'static Mutex<HashMap<u64, Highlighted>> {
    static CACHE: OnceLock<Mutex<HashMap<u64, Highlighted>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Loads the grammars in the background so the first code block does not wait for them.
pub fn preload() {
    std::thread::spawn(|| {
        let _ = syntaxes();
        let _ = theme();
    });
}

/// The lines of `code` as styled spans (no line endings). `lang` is the fence's info string.
pub fn highlight(code: &str, lang: &str) -> Highlighted {
    let key = {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        lang.hash(&mut h);
        code.hash(&mut h);
        h.finish()
    };
    let mut cache = cache().lock().unwrap_or_else(|p| p.into_inner());
    if let Some(hit) = cache.get(&key) {
        return hit.clone();
    }
    drop(cache);
    let lines = Arc::new(compute(code, lang));
    cache = self::cache().lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= CACHE_LIMIT {
        cache.clear();
    }
    cache.insert(key, lines.clone());
    lines
}

fn plain(code: &str) -> Vec<Vec<Span<'static>>> {
    code.lines().map(|l| vec![Span::raw(l.to_string())]).collect()
}

fn compute(code: &str, lang: &str) -> Vec<Vec<Span<'static>>> {
    let token = lang.split([',', ' ', '{']).next().unwrap_or("").trim();
    if token.is_empty() || code.len() > MAX_HIGHLIGHT_BYTES {
        return plain(code);
    }
    let set = syntaxes();
    let (Some(syntax), Some(theme)) = (set.find_syntax_by_token(token), theme()) else {
        return plain(code);
    };
    let mut h = HighlightLines::new(syntax, theme);
    let mut out = Vec::new();
    for line in LinesWithEndings::from(code) {
        let Ok(ranges) = h.highlight_line(line, set) else {
            return plain(code);
        };
        let spans = ranges
            .into_iter()
            .filter_map(|(style, text)| {
                let text = text.trim_end_matches(['\n', '\r']);
                (!text.is_empty()).then(|| Span::styled(text.to_string(), convert(style)))
            })
            .collect();
        out.push(spans);
    }
    out
}

fn convert(s: syntect::highlighting::Style) -> Style {
    let fg = s.foreground;
    let mut style = Style::new().fg(theme::rgb(fg.r, fg.g, fg.b));
    if s.font_style.contains(FontStyle::BOLD) {
        style = style.add_modifier(Modifier::BOLD);
    }
    if s.font_style.contains(FontStyle::ITALIC) {
        style = style.add_modifier(Modifier::ITALIC);
    }
    style
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_languages_get_several_colours() {
        let lines = highlight("fn main() {\n    let x = \"hi\";\n}\n", "rust");
        assert_eq!(lines.len(), 3);
        let colours: std::collections::HashSet<_> = lines.iter().flatten().map(|s| s.style.fg).collect();
        assert!(colours.len() >= 3, "{colours:?}");
        let text: String = lines[1].iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "    let x = \"hi\";");
    }

    #[test]
    fn unknown_languages_are_plain() {
        let lines = highlight("a\nb", "no-such-language");
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0][0].style, Style::new());
    }
}
