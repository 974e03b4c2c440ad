//! Markdown (CommonMark + tables, strikethrough, task lists) to styled, wrapped lines.

use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

use super::highlight;
use super::theme;
use super::wrap::{self, Mode, sanitize};

/// Renders `text` to lines at most `width` columns wide.
pub fn render(text: &str, width: usize) -> Vec<Line<'static>> {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut r = Renderer::new(width.max(8));
    for (event, range) in Parser::new_ext(text, options).into_offset_iter() {
        if let Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) = &event {
            r.fence_closed = fence_is_closed(&text[range]);
        }
        r.event(event);
    }
    r.finish()
}

/// Whether a fenced block's source ends with its closing fence. A block still streaming is
/// shown without colours: highlighting it again on every frame would cost more than the rest
/// of the frame together.
fn fence_is_closed(source: &str) -> bool {
    let mut lines = source.trim_end().lines();
    let _opening = lines.next();
    lines
        .last()
        .is_some_and(|l| l.trim_start().starts_with("```") || l.trim_start().starts_with("~~~"))
}

struct ListLevel {
    next: Option<u64>,
}

struct Table {
    rows: Vec<Vec<Vec<Span<'static>>>>,
    header_rows: usize,
    cell: Vec<Span<'static>>,
    row: Vec<Vec<Span<'static>>>,
}

struct Renderer {
    width: usize,
    out: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    quote_depth: usize,
    lists: Vec<ListLevel>,
    /// Indentation (columns) of each enclosing list item's content.
    indents: Vec<usize>,
    /// The marker of an item whose first line has not been written yet.
    marker: Option<String>,
    code: Option<(String, String)>,
    links: Vec<String>,
    table: Option<Table>,
    need_blank: bool,
    /// The fenced block being read has its closing fence.
    fence_closed: bool,
}

