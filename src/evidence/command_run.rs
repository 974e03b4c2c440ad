//! After a foreground shell command: what it changed (split by time into its own changes and
//! those made before it outside keel), the runs it made (read from each runner's own report),
//! the weakened tests among its changes, and the run's log.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

impl Evidence {
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn after_command(
        &self,
        plan: &CommandPlan,
        shell_cwd: &Path,
        started_at: std::time::SystemTime,
        after: Snapshot,
        output: &ToolOutput,
        duration_ms: u64,
        known: &(dyn Fn(&Path) -> Option<String> + Sync),
    ) -> Vec<String> {
        let command = plan.line.as_str();
        // Script bodies and report files are read from disk: in one task off the async runtime.
        let (reading, facts) = {
            let (segments, declared, cwd) = (
                plan.segments.clone(),
                self.config.declared.clone(),
                shell_cwd.to_path_buf(),
            );
            tokio::task::spawn_blocking(move || {
                let (reading, bodies) = expand::read_line(&segments, &declared, &cwd);
                let facts = own::facts(&segments, &reading, bodies, &cwd, started_at);
                (reading, facts)
            })
            .await
            .unwrap_or_else(|_| {
                let reading = runners::recognise_split(&plan.segments, &self.config.declared);
                let facts = own::Facts::output_only(&reading);
                (reading, facts)
            })
        };
        let (changes, during) = {
            let mut s = self.lock();
            let changes = s.last.as_ref().map(|b| b.diff(&after)).unwrap_or_default();
            let (during, outside) = split_by_time(&changes, &after, started_at, &s.touched);
            s.touched.clear();
            if !outside.is_empty() {
                s.ledger.change(outside, Source::Outside, false);
            }
            (changes, during)
        };
        let combined = output
            .structured
            .get("stdout")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| output.content.as_text());
        let mut text = combined.clone();
        // `pytest > out.log`: the runner's report went to a file; the log keeps it too.
        let mut kept: Vec<&str> = Vec::new();
        for o in &facts.own {
            if let own::Own::File { path, text: report } = o
                && !kept.contains(&path.as_str())
            {
                kept.push(path);
                text.push_str(&format!("\n--- {path} ---\n{report}"));
            }
        }
        let exit = match output.structured.get("exitCode") {
            Some(Value::Number(n)) => n.as_i64().map(|n| n as i32),
            _ => None,
        };
        let mut read = self.prefetch(&during).await;
        // Where `HEAD` stands after the command, read before the lock is taken.
        let head_now = crate::context::git::head_stamp(&self.cwd);
        let stale = self.stale_target(&reading, (command, &combined), &during, &after).await;
        read.added = changes.added.iter().map(|p| rel_string(p)).collect();
        let mut notes = Vec::new();
        let mut s = self.lock();
        let version_before = s.ledger.version;
        let verification = reading.only_observes && !reading.runs.is_empty();
        let uncertain = changes.uncertain && !reading.only_observes;
        // What a line that only ran checks changed is their by-product (a log, a cache), except
        // what the tests expect or which of them run (a snapshot `jest -u` rewrote): that is work.
        let (work, byproducts): (Vec<String>, Vec<String>) = during
            .iter()
            .cloned()
            .partition(|r| !verification || weakened::rewritten_is_work(Path::new(r)));
        if !byproducts.is_empty() {
            let source = Source::Shell {
                command: command.to_string(),
                verification: true,
            };
            s.ledger.change(byproducts, source, false);
        }
        if !work.is_empty() || uncertain {
            let source = Source::Shell {
                command: command.to_string(),
                verification: false,
            };
            s.ledger.change(work, source, uncertain);
        }
        // A command that never started (refused, not valid) gives no runs.
        let started = output.structured.get("interrupted").is_some();
        let drafts = if started {
            classify::drafts_with(&plan.segments, &reading, &facts, &combined, exit)
        } else {
            Vec::new()
        };
        let mut log: Option<PathBuf> = None;
        let first_run = s.ledger.runs.len();
        for d in drafts {
            let version = match reading.runs.iter().find(|r| r.runner == d.runner && r.kind == d.kind) {
                Some(r) if r.mutation_after => version_before,
                _ => s.ledger.version,
            };
            if log.is_none() {
                log = self.log_path(s.ledger.runs.len() as u32 + 1);
            }
            let run = Run {
                id: 0,
                command: command.to_string(),
                runner_command: d.runner_command,
                runner: d.runner,
                kind: d.kind,
                exit_code: exit,
                runner_exit: d.runner_exit,
                exit_hidden: d.exit_hidden,
                counts: d.counts,
                outcome: d.outcome,
                note: d.note.clone(),
                duration_ms,
                log: log.clone(),
                version,
                at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                subset: subset::of_run(&plan.segments, &reading, d.runner, d.kind),
                stale_target: stale.clone().filter(|_| d.kind == runners::Kind::Test),
            };
            let run = s.ledger.push_run(run);
            if let Some(n) = run_note(run) {
                notes.push(n);
            }
        }
        for rel in &during {
            let path = self.cwd.join(rel);
            let rel = rel.as_str();
            notes.extend(self.check_weakened(
                &mut s.ledger,
                rel,
                &path,
                &format!("shell `{}`", ledger::clip(command, 60)),
                known,
                &read,
            ));
        }
        // Accumulated until taken: a concurrent command (a sub-agent's) must not erase these.
        let new = command_changes(&changes, &during);
        s.command_changes.get_or_insert_default().absorb(new);
        if !changes.is_empty() || s.ledger.digest.is_none() {
            s.ledger.digest = Some(after.digest());
        }
        s.last = Some(after);
        s.last_taken += 1;
        // A command that committed or checked out moved `HEAD`: committed contents are asked
        // anew (and whenever where `HEAD` stands cannot be read).
        if head_now.is_none() || head_now != s.head_stamp {
            s.heads_asked.clear();
        }
        Evidence::hand_up(&mut s);
        drop(s);
        // The runs' output file is written with the lock released; a run whose file could not
        // be written keeps no path to it (a sub-agent's parent keeps the path it was handed).
        if let Some(path) = &log
            && !self.write_log(path, &text)
        {
            Evidence::forget_log(&mut self.lock(), first_run, path);
        }
        notes
    }

    /// The server an old test run talked to (see `targets`): only looked for when the line ran
    /// tests and names a local port.
    async fn stale_target(
        &self,
        reading: &runners::Reading,
        (command, output): (&str, &str),
        own: &[String],
        after: &Snapshot,
    ) -> Option<targets::StaleTarget> {
        if !reading.runs.iter().any(|r| r.kind == runners::Kind::Test) {
            return None;
        }
        let ports = targets::ports_named(&format!("{command}\n{output}"));
        if ports.is_empty() {
            return None;
        }
        // The code's last change: not what this run or earlier checks wrote (caches, logs).
        let mut skip: HashSet<String> = own.iter().cloned().collect();
        for c in &self.lock().ledger.changes {
            for p in &c.paths {
                if c.is_work() {
                    skip.remove(p);
                } else if matches!(c.source, Source::Shell { verification: true, .. }) {
                    skip.insert(p.clone());
                }
            }
        }
        let (newest, path) = after
            .iter()
            .filter(|(p, _)| !targets::is_cache(p) && !skip.contains(&rel_string(p)))
            .max_by_key(|(_, s)| s.mtime_ns)
            .map(|(p, s)| (s.mtime_ns, rel_string(p)))?;
        let changed = std::time::UNIX_EPOCH + std::time::Duration::from_nanos(u64::try_from(newest).ok()?);
        let root = self.cwd.clone();
        tokio::task::spawn_blocking(move || targets::stale_target(&ports, &root, (changed, &path)))
            .await
            .ok()
            .flatten()
    }
}

