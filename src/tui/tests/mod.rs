//! Snapshot and key-handling tests of the TUI, fed with engine events (no model, no terminal).
//!
//! Snapshots show the screen text, then the styled runs of each row (colour and modifiers),
//! so a change of colour shows up in review like a change of text.

mod approvals;
mod evidence;
mod keys;
mod pickers;
mod snapshots;
mod stream_cells;
mod worker;

use std::fmt::Write;
use std::time::Instant;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};

use super::app::App;
use super::ui;

/// The screen as text plus style runs.
pub fn dump(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let line: String = (0..area.width).map(|x| buf[(x, y)].symbol().to_string()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("--- styles ---\n");
    for y in 0..area.height {
        let mut runs: Vec<String> = Vec::new();
        let mut x = 0;
        while x < area.width {
            let c = &buf[(x, y)];
            let key = (c.fg, c.bg, c.modifier);
            let start = x;
            while x < area.width {
                let d = &buf[(x, y)];
                if (d.fg, d.bg, d.modifier) != key {
                    break;
                }
                x += 1;
            }
            if key.0 == Color::Reset && key.1 == Color::Reset && key.2 == Modifier::empty() {
                continue;
            }
            let mut s = format!("{start}..{x} {:?}", key.0);
            if key.1 != Color::Reset {
                let _ = write!(s, " on {:?}", key.1);
            }
            if !key.2.is_empty() {
                let _ = write!(s, " {:?}", key.2);
            }
            runs.push(s);
        }
        if !runs.is_empty() {
            let _ = writeln!(out, "{y:>2}: {}", runs.join(" | "));
        }
    }
    out
}

/// Draws the whole app at `width`×`height` and dumps the screen.
pub fn screen(app: &mut App, width: u16, height: u16, now: Instant) -> String {
    let mut term = Terminal::new(TestBackend::new(width, height)).unwrap();
    term.draw(|f| {
        ui::draw(f, app, now);
    })
    .unwrap();
    dump(term.backend().buffer())
}

/// Only the text of the screen (for assertions).
pub fn text(app: &mut App, width: u16, height: u16) -> String {
    let s = screen(app, width, height, Instant::now());
    s.split("--- styles ---").next().unwrap_or("").to_string()
}
