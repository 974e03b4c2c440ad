//! The transcript: an append-only list of cells, drawn virtualised.
//!
//! Each cell caches its height (and, while visible, its lines) for the current width, so a
//! frame costs only the cells on screen, however long the session. The view either follows
//! the bottom or is anchored at a (cell, line) position that appending never moves.

pub mod cells;
pub mod history;
pub mod live;
pub mod resumed;
pub mod todos;

use std::collections::HashMap;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::Line;

pub use cells::{CellKind, ShellCell, ToolCell, ToolStatus};

#[derive(Debug, Default)]
struct Cache {
    width: usize,
    version: u64,
    expand_all: bool,
    height: usize,
    measured: bool,
    lines: Option<Vec<Line<'static>>>,
}

#[derive(Debug)]
pub struct Cell {
    pub kind: CellKind,
    version: u64,
    cache: Cache,
}

/// Where the top of the view is when it does not follow the bottom.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Anchor {
    pub cell: usize,
    /// Line within the cell (including its leading blank line).
    pub line: usize,
}

#[derive(Debug, Default)]
pub struct Transcript {
    cells: Vec<Cell>,
    tools: HashMap<String, usize>,
    anchor: Option<Anchor>,
    pub expand_all: bool,
    /// Cells drawn in the last frame, with their screen rows.
    visible: Vec<(usize, u16, u16)>,
    /// Size of the last drawn view.
    pub viewport: (usize, usize),
    /// Cells that currently hold rendered lines.
    with_lines: Vec<usize>,
}

impl Transcript {
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    #[cfg(test)]
    pub fn cells(&self) -> impl Iterator<Item = &CellKind> {
        self.cells.iter().map(|c| &c.kind)
    }

    pub fn get(&self, i: usize) -> Option<&CellKind> {
        self.cells.get(i).map(|c| &c.kind)
    }

    pub fn push(&mut self, kind: CellKind) -> usize {
        if let CellKind::Tool(t) = &kind {
            self.tools.insert(t.id.clone(), self.cells.len());
        }
        self.cells.push(Cell {
            kind,
            version: 0,
            cache: Cache::default(),
        });
        self.cells.len() - 1
    }

