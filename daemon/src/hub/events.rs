//! One session's event stream: seq numbering, the shared replay buffer, and subscribers that
//! read it at their own pace.
//!
//! Every event gets the next `seq`, is serialized once (as the `session/event` item every
//! subscriber receives) and goes into a ring buffer bounded both in events (`capacity`) and in
//! serialized bytes (`max_bytes`); the oldest events leave first, and the newest one always
//! stays. Subscribers hold no copy of their own: each [`Subscription`] is a cursor into that
//! buffer, so a thousand subscribers cost what one does.
//!
//! A subscriber that names an `after_seq` receives the buffered events after it, then the live
//! ones, with no gap and no duplicate: its cursor is placed under the lock `publish` takes. The
//! whole buffer is replayable: a cursor anywhere in it is served. Delivery never waits for a
//! subscriber: one whose next event has left the buffer before it read it gets a final `lagged`
//! item and its subscription ends, so a stuck client can never slow the session or the others.

use rein_protocol::event::{ClientIdentity, EventEnvelope, SessionEvent, SubscriptionItem};
use serde_json::value::RawValue;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use tokio::sync::watch;

/// One published event, serialized once and shared by every subscriber.
#[derive(Debug)]
pub struct SharedEvent {
    /// The event's seq.
    pub seq: u64,
    /// The `session/event` item (`{"type":"event",...}`) as JSON.
    pub item: Box<RawValue>,
}

/// What a subscription yields next.
#[derive(Debug, Clone)]
pub enum Delivery {
    /// The next event.
    Event(Arc<SharedEvent>),
    /// The last item (`lagged` or `resync_required`); the subscription ends after it.
    Final(Box<SubscriptionItem>),
}

impl Delivery {
    /// The item as JSON, ready to send.
    pub fn to_json(&self) -> Result<Box<RawValue>, serde_json::Error> {
        match self {
            Self::Event(event) => Ok(event.item.clone()),
            Self::Final(item) => serde_json::value::to_raw_value(item.as_ref()),
        }
    }
}

#[derive(Debug)]
struct Inner {
    buffer: VecDeque<Arc<SharedEvent>>,
    /// Serialized bytes held in `buffer`.
    bytes: usize,
    first_seq: u64,
    next_seq: u64,
    closed: bool,
    /// Events published before the log learned its session id.
    unbound: Vec<(SessionEvent, i64)>,
}

impl Inner {
    /// The oldest seq still buffered (the next seq when the buffer is empty).
    fn oldest(&self) -> u64 {
        self.buffer.front().map(|event| event.seq).unwrap_or(self.next_seq)
    }
}

/// The event stream of one session.
#[derive(Debug)]
pub struct EventLog {
    session_id: OnceLock<String>,
    stream: String,
    capacity: usize,
    max_bytes: usize,
    inner: Mutex<Inner>,
    /// Bumped after every publish and on close; subscribers wait on it.
    wake: watch::Sender<()>,
    subscribers: Arc<AtomicUsize>,
}

impl EventLog {
    /// A log keeping the last `capacity` events, at most `max_bytes` of them serialized. The
    /// first event gets seq 1.
    pub fn new(session_id: impl Into<String>, capacity: usize, max_bytes: usize) -> Self {
        let log = Self::unbound(capacity, max_bytes, 1);
        log.bind(session_id.into());
        log
    }

