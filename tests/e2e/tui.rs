//! The interactive TUI, driven through tmux against the scripted model server: type, watch
//! streamed text and tool cells, interrupt, run shell lines and commands, exit cleanly.

use std::time::Duration;

use serde_json::json;

use crate::support::server::Reply;
use crate::support::sse::{answer, calls, frames, text, tool};
use crate::support::tmux::Tmux;
use crate::support::{Env, ModelServer};

const W: u16 = 100;
const H: u16 = 30;

/// A long answer streamed slowly, so it can be interrupted mid-way.
fn slow_story(words: usize) -> Reply {
    let story: String = (0..words).map(|i| format!("story-word-{i} ")).collect();
    Reply::Sse {
        chunks: frames(&[text(&story)], "end_turn", 100, 300),
        pace: Duration::from_millis(100),
    }
}

/// The terminal is back to normal: no alternate screen, no mouse reporting.
fn assert_restored(t: &Tmux) {
    assert_eq!(
        t.format("#{alternate_on}"),
        "0",
        "alternate screen left on:\n{}",
        t.screen()
    );
    assert_eq!(t.format("#{mouse_any_flag}"), "0", "mouse reporting left on");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prompt_streams_runs_a_tool_interrupts_and_exits_cleanly() {
    let env = Env::new();
    env.write("notes.txt", "milk\n");
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            text("I will look for text files."),
            tool("g1", "Glob", json!({"pattern": "*.txt"})),
        ]))
        .push(answer("There is one text file: notes.txt."))
        .push(slow_story(300))
        .push(answer("Back again."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;

    // A prompt: streamed text, a tool cell with its key argument and result, the answer.
    t.type_text("find the text files");
    t.press(&["Enter"]);
    let s = t.wait_for_text("There is one text file: notes.txt.").await;
    assert!(s.contains("› find the text files"), "{s}");
    assert!(s.contains("I will look for text files."), "{s}");
    assert!(s.contains("✓ Glob(*.txt)"), "{s}");
    assert!(
        s.lines()
            .any(|l| l.trim_start().starts_with("└") && l.trim_end().ends_with("/notes.txt")),
        "{s}"
    );

    // Esc interrupts a streaming answer.
    t.type_text("tell me a long story");
    t.press(&["Enter"]);
    t.wait_for_text("story-word-3 ").await;
    t.press(&["Escape"]);
    let s = t.wait_for_text("Interrupted").await;
    assert!(!s.contains("story-word-299"), "{s}");

    // A shell line runs directly and its output joins the conversation.
    t.type_text("!echo shell-$((40+2))");
    t.press(&["Enter"]);
    t.wait_for_text("└ shell-42").await;

    t.type_text("are you there?");
    t.press(&["Enter"]);
    t.wait_for_text("Back again.").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3].body.to_string();
    assert!(last.contains("[Request interrupted by user]"), "{last}");
    assert!(last.contains("<bash-input>echo shell-$((40+2))</bash-input>"), "{last}");
    assert!(last.contains("shell-42"), "{last}");
    assert!(last.contains("are you there?"), "{last}");
    // The interrupted stream was abandoned, not read to its end.
    assert_eq!(server.abandoned(), 1);

    // Ctrl+D on an empty prompt exits; the terminal is restored; the session can be resumed.
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0, "{}", t.screen());
    assert_restored(&t);
    // tmux's "Pane is dead" line may scroll the message into the history.
    let s = t.screen_with_history();
    let transcripts = env.transcripts();
    assert_eq!(transcripts.len(), 1);
    let id = transcripts[0].file_stem().unwrap().to_str().unwrap();
    assert!(s.contains(&format!("keel --resume {id}")), "{s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_mentions_queue_and_modes() {
    let env = Env::new();
    env.write("notes.txt", "remember the milk\n");
    env.write(
        ".claude/commands/greet.md",
        "---\ndescription: Greet someone\n---\nSay hello to $ARGUMENTS.\n",
    );
    let server = ModelServer::start().await;
    server
        .push(slow_story(80))
        .push(answer("Hello Ada!"))
        .push(answer("It says to remember the milk."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;

    // A prompt typed while keel works is queued and runs after the turn.
    t.type_text("warm up");
    t.press(&["Enter"]);
    t.wait_for_text("story-word-1 ").await;
    t.type_text("/gr");
    t.wait_for_text("Greet someone").await;
    t.press(&["Tab"]);
    t.type_text("Ada");
    t.press(&["Enter"]);
    t.wait_for_text("queued: /greet Ada").await;
    t.wait_for_text("Hello Ada!").await;
    let requests = server.requests();
    let greet = &requests[1].messages().last().unwrap()["content"];
    assert!(greet.to_string().contains("Say hello to Ada."), "{greet}");

    // `@path` completes and attaches the file.
    t.type_text("what does @note");
    t.wait_for_text("@notes.txt").await;
    t.press(&["Tab"]);
    t.type_text("say?");
    t.press(&["Enter"]);
    t.wait_for_text("remember the milk.").await;
    let sent = server.requests()[2].messages().last().unwrap()["content"].to_string();
    assert!(sent.contains("what does @notes.txt say?"), "{sent}");
    assert!(sent.contains("1\\tremember the milk"), "{sent}");

    // Local commands, mode cycling, the todo panel.
    t.type_text("/cost");
    t.press(&["Enter"]);
    t.wait_for_text("Total cost: $").await;
    t.press(&["BTab"]);
    t.wait_for_text("mode acceptEdits").await;
    t.press(&["C-t"]);
    t.wait_for_text("No todos yet.").await;

    // Ctrl+C twice exits.
    t.press(&["C-c"]);
    t.wait_for_text("Press Ctrl+C again to exit").await;
    t.press(&["C-c"]);
    assert_eq!(t.wait_exit().await, 0);
    assert_restored(&t);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_terminal_message_and_sigterm_restore_the_terminal() {
    let env = Env::new();
    let server = ModelServer::start().await;
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.resize(30, 6);
    t.wait_for_text("Terminal too small").await;
    t.resize(W, H);
    t.wait_for_text("Ask keel").await;
    let pid = t.keel_pid();
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(t.wait_exit().await, 143);
    assert_restored(&t);
}

/// Approval of shell commands through the modal: the permission engine asks for each Bash
/// call (default mode); one is approved and runs, the other is denied with feedback that
/// reaches the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_and_denying_a_command() {
    let env = Env::new();
    // A Notification hook hears about each permission prompt.
    env.write(
        ".claude/settings.json",
        &json!({"hooks": {"Notification": [{"matcher": "permission_prompt", "hooks": [{"type": "command",
            "command": "cat >> \"$CLAUDE_PROJECT_DIR/notifications.jsonl\"; echo >> \"$CLAUDE_PROJECT_DIR/notifications.jsonl\""}]}]}})
        .to_string(),
    );
    env.trust_work();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "echo approved > out.txt"}),
        )]))
        .push(calls(vec![tool("b2", "Bash", json!({"command": "touch denied.txt"}))]))
        .push(answer("All done."));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("write the file");
    t.press(&["Enter"]);
    // The dialog answers keys once nothing was typed for a moment.
    let s = t.wait_for_text("Enter to choose").await;
    assert!(s.contains("echo approved > out.txt"), "{s}");
    t.press(&["1"]);
    // The first dialog may still be on screen for a moment: wait for the second one, armed.
    let s = t
        .wait_for("the second permission dialog", |s| {
            s.contains("$ touch denied.txt") && s.contains("Enter to choose")
        })
        .await;
    assert!(s.contains("touch denied.txt"), "{s}");
    t.press(&["Tab"]);
    t.type_text("do not create files");
    t.press(&["Enter"]);
    t.wait_for_text("All done.").await;
    assert_eq!(std::fs::read_to_string(env.path("out.txt")).unwrap(), "approved\n");
    assert!(!env.path("denied.txt").exists());
    let (denial, is_error) = server.requests()[2].tool_result_text("b2");
    assert!(is_error);
    assert!(denial.contains("do not create files"), "{denial}");
    let notes: Vec<serde_json::Value> = std::fs::read_to_string(env.path("notifications.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(notes.len(), 2, "{notes:?}");
    assert_eq!(notes[0]["hook_event_name"], "Notification");
    assert_eq!(notes[0]["notification_type"], "permission_prompt");
    assert!(notes[0]["message"].as_str().unwrap().contains("Bash"));
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_without_an_id_opens_the_session_picker() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("noted"));
    let out = env.keel(&server).args(["-p", "an earlier question"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let t = Tmux::start(&env, &server, &["--resume"], W, H);
    let s = t.wait_for_text("Resume a session").await;
    assert!(s.contains("an earlier question"), "{s}");
}

/// Prompts are kept per project across sessions: the next session finds one with Ctrl+R, and
/// Ctrl+G hands the prompt to `$EDITOR` (a real program here) and takes back what it saved.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_r_finds_an_earlier_sessions_prompt_and_ctrl_g_edits_it_in_the_editor() {
    let env = Env::new();
    let server = ModelServer::start().await;
    server.push(answer("first-answer")).push(answer("second-answer"));
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    t.type_text("fix the parser");
    t.press(&["Enter"]);
    t.wait_for_text("first-answer").await;
    // Ctrl+L repaints from scratch and keel goes on.
    t.press(&["C-l"]);
    t.type_text("still here");
    let s = t.wait_for_text("› still here").await;
    assert!(s.contains("first-answer"), "{s}");
    t.press(&["C-c"]);
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0, "{}", t.screen());

    // The editor appends to the file it is given, as a person would.
    let editor = env.home.join("append-editor.sh");
    std::fs::write(&editor, "#!/bin/sh\nprintf ' and its tests\\n' >> \"$1\"\n").unwrap();
    let mut perms = std::fs::metadata(&editor).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&editor, perms).unwrap();
    let t = Tmux::start_with(&env, &server, &[], W, H, &[("EDITOR", editor.display().to_string())]);
    t.wait_for_text("Ask keel").await;
    t.press(&["C-r"]);
    t.type_text("pars");
    let s = t.wait_for_text("search history: pars").await;
    assert!(s.contains("fix the parser"), "{s}");
    t.press(&["Enter"]);
    let s = t.wait_for_text("› fix the parser").await;
    assert!(!s.contains("search history"), "{s}");
    t.press(&["C-g"]);
    t.wait_for_text("fix the parser and its tests").await;
    t.press(&["Enter"]);
    t.wait_for_text("second-answer").await;
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let last = requests[1].body.to_string();
    assert!(last.contains("fix the parser and its tests"), "{last}");
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0, "{}", t.screen());
}

