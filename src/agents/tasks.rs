//! Background sub-agents of one session: what runs, what finished, and the notifications the
//! parent receives at its next turn (`/tasks` in the TUI lists them).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStatus {
    Running,
    Completed,
    Failed,
    Cancelled,
}

impl TaskStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Running => "running",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

/// A background task as listed by `/tasks`.
#[derive(Debug, Clone)]
pub struct TaskView {
    pub id: String,
    pub description: String,
    pub agent_type: String,
    pub status: TaskStatus,
    pub elapsed: Duration,
    pub transcript: std::path::PathBuf,
}

#[derive(Debug)]
struct Task {
    view: TaskView,
    started: Instant,
    finished: Option<Instant>,
    report: String,
    delivered: bool,
    cancel: CancellationToken,
}

#[derive(Debug, Default)]
pub struct BackgroundTasks {
    tasks: Mutex<Vec<Task>>,
    changed: Notify,
}

impl BackgroundTasks {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Task>> {
        self.tasks.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn add(
        &self,
        id: &str,
        description: &str,
        agent_type: &str,
        transcript: std::path::PathBuf,
        cancel: CancellationToken,
    ) {
        self.lock().push(Task {
            view: TaskView {
                id: id.into(),
                description: description.into(),
                agent_type: agent_type.into(),
                status: TaskStatus::Running,
                elapsed: Duration::ZERO,
                transcript,
            },
            started: Instant::now(),
            finished: None,
            report: String::new(),
            delivered: false,
            cancel,
        });
    }

    pub fn finish(&self, id: &str, status: TaskStatus, report: String) {
        if let Some(t) = self.lock().iter_mut().find(|t| t.view.id == id) {
            t.view.status = status;
            t.finished = Some(Instant::now());
            t.report = report;
        }
        self.changed.notify_waiters();
    }

    pub fn running(&self) -> usize {
        self.lock()
            .iter()
            .filter(|t| t.view.status == TaskStatus::Running)
            .count()
    }

    pub fn list(&self) -> Vec<TaskView> {
        self.lock()
            .iter()
            .map(|t| TaskView {
                elapsed: t.finished.unwrap_or_else(Instant::now) - t.started,
                ..t.view.clone()
            })
            .collect()
    }

    /// Notifications for tasks that finished since the last call (each delivered once).
    pub fn take_notifications(&self) -> Vec<String> {
        let mut out = Vec::new();
        for t in self.lock().iter_mut() {
            if t.view.status != TaskStatus::Running && !t.delivered {
                t.delivered = true;
                out.push(notification(t));
            }
        }
        out
    }

    /// Waits until a running task finishes (or `cancel` fires); `false` when none is running.
    pub async fn wait_for_one(&self, cancel: &CancellationToken) -> bool {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let tasks = self.lock();
                if tasks
                    .iter()
                    .any(|t| t.view.status != TaskStatus::Running && !t.delivered)
                {
                    return true;
                }
                if !tasks.iter().any(|t| t.view.status == TaskStatus::Running) {
                    return false;
                }
            }
            tokio::select! {
                _ = cancel.cancelled() => return false,
                _ = changed => {}
            }
        }
    }

    /// Stops every running task (the session ends).
    pub fn cancel_all(&self) {
        for t in self.lock().iter() {
            t.cancel.cancel();
        }
    }
}

fn notification(t: &Task) -> String {
    let v = &t.view;
    format!(
        "<system-reminder>\nThe background sub-agent {} ({}, \"{}\") has finished: {}. Its report follows; \
         nothing else of its work is in this conversation (transcript: {}).\n\n{}\n</system-reminder>",
        v.id,
        v.agent_type,
        v.description,
        v.status.as_str(),
        v.transcript.display(),
        t.report.trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn finished_tasks_notify_once_and_wake_waiters() {
        let tasks = std::sync::Arc::new(BackgroundTasks::default());
        let cancel = CancellationToken::new();
        assert!(!tasks.wait_for_one(&cancel).await, "nothing runs");
        tasks.add(
            "agent-1",
            "scan",
            "Explore",
            "/t/a.jsonl".into(),
            CancellationToken::new(),
        );
        assert_eq!(tasks.running(), 1);
        let t2 = tasks.clone();
        let waiter = tokio::spawn(async move { t2.wait_for_one(&CancellationToken::new()).await });
        tokio::task::yield_now().await;
        tasks.finish("agent-1", TaskStatus::Completed, "found 3 callers".into());
        assert!(waiter.await.unwrap());
        let notes = tasks.take_notifications();
        assert_eq!(notes.len(), 1);
        assert!(notes[0].contains("agent-1") && notes[0].contains("found 3 callers") && notes[0].contains("completed"));
        assert!(tasks.take_notifications().is_empty());
        assert_eq!(tasks.list()[0].status, TaskStatus::Completed);
    }
}