    /// A log that does not know its session id yet (the session is still being created).
    /// Events published before [`EventLog::bind`] are held back and numbered when it is called.
    /// The first event gets `first_seq`.
    pub fn unbound(capacity: usize, max_bytes: usize, first_seq: u64) -> Self {
        Self {
            session_id: OnceLock::new(),
            stream: uuid::Uuid::new_v4().simple().to_string()[..8].to_string(),
            capacity: capacity.max(1),
            max_bytes,
            inner: Mutex::new(Inner {
                buffer: VecDeque::new(),
                bytes: 0,
                first_seq: first_seq.max(1),
                next_seq: first_seq.max(1),
                closed: false,
                unbound: Vec::new(),
            }),
            wake: watch::Sender::new(()),
            subscribers: Arc::new(AtomicUsize::new(0)),
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

    /// Events and serialized bytes buffered now.
    pub fn buffered(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.buffer.len(), inner.bytes)
    }

    /// Ends every subscription once it has read what is buffered (the session is being
    /// unloaded; a client that wants more subscribes again, which loads the session anew).
    /// The buffer goes with the log, when the last subscription ends.
    pub fn close(&self) {
        self.lock().closed = true;
        self.wake.send_replace(());
    }

    /// Subscriptions attached now.
    pub fn subscriber_count(&self) -> usize {
        self.subscribers.load(Ordering::SeqCst)
    }

    /// Numbers the event, serializes it into the buffer and wakes every subscriber; returns
    /// its seq. Before [`EventLog::bind`] the event is held back and 0 is returned.
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
        let envelope =
            EventEnvelope { session_id: session_id.clone(), seq, timestamp, event, client };
        let item = match serde_json::value::to_raw_value(&SubscriptionItem::Event(envelope)) {
            Ok(item) => item,
            Err(error) => {
                // Wire types always serialize; should one not, subscribers see a lag, not a hang.
                tracing::error!(%error, seq, "an event could not be serialized");
                inner.buffer.clear();
                inner.bytes = 0;
                drop(inner);
                self.wake.send_replace(());
                return seq;
            }
        };
        let size = item.get().len();
        while !inner.buffer.is_empty()
            && (inner.buffer.len() >= self.capacity || inner.bytes + size > self.max_bytes)
        {
            if let Some(old) = inner.buffer.pop_front() {
                inner.bytes -= old.item.get().len();
            }
        }
        inner.bytes += size;
        inner.buffer.push_back(Arc::new(SharedEvent { seq, item }));
        drop(inner);
        self.wake.send_replace(());
        seq
    }

    /// Attaches a subscriber. With `after_seq`, buffered events after it come first; when the
    /// buffer no longer reaches back that far, or the cursor belongs to another numbering (an
    /// earlier load of the session), the only item is `resync_required`. `after_seq` 0 means
    /// "from this stream's first event".
    ///
    /// With `stream`, a cursor from another numbering (an earlier load) is told to resync
    /// whatever its value.
    pub fn subscribe(
        self: &Arc<Self>,
        after_seq: Option<u64>,
        stream: Option<&str>,
    ) -> Subscription {
        let inner = self.lock();
        let resync = |oldest| {
            Subscription::finished(
                self.clone(),
                SubscriptionItem::ResyncRequired {
                    session_id: self.id().to_string(),
                    oldest_buffered_seq: oldest,
                },
            )
        };
        if stream.is_some_and(|stream| stream != self.stream) {
            return resync(inner.oldest());
        }
        let last_seq = inner.next_seq - 1;
        let after = match after_seq {
            None => last_seq,
            Some(0) => inner.first_seq - 1,
            Some(after) => after,
        };
        if after != last_seq && (after + 1 < inner.oldest() || after > last_seq) {
            return resync(inner.oldest());
        }
        drop(inner);
        Subscription::live(self.clone(), after + 1)
    }
}

/// Keeps one subscriber counted while alive.
#[derive(Debug)]
struct Counted(Arc<AtomicUsize>);

impl Counted {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self(count.clone())
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// One subscriber: a cursor into its session's buffer.
#[derive(Debug)]
pub struct Subscription {
    log: Arc<EventLog>,
    next_seq: u64,
    wake: watch::Receiver<()>,
    /// The item to end with, already decided.
    last: Option<SubscriptionItem>,
    done: bool,
    _counted: Option<Counted>,
}

impl Subscription {
    fn live(log: Arc<EventLog>, next_seq: u64) -> Self {
        let mut wake = log.wake.subscribe();
        wake.mark_unchanged();
        let counted = Counted::new(&log.subscribers);
        Self { log, next_seq, wake, last: None, done: false, _counted: Some(counted) }
    }