impl Renderer {
    fn new(width: usize) -> Self {
        Renderer {
            width,
            out: Vec::new(),
            spans: Vec::new(),
            styles: vec![Style::new()],
            quote_depth: 0,
            lists: Vec::new(),
            indents: Vec::new(),
            marker: None,
            code: None,
            links: Vec::new(),
            table: None,
            need_blank: false,
            fence_closed: true,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, f: impl FnOnce(Style) -> Style) {
        let s = f(self.style());
        self.styles.push(s);
    }

    fn pop_style(&mut self) {
        if self.styles.len() > 1 {
            self.styles.pop();
        }
    }

    /// Prefixes for the next block line: quote bars, list indentation, a pending item marker.
    fn prefixes(&mut self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut base = Vec::new();
        for _ in 0..self.quote_depth {
            base.push(Span::styled("│ ", theme::dim()));
        }
        let indent: usize = self.indents.iter().sum();
        let mut first = base.clone();
        let mut rest = base;
        match self.marker.take() {
            Some(marker) => {
                let outer = indent.saturating_sub(marker.width());
                if outer > 0 {
                    first.push(Span::raw(" ".repeat(outer)));
                }
                first.push(Span::styled(marker, theme::accent()));
            }
            None if indent > 0 => first.push(Span::raw(" ".repeat(indent))),
            None => {}
        }
        if indent > 0 {
            rest.push(Span::raw(" ".repeat(indent)));
        }
        (first, rest)
    }

    fn start_block(&mut self) {
        self.flush();
        if self.need_blank && self.marker.is_none() && !self.out.is_empty() {
            let (_, rest) = self.prefixes_peek();
            self.out.push(Line::from(rest));
        }
        self.need_blank = false;
    }

    /// Like [`prefixes`], without consuming the marker (for blank separator lines).
    fn prefixes_peek(&self) -> (Vec<Span<'static>>, Vec<Span<'static>>) {
        let mut base = Vec::new();
        for _ in 0..self.quote_depth {
            base.push(Span::styled("│", theme::dim()));
        }
        (base.clone(), base)
    }

    fn flush(&mut self) {
        if self.spans.is_empty() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let (first, rest) = self.prefixes();
        self.out
            .extend(wrap::wrap(&spans, self.width, &first, &rest, Mode::Words));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, buf)) = &mut self.code {
            buf.push_str(text);
            return;
        }
        let span = Span::styled(sanitize(text).into_owned(), self.style());
        match &mut self.table {
            Some(t) => t.cell.push(span),
            None => self.spans.push(span),
        }
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(t) => self.text(&t),
            Event::Code(c) => {
                let span = Span::styled(sanitize(&c).into_owned(), theme::inline_code());
                match &mut self.table {
                    Some(t) => t.cell.push(span),
                    None => self.spans.push(span),
                }
            }
            Event::InlineMath(m) | Event::DisplayMath(m) => self.text(&m),
            Event::Html(h) | Event::InlineHtml(h) => {
                let span = Span::styled(sanitize(h.trim_end_matches('\n')).into_owned(), theme::dim());
                self.spans.push(span);
            }
            Event::SoftBreak | Event::HardBreak => {
                if self.table.is_some() {
                    self.text(" ");
                } else {
                    self.spans.push(Span::raw("\n"));
                }
            }
            Event::Rule => {
                self.start_block();
                let (first, _) = self.prefixes();
                let used: usize = first.iter().map(Span::width).sum();
                let mut spans = first;
                spans.push(Span::styled(
                    "─".repeat(self.width.saturating_sub(used).min(80)),
                    theme::dim(),
                ));
                self.out.push(Line::from(spans));
                self.need_blank = true;
            }
            Event::TaskListMarker(done) => {
                self.spans
                    .push(Span::styled(if done { "[x] " } else { "[ ] " }, theme::accent()));
            }
            Event::FootnoteReference(r) => self.text(&format!("[^{r}]")),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.start_block(),
            Tag::Heading { level, .. } => {
                self.start_block();
                let extra = if level == HeadingLevel::H1 {
                    Modifier::UNDERLINED
                } else {
                    Modifier::empty()
                };
                self.styles.push(theme::heading().add_modifier(extra));
            }
            Tag::BlockQuote(_) => {
                self.start_block();
                self.quote_depth += 1;
                self.push_style(|s| s.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.start_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) if self.fence_closed => info.to_string(),
                    CodeBlockKind::Fenced(_) | CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                if self.lists.is_empty() {
                    self.start_block();
                } else {
                    self.flush();
                }
                self.lists.push(ListLevel { next: start });
            }
            Tag::Item => {
                self.flush();
                let marker = match self.lists.last_mut() {
                    Some(ListLevel { next: Some(n) }) => {
                        let m = format!("{n}. ");
                        *n += 1;
                        m
                    }
                    _ => "• ".to_string(),
                };
                self.indents.push(marker.width());
                self.marker = Some(marker);
            }
            Tag::Emphasis => self.push_style(|s| s.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|s| s.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => self.push_style(|s| s.add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.styles.push(theme::link());
            }
            Tag::Image { dest_url, .. } => {
                self.links.push(dest_url.to_string());
                self.text("[image: ");
            }
            Tag::Table(_) => {
                self.start_block();
                self.table = Some(Table {
                    rows: Vec::new(),
                    header_rows: 0,
                    cell: Vec::new(),
                    row: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            Tag::HtmlBlock => self.start_block(),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => {
                self.flush();
                self.need_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush();
                self.pop_style();
                self.need_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote_depth = self.quote_depth.saturating_sub(1);
                self.pop_style();
                self.need_blank = true;
            }
            TagEnd::CodeBlock => self.code_block(),
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
                if self.lists.is_empty() {
                    self.need_blank = true;
                }
            }
            TagEnd::Item => {
                self.flush();
                // An empty item still shows its marker.
                if self.marker.is_some() {
                    let (first, _) = self.prefixes();
                    self.out.push(Line::from(first));
                }
                self.indents.pop();
                self.need_blank = false;
            }
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.pop_style(),
            TagEnd::Link => {
                self.pop_style();
                let url = self.links.pop().unwrap_or_default();
                let shown: String = self.spans.iter().rev().take(1).map(|s| s.content.to_string()).collect();
                if !url.is_empty() && shown != url && !url.starts_with('#') {
                    let span = Span::styled(format!(" ({url})"), theme::dim());
                    match &mut self.table {
                        Some(t) => t.cell.push(span),
                        None => self.spans.push(span),
                    }
                }
            }
            TagEnd::Image => {
                self.links.pop();
                self.text("]");
            }
            TagEnd::TableCell => {
                if let Some(t) = &mut self.table {
                    let cell = std::mem::take(&mut t.cell);
                    t.row.push(cell);
                }
            }
            TagEnd::TableHead => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                    t.header_rows = t.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let row = std::mem::take(&mut t.row);
                    t.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.table_lines(t);
                }
                self.need_blank = true;
            }
            _ => {}
        }
    }

    fn code_block(&mut self) {
        let Some((lang, code)) = self.code.take() else {
            return;
        };
        let code = sanitize(&code).into_owned();
        let lines = highlight::highlight(&code, &lang);
        let (first, rest) = self.prefixes();
        let bar = Span::styled("▏ ", theme::dim());
        let mut first_prefix = first;
        first_prefix.push(bar.clone());
        let mut rest_prefix = rest;
        rest_prefix.push(bar);
        for (i, spans) in lines.iter().enumerate() {
            let p = if i == 0 { &first_prefix } else { &rest_prefix };
            self.out
                .extend(wrap::wrap(spans, self.width, p, &rest_prefix, Mode::Chars));
        }
        self.need_blank = true;
    }

    fn table_lines(&mut self, t: Table) {
        let columns = t.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let cell_width = |c: &Vec<Span<'static>>| c.iter().map(Span::width).sum::<usize>();
        let mut natural = vec![0usize; columns];
        for row in &t.rows {
            for (i, c) in row.iter().enumerate() {
                natural[i] = natural[i].max(cell_width(c));
            }
        }
        let (first, rest) = self.prefixes();
        let prefix_width: usize = rest.iter().map(Span::width).sum();
        let room = self.width.saturating_sub(prefix_width + 3 * (columns - 1));
        let widths = fit_columns(&natural, room);
        // Cells wrap inside their column when the table is wider than the screen; rows then
        // take several lines and get a rule between them, so the grid stays readable.
        let wraps = widths != natural;
        let sep = Span::styled(" │ ", theme::dim());
        let rule = |widths: &[usize], rest: &[Span<'static>]| {
            let mut line = rest.to_vec();
            let parts: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
            line.push(Span::styled(parts.join("─┼─"), theme::dim()));
            Line::from(line)
        };
        for (r, row) in t.rows.iter().enumerate() {
            let header = r < t.header_rows;
            let cells: Vec<Vec<Line<'static>>> = widths
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    let cell = row.get(i).cloned().unwrap_or_default();
                    let spans = bolded(&cell, header);
                    if spans.is_empty() {
                        vec![Line::default()]
                    } else {
                        wrap::wrap(&spans, *w, &[], &[], Mode::Words)
                    }
                })
                .collect();
            let height = cells.iter().map(Vec::len).max().unwrap_or(1);
            for l in 0..height {
                let mut spans = if r == 0 && l == 0 { first.clone() } else { rest.clone() };
                for (i, w) in widths.iter().enumerate() {
                    if i > 0 {
                        spans.push(sep.clone());
                    }
                    let line = cells[i].get(l).cloned().unwrap_or_default();
                    let used = line.width();
                    spans.extend(line.spans);
                    if used < *w && i + 1 < columns {
                        spans.push(Span::raw(" ".repeat(w - used)));
                    }
                }
                self.out.push(Line::from(spans));
            }
            let last = r + 1 == t.rows.len();
            if r + 1 == t.header_rows || (wraps && !last) {
                self.out.push(rule(&widths, &rest));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if self.code.is_some() {
            // An unterminated fence while streaming: show what there is.
            self.code_block();
        }
        self.flush();
        while self.out.last().is_some_and(|l| l.width() == 0) {
            self.out.pop();
        }
        self.out
    }
}

