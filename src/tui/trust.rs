//! The workspace trust question, asked before anything of the project's own settings can run
//! (hence before setup, on the plain terminal). See `config::trust` for what trust covers.

use std::io::Write;
use std::path::Path;

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::style::{Attribute, Print, SetAttribute};
use crossterm::{cursor, queue, terminal};

use crate::config::settings::Settings;
use crate::config::{paths, trust};
use crate::console::{err_line, terminal_safe};
use crate::launch::options::Options;
use trust::ProjectTrust;

/// The user's answer; `Quit` leaves keel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Trust,
    Decline,
    Quit,
}

/// Decides the session's trust: a recorded "yes" or nothing to trust needs no question;
/// otherwise the user is asked. `None` when the user chose to quit.
pub fn decide(cli: &Options) -> std::io::Result<Option<ProjectTrust>> {
    let (Ok(cwd), Some(home)) = (
        std::env::current_dir().and_then(|d| d.canonicalize()),
        paths::keel_home(),
    ) else {
        return Ok(Some(ProjectTrust::Untrusted));
    };
    if trust::is_trusted(&home, &cwd) {
        return Ok(Some(ProjectTrust::Trusted));
    }
    // Unreadable settings are reported by setup, which loads them again.
    let Ok(settings) = Settings::load(dirs::home_dir().as_deref(), &home, &cwd, cli.settings.as_deref()) else {
        return Ok(Some(ProjectTrust::Untrusted));
    };
    let found = trust::project_findings(&settings, &cwd);
    if found.is_empty() {
        return Ok(Some(ProjectTrust::Untrusted));
    }
    Ok(match ask(&cwd, &found)? {
        Answer::Trust => {
            if let Err(e) = trust::trust(&home, &cwd) {
                err_line!("keel: could not record the answer in {}: {e}", home.display());
            }
            Some(ProjectTrust::Trusted)
        }
        Answer::Decline => Some(ProjectTrust::Untrusted),
        Answer::Quit => None,
    })
}

/// Shows the question and waits for the answer (raw mode, restored before returning).
pub fn ask(dir: &Path, found: &[(String, Vec<String>)]) -> std::io::Result<Answer> {
    ask_question(&trust_question(dir, found), TRUST_OPTIONS)
}

const TRUST_OPTIONS: [&str; 2] = [
    "Yes, trust this folder",
    "No, continue without them (ask again next time)",
];

/// Shows a yes/no question (`header` lines, bold when marked) and waits for the answer
/// (raw mode, restored before returning). Also used for other startup questions.
pub fn ask_question(header: &[(bool, String)], options: [&str; 2]) -> std::io::Result<Answer> {
    terminal::enable_raw_mode()?;
    let answer = ask_raw(header, options);
    let _ = terminal::disable_raw_mode();
    answer
}

fn ask_raw(header: &[(bool, String)], options: [&str; 2]) -> std::io::Result<Answer> {
    let mut out = std::io::stdout();
    let mut selected = 0usize;
    let mut drawn = 0u16;
    loop {
        drawn = draw(&mut out, header, options, selected, drawn)?;
        let Event::Key(key) = crossterm::event::read()? else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        match choose(key, &mut selected) {
            Some(answer) => {
                queue!(out, Print("\r\n"))?;
                out.flush()?;
                return Ok(answer);
            }
            None => continue,
        }
    }
}

/// A key's effect: an answer, or a move of the selection.
fn choose(key: KeyEvent, selected: &mut usize) -> Option<Answer> {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Char('c') | KeyCode::Char('d') if ctrl => Some(Answer::Quit),
        KeyCode::Esc | KeyCode::Char('q') => Some(Answer::Quit),
        KeyCode::Char('1') | KeyCode::Char('y') => Some(Answer::Trust),
        KeyCode::Char('2') | KeyCode::Char('n') => Some(Answer::Decline),
        KeyCode::Up | KeyCode::Char('k') => {
            *selected = 0;
            None
        }
        KeyCode::Down | KeyCode::Char('j') | KeyCode::Tab => {
            *selected = 1;
            None
        }
        KeyCode::Enter => Some(if *selected == 0 { Answer::Trust } else { Answer::Decline }),
        _ => None,
    }
}

