//! What the pipeline does around every tool call besides running it: the evidence ledger and
//! shell undo, run as observers in the order declared here. Their data passes explicitly
//! through an [`Observation`]: shell undo reuses the ledger's fingerprint before a command and
//! logs the changes the ledger found after it, so the ledger comes first both times.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use super::SessionServices;
use crate::evidence::{CommandChanges, Watch};
use crate::sandbox::Confinement;
use crate::shell::plan::CommandPlan;
use crate::types::tool::{Effects, ToolOutput};

/// One observer of tool calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Observer {
    /// The verification ledger: fingerprints before a command, records runs and changes after.
    Evidence,
    /// Undo for shell commands: copies files before a writing command, logs its changes after.
    ShellUndo,
}

/// The order observers see a call before it runs.
pub const BEFORE: &[Observer] = &[Observer::Evidence, Observer::ShellUndo];
/// The order observers see a call after it ran.
pub const AFTER: &[Observer] = &[Observer::Evidence, Observer::ShellUndo];

/// What the observers learnt before a call, and hand each other after it.
pub struct Observation {
    watch: Watch,
    /// The call is a foreground shell command whose changes shell undo logs.
    shell_undo: bool,
    /// What the command changed, as the ledger found it (for shell undo).
    changes: Option<CommandChanges>,
}

/// Runs the [`BEFORE`] observers for a call of `tool` with `input`.
pub async fn before(
    services: &SessionServices,
    tool: &str,
    effects: Effects,
    input: &Value,
    plan: Option<Arc<CommandPlan>>,
    confinement: Confinement,
) -> Observation {
    let mut obs = Observation {
        watch: Watch::None,
        shell_undo: false,
        changes: None,
    };
    for o in BEFORE {
        match o {
            Observer::Evidence => {
                obs.watch = services
                    .evidence
                    .before(tool, effects, input, plan.clone(), &services.shell.cwd())
                    .await;
            }
            Observer::ShellUndo => {
                obs.shell_undo = crate::checkpoint::shell::before(
                    &services.cwd,
                    &services.checkpoints,
                    &services.evidence,
                    &obs.watch,
                    confinement,
                )
                .await;
            }
        }
    }
    obs
}

/// Runs the [`AFTER`] observers on a call's output; `known` gives the text the model saw of a
/// file (the ledger compares test files against it).
pub async fn after(
    services: &SessionServices,
    mut obs: Observation,
    output: &mut ToolOutput,
    known: &(dyn Fn(&Path) -> Option<String> + Sync),
) {
    for o in AFTER {
        match o {
            Observer::Evidence => {
                let watch = std::mem::replace(&mut obs.watch, Watch::None);
                services.evidence.after(watch, output, known).await;
                obs.changes = services.evidence.take_command_changes();
            }
            Observer::ShellUndo => {
                if obs.shell_undo {
                    let changes = obs.changes.take();
                    crate::checkpoint::shell::after(&services.cwd, &services.checkpoints, changes, output).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shell undo depends on the ledger on both sides: the ledger's fingerprint before a
    /// command, the ledger's list of its changes after it.
    #[test]
    fn the_ledger_observes_before_shell_undo_on_both_sides() {
        let pos = |list: &[Observer], o| list.iter().position(|x| *x == o);
        for list in [BEFORE, AFTER] {
            assert_eq!(list.len(), 2, "every observer runs once");
            assert!(pos(list, Observer::Evidence) < pos(list, Observer::ShellUndo));
        }
    }

    /// One reading of a command line per call: the ledger and shell undo see the plan the
    /// permission check was made on, not a parse of their own.
    #[tokio::test]
    async fn the_ledger_keeps_the_calls_own_command_plan() {
        let dir = tempfile::tempdir().unwrap();
        let services = SessionServices::builder(dir.path().into(), dir.path().join("s")).build();
        let line = "ls && grep -c x a.txt";
        let plan = CommandPlan::new(line);
        let obs = before(
            &services,
            "Bash",
            Effects::RUNS,
            &serde_json::json!({"command": line}),
            Some(plan.clone()),
            Confinement::ReadOnly,
        )
        .await;
        let Watch::Bash { plan: seen, .. } = &obs.watch else {
            panic!("a foreground command is watched");
        };
        assert!(Arc::ptr_eq(seen, &plan), "the same plan, not a second parse");
        assert!(obs.shell_undo, "a foreground command is shell undo's too");
    }
}