/// keel waits for the editor `/memory` opened; a signal from outside cannot be acted on while
/// it does (the editor here ignores signals and never ends). The first SIGTERM is held for a
/// graceful shutdown; the second ends keel at once, terminal restored.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_ends_a_stuck_tui() {
    use crate::support::procs::{alive, unique_sleep, wait_until_running};
    let env = Env::new();
    let marker = unique_sleep();
    let editor = env.home.join("stuck-editor.sh");
    std::fs::write(&editor, format!("trap '' INT TERM HUP\nexec sleep {marker}\n")).unwrap();
    let server = ModelServer::start().await;
    let visual = format!("sh {}", editor.display());
    let t = Tmux::start_with(&env, &server, &[], W, H, &[("VISUAL", visual)]);
    t.wait_for_text("Ask keel").await;
    let pid = nix::unistd::Pid::from_raw(t.keel_pid());
    t.type_text("/memory");
    t.press(&["Enter"]);
    wait_until_running(&marker).await;
    // Taken (its handler ran) before the second is sent, so the two cannot merge into one.
    crate::support::procs::signal_and_wait_taken(pid.as_raw(), nix::sys::signal::Signal::SIGTERM).await;
    assert!(
        crate::support::procs::running(pid.as_raw()),
        "keel was not stuck after all (the test needs it to be)"
    );
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    assert_eq!(t.wait_exit().await, 143);
    assert_restored(&t);
    // The editor is the user's program: keel leaves it be; the test ends it.
    for line in alive(&marker) {
        if let Some(p) = line.split_whitespace().next().and_then(|p| p.parse().ok()) {
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(p), nix::sys::signal::Signal::SIGKILL);
        }
    }
}

