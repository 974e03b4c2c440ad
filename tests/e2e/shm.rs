//! `/dev/shm` inside the write sandbox and the jail is the command's own: what the host keeps
//! there is out of sight, what the command leaves there goes with it, and shared memory still
//! works.

use serde_json::json;

use crate::support::host;
use crate::support::skip::{Lack, or_skip};
use crate::support::sse::{answer, calls, tool};
use crate::support::{Env, ModelServer};

/// A file in the host's `/dev/shm` for the length of a test.
struct HostShm(std::path::PathBuf);

impl HostShm {
    fn new(tag: &str) -> Result<HostShm, Lack> {
        let p = std::path::PathBuf::from(format!("/dev/shm/keel-test-{}-{tag}", std::process::id()));
        std::fs::write(&p, "host secret\n")
            .map_err(|e| Lack::host(format!("the host has no writable /dev/shm ({e})")))?;
        Ok(HostShm(p))
    }

    fn name(&self) -> String {
        self.0.file_name().unwrap().to_string_lossy().into_owned()
    }
}

impl Drop for HostShm {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[tokio::test]
async fn the_write_sandbox_has_a_dev_shm_of_its_own() {
    or_skip!(host::write_sandbox());
    let host = or_skip!(HostShm::new("host"));
    let inside = format!("/dev/shm/keel-test-{}-inside", std::process::id());
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("list", "Bash", json!({"command": "ls -a /dev/shm; echo listed"})),
            tool("read", "Bash", json!({"command": format!("cat {}", host.0.display())})),
            tool(
                "write",
                "Bash",
                json!({"command": format!("echo mine > {inside} && cat {inside}")}),
            ),
            tool(
                "shared",
                "Bash",
                json!({"command": "python3 -c 'import multiprocessing.shared_memory as s; m = s.SharedMemory(create=True, size=1024); m.buf[0] = 7; print(\"shared\", m.buf[0]); m.close(); m.unlink()'"}),
            ),
        ]))
        .push(answer("done"));
    let out = env
        .keel(&server)
        .args(["-p", "x", "--sandbox", "--dangerously-skip-permissions"])
        .run()
        .await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    let (text, _) = req.tool_result_text("list");
    assert!(text.contains("listed") && !text.contains(&host.name()), "{text}");
    let (text, is_error) = req.tool_result_text("read");
    assert!(is_error && !text.contains("host secret"), "{text}");
    let (text, is_error) = req.tool_result_text("write");
    assert!(!is_error && text == "mine", "{text}");
    assert!(
        !std::path::Path::new(&inside).exists(),
        "the command's /dev/shm file reached the host's"
    );
    let (text, is_error) = req.tool_result_text("shared");
    assert!(!is_error && text == "shared 7", "{text}");
    assert_eq!(std::fs::read_to_string(&host.0).unwrap(), "host secret\n");
}

/// A read-only command keel approves on its own cannot see the host's `/dev/shm` either; as
/// root it has one of its own.
#[tokio::test]
async fn the_jail_does_not_see_the_hosts_dev_shm() {
    or_skip!(host::jail());
    let host = or_skip!(HostShm::new("jail"));
    let env = Env::new();
    let server = ModelServer::start().await;
    server
        .push(calls(vec![
            tool("list", "Bash", json!({"command": "ls -a /dev/shm"})),
            tool("read", "Bash", json!({"command": format!("cat {}", host.0.display())})),
        ]))
        .push(answer("done"));
    // An added directory, so keel approves reading it on its own, in the jail.
    let out = env.keel(&server).args(["-p", "x", "--add-dir", "/dev/shm"]).run().await;
    assert_eq!(out.code, 0, "{}", out.stderr);
    let req = &server.requests()[1];
    let (text, is_error) = req.tool_result_text("list");
    assert!(!text.contains(&host.name()), "{text}");
    // As root the jail has a user namespace, and so a mount namespace and a `/dev/shm` of its
    // own, empty; otherwise Landlock keeps `/dev/shm` closed.
    if nix::unistd::geteuid().is_root() {
        assert!(!is_error, "{text}");
    }
    let (text, is_error) = req.tool_result_text("read");
    assert!(is_error && !text.contains("host secret"), "{text}");
}
