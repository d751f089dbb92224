//! One session's event stream: seq numbering, the bounded replay buffer, and subscribers with
//! bounded queues.
//!
//! Every event gets the next `seq` and goes into a ring buffer of the last `capacity` events.
//! A subscriber that names an `after_seq` first receives the buffered events after it, then
//! the live ones, with no gap and no duplicate: the replay and the registration happen under
//! one lock, the same lock `publish` takes. Delivery never waits: each subscriber has a
//! bounded queue, and one that is full when an event comes is sent a final `lagged` notice
//! (its queue keeps one slot free for it) and dropped, so a stuck client can never slow the
//! session or the other clients.

use rein_protocol::event::{ClientIdentity, EventEnvelope, SessionEvent, SubscriptionItem};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tokio::sync::mpsc;

/// Receives one subscriber's items.
pub type SubscriberReceiver = mpsc::Receiver<SubscriptionItem>;

#[derive(Debug)]
struct Subscriber {
    sender: mpsc::Sender<SubscriptionItem>,
    last_delivered: u64,
}

#[derive(Debug)]
struct Inner {
    buffer: VecDeque<Arc<EventEnvelope>>,
    first_seq: u64,
    next_seq: u64,
    subscribers: Vec<Subscriber>,
    /// Events published before the log learned its session id.
    unbound: Vec<(SessionEvent, i64)>,
}

/// The event stream of one session.
#[derive(Debug)]
pub struct EventLog {
    session_id: OnceLock<String>,
    stream: String,
    capacity: usize,
    queue_size: usize,
    inner: Mutex<Inner>,
}

impl EventLog {
    /// A log keeping the last `capacity` events, giving each subscriber a queue of
    /// `queue_size` items. The first event gets seq 1.
    pub fn new(session_id: impl Into<String>, capacity: usize, queue_size: usize) -> Self {
        let log = Self::unbound(capacity, queue_size, 1);
        log.bind(session_id.into());
        log
    }

    /// A log that does not know its session id yet (the session is still being created).
    /// Events published before [`EventLog::bind`] are held back and numbered when it is called.
    /// The first event gets `first_seq`.
    pub fn unbound(capacity: usize, queue_size: usize, first_seq: u64) -> Self {
        Self {
            session_id: OnceLock::new(),
            stream: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            capacity: capacity.max(1),
            queue_size: queue_size.max(2),
            inner: Mutex::new(Inner {
                buffer: VecDeque::new(),
                first_seq: first_seq.max(1),
                next_seq: first_seq.max(1),
                subscribers: Vec::new(),
                unbound: Vec::new(),
            }),
        }
    }

    /// Sets the session id and publishes the events held back until now. Later calls do
    /// nothing.
    pub fn bind(&self, session_id: String) {
        if self.session_id.set(session_id).is_err() {
            return;
        }
        let held = std::mem::take(&mut self.lock().unbound);
        for (event, timestamp) in held {
            self.publish(event, timestamp);
        }
    }

    fn id(&self) -> &str {
        self.session_id().unwrap_or_default()
    }

    /// Names this log's numbering: every load of a session gets a new one, so a cursor from
    /// another load is recognized.
    pub fn stream(&self) -> &str {
        &self.stream
    }

    /// The session id, once bound.
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.get().map(String::as_str)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A poisoned lock only means a panic elsewhere while holding it; the data stays usable.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The seq of the last event published (one less than the first seq before any).
    pub fn last_seq(&self) -> u64 {
        self.lock().next_seq - 1
    }

    /// Ends every subscription (the session is being unloaded; a client that wants more
    /// subscribes again, which loads the session anew).
    pub fn close(&self) {
        self.lock().subscribers.clear();
    }

    /// Subscribers attached now.
    pub fn subscriber_count(&self) -> usize {
        self.lock().subscribers.len()
    }

    /// Numbers the event, buffers it and delivers it to every subscriber; returns its seq.
    /// Before [`EventLog::bind`] the event is held back and 0 is returned.
    pub fn publish(&self, event: SessionEvent, timestamp: i64) -> u64 {
        self.publish_from(event, timestamp, None)
    }

    /// [`EventLog::publish`] for an event that `client`'s request caused; its envelope names
    /// the client. Held-back events (before [`EventLog::bind`]) name none.
    pub fn publish_from(
        &self,
        event: SessionEvent,
        timestamp: i64,
        client: Option<ClientIdentity>,
    ) -> u64 {
        let mut inner = self.lock();
        let Some(session_id) = self.session_id.get() else {
            inner.unbound.push((event, timestamp));
            return 0;
        };
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let envelope = Arc::new(EventEnvelope {
            session_id: session_id.clone(),
            seq,
            timestamp,
            event,
            client,
        });
        if inner.buffer.len() == self.capacity {
            inner.buffer.pop_front();
        }
        inner.buffer.push_back(envelope.clone());
        inner.subscribers.retain_mut(|subscriber| deliver(subscriber, &envelope, session_id));
        seq
    }