/// keel blocks in a write to the terminal (the terminal stopped reading: its tmux server is
/// stopped while an answer scrolls the screen), so the first SIGTERM cannot be acted on. The
/// second ends keel from the signal handler while the terminal is still stopped, and the
/// terminal's settings (raw mode) are put back; the screen-mode bytes cannot reach a terminal
/// that does not read, and keel does not wait for it longer than about a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_sigterm_ends_keel_stuck_writing_to_the_terminal() {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    let env = Env::new();
    let server = ModelServer::start().await;
    // One line per delta: every frame scrolls the whole screen.
    let lines: String = (0..10_000).map(|i| format!("scrolling line-{i}\n")).collect();
    server.push(Reply::Sse {
        chunks: frames(&[text(&lines)], "end_turn", 100, 300),
        pace: Duration::from_millis(2),
    });
    let t = Tmux::start(&env, &server, &[], W, H);
    t.wait_for_text("Ask keel").await;
    let pid = Pid::from_raw(t.keel_pid());
    let tmux_server = Pid::from_raw(t.format("#{pid}").parse().unwrap());
    let tty = t.format("#{pane_tty}");
    t.type_text("scroll");
    t.press(&["Enter"]);
    t.wait_for_text("scrolling line-").await;
    kill(tmux_server, Signal::SIGSTOP).unwrap();
    // Until the terminal's buffer is full and keel's write blocks.
    let mut stuck = false;
    let mut seen = Vec::new();
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .map(|t| std::fs::read_to_string(t.path().join("wchan")).unwrap_or_default())
                    .collect()
            })
            .unwrap_or_default();
        // A write to a terminal with no room waits in `wait_woken` (n_tty_write).
        if seen
            .iter()
            .any(|w: &String| w.contains("wait_woken") || w.contains("tty"))
        {
            stuck = true;
            break;
        }
    }
    let alive = |pid| {
        kill(pid, None).is_ok()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| s.contains(") Z"))
    };
    if !stuck {
        kill(tmux_server, Signal::SIGCONT).unwrap();
        panic!("keel never blocked writing to the terminal; the test needs it to: {seen:?}");
    }
    crate::support::procs::signal_and_wait_taken(pid.as_raw(), Signal::SIGTERM).await;
    // Still stuck in the write once the handler ran, or gone.
    let first_ended = !crate::support::procs::wait_until_waiting_in(pid.as_raw(), &["wait_woken", "tty"]).await;
    kill(pid, Signal::SIGTERM).unwrap_or(());
    let mut gone = false;
    for _ in 0..100 {
        if !alive(pid) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stty = std::process::Command::new("stty")
        .args(["-F", &tty, "-a"])
        .output()
        .unwrap();
    kill(tmux_server, Signal::SIGCONT).unwrap();
    assert!(!first_ended, "keel was not stuck after all (the test needs it to be)");
    assert!(
        gone,
        "the second signal did not end keel while the terminal was stopped"
    );
    let modes = String::from_utf8_lossy(&stty.stdout);
    let words: Vec<&str> = modes.split_whitespace().collect();
    for m in ["icanon", "echo", "isig"] {
        assert!(words.contains(&m), "`{m}` is not back on the terminal:\n{modes}");
    }
    assert_eq!(t.wait_exit().await, 143);
}

