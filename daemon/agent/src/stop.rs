//! How a run is stopped early: a user's cancel or its wall-time limit, seen as one token.

use rein_protocol::event::EndReason;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The text tool results and aborted messages get when the user cancelled.
pub(crate) const CANCELLED_BY_USER: &str = "cancelled by user";
/// The text they get when the run ran out of time.
pub(crate) const CANCELLED_BY_TIME_LIMIT: &str = "cancelled: the run reached its time limit";

/// The stop signal of one run. Its token is a child of the user's cancel token and is also
/// cancelled when the wall-time limit passes, so the provider stream, every tool and every
/// hook wait stop the same way whichever caused it.
#[derive(Debug, Clone)]
pub(crate) struct RunStop {
    token: CancellationToken,
    timed_out: Arc<AtomicBool>,
}

impl RunStop {
    /// A stop signal that fires when `cancel` does.
    pub(crate) fn new(cancel: &CancellationToken) -> Self {
        Self { token: cancel.child_token(), timed_out: Arc::new(AtomicBool::new(false)) }
    }

    /// The token handed to the provider, tools and hooks.
    pub(crate) fn token(&self) -> &CancellationToken {
        &self.token
    }

    /// True once the run must stop.
    pub(crate) fn is_stopped(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Why the run stopped: the time limit, or else a cancel.
    pub(crate) fn end_reason(&self) -> EndReason {
        if self.timed_out.load(Ordering::SeqCst) {
            EndReason::TimeLimit
        } else {
            EndReason::Cancelled
        }
    }

    /// What the model is told about work the stop cut short.
    pub(crate) fn reason_text(&self) -> &'static str {
        if self.timed_out.load(Ordering::SeqCst) {
            CANCELLED_BY_TIME_LIMIT
        } else {
            CANCELLED_BY_USER
        }
    }

    /// Fires the stop once `limit` has passed; the timer goes away with the guard.
    pub(crate) fn arm_deadline(&self, limit: Duration) -> DeadlineGuard {
        let stop = self.clone();
        DeadlineGuard(tokio::spawn(async move {
            tokio::time::sleep(limit).await;
            stop.timed_out.store(true, Ordering::SeqCst);
            stop.token.cancel();
        }))
    }
}

/// Keeps a run's deadline timer alive; dropping it disarms the timer.
#[derive(Debug)]
pub(crate) struct DeadlineGuard(JoinHandle<()>);

impl Drop for DeadlineGuard {
    fn drop(&mut self) {
        self.0.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_and_a_deadline_report_different_reasons() {
        let cancel = CancellationToken::new();
        let stop = RunStop::new(&cancel);
        assert!(!stop.is_stopped());
        cancel.cancel();
        assert!(stop.is_stopped());
        assert_eq!(stop.end_reason(), EndReason::Cancelled);
        assert_eq!(stop.reason_text(), CANCELLED_BY_USER);

        let stop = RunStop::new(&CancellationToken::new());
        let _guard = stop.arm_deadline(Duration::from_millis(1));
        stop.token().cancelled().await;
        assert_eq!(stop.end_reason(), EndReason::TimeLimit);
        assert_eq!(stop.reason_text(), CANCELLED_BY_TIME_LIMIT);
    }

    #[tokio::test]
    async fn a_dropped_guard_never_fires() {
        let stop = RunStop::new(&CancellationToken::new());
        drop(stop.arm_deadline(Duration::from_millis(1)));
        tokio::task::yield_now().await;
        tokio::time::sleep(Duration::from_millis(5)).await;
        assert!(!stop.is_stopped());
    }
}
