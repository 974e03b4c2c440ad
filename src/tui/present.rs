//! What a frame writes to the terminal: only what changed since the screen last shown.
//!
//! Beyond ratatui's cell diff, two things matter for the bytes sent (which matter over SSH):
//! - **Scrolling.** When streamed text moves the transcript up, every row changes, and a cell
//!   diff would rewrite them all. The presenter recognises rows that moved up together and
//!   scrolls them inside a scroll region (`DECSTBM` + `SU`), so only the new rows are written.
//! - **Grapheme clusters.** A flag or a ZWJ emoji is one cell pair to ratatui (its width comes
//!   from the cluster), but a terminal may draw it wider. A changed row that holds such a
//!   cluster (now or before) is rewritten whole, with the cursor placed explicitly after each
//!   cluster, so a misdrawn one can never leave stray glyphs in the cells after it.

use ratatui::buffer::{Buffer, Cell};
use ratatui::layout::Rect;
use unicode_width::UnicodeWidthStr;

/// Rows that move up together, and by how much.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scroll {
    /// First and last row of the scroll region (inclusive, 0-based).
    pub top: u16,
    pub bottom: u16,
    pub lines: u16,
}

impl Scroll {
    /// The escape sequences: set the region, scroll it up, reset the region.
    pub fn sequence(&self) -> String {
        format!(
            "\x1b[0m\x1b[{};{}r\x1b[{}S\x1b[r",
            self.top + 1,
            self.bottom + 1,
            self.lines
        )
    }
}

/// Cells to write, in runs; each run starts with an explicit cursor move.
pub type Runs<'a> = Vec<Vec<(u16, u16, &'a Cell)>>;

pub struct Plan<'a> {
    pub scroll: Option<Scroll>,
    pub runs: Runs<'a>,
    pub hashes: Vec<u64>,
}

#[derive(Debug, Default)]
pub struct Presenter {
    /// The screen as last written, with the hash of each row.
    shown: Option<(Buffer, Vec<u64>)>,
}

/// A cluster a terminal may draw at another width than the cluster's own (several code
/// points drawn as one wide glyph).
fn is_complex(symbol: &str) -> bool {
    let mut chars = symbol.chars();
    chars.next().is_some() && chars.next().is_some() && symbol.width() > 1
}

/// A cheap hash of each row (symbols and styles); rows are compared by it.
fn row_hashes(b: &Buffer) -> Vec<u64> {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mix = |h: u64, v: u64| (h.rotate_left(5) ^ v).wrapping_mul(K);
    let w = b.area.width as usize;
    b.content
        .chunks(w.max(1))
        .map(|row| {
            let mut h = 0u64;
            for c in row {
                for chunk in c.symbol().as_bytes().chunks(8) {
                    let mut v = [0u8; 8];
                    v[..chunk.len()].copy_from_slice(chunk);
                    h = mix(h, u64::from_le_bytes(v));
                }
                h = mix(
                    h,
                    colour_key(c.fg) ^ (colour_key(c.bg) << 24) ^ ((c.modifier.bits() as u64) << 48),
                );
            }
            h
        })
        .collect()
}

fn colour_key(c: ratatui::style::Color) -> u64 {
    use ratatui::style::Color;
    match c {
        Color::Rgb(r, g, b) => 0x100_0000 | (r as u64) << 16 | (g as u64) << 8 | b as u64,
        Color::Indexed(i) => 0x200_0000 | i as u64,
        // The named colours and Reset: their position in the enum is enough.
        other => 0x300_0000 | named(other),
    }
}

fn named(c: ratatui::style::Color) -> u64 {
    use ratatui::style::Color::*;
    [
        Reset,
        Black,
        Red,
        Green,
        Yellow,
        Blue,
        Magenta,
        Cyan,
        Gray,
        DarkGray,
        LightRed,
        LightGreen,
        LightYellow,
        LightBlue,
        LightMagenta,
        LightCyan,
        White,
    ]
    .iter()
    .position(|x| *x == c)
    .unwrap_or(99) as u64
}