/// A change whose inode changed this long before the command started still counts as the
/// command's (the kernel stamps change times from a coarse clock).
const CLOCK_SLACK_NS: i64 = 10_000_000;

/// Splits what changed since the last fingerprint into what the command did (changed at or
/// after its start) and what happened before it, outside keel's tools (files keel's Edit and
/// Write changed in between are already recorded). A file keel's tool wrote that still has the
/// stamp it had right after that write was not changed by the command, however close to its
/// start the write was (within the clock slack). A removed file has no time left; it counts as
/// the command's.
fn split_by_time(
    changes: &crate::workspace::Changes,
    after: &Snapshot,
    started_at: std::time::SystemTime,
    touched: &HashMap<String, Option<Stamp>>,
) -> (Vec<String>, Vec<String>) {
    let start_ns = started_at
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
        - CLOCK_SLACK_NS;
    let (mut during, mut outside) = (Vec::new(), Vec::new());
    for p in changes.added.iter().chain(&changes.modified) {
        let rel = rel_string(p);
        let ours = touched.get(&rel);
        match after.get(p) {
            Some(stamp) if ours.is_some_and(|o| o.as_ref() == Some(stamp)) => {}
            Some(stamp) if stamp.ctime_ns >= start_ns => during.push(rel),
            _ if ours.is_some() => {}
            _ => outside.push(rel),
        }
    }
    for p in &changes.removed {
        let rel = rel_string(p);
        if !touched.contains_key(&rel) {
            during.push(rel);
        }
    }
    (during, outside)
}