    /// Attaches a subscriber. With `after_seq`, buffered events after it come first; when the
    /// buffer no longer reaches back that far, or the cursor belongs to another numbering (an
    /// earlier load of the session), the only item is `resync_required`. `after_seq` 0 means
    /// "from this stream's first event".
    ///
    /// With `stream`, a cursor from another numbering (an earlier load) is told to resync
    /// whatever its value.
    pub fn subscribe(&self, after_seq: Option<u64>, stream: Option<&str>) -> SubscriberReceiver {
        let (sender, receiver) = mpsc::channel(self.queue_size);
        let mut inner = self.lock();
        if stream.is_some_and(|stream| stream != self.stream) {
            let oldest = inner.buffer.front().map(|e| e.seq).unwrap_or(inner.next_seq);
            let _ = sender.try_send(SubscriptionItem::ResyncRequired {
                session_id: self.id().to_string(),
                oldest_buffered_seq: oldest,
            });
            return receiver;
        }
        let last_seq = inner.next_seq - 1;
        let after_seq = after_seq.map(|after| if after == 0 { inner.first_seq - 1 } else { after });
        let mut subscriber = Subscriber { sender, last_delivered: last_seq };
        if let Some(after) = after_seq.filter(|after| *after != last_seq) {
            let oldest = inner.buffer.front().map(|e| e.seq).unwrap_or(last_seq + 1);
            if after + 1 < oldest || after > last_seq {
                let _ = subscriber.sender.try_send(SubscriptionItem::ResyncRequired {
                    session_id: self.id().to_string(),
                    oldest_buffered_seq: oldest,
                });
                return receiver;
            }
            subscriber.last_delivered = after;
            let missed: Vec<_> = inner.buffer.iter().filter(|e| e.seq > after).cloned().collect();
            for envelope in missed {
                if !deliver(&mut subscriber, &envelope, self.id()) {
                    return receiver;
                }
            }
        }
        inner.subscribers.push(subscriber);
        receiver
    }
}