/// Column widths that fit `room`: columns narrower than their fair share keep their width, the
/// others share what is left (at least 3 columns each, so a word piece stays readable).
fn fit_columns(natural: &[usize], room: usize) -> Vec<usize> {
    const MIN: usize = 3;
    if natural.iter().sum::<usize>() <= room {
        return natural.to_vec();
    }
    let mut widths = vec![0usize; natural.len()];
    let mut open: Vec<usize> = (0..natural.len()).collect();
    let mut left = room;
    loop {
        let share = (left / open.len().max(1)).max(MIN);
        let (fits, wide): (Vec<usize>, Vec<usize>) = open.iter().partition(|&&i| natural[i] <= share);
        if fits.is_empty() {
            for (n, &i) in wide.iter().enumerate() {
                // The remainder goes to the first columns.
                let extra = usize::from(n < left.saturating_sub(share * wide.len()));
                widths[i] = (share + extra).max(MIN);
            }
            return widths;
        }
        for &i in &fits {
            widths[i] = natural[i].max(1);
            left = left.saturating_sub(widths[i]);
        }
        open = wide;
        if open.is_empty() {
            return widths;
        }
    }
}

fn bolded(cell: &[Span<'static>], bold: bool) -> Vec<Span<'static>> {
    cell.iter()
        .map(|s| {
            if bold {
                s.clone().patch_style(Style::new().add_modifier(Modifier::BOLD))
            } else {
                s.clone()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
            .collect()
    }

    #[test]
    fn paragraphs_lists_and_emphasis() {
        let lines = render(
            "Intro with **bold** and `code`.\n\n- one\n- two\n  1. nested\n\nEnd.",
            40,
        );
        assert_eq!(
            texts(&lines),
            vec![
                "Intro with bold and code.",
                "",
                "• one",
                "• two",
                "  1. nested",
                "",
                "End."
            ]
        );
        let bold = lines[0].spans.iter().find(|s| s.content == "bold").unwrap();
        assert!(bold.style.add_modifier.contains(Modifier::BOLD));
        let code = lines[0].spans.iter().find(|s| s.content == "code").unwrap();
        assert_eq!(code.style, theme::inline_code());
    }

    #[test]
    fn code_blocks_keep_indentation_and_get_a_bar() {
        let lines = render("```python\ndef f():\n    return 1\n```\n", 40);
        assert_eq!(texts(&lines), vec!["▏ def f():", "▏     return 1"]);
    }

    #[test]
    fn unterminated_fence_renders_while_streaming() {
        let lines = render("Here:\n```rust\nlet a = 1;", 40);
        assert_eq!(texts(&lines), vec!["Here:", "", "▏ let a = 1;"]);
    }

    #[test]
    fn only_closed_fences_are_highlighted() {
        let coloured = |md: &str| {
            render(md, 40)
                .iter()
                .flat_map(|l| l.spans.iter())
                .any(|s| matches!(s.style.fg, Some(ratatui::style::Color::Indexed(_))))
        };
        assert!(coloured("```rust\nfn main() {}\n```\n"));
        assert!(!coloured("```rust\nfn main() {}\n"));
    }

    #[test]
    fn tables_align_columns() {
        let lines = render("| a | bb |\n|---|---|\n| ccc | d |\n", 40);
        assert_eq!(texts(&lines), vec!["a   │ bb", "────┼───", "ccc │ d"]);
    }

    #[test]
    fn narrow_tables_wrap_inside_their_cells_and_keep_the_grid() {
        let md = "| name | what it does |\n|---|---|\n| parse | reads the configuration file and checks every key |\n| run | starts the server |\n";
        let lines = render(md, 30);
        let t = texts(&lines);
        assert!(t.iter().all(|l| l.width() <= 30), "{t:#?}");
        assert_eq!(
            t,
            vec![
                "name  │ what it does",
                "──────┼───────────────────────",
                "parse │ reads the",
                "      │ configuration file and",
                "      │ checks every key",
                "──────┼───────────────────────",
                "run   │ starts the server",
            ]
        );
    }

    #[test]
    fn quotes_links_and_rules() {
        let lines = render("> quoted\n\n[site](https://x.dev)\n\n---\n", 20);
        let t = texts(&lines);
        assert_eq!(t[0], "│ quoted");
        assert_eq!(t[2], "site (https://x.dev)");
        assert!(t[4].starts_with("────"));
    }

    #[test]
    fn soft_breaks_are_line_breaks_and_long_text_wraps() {
        let lines = render("first line\nsecond line that is long", 12);
        assert_eq!(texts(&lines), vec!["first line", "second line", "that is long"]);
    }
}