fn trust_question(dir: &Path, found: &[(String, Vec<String>)]) -> Vec<(bool, String)> {
    let mut lines: Vec<(bool, String)> = vec![
        (true, "Do you trust the files in this folder?".into()),
        (false, String::new()),
        (false, format!("  {}", dir.display())),
        (false, String::new()),
        (
            false,
            "Its project settings would have keel run commands, approve them for you or weaken a protection:".into(),
        ),
    ];
    for (file, items) in found {
        lines.push((false, format!("  • {file}:")));
        lines.extend(items.iter().map(|i| (false, format!("      {i}"))));
    }
    lines.extend([
        (false, String::new()),
        (
            false,
            "Trust only folders whose contents you know. Without trust, keel works here but ignores".into(),
        ),
        (false, "those settings for this session.".into()),
        (false, String::new()),
    ]);
    lines
}

/// Draws the question over its previous drawing (`drawn` lines); returns the lines drawn.
fn draw(
    out: &mut impl Write,
    header: &[(bool, String)],
    options: [&str; 2],
    selected: usize,
    drawn: u16,
) -> std::io::Result<u16> {
    if drawn > 0 {
        queue!(out, cursor::MoveUp(drawn), cursor::MoveToColumn(0))?;
    }
    queue!(out, terminal::Clear(terminal::ClearType::FromCursorDown))?;
    let mut lines = header.to_vec();
    for (i, o) in options.iter().enumerate() {
        let mark = if i == selected { "›" } else { " " };
        lines.push((i == selected, format!("{mark} {}. {o}", i + 1)));
    }
    lines.push((false, String::new()));
    lines.push((false, "↑/↓ to choose · Enter to confirm · Esc to quit".into()));
    for (bold, text) in &lines {
        if *bold {
            queue!(
                out,
                SetAttribute(Attribute::Bold),
                Print(terminal_safe(text)),
                SetAttribute(Attribute::Reset)
            )?;
        } else {
            // Project settings' commands and paths come from the repository: shown, not obeyed.
            queue!(out, Print(terminal_safe(text)))?;
        }
        queue!(out, Print("\r\n"))?;
    }
    out.flush()?;
    Ok(lines.len() as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn the_question_shows_the_project_commands_escaped() {
        let found = vec![(
            ".claude/settings.json\x1b[2J".to_string(),
            vec!["hook `echo \x1b]52;c;aGk=\x07\x1b[2J`".to_string()],
        )];
        let mut drawn = Vec::new();
        draw(
            &mut drawn,
            &trust_question(Path::new("/w/p\u{9b}2J"), &found),
            TRUST_OPTIONS,
            0,
            0,
        )
        .unwrap();
        let drawn = String::from_utf8(drawn).unwrap();
        assert!(!drawn.contains("\x1b]52") && !drawn.contains('\u{9b}'), "{drawn:?}");
        assert!(drawn.contains("echo \\x1b]52;c;aGk=\\x07\\x1b[2J"), "{drawn:?}");
        assert!(drawn.contains("/w/p\\u{9b}2J"), "{drawn:?}");
    }

    #[test]
    fn keys_choose_or_move() {
        let mut sel = 0;
        assert_eq!(choose(key(KeyCode::Char('1')), &mut sel), Some(Answer::Trust));
        assert_eq!(choose(key(KeyCode::Char('n')), &mut sel), Some(Answer::Decline));
        assert_eq!(choose(key(KeyCode::Down), &mut sel), None);
        assert_eq!(choose(key(KeyCode::Enter), &mut sel), Some(Answer::Decline));
        assert_eq!(choose(key(KeyCode::Up), &mut sel), None);
        assert_eq!(choose(key(KeyCode::Enter), &mut sel), Some(Answer::Trust));
        assert_eq!(choose(key(KeyCode::Esc), &mut sel), Some(Answer::Quit));
        assert_eq!(
            choose(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), &mut sel),
            Some(Answer::Quit)
        );
    }
}