/// Tries to hand one event to a subscriber; false when the subscriber is gone or lagged (it is
/// then dropped).
fn deliver(subscriber: &mut Subscriber, envelope: &Arc<EventEnvelope>, session_id: &str) -> bool {
    if subscriber.sender.is_closed() {
        return false;
    }
    // Keep the last slot for the lagged notice.
    if subscriber.sender.capacity() <= 1 {
        let _ = subscriber.sender.try_send(SubscriptionItem::Lagged {
            session_id: session_id.to_string(),
            last_delivered_seq: subscriber.last_delivered,
        });
        return false;
    }
    match subscriber.sender.try_send(SubscriptionItem::Event(EventEnvelope::clone(envelope))) {
        Ok(()) => {
            subscriber.last_delivered = envelope.seq;
            true
        }
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: u32) -> SessionEvent {
        SessionEvent::TurnStart { turn: n }
    }

    fn drain(receiver: &mut SubscriberReceiver) -> Vec<SubscriptionItem> {
        let mut items = Vec::new();
        while let Ok(item) = receiver.try_recv() {
            items.push(item);
        }
        items
    }

    fn seqs(items: &[SubscriptionItem]) -> Vec<u64> {
        items
            .iter()
            .filter_map(|item| match item {
                SubscriptionItem::Event(e) => Some(e.seq),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn seq_starts_at_one_and_increases_by_one() {
        let log = EventLog::new("s", 8, 8);
        assert_eq!(log.last_seq(), 0);
        assert_eq!(log.publish(turn(1), 0), 1);
        assert_eq!(log.publish(turn(2), 0), 2);
        assert_eq!(log.last_seq(), 2);
    }

    #[test]
    fn live_subscriber_gets_only_new_events() {
        let log = EventLog::new("s", 8, 8);
        log.publish(turn(1), 0);
        let mut rx = log.subscribe(None, None);
        log.publish(turn(2), 0);
        assert_eq!(seqs(&drain(&mut rx)), vec![2]);
    }

    #[test]
    fn reconnect_with_last_seq_replays_without_gap_or_duplicate() {
        let log = EventLog::new("s", 8, 16);
        for n in 1..=5 {
            log.publish(turn(n), 0);
        }
        let mut rx = log.subscribe(Some(2), None);
        log.publish(turn(6), 0);
        assert_eq!(seqs(&drain(&mut rx)), vec![3, 4, 5, 6]);
        // Up to date already: only live events.
        let mut rx = log.subscribe(Some(6), None);
        log.publish(turn(7), 0);
        assert_eq!(seqs(&drain(&mut rx)), vec![7]);
    }

    #[test]
    fn too_old_a_cursor_is_told_to_resync() {
        let log = EventLog::new("s", 3, 8);
        for n in 1..=6 {
            log.publish(turn(n), 0);
        }
        let mut rx = log.subscribe(Some(1), None);
        let items = drain(&mut rx);
        assert_eq!(
            items,
            vec![SubscriptionItem::ResyncRequired {
                session_id: "s".into(),
                oldest_buffered_seq: 4
            }]
        );
        assert_eq!(log.subscriber_count(), 0);
        // A cursor from before a daemon restart is ahead of the stream.
        let mut rx = log.subscribe(Some(99), None);
        assert!(matches!(drain(&mut rx)[..], [SubscriptionItem::ResyncRequired { .. }]));
        // Exactly at the edge still works: events 4..6 are buffered.
        let mut rx = log.subscribe(Some(3), None);
        assert_eq!(seqs(&drain(&mut rx)), vec![4, 5, 6]);
    }

    #[test]
    fn a_stuck_subscriber_is_lagged_and_dropped_while_others_get_everything() {
        let log = EventLog::new("s", 100, 4);
        let mut stuck = log.subscribe(None, None);
        let mut healthy = log.subscribe(None, None);
        let mut seen = Vec::new();
        for n in 1..=10 {
            log.publish(turn(n), 0);
            seen.extend(seqs(&drain(&mut healthy)));
        }
        assert_eq!(seen, (1..=10).collect::<Vec<_>>());
        let items = drain(&mut stuck);
        assert_eq!(seqs(&items), vec![1, 2, 3]);
        assert_eq!(
            items.last(),
            Some(&SubscriptionItem::Lagged { session_id: "s".into(), last_delivered_seq: 3 })
        );
        assert_eq!(log.subscriber_count(), 1);
    }

    #[test]
    fn events_before_binding_are_held_then_numbered() {
        let log = EventLog::unbound(8, 8, 1);
        assert_eq!(log.publish(turn(1), 0), 0);
        assert_eq!(log.last_seq(), 0);
        log.bind("late".into());
        let mut rx = log.subscribe(Some(0), None);
        log.publish(turn(2), 0);
        let items = drain(&mut rx);
        assert_eq!(seqs(&items), vec![1, 2]);
        match &items[0] {
            SubscriptionItem::Event(e) => assert_eq!(e.session_id, "late"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn a_log_may_start_numbering_anywhere() {
        let log = EventLog::unbound(8, 8, 1_000);
        log.bind("s".into());
        assert_eq!(log.last_seq(), 999);
        let mut rx = log.subscribe(Some(log.last_seq()), None);
        assert_eq!(log.publish(turn(1), 0), 1_000);
        assert_eq!(seqs(&drain(&mut rx)), vec![1_000]);
        // A cursor from an earlier numbering is stale.
        let mut rx = log.subscribe(Some(5), None);
        assert!(matches!(drain(&mut rx)[..], [SubscriptionItem::ResyncRequired { .. }]));
        // Zero asks for the whole stream.
        let mut rx = log.subscribe(Some(0), None);
        assert_eq!(seqs(&drain(&mut rx)), vec![1_000]);
    }

    #[test]
    fn a_cursor_from_another_stream_is_told_to_resync() {
        let log = EventLog::new("s", 8, 8);
        log.publish(turn(1), 0);
        let mut rx = log.subscribe(Some(0), Some("elsewhere"));
        assert!(matches!(drain(&mut rx)[..], [SubscriptionItem::ResyncRequired { .. }]));
        let stream = log.stream().to_string();
        let mut rx = log.subscribe(Some(0), Some(&stream));
        assert_eq!(seqs(&drain(&mut rx)), vec![1]);
    }

    #[test]
    fn closing_ends_every_subscription() {
        let log = EventLog::new("s", 8, 8);
        let mut rx = log.subscribe(None, None);
        log.close();
        assert_eq!(log.subscriber_count(), 0);
        assert!(rx.try_recv().is_err());
    }

    #[test]
    fn closed_subscribers_are_dropped() {
        let log = EventLog::new("s", 8, 8);
        let rx = log.subscribe(None, None);
        drop(rx);
        log.publish(turn(1), 0);
        assert_eq!(log.subscriber_count(), 0);
    }
}