/// `/rewind` in the TUI (listed with Esc Esc on the empty prompt) takes back what a shell
/// command did, byte for byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn esc_esc_lists_points_and_rewind_restores_a_shell_change() {
    let env = Env::new();
    let original = "line one\r\nzwei \u{e9}\n";
    env.write("data.txt", original);
    let server = ModelServer::start().await;
    server
        .push(calls(vec![tool(
            "b1",
            "Bash",
            json!({"command": "sed -i 's/one/ONE/' data.txt && rm -f gone.txt && echo new > made.txt && sed -i 's/z/Z/' big.txt"}),
        )]))
        .push(answer("Changed it."));
    env.write("gone.txt", "precious\n");
    env.write("big.txt", &"z".repeat(2000));
    // Room for the small files: big.txt is beyond the undo budget.
    let budget = [("KEEL_CHECKPOINT_SHELL_BYTES", "500".to_string())];
    let t = Tmux::start_with(
        &env,
        &server,
        &["--permission-mode", "bypassPermissions"],
        W,
        H,
        &budget,
    );
    t.wait_for_text("Ask keel").await;
    t.type_text("change the data");
    t.press(&["Enter"]);
    t.wait_for_text("Changed it.").await;
    assert_ne!(std::fs::read_to_string(env.path("data.txt")).unwrap(), original);
    // Two presses as a person makes them (sent together, a terminal reads them as Alt+Esc).
    t.press(&["Escape"]);
    tokio::time::sleep(Duration::from_millis(200)).await;
    t.press(&["Escape"]);
    // The points picker says what cannot be restored; Esc closes it for the typed commands.
    t.wait_for_text("4 files changed since (1 not restorable").await;
    t.press(&["Escape"]);
    // Apart from the typing that follows, or a busy terminal reads Esc and `/` as Alt+/.
    tokio::time::sleep(Duration::from_millis(200)).await;
    t.type_text("/rewind 1 preview");
    t.press(&["Enter"]);
    t.wait_for_text("not restorable (changed by a shell command), left as it is:")
        .await;
    assert_ne!(
        std::fs::read_to_string(env.path("data.txt")).unwrap(),
        original,
        "a preview changes nothing"
    );
    t.type_text("/rewind 1 code");
    t.press(&["Enter"]);
    t.wait_for_text("3 file(s) restored").await;
    assert_eq!(std::fs::read_to_string(env.path("data.txt")).unwrap(), original);
    assert_eq!(std::fs::read_to_string(env.path("gone.txt")).unwrap(), "precious\n");
    assert!(!env.path("made.txt").exists());
    assert!(
        std::fs::read_to_string(env.path("big.txt")).unwrap().starts_with('Z'),
        "left as it is"
    );
    t.press(&["C-d"]);
    assert_eq!(t.wait_exit().await, 0);
}