/// The best upward scroll: rows `i` of `next` equal to rows `i + k` of `prev`, in a run that
/// saves rewriting at least two rows.
fn find_scroll(prev: &[u64], next: &[u64], blank: u64) -> Option<Scroll> {
    let n = prev.len().min(next.len());
    let mut best: Option<(usize, Scroll)> = None;
    for k in 1..n {
        let mut i = 0;
        while i + k < n {
            if next[i] != prev[i + k] {
                i += 1;
                continue;
            }
            let start = i;
            let mut saved = 0;
            while i + k < n && next[i] == prev[i + k] {
                if next[i] != prev[i] {
                    saved += 1;
                }
                i += 1;
            }
            // Rows the scroll brings in blank must be written unless they are blank anyway;
            // rows that already matched there are lost.
            let end = i + k; // exclusive, in `prev` coordinates
            let cost = (i..end.min(n))
                .filter(|&j| next[j] != blank && next[j] == prev[j])
                .count();
            let gain = saved as isize - cost as isize;
            if gain >= 2 && best.as_ref().is_none_or(|(g, _)| gain as usize > *g) {
                best = Some((
                    gain as usize,
                    Scroll {
                        top: start as u16,
                        bottom: (end - 1) as u16,
                        lines: k as u16,
                    },
                ));
            }
        }
    }
    best.map(|(_, s)| s)
}

fn shifted(prev: &Buffer, s: Scroll) -> Buffer {
    let mut b = prev.clone();
    let w = b.area.width as usize;
    let (top, bottom, k) = (s.top as usize, s.bottom as usize, s.lines as usize);
    for row in top..=bottom {
        for x in 0..w {
            let cell = if row + k <= bottom {
                prev.content[(row + k) * w + x].clone()
            } else {
                Cell::default()
            };
            b.content[row * w + x] = cell;
        }
    }
    b
}

impl Presenter {
    /// The screen was cleared (or resized): the next frame is written whole.
    pub fn reset(&mut self) {
        self.shown = None;
    }

    /// What to write so that the screen shows `next`: an optional scroll first, then runs of
    /// cells (and the row hashes of `next`, for [`Presenter::commit`]).
    pub fn plan<'a>(&self, next: &'a Buffer) -> Plan<'a> {
        let blank_prev;
        let nh = row_hashes(next);
        let blank = row_hashes(&Buffer::empty(Rect::new(0, 0, next.area.width, 1)))
            .first()
            .copied()
            .unwrap_or(0);
        let (prev, scroll) = match &self.shown {
            Some((b, ph)) if b.area == next.area => (b, find_scroll(ph, &nh, blank)),
            _ => {
                blank_prev = Buffer::empty(next.area);
                (&blank_prev, None)
            }
        };
        let moved;
        let base = match scroll {
            Some(s) => {
                moved = shifted(prev, s);
                &moved
            }
            None => prev,
        };
        let updates = base.diff(next);
        Plan {
            scroll,
            runs: runs(base, next, updates),
            hashes: nh,
        }
    }

    /// `next` is on the screen now.
    pub fn commit(&mut self, next: Buffer, hashes: Vec<u64>) {
        self.shown = Some((next, hashes));
    }
}

