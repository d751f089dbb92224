//! What one client may hold of the daemon: requests in flight, time to finish a line, and a
//! share of the daemon-wide budget for buffered input.
//!
//! These bounds are what keep `reind` small whatever a client does: a client that writes
//! requests and never reads the answers stops being read once `max_in_flight` of its requests
//! are unanswered; a client that starts a line must finish it within `line_deadline` and may
//! not pause for more than `partial_line_idle` in the middle of it; and every connection's
//! partly received lines together may hold at most `max_buffered_input` bytes.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Per-connection bounds, fixed at start-up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Requests of one connection being handled at once (including those waiting for their
    /// turn behind an earlier command); past it, the connection is not read until one ends.
    pub max_in_flight: usize,
    /// The longest a line may take from its first byte to its newline.
    pub line_deadline: Duration,
    /// The longest a connection may stay silent in the middle of a line.
    pub partial_line_idle: Duration,
    /// Bytes of unfinished input all connections together may hold.
    pub max_buffered_input: usize,
    /// Connections over `max_connections` served at once in the restricted mode that answers
    /// only `initialize`, `daemon/info` and `daemon/shutdown`; beyond these, a new connection
    /// gets its error line and is closed at once.
    pub max_overflow_connections: u64,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max_in_flight: 64,
            line_deadline: Duration::from_secs(60),
            partial_line_idle: Duration::from_secs(10),
            max_buffered_input: 64 * 1024 * 1024,
            max_overflow_connections: 64,
        }
    }
}

/// The daemon-wide budget for bytes of unfinished input, shared by every connection.
#[derive(Debug, Clone)]
pub struct InputBudget {
    used: Arc<AtomicUsize>,
    limit: usize,
}

impl InputBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self { used: Arc::new(AtomicUsize::new(0)), limit }
    }

    /// Bytes held now by all connections.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::SeqCst)
    }

    /// The limit in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// A share holding nothing yet.
    pub fn share(&self) -> BudgetShare {
        BudgetShare { budget: self.clone(), held: 0 }
    }
}

/// One connection's part of the [`InputBudget`]; given back when dropped.
#[derive(Debug)]
pub struct BudgetShare {
    budget: InputBudget,
    held: usize,
}

impl BudgetShare {
    /// Sets this share to `bytes`; false (and the share unchanged) when growing to it would
    /// take the daemon over its budget.
    pub fn resize(&mut self, bytes: usize) -> bool {
        if bytes <= self.held {
            self.budget.used.fetch_sub(self.held - bytes, Ordering::SeqCst);
            self.held = bytes;
            return true;
        }
        let grow = bytes - self.held;
        let limit = self.budget.limit;
        let taken = self.budget.used.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |used| {
            used.checked_add(grow).filter(|total| *total <= limit)
        });
        if taken.is_ok() {
            self.held = bytes;
        }
        taken.is_ok()
    }
}

impl Drop for BudgetShare {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.held, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_grow_within_the_budget_and_give_back_on_drop() {
        let budget = InputBudget::new(100);
        let mut a = budget.share();
        let mut b = budget.share();
        assert!(a.resize(60));
        assert!(!b.resize(50));
        assert!(b.resize(40));
        assert_eq!(budget.used(), 100);
        assert!(a.resize(10));
        assert_eq!(budget.used(), 50);
        drop(b);
        assert_eq!(budget.used(), 10);
        drop(a);
        assert_eq!(budget.used(), 0);
    }
}