    /// Mutable access to a cell; marks it changed.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut CellKind> {
        let cell = self.cells.get_mut(i)?;
        cell.version += 1;
        Some(&mut cell.kind)
    }

    pub fn tool_index(&self, id: &str) -> Option<usize> {
        self.tools.get(id).copied()
    }

    pub fn tool_mut(&mut self, id: &str) -> Option<&mut ToolCell> {
        let i = self.tool_index(id)?;
        match self.get_mut(i)? {
            CellKind::Tool(t) => Some(t),
            _ => None,
        }
    }

    pub fn clear(&mut self) {
        *self = Transcript {
            expand_all: self.expand_all,
            ..Transcript::default()
        };
    }

    pub fn is_following(&self) -> bool {
        self.anchor.is_none()
    }

    /// Height of cell `i` at `width`, including the blank line above it; 0 for a cell with
    /// nothing to show.
    fn height(&mut self, i: usize, width: usize) -> usize {
        let expand_all = self.expand_all;
        let cell = &mut self.cells[i];
        let c = &mut cell.cache;
        if c.width != width || c.version != cell.version || c.expand_all != expand_all || !c.measured {
            let lines = cell.kind.render(width, expand_all);
            c.height = if lines.is_empty() { 0 } else { lines.len() + 1 };
            c.measured = true;
            if c.lines.is_none() {
                self.with_lines.push(i);
            }
            c.lines = Some(lines);
            c.width = width;
            c.version = cell.version;
            c.expand_all = expand_all;
        }
        c.height
    }

    fn lines(&mut self, i: usize, width: usize) -> &[Line<'static>] {
        self.height(i, width);
        let expand_all = self.expand_all;
        let cell = &mut self.cells[i];
        if cell.cache.lines.is_none() {
            self.with_lines.push(i);
        }
        cell.cache
            .lines
            .get_or_insert_with(|| cell.kind.render(width, expand_all))
    }

    /// The top position when following the bottom of a `rows`-high view.
    fn bottom_anchor(&mut self, width: usize, rows: usize) -> Anchor {
        let mut remaining = rows;
        let mut i = self.cells.len();
        while i > 0 {
            let h = self.height(i - 1, width);
            if h >= remaining {
                return Anchor {
                    cell: i - 1,
                    line: h - remaining,
                };
            }
            remaining -= h;
            i -= 1;
        }
        Anchor { cell: 0, line: 0 }
    }

    /// Whether everything from `a` to the end fits in `rows` lines.
    fn fits_from(&mut self, a: Anchor, width: usize, rows: usize) -> bool {
        let mut total = 0;
        for i in a.cell..self.cells.len() {
            total += self.height(i, width);
            if i == a.cell {
                total -= a.line.min(total);
            }
            if total > rows {
                return false;
            }
        }
        true
    }

    pub fn scroll_up(&mut self, n: usize) {
        let (width, rows) = self.viewport;
        if self.cells.is_empty() || width == 0 {
            return;
        }
        let mut a = match self.anchor {
            Some(a) => a,
            None => self.bottom_anchor(width, rows),
        };
        let mut n = n;
        while n > 0 {
            if a.line >= n {
                a.line -= n;
                break;
            }
            n -= a.line;
            if a.cell == 0 {
                a.line = 0;
                break;
            }
            a.cell -= 1;
            a.line = self.height(a.cell, width);
        }
        self.anchor = Some(a);
    }

    pub fn scroll_down(&mut self, n: usize) {
        let (width, rows) = self.viewport;
        let Some(mut a) = self.anchor else {
            return;
        };
        let mut n = n;
        while n > 0 && a.cell < self.cells.len() {
            let h = self.height(a.cell, width);
            if a.line + n < h {
                a.line += n;
                break;
            }
            n -= h - a.line;
            a.cell += 1;
            a.line = 0;
        }
        if a.cell >= self.cells.len() || self.fits_from(a, width, rows) {
            self.anchor = None;
        } else {
            self.anchor = Some(a);
        }
    }

    pub fn scroll_to_bottom(&mut self) {
        self.anchor = None;
    }

    pub fn page(&self) -> usize {
        self.viewport.1.saturating_sub(2).max(1)
    }

    /// The cell drawn at screen row `y` in the last frame.
    pub fn cell_at(&self, y: u16) -> Option<usize> {
        self.visible
            .iter()
            .find(|(_, top, bottom)| y >= *top && y < *bottom)
            .map(|(i, _, _)| *i)
    }

    /// Draws the visible part of the transcript into `area`.
    pub fn render(&mut self, area: Rect, buf: &mut Buffer) {
        let width = area.width as usize;
        let rows = area.height as usize;
        self.viewport = (width, rows);
        self.visible.clear();
        if self.cells.is_empty() || rows == 0 {
            return;
        }
        let mut a = match self.anchor {
            Some(a) if a.cell < self.cells.len() => a,
            _ => self.bottom_anchor(width, rows),
        };
        a.line = a.line.min(self.height(a.cell, width).saturating_sub(1));
        if self.anchor.is_some() {
            self.anchor = Some(a);
        }
        let mut y = 0usize;
        let mut i = a.cell;
        let mut skip = a.line;
        while y < rows && i < self.cells.len() {
            if self.height(i, width) == 0 {
                i += 1;
                skip = 0;
                continue;
            }
            let top = y;
            // Line 0 of every cell is the blank separator.
            if skip == 0 {
                y += 1;
            }
            let start = skip.saturating_sub(1);
            let lines = self.lines(i, width);
            for line in lines.iter().skip(start) {
                if y >= rows {
                    break;
                }
                buf.set_line(area.x, area.y + y as u16, line, area.width);
                y += 1;
            }
            self.visible.push((i, area.y + top as u16, area.y + y.min(rows) as u16));
            skip = 0;
            i += 1;
        }
        // Lines of cells out of view (drawn earlier or only measured) are dropped; heights stay.
        let (first, last) = match (self.visible.first(), self.visible.last()) {
            (Some(f), Some(l)) => (f.0, l.0),
            _ => (1, 0),
        };
        let cells = &mut self.cells;
        self.with_lines.retain(|&p| {
            let keep = p >= first && p <= last;
            if !keep && let Some(c) = cells.get_mut(p) {
                c.cache.lines = None;
            }
            keep
        });
        self.with_lines.dedup();
    }

    #[cfg(test)]
    /// Cells that hold rendered lines right now (for tests of the memory bound).
    pub fn cached_line_cells(&self) -> usize {
        self.cells.iter().filter(|c| c.cache.lines.is_some()).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn notice(text: &str) -> CellKind {
        CellKind::Notice {
            level: crate::engine::NoticeLevel::Info,
            text: text.to_string(),
        }
    }

    fn screen(t: &mut Transcript, w: u16, h: u16) -> Vec<String> {
        let area = Rect::new(0, 0, w, h);
        let mut buf = Buffer::empty(area);
        t.render(area, &mut buf);
        (0..h)
            .map(|y| {
                (0..w)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .trim_end()
                    .to_string()
            })
            .collect()
    }

    #[test]
    fn follows_the_bottom_and_keeps_position_when_scrolled() {
        let mut t = Transcript::default();
        for i in 0..100 {
            t.push(notice(&format!("cell {i}")));
        }
        let s = screen(&mut t, 30, 6);
        assert_eq!(s[5], "· cell 99");
        t.scroll_up(4);
        let s = screen(&mut t, 30, 6);
        assert_eq!(s[5], "· cell 97");
        // New output does not move a scrolled view.
        t.push(notice("cell 100"));
        let s2 = screen(&mut t, 30, 6);
        assert_eq!(s, s2);
        // Scrolling back down far enough follows again, showing the new cell.
        t.scroll_down(100);
        assert!(t.is_following());
        assert_eq!(screen(&mut t, 30, 6)[5], "· cell 100");
    }

    #[test]
    fn only_visible_cells_keep_their_lines() {
        let mut t = Transcript::default();
        for i in 0..2000 {
            t.push(notice(&format!("cell {i}")));
        }
        screen(&mut t, 40, 10);
        t.scroll_up(500);
        screen(&mut t, 40, 10);
        assert!(t.cached_line_cells() <= 12, "{}", t.cached_line_cells());
        // Cells far above the view were never even measured.
        assert!(!t.cells[0].cache.measured);
    }

    #[test]
    fn scrolling_up_stops_at_the_top() {
        let mut t = Transcript::default();
        t.push(notice("only"));
        t.push(notice("two"));
        screen(&mut t, 20, 3);
        t.scroll_up(50);
        let s = screen(&mut t, 20, 3);
        assert_eq!(s, vec!["", "· only", ""]);
    }

    #[test]
    fn mouse_rows_map_to_cells() {
        let mut t = Transcript::default();
        t.push(notice("a"));
        t.push(notice("b"));
        screen(&mut t, 20, 10);
        assert_eq!(t.cell_at(1), Some(0));
        assert_eq!(t.cell_at(3), Some(1));
        assert_eq!(t.cell_at(9), None);
    }
}
