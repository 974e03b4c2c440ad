//! What the engine task is doing, and for how long: the status line's timer counts the job's
//! own time, not the time a dialog waited for the user's answer (a tool cell leaves that wait
//! out of its duration too).

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// What the engine task is doing, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    Thinking,
    Responding,
    Tool(String),
    Shell,
    Command(String),
}

#[derive(Debug)]
pub struct Busy {
    pub since: Instant,
    pub activity: Activity,
    pub cancel: CancellationToken,
    /// Time approval dialogs of this job waited for the user, closed ones.
    waited: Duration,
    /// A dialog has been open since then.
    waiting_since: Option<Instant>,
}

impl Busy {
    pub fn new(activity: Activity, cancel: CancellationToken, now: Instant) -> Busy {
        Busy {
            since: now,
            activity,
            cancel,
            waited: Duration::ZERO,
            waiting_since: None,
        }
    }

    /// A dialog opened: the job waits for the user from `now` (a second dialog while one is
    /// open changes nothing).
    pub fn wait_for_user(&mut self, now: Instant) {
        self.waiting_since.get_or_insert(now);
    }

    /// No dialog is open any more.
    pub fn user_answered(&mut self, now: Instant) {
        if let Some(t) = self.waiting_since.take() {
            self.waited += now.saturating_duration_since(t);
        }
    }

    /// The job's own time until `now`: since it started, without the waits for the user.
    pub fn working(&self, now: Instant) -> Duration {
        let open = self
            .waiting_since
            .map(|t| now.saturating_duration_since(t))
            .unwrap_or_default();
        now.saturating_duration_since(self.since)
            .saturating_sub(self.waited)
            .saturating_sub(open)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_for_the_user_are_left_out() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut b = Busy::new(Activity::Thinking, CancellationToken::new(), t0);
        assert_eq!(b.working(at(1_000)), Duration::from_secs(1));
        b.wait_for_user(at(1_000));
        // Stands still while the dialog is open, a second dialog included.
        b.wait_for_user(at(5_000));
        assert_eq!(b.working(at(20_000)), Duration::from_secs(1));
        b.user_answered(at(28_000));
        assert_eq!(b.working(at(29_600)), Duration::from_millis(2_600));
        b.user_answered(at(30_000));
        assert_eq!(b.working(at(30_000)), Duration::from_millis(3_000));
    }
}