    fn finished(log: Arc<EventLog>, item: SubscriptionItem) -> Self {
        let wake = log.wake.subscribe();
        Self { log, next_seq: 0, wake, last: Some(item), done: false, _counted: None }
    }

    /// The next item without waiting: `None` when nothing new is buffered yet (or the
    /// subscription is over).
    pub fn try_next(&mut self) -> Option<Delivery> {
        if self.done {
            return None;
        }
        if let Some(item) = self.last.take() {
            self.done = true;
            return Some(Delivery::Final(Box::new(item)));
        }
        let inner = self.log.lock();
        let oldest = inner.oldest();
        if self.next_seq < oldest {
            drop(inner);
            self.done = true;
            return Some(Delivery::Final(Box::new(SubscriptionItem::Lagged {
                session_id: self.log.id().to_string(),
                last_delivered_seq: self.next_seq - 1,
            })));
        }
        if self.next_seq >= inner.next_seq {
            return None;
        }
        let index = usize::try_from(self.next_seq - oldest).unwrap_or(usize::MAX);
        let event = inner.buffer.get(index).cloned()?;
        self.next_seq += 1;
        Some(Delivery::Event(event))
    }

    /// Waits for the next item; `None` once the subscription is over (after its final item,
    /// or when the session is unloaded).
    pub async fn next(&mut self) -> Option<Delivery> {
        loop {
            if let Some(delivery) = self.try_next() {
                return Some(delivery);
            }
            if self.done || self.log.lock().closed {
                return None;
            }
            // Every publish bumps the watch after buffering, so an event that came after the
            // check above is never missed.
            if self.wake.changed().await.is_err() {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: u32) -> SessionEvent {
        SessionEvent::TurnStart { turn: n }
    }

    fn log(capacity: usize) -> Arc<EventLog> {
        Arc::new(EventLog::new("s", capacity, usize::MAX))
    }

    fn drain(subscription: &mut Subscription) -> Vec<SubscriptionItem> {
        let mut items = Vec::new();
        while let Some(delivery) = subscription.try_next() {
            let json = delivery.to_json().unwrap();
            items.push(serde_json::from_str(json.get()).unwrap());
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
        let log = log(8);
        assert_eq!(log.last_seq(), 0);
        assert_eq!(log.publish(turn(1), 0), 1);
        assert_eq!(log.publish(turn(2), 0), 2);
        assert_eq!(log.last_seq(), 2);
    }

    #[test]
    fn live_subscriber_gets_only_new_events() {
        let log = log(8);
        log.publish(turn(1), 0);
        let mut rx = log.subscribe(None, None);
        log.publish(turn(2), 0);
        assert_eq!(seqs(&drain(&mut rx)), vec![2]);
    }

    #[test]
    fn reconnect_with_last_seq_replays_without_gap_or_duplicate() {
        let log = log(8);
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
    fn the_whole_window_is_replayable() {
        let log = log(4096);
        for n in 1..=5000 {
            log.publish(turn(n), 0);
        }
        let mut rx = log.subscribe(Some(5000 - 4096), None);
        let items = drain(&mut rx);
        assert_eq!(seqs(&items), (905..=5000).collect::<Vec<_>>());
        assert_eq!(log.subscriber_count(), 1);
    }

    #[test]
    fn the_buffer_is_bounded_in_bytes_and_keeps_the_newest_event() {
        let one = serde_json::to_string(&SubscriptionItem::Event(EventEnvelope {
            session_id: "s".into(),
            seq: 1,
            timestamp: 0,
            event: turn(1),
            client: None,
        }))
        .unwrap()
        .len();
        let log = Arc::new(EventLog::new("s", 1000, one * 3 + one / 2));
        for n in 1..=10 {
            log.publish(turn(n), 0);
        }
        let (events, bytes) = log.buffered();
        assert_eq!(events, 3);
        assert!(bytes <= one * 3 + one / 2, "{bytes}");
        let mut rx = log.subscribe(Some(7), None);
        assert_eq!(seqs(&drain(&mut rx)), vec![8, 9, 10]);
        // A limit smaller than one event still keeps the newest.
        let tiny = Arc::new(EventLog::new("s", 1000, 1));
        tiny.publish(turn(1), 0);
        tiny.publish(turn(2), 0);
        assert_eq!(tiny.buffered().0, 1);
    }

    #[test]
    fn too_old_a_cursor_is_told_to_resync() {
        let log = log(3);
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
    fn a_stuck_subscriber_is_lagged_while_others_get_everything() {
        let log = log(4);
        let mut stuck = log.subscribe(None, None);
        let mut healthy = log.subscribe(None, None);
        let mut seen = Vec::new();
        for n in 1..=10 {
            log.publish(turn(n), 0);
            seen.extend(seqs(&drain(&mut healthy)));
        }
        assert_eq!(seen, (1..=10).collect::<Vec<_>>());
        let items = drain(&mut stuck);
        assert_eq!(
            items,
            vec![SubscriptionItem::Lagged { session_id: "s".into(), last_delivered_seq: 0 }]
        );
        drop(stuck);
        assert_eq!(log.subscriber_count(), 1);
    }

    #[test]
    fn a_subscriber_that_read_part_is_lagged_at_the_right_seq() {
        let log = log(4);
        let mut slow = log.subscribe(None, None);
        log.publish(turn(1), 0);
        log.publish(turn(2), 0);
        assert_eq!(seqs(&drain(&mut slow)), vec![1, 2]);
        for n in 3..=8 {
            log.publish(turn(n), 0);
        }
        assert_eq!(
            drain(&mut slow),
            vec![SubscriptionItem::Lagged { session_id: "s".into(), last_delivered_seq: 2 }]
        );
    }

    #[test]
    fn events_before_binding_are_held_then_numbered() {
        let log = Arc::new(EventLog::unbound(8, usize::MAX, 1));
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
        let log = Arc::new(EventLog::unbound(8, usize::MAX, 1_000));
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
        let log = log(8);
        log.publish(turn(1), 0);
        let mut rx = log.subscribe(Some(0), Some("elsewhere"));
        assert!(matches!(drain(&mut rx)[..], [SubscriptionItem::ResyncRequired { .. }]));
        let stream = log.stream().to_string();
        let mut rx = log.subscribe(Some(0), Some(&stream));
        assert_eq!(seqs(&drain(&mut rx)), vec![1]);
    }

    #[tokio::test]
    async fn closing_ends_subscriptions_after_what_they_have_not_read() {
        let log = log(8);
        let mut rx = log.subscribe(None, None);
        log.publish(turn(1), 0);
        log.close();
        assert!(matches!(rx.next().await, Some(Delivery::Event(e)) if e.seq == 1));
        assert!(rx.next().await.is_none());
    }

    #[tokio::test]
    async fn closing_ends_every_subscription() {
        let log = log(8);
        let mut rx = log.subscribe(None, None);
        let waiter = tokio::spawn(async move { rx.next().await.is_none() });
        tokio::task::yield_now().await;
        log.close();
        assert!(waiter.await.unwrap());
        assert_eq!(log.subscriber_count(), 0);
    }

    #[tokio::test]
    async fn a_waiting_subscriber_wakes_for_each_event() {
        let log = log(8);
        let mut rx = log.subscribe(None, None);
        let publisher = log.clone();
        tokio::spawn(async move {
            for n in 1..=3 {
                tokio::task::yield_now().await;
                publisher.publish(turn(n), 0);
            }
        });
        let mut got = Vec::new();
        for _ in 0..3 {
            match rx.next().await {
                Some(Delivery::Event(event)) => got.push(event.seq),
                other => panic!("unexpected {other:?}"),
            }
        }
        assert_eq!(got, vec![1, 2, 3]);
    }

    #[test]
    fn dropped_subscribers_are_uncounted() {
        let log = log(8);
        let rx = log.subscribe(None, None);
        assert_eq!(log.subscriber_count(), 1);
        drop(rx);
        assert_eq!(log.subscriber_count(), 0);
    }
}