/// Splits updates into runs; rows with complex clusters are rewritten whole, each cluster
/// ending a run so the next cell is placed explicitly.
fn runs<'a>(prev: &Buffer, next: &'a Buffer, updates: Vec<(u16, u16, &'a Cell)>) -> Runs<'a> {
    let w = next.area.width as usize;
    let complex_rows = |b: &Buffer| -> Vec<bool> {
        b.content
            .chunks(w.max(1))
            .map(|row| row.iter().any(|c| c.symbol().len() > 1 && is_complex(c.symbol())))
            .collect()
    };
    let (in_next, in_prev) = (complex_rows(next), complex_rows(prev));
    let mut out: Runs<'a> = Vec::new();
    let mut cur: Vec<(u16, u16, &'a Cell)> = Vec::new();
    let mut done_row: Option<u16> = None;
    for (x, y, cell) in updates {
        if done_row == Some(y) {
            continue;
        }
        let yi = y as usize;
        if in_next.get(yi).copied().unwrap_or(false) || in_prev.get(yi).copied().unwrap_or(false) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            let mut col = 0;
            while col < w {
                let c = &next.content[yi * w + col];
                cur.push((col as u16, y, c));
                let width = c.symbol().width().max(1);
                if is_complex(c.symbol()) {
                    out.push(std::mem::take(&mut cur));
                }
                col += width;
            }
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            done_row = Some(y);
            continue;
        }
        cur.push((x, y, cell));
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buf(rows: &[&str]) -> Buffer {
        let w = rows.iter().map(|r| r.width()).max().unwrap_or(1) as u16;
        let mut b = Buffer::empty(Rect::new(0, 0, w, rows.len() as u16));
        for (y, r) in rows.iter().enumerate() {
            b.set_string(0, y as u16, r, ratatui::style::Style::new());
        }
        b
    }

    fn commit(p: &mut Presenter, b: Buffer) {
        let hashes = row_hashes(&b);
        p.commit(b, hashes);
    }

    fn written(runs: &Runs<'_>) -> usize {
        runs.iter().map(Vec::len).sum()
    }

    #[test]
    fn text_moving_up_is_scrolled_not_rewritten() {
        let mut p = Presenter::default();
        let first = buf(&["line 1", "line 2", "line 3", "line 4", "> input"]);
        commit(&mut p, first);
        let next = buf(&["line 2", "line 3", "line 4", "line 5", "> input"]);
        let Plan { scroll, runs, .. } = p.plan(&next);
        assert_eq!(
            scroll,
            Some(Scroll {
                top: 0,
                bottom: 3,
                lines: 1
            })
        );
        // Only the new row is written ("line 5" against a blank row).
        assert!(runs.iter().flatten().all(|(_, y, _)| *y == 3), "{runs:?}");
        assert_eq!(written(&runs), 5);
    }

    #[test]
    fn unrelated_changes_do_not_scroll() {
        let mut p = Presenter::default();
        commit(&mut p, buf(&["a", "b", "c", "d"]));
        let next = buf(&["a", "x", "c", "d"]);
        let Plan { scroll, runs, .. } = p.plan(&next);
        assert_eq!(scroll, None);
        assert_eq!(written(&runs), 1);
    }

    #[test]
    fn the_first_frame_and_a_reset_write_everything_visible() {
        let mut p = Presenter::default();
        let next = buf(&["ab", "cd"]);
        assert_eq!(written(&p.plan(&next).runs), 4);
        commit(&mut p, next.clone());
        assert_eq!(written(&p.plan(&next).runs), 0);
        p.reset();
        assert_eq!(written(&p.plan(&next).runs), 4);
    }

    #[test]
    fn rows_with_clusters_are_rewritten_whole_with_explicit_positions() {
        let mut p = Presenter::default();
        commit(&mut p, buf(&["flag 🇫🇷 here   ", "plain row      "]));
        let next = buf(&["flag 🇫🇷 there  ", "plain row      "]);
        let runs = p.plan(&next).runs;
        let cells: Vec<(u16, &str)> = runs.iter().flatten().map(|(x, _, c)| (*x, c.symbol())).collect();
        // The whole first row, and the run breaks right after the flag.
        assert_eq!(cells.first(), Some(&(0, "f")));
        assert!(cells.iter().any(|(x, s)| *x == 5 && *s == "🇫🇷"));
        let flag_run = runs
            .iter()
            .position(|r| r.iter().any(|(_, _, c)| c.symbol() == "🇫🇷"))
            .unwrap();
        assert_eq!(runs[flag_run].last().unwrap().2.symbol(), "🇫🇷");
        assert_eq!(runs[flag_run + 1][0].0, 7);
        assert!(runs.iter().flatten().all(|(_, y, _)| *y == 0));
    }
}
