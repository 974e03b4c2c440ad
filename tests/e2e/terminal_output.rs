//! What keel prints for a person cannot drive the terminal: control sequences from files,
//! commands, the model and its tool calls are shown escaped on stderr, and on stdout when it
//! is a terminal; a redirected answer stays byte for byte, JSON stays JSON.

use std::io::Read;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::Stdio;

use serde_json::json;

use crate::support::sse::{answer, calls, text, tool};
use crate::support::{Env, ModelServer, finish};

/// OSC 52 (write the clipboard), a window title, clear screen and cursor home.
const HOSTILE: &str = "\x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;owned\x07\x1b[2J\x1b[H";

fn assert_no_raw_escape(stream: &str, what: &str) {
    assert!(
        !stream.contains('\x1b') && !stream.contains('\u{9b}'),
        "raw control sequence on {what}: {stream:?}"
    );
}

#[tokio::test]
async fn verbose_progress_shows_file_and_command_output_escaped() {
    let env = Env::new();
    env.write("notes.txt", &format!("{HOSTILE}hello\n"));
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            text(&format!("reading {HOSTILE}")),
            tool("r1", "Read", json!({"file_path": env.path("notes.txt")})),
            tool(
                "b1",
                "Bash",
                json!({"command": "printf '\\033]52;c;aGk=\\007\\033[2J\\302\\233K done\\r\\n'"}),
            ),
        ]))
        .push(answer(&format!("answer {HOSTILE}end")));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--verbose", "--permission-mode", "bypassPermissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    // The command really printed the sequences (the model got them raw).
    let (bash_text, is_error) = server.requests()[1].tool_result_text("b1");
    assert!(!is_error && bash_text.contains("\x1b]52;c;aGk="), "{bash_text:?}");
    assert_no_raw_escape(&out.stderr, "stderr");
    for shown in [
        "reading \\x1b]52;c;cm0gLXJmIH4=\\x07",
        "\\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;owned\\x07\\x1b[2J\\x1b[Hhello",
        "\\x1b]52;c;aGk=\\x07\\x1b[2J\\u{9b}K done",
    ] {
        assert!(out.stderr.contains(shown), "{shown:?} not in {:?}", out.stderr);
    }
    // stdout is a pipe here: the answer is kept byte for byte.
    assert_eq!(out.stdout, format!("answer {HOSTILE}end\n"));
}

#[tokio::test]
async fn a_model_chosen_file_name_is_shown_escaped_in_the_error() {
    let env = Env::new();
    let name = env.work.join("x\x1b]0;pwned\x07\x1b[2J.txt");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool("r1", "Read", json!({"file_path": name}))]))
        .push(answer("ok"));
    let out = env.keel(&server).args(["-p", "x", "--verbose"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (result, is_error) = server.requests()[1].tool_result_text("r1");
    assert!(is_error, "{result}");
    assert_no_raw_escape(&out.stderr, "stderr");
    assert!(out.stderr.contains("✗"), "{:?}", out.stderr);
    assert!(
        out.stderr.contains("x\\x1b]0;pwned\\x07\\x1b[2J.txt"),
        "{:?}",
        out.stderr
    );
}

#[tokio::test]
async fn json_output_carries_no_raw_control_characters() {
    let env = Env::new();
    let hostile = format!("{HOSTILE} csi\u{9b}2J del\u{7f} bidi\u{202e}");
    let server = ModelServer::start().await;
    server.push(answer(&hostile));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--output-format", "json"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        !out.stdout
            .chars()
            .any(|c| c.is_control() && c != '\n' || c == '\u{202e}'),
        "{:?}",
        out.stdout
    );
    assert_eq!(out.json()["result"], hostile.as_str(), "the value is unchanged");
}

#[tokio::test]
async fn startup_errors_show_file_names_escaped() {
    let env = Env::new();
    let missing = env.work.join("set\x1b]0;pwned\x07tings.json");
    let out = env
        .keel_offline()
        .args(["-p", "x", "--settings"])
        .arg(&missing)
        .run()
        .await;
    assert_ne!(out.code, 0);
    assert_no_raw_escape(&out.stderr, "stderr");
    assert!(
        out.stderr.contains("set\\x1b]0;pwned\\x07tings.json"),
        "{:?}",
        out.stderr
    );
}

/// A pseudo-terminal: the controlling side to read from, and the terminal side for keel.
fn pty() -> (std::fs::File, std::fs::File) {
    // SAFETY: plain libc calls on descriptors this function owns; each result is checked.
    unsafe {
        let master = libc::posix_openpt(libc::O_RDWR | libc::O_NOCTTY);
        assert!(master >= 0, "posix_openpt");
        assert_eq!(libc::grantpt(master), 0);
        assert_eq!(libc::unlockpt(master), 0);
        let mut name = [0 as libc::c_char; 128];
        assert_eq!(libc::ptsname_r(master, name.as_mut_ptr(), name.len()), 0);
        let path = std::ffi::CStr::from_ptr(name.as_ptr()).to_str().unwrap().to_string();
        let master = std::fs::File::from(OwnedFd::from_raw_fd(master));
        let slave = std::fs::OpenOptions::new().read(true).write(true).open(path).unwrap();
        (master, slave)
    }
}

#[tokio::test]
async fn the_answer_is_shown_escaped_when_stdout_is_a_terminal() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer(&format!("answer {HOSTILE}end")));
    let (mut master, slave) = pty();
    // The command is dropped at once, so keel holds the only copy of the terminal side.
    let child = env
        .keel(&server)
        .args(["-p", "x"])
        .spawn_with_stdout(Stdio::from(slave));
    // The terminal's output, read until keel (the last holder of its side) is gone.
    let reader = std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once no process holds the terminal side any more.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let out = finish(child).await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let shown = reader.join().unwrap();
    assert_no_raw_escape(&shown, "the terminal");
    assert!(
        shown.contains("answer \\x1b]52;c;cm0gLXJmIH4=\\x07\\x1b]0;owned\\x07\\x1b[2J\\x1b[Hend"),
        "{shown:?}"
    );
}
