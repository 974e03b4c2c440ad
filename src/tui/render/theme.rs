//! Colours and styles of the TUI, in one place.

use std::sync::atomic::{AtomicBool, Ordering};

use ratatui::style::{Color, Modifier, Style};

static TRUECOLOR: AtomicBool = AtomicBool::new(false);

/// Whether 24-bit colours may be sent. Off by default (256 colours work everywhere); the TUI
/// turns it on when `COLORTERM` says the terminal supports it.
pub fn set_truecolor(on: bool) {
    TRUECOLOR.store(on, Ordering::Relaxed);
}

pub fn truecolor_from_env() -> bool {
    std::env::var("COLORTERM").is_ok_and(|v| v.contains("truecolor") || v.contains("24bit"))
}

/// An RGB colour as the terminal can show it.
pub fn rgb(r: u8, g: u8, b: u8) -> Color {
    if TRUECOLOR.load(Ordering::Relaxed) {
        Color::Rgb(r, g, b)
    } else {
        Color::Indexed(to_ansi256(r, g, b))
    }
}

/// Nearest entry of the xterm 256-colour palette (6×6×6 cube or grey ramp).
fn to_ansi256(r: u8, g: u8, b: u8) -> u8 {
    let level = |v: u8| -> u8 {
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (lr, lg, lb) = (level(r), level(g), level(b));
    let cube_value = |l: u8| if l == 0 { 0 } else { 55 + 40 * l as i32 };
    let cube = 16 + 36 * lr + 6 * lg + lb;
    let cube_err = dist((r, g, b), (cube_value(lr), cube_value(lg), cube_value(lb)));
    let avg = (r as i32 + g as i32 + b as i32) / 3;
    let grey_idx = if avg > 238 { 23 } else { ((avg - 3).max(0) / 10) as u8 };
    let grey_value = 8 + 10 * grey_idx as i32;
    let grey_err = dist((r, g, b), (grey_value, grey_value, grey_value));
    if grey_err < cube_err { 232 + grey_idx } else { cube }
}

fn dist((r, g, b): (u8, u8, u8), (x, y, z): (i32, i32, i32)) -> i32 {
    let (dr, dg, db) = (r as i32 - x, g as i32 - y, b as i32 - z);
    dr * dr + dg * dg + db * db
}

pub fn dim() -> Style {
    Style::new().fg(Color::DarkGray)
}

pub fn accent() -> Style {
    Style::new().fg(Color::Cyan)
}

pub fn user_prompt() -> Style {
    Style::new().fg(Color::White).add_modifier(Modifier::BOLD)
}

pub fn ok() -> Style {
    Style::new().fg(Color::Green)
}

pub fn error() -> Style {
    Style::new().fg(Color::Red)
}

pub fn warning() -> Style {
    Style::new().fg(Color::Yellow)
}

pub fn inline_code() -> Style {
    Style::new().fg(Color::LightYellow)
}

pub fn heading() -> Style {
    Style::new().fg(Color::LightCyan).add_modifier(Modifier::BOLD)
}

pub fn link() -> Style {
    Style::new().fg(Color::LightBlue).add_modifier(Modifier::UNDERLINED)
}

pub fn diff_add() -> Style {
    Style::new().fg(Color::Green)
}

pub fn diff_remove() -> Style {
    Style::new().fg(Color::Red)
}

pub fn diff_hunk() -> Style {
    Style::new().fg(Color::Cyan)
}

pub fn selected() -> Style {
    Style::new().fg(Color::Black).bg(Color::Cyan)
}

pub fn shell() -> Style {
    Style::new().fg(Color::Magenta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_rgb_to_the_256_palette() {
        assert_eq!(to_ansi256(0, 0, 0), 16);
        assert_eq!(to_ansi256(255, 0, 0), 196);
        assert_eq!(to_ansi256(255, 255, 255), 231);
        assert_eq!(to_ansi256(128, 128, 128), 244);
    }
}
