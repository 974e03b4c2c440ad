//! What this machine's kernel lets keel enforce, as keel's own probe (`keel __sandbox-exec
//! --probe`) reports it, and the checks the confinement tests skip on (properties of the host,
//! never fatal: see `skip`).

use std::sync::OnceLock;

use serde_json::Value;

use super::skip::Lack;

/// The probe's answer, asked once per run.
pub fn probe() -> &'static Value {
    static CAPS: OnceLock<Value> = OnceLock::new();
    CAPS.get_or_init(|| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_keel"))
            .args(["__sandbox-exec", "--probe"])
            .output()
            .expect("run keel's sandbox probe");
        serde_json::from_slice(&out.stdout).expect("the probe prints JSON")
    })
}

fn has(key: &str) -> bool {
    probe()[key] == true
}

/// The probe's own words for what is missing, for the skip's reason.
fn problems() -> String {
    let list: Vec<&str> = probe()["problems"]
        .as_array()
        .map(|p| p.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if list.is_empty() {
        String::new()
    } else {
        format!(" ({})", list.join("; "))
    }
}

/// The write sandbox: Landlock, seccomp and a mount namespace.
pub fn write_sandbox() -> Result<(), Lack> {
    if has("filesystem") && has("seccomp") && has("mount_namespace") {
        Ok(())
    } else {
        Err(Lack::host(format!(
            "this kernel cannot enforce the write sandbox{}",
            problems()
        )))
    }
}

/// The read-only jail of read-only commands.
pub fn jail() -> Result<(), Lack> {
    if has("jail") {
        Ok(())
    } else {
        Err(Lack::host(format!(
            "this kernel cannot provide the read-only jail{}",
            problems()
        )))
    }
}

/// Landlock and seccomp (the sandbox without asking for a mount namespace).
pub fn landlock_and_seccomp() -> Result<(), Lack> {
    if has("filesystem") && has("seccomp") {
        Ok(())
    } else {
        Err(Lack::host(format!(
            "this kernel cannot enforce Landlock and seccomp{}",
            problems()
        )))
    }
}

/// Landlock and a mount namespace.
pub fn landlock_and_mounts() -> Result<(), Lack> {
    if has("filesystem") && has("mount_namespace") {
        Ok(())
    } else {
        Err(Lack::host(format!(
            "this kernel gives no Landlock or no mount namespace{}",
            problems()
        )))
    }
}

/// Landlock and a network namespace.
pub fn landlock_and_network_namespace() -> Result<(), Lack> {
    if has("filesystem") && has("network_namespace") {
        Ok(())
    } else {
        Err(Lack::host(format!(
            "this kernel gives no Landlock or no network namespace{}",
            problems()
        )))
    }
}

/// A private tmpfs in a user and mount namespace (`unshare -rm`), for the full-disk tests.
/// Without the `unshare` program that is a missing tool; with it, the kernel's refusal.
pub fn private_mounts() -> Result<(), Lack> {
    super::skip::program("unshare", "--version")?;
    let ok = std::process::Command::new("unshare")
        .args(["-rm", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Ok(())
    } else {
        Err(Lack::host(
            "this kernel lets no test mount a private tmpfs (unshare -rm: user and mount namespaces)",
        ))
    }
}
