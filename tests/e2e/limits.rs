//! Every shell command runs with bounded processes and memory (`sandbox.limits`), and the model
//! is told when a command hit a limit.

use serde_json::json;

use crate::support::host;
use crate::support::skip::{Lack, or_skip, skip, skip_part};
use crate::support::sse::tool;
use crate::support::{Env, run_steps};

fn support() -> keel::sandbox::cgroup::Support {
    keel::sandbox::cgroup::support()
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// A loop that starts 100 processes under a limit of 20: starting more fails, and the result
/// says which limit it was and its value.
#[tokio::test]
async fn a_command_past_its_process_limit_is_told_so() {
    let s = support();
    if s.processes.is_none() && is_root() {
        // The RLIMIT path is tested by the_process_rlimit_bounds_commands_without_a_pids_cgroup.
        return skip(Lack::host(
            "no pids cgroup controller for keel and the kernel does not apply RLIMIT_NPROC to root: nothing \
             bounds a command's processes here",
        ));
    }
    let env = Env::new();
    env.write(
        ".keel/settings.json",
        r#"{"sandbox": {"limits": {"maxProcesses": 20}}}"#,
    );
    let (out, last) = run_steps(
        &env,
        vec![vec![
            tool(
                "bomb",
                "Bash",
                // bash retries a failed fork for a while: the timeout ends it.
                json!({"command": "for i in $(seq 100); do sleep 5 & done; wait", "timeout": 8000}),
            ),
            tool("after", "Bash", json!({"command": "echo fine"})),
        ]],
    )
    .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (text, is_error) = last.tool_result_text("bomb");
    assert!(is_error, "{text}");
    assert!(
        text.contains("limit of 20 processes") && text.contains("sandbox.limits.maxProcesses"),
        "{text}"
    );
    let (text, is_error) = last.tool_result_text("after");
    assert!(
        !is_error && text == "fine",
        "the next command has its own count: {text}"
    );
}

/// A program allocating 300 MiB under a limit of 100 MiB is killed, and the result says it was
/// the memory limit — in the write sandbox too.
#[tokio::test]
async fn a_command_past_its_memory_limit_is_killed_and_told_so() {
    if support().memory.is_none() {
        return skip(Lack::host(
            "no memory cgroup controller for keel (cgroup v2 delegation or a writable v1 memory hierarchy)",
        ));
    }
    or_skip!(crate::support::skip::python3());
    let env = Env::new();
    env.write(
        ".keel/settings.json",
        r#"{"sandbox": {"limits": {"maxMemoryMiB": 100}}}"#,
    );
    let alloc = "python3 -c 'b = bytearray(300 * 1024 * 1024); print(len(b))'";
    let server = crate::support::ModelServer::start().await;
    server
        .push(crate::support::sse::calls(vec![
            tool("big", "Bash", json!({"command": alloc})),
            tool(
                "small",
                "Bash",
                json!({"command": "python3 -c 'print(len(bytearray(10 << 20)))'"}),
            ),
        ]))
        .push(crate::support::sse::answer("done"));
    let mut keel = env.keel(&server);
    keel.args(["-p", "x", "--dangerously-skip-permissions"]);
    match host::write_sandbox() {
        Ok(()) => {
            keel.arg("--sandbox");
        }
        Err(lack) => skip_part(lack, "the limit inside the write sandbox"),
    }
    let out = keel.run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    let (text, is_error) = req.tool_result_text("big");
    assert!(is_error && !text.contains("314572800"), "{text}");
    assert!(
        text.contains("memory limit of 100 MiB") && text.contains("sandbox.limits.maxMemoryMiB"),
        "{text}"
    );
    let (text, is_error) = req.tool_result_text("small");
    assert!(!is_error && text == "10485760", "{text}");
}

/// Where no pids cgroup is available (here: the helper runs as an unprivileged user, who may
/// not write the cgroup hierarchies), `RLIMIT_NPROC` bounds the command's processes through
/// the real helper.
#[test]
fn the_process_rlimit_bounds_commands_without_a_pids_cgroup() {
    // dash gives up at the first fork that fails; each start is counted before that.
    let script = "i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); echo started=$i; done";
    let helper = [
        env!("CARGO_BIN_EXE_keel"),
        "__sandbox-exec",
        "--cap",
        "1048576",
        "--max-procs",
        "20",
        "--kind",
        "none",
        "--",
        "/bin/sh",
        "-c",
        script,
    ];
    let mut cmd = if is_root() {
        // An unprivileged user: the kernel does not apply RLIMIT_NPROC to root, and the user
        // cannot write the cgroup hierarchies, so the helper must fall back to the rlimit.
        let mut c = std::process::Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(helper);
        c
    } else {
        if support().processes.is_some() {
            // It is tested where no pids controller is available, or as root through an
            // unprivileged user.
            return skip(Lack::host(
                "a pids cgroup bounds commands for this user, so the RLIMIT_NPROC fallback is not used",
            ));
        }
        let mut c = std::process::Command::new(helper[0]);
        c.args(&helper[1..]);
        c
    };
    let out = cmd.current_dir("/").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let started = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("started=")?.parse::<usize>().ok())
        .max()
        .unwrap_or(0);
    assert!(stdout.contains("Cannot fork"), "{stdout}");
    // 20 at most, the helper and the shell among them.
    assert!(
        (1..=18).contains(&started),
        "{started} processes started under a limit of 20: {stdout}"
    );
}

/// `keel doctor` says which limits are in force on this machine, and by what.
#[test]
fn doctor_names_the_limits_in_force() {
    let env = Env::new();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
        .arg("doctor")
        .current_dir(&env.work)
        .env("HOME", &env.home)
        .env("KEEL_HOME", env.home.join(".keel"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let s = support();
    let procs = text
        .lines()
        .find(|l| l.contains("processes per command"))
        .unwrap_or_else(|| panic!("{text}"));
    let memory = text
        .lines()
        .find(|l| l.contains("memory per command"))
        .unwrap_or_else(|| panic!("{text}"));
    match s.processes {
        Some(by) => assert!(procs.contains("4096") && procs.contains(by), "{procs}"),
        None if is_root() => assert!(procs.contains("NOT bounded"), "{procs}"),
        None => assert!(procs.contains("RLIMIT_NPROC"), "{procs}"),
    }
    match s.memory {
        Some(by) => assert!(memory.contains("MiB") && memory.contains(by), "{memory}"),
        None => assert!(memory.contains("unbounded"), "{memory}"),
    }
}
