//! Per-connection ordering: requests of one connection that change the same thing apply in
//! the order they arrived.
//!
//! Each such request names one or more lanes (the session it changes; the connection's
//! subscriptions). A lane is a FIFO: when a request is read, it takes its place at the back of
//! each of its lanes at once, before anything else is read, and it runs only after the request
//! ahead of it in every one of its lanes has finished. Places are taken in arrival order, so
//! every wait points at an earlier request and there is no cycle. Requests in no lane (reads,
//! and control calls such as `session/cancel` or `approval/respond`) never wait here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// Which lane a request joins.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Lane {
    /// Commands changing one session.
    Session(String),
    /// `initialize` and this connection's subscribe and unsubscribe calls.
    Subscriptions,
}

#[derive(Debug)]
struct Tail {
    /// Which request is at the back.
    ticket: u64,
    /// Resolves (with an error) once that request has finished.
    done: oneshot::Receiver<()>,
}

/// The lanes of one connection.
#[derive(Debug, Default)]
pub struct Lanes {
    inner: Arc<Mutex<LanesInner>>,
}

#[derive(Debug, Default)]
struct LanesInner {
    next_ticket: u64,
    tails: HashMap<Lane, Tail>,
}

/// A request's places in its lanes: wait for the ones ahead with [`Place::ready`], and keep
/// the place until the request has finished (dropping it lets the next one go).
#[derive(Debug)]
pub struct Place {
    ahead: Vec<oneshot::Receiver<()>>,
    lanes: Vec<Lane>,
    ticket: u64,
    owner: Arc<Mutex<LanesInner>>,
    _done: Vec<oneshot::Sender<()>>,
}

impl Lanes {
    /// Takes a place at the back of each lane in `lanes` (a request in no lane gets a place
    /// that never waits).
    pub fn join(&self, lanes: Vec<Lane>) -> Place {
        let mut inner = self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        inner.next_ticket += 1;
        let ticket = inner.next_ticket;
        let mut ahead = Vec::new();
        let mut done = Vec::new();
        for lane in &lanes {
            let (sender, receiver) = oneshot::channel();
            if let Some(previous) =
                inner.tails.insert(lane.clone(), Tail { ticket, done: receiver })
            {
                ahead.push(previous.done);
            }
            done.push(sender);
        }
        Place { ahead, lanes, ticket, owner: self.inner.clone(), _done: done }
    }

    /// Lanes with a request in them (for tests and diagnostics).
    pub fn busy(&self) -> usize {
        self.inner.lock().map(|inner| inner.tails.len()).unwrap_or_default()
    }
}

impl Place {
    /// Waits until every request ahead in this place's lanes has finished.
    pub async fn ready(&mut self) {
        for receiver in self.ahead.drain(..) {
            // The sender is dropped, never used, when the request ahead finishes.
            let _ = receiver.await;
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        // Forget lanes where this request is still the last, so idle lanes take no memory.
        let mut inner = self.owner.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        for lane in &self.lanes {
            if inner.tails.get(lane).is_some_and(|tail| tail.ticket == self.ticket) {
                inner.tails.remove(lane);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn requests_in_a_lane_run_in_arrival_order_and_others_overtake() {
        let lanes = Lanes::default();
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for n in 0..20u32 {
            let lane = if n % 5 == 4 { vec![] } else { vec![Lane::Session("s".into())] };
            let mut place = lanes.join(lane);
            let log = log.clone();
            tasks.push(tokio::spawn(async move {
                place.ready().await;
                // Later requests finish faster: without the lane they would overtake.
                tokio::time::sleep(Duration::from_millis(u64::from(20 - n))).await;
                log.lock().unwrap().push(n);
                drop(place);
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        let order = log.lock().unwrap().clone();
        let in_lane: Vec<u32> = order.iter().copied().filter(|n| n % 5 != 4).collect();
        let expected: Vec<u32> = (0..20).filter(|n| n % 5 != 4).collect();
        assert_eq!(in_lane, expected);
        // The unordered ones did not wait for the lane.
        assert_ne!(order.iter().position(|n| *n == 19), Some(19));
        assert_eq!(lanes.busy(), 0);
    }

    #[tokio::test]
    async fn a_request_in_two_lanes_waits_for_both() {
        let lanes = Lanes::default();
        let a = lanes.join(vec![Lane::Session("a".into())]);
        let b = lanes.join(vec![Lane::Subscriptions]);
        let mut both = lanes.join(vec![Lane::Session("a".into()), Lane::Subscriptions]);
        let waiting = tokio::spawn(async move {
            both.ready().await;
        });
        tokio::task::yield_now().await;
        drop(a);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(b);
        waiting.await.unwrap();
    }
}
