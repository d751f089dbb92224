//! Pending approvals as session state: the `approval_requested` events still waiting for an
//! answer, kept so that every client that subscribes later is shown them.
//!
//! Every event of a session is published through [`PendingApprovals::publish`], which notes
//! an `approval_requested` and forgets it at its `approval_resolved`, under the same lock it
//! holds while the event log numbers the event. [`PendingApprovals::subscribe`] attaches a
//! subscriber and takes the list under that lock too, so the two always agree: a request in
//! the list was published before the subscription started (it will not come again live), and
//! its resolution, whenever it comes, is delivered live.

use super::events::{EventLog, Subscription};
use crate::sync::lock;
use rein_protocol::event::{ClientIdentity, EventEnvelope, SessionEvent};
use std::sync::{Arc, Mutex};

/// The waiting approval requests of one session, in the order they were made.
#[derive(Debug, Default)]
pub struct PendingApprovals {
    waiting: Mutex<Vec<EventEnvelope>>,
}

impl PendingApprovals {
    /// Numbers and delivers `event` through `log`, keeping the list of waiting requests up to
    /// date. `client` is the client whose request caused the event, if any.
    pub fn publish(
        &self,
        log: &EventLog,
        event: SessionEvent,
        timestamp: i64,
        client: Option<ClientIdentity>,
    ) {
        let mut waiting = lock(&self.waiting);
        match &event {
            SessionEvent::ApprovalRequested { .. } => {
                let copy = event.clone();
                let seq = log.publish_from(event, timestamp, client.clone());
                if let Some(session_id) = log.session_id().filter(|_| seq > 0) {
                    waiting.push(EventEnvelope {
                        session_id: session_id.to_string(),
                        seq,
                        timestamp,
                        event: copy,
                        client,
                    });
                }
            }
            SessionEvent::ApprovalResolved { request_id, .. } => {
                waiting.retain(|envelope| !is_request(envelope, request_id));
                log.publish_from(event, timestamp, client);
            }
            _ => {
                log.publish_from(event, timestamp, client);
            }
        }
    }

    /// Attaches a subscriber to `log` (as [`EventLog::subscribe`] does) and returns the
    /// requests still waiting that its replay from `after_seq` will not deliver: the caller
    /// sends these first.
    pub fn subscribe(
        &self,
        log: &Arc<EventLog>,
        after_seq: Option<u64>,
        stream: Option<&str>,
    ) -> (Subscription, Vec<EventEnvelope>) {
        let waiting = lock(&self.waiting);
        let receiver = log.subscribe(after_seq, stream);
        // The buffer replays every event after the cursor (0: from the stream's start).
        let replayed_from = after_seq.unwrap_or(u64::MAX);
        let missing = waiting.iter().filter(|envelope| envelope.seq <= replayed_from).cloned();
        (receiver, missing.collect())
    }

    /// The requests waiting now.
    pub fn waiting(&self) -> Vec<EventEnvelope> {
        lock(&self.waiting).clone()
    }

    /// Whether any request waits.
    pub fn any(&self) -> bool {
        !lock(&self.waiting).is_empty()
    }
}

fn is_request(envelope: &EventEnvelope, id: &str) -> bool {
    matches!(&envelope.event, SessionEvent::ApprovalRequested { request_id, .. } if request_id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hub::events::Delivery;
    use rein_protocol::event::ApprovalDecision;
    use serde_json::json;

    fn requested(id: &str) -> SessionEvent {
        SessionEvent::ApprovalRequested {
            request_id: id.into(),
            tool_call_id: format!("call-{id}"),
            tool_name: "bash".into(),
            arguments: json!({"command": "ls"}),
            reason: "bash asks".into(),
        }
    }

    fn resolved(id: &str) -> SessionEvent {
        SessionEvent::ApprovalResolved {
            request_id: id.into(),
            decision: ApprovalDecision::AllowOnce,
            reason: None,
            resolved_by: "vim".into(),
        }
    }

    fn drain(subscription: &mut Subscription) -> Vec<u64> {
        let mut seqs = Vec::new();
        while let Some(delivery) = subscription.try_next() {
            if let Delivery::Event(event) = delivery {
                seqs.push(event.seq);
            }
        }
        seqs
    }

    #[test]
    fn a_late_subscriber_is_given_the_waiting_requests_once() {
        let log = Arc::new(EventLog::new("s", 100, 1 << 20));
        let pending = PendingApprovals::default();
        pending.publish(&log, SessionEvent::Settled, 1, None);
        pending.publish(&log, requested("a"), 2, None);
        pending.publish(&log, requested("b"), 3, None);
        pending.publish(&log, resolved("a"), 4, None);

        // Live from now: only `b` is missing, and it is given.
        let (mut live, missing) = pending.subscribe(&log, None, None);
        assert_eq!(missing.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![3]);
        assert!(drain(&mut live).is_empty());

        // From seq 2: the buffer replays 3 and 4, so nothing extra is given.
        let (mut replay, missing) = pending.subscribe(&log, Some(2), None);
        assert!(missing.is_empty());
        assert_eq!(drain(&mut replay), vec![3, 4]);

        // From seq 3: `b` (seq 3) is behind the cursor, so it is given first.
        let (_, missing) = pending.subscribe(&log, Some(3), None);
        assert_eq!(missing.len(), 1);

        pending.publish(&log, resolved("b"), 5, None);
        assert!(pending.waiting().is_empty());
        assert_eq!(drain(&mut live), vec![5]);
    }
}
