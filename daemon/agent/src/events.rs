//! Event delivery: every subscriber gets every [`SessionEvent`] in emission order.
//!
//! Emitting only sends on unbounded channels: it never runs subscriber code and never blocks, so
//! the loop can emit while it holds the harness state lock (that is how queue changes and the
//! final `Settled` stay ordered with respect to the state they describe).

use rein_protocol::event::SessionEvent;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::mpsc;

/// The receiving end of a harness subscription.
pub type EventReceiver = mpsc::UnboundedReceiver<SessionEvent>;

/// How many events a harness has emitted so far; a cheap handle that stays valid as long as
/// anyone holds it.
#[derive(Debug, Clone, Default)]
pub struct EmittedCount(Arc<AtomicU64>);

impl EmittedCount {
    /// Events emitted so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// Fans events out to subscribers.
#[derive(Debug, Default)]
pub(crate) struct EventHub {
    subscribers: Mutex<Vec<mpsc::UnboundedSender<SessionEvent>>>,
    emitted: EmittedCount,
}

impl EventHub {
    /// Adds a subscriber like [`EventHub::subscribe`], and returns the emitted count with how
    /// many events came before it: the subscriber has received every event once the count
    /// minus that number have arrived.
    pub(crate) fn subscribe_counted(&self) -> (EventReceiver, EmittedCount, u64) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let mut subscribers = self.lock();
        subscribers.push(sender);
        // Read under the lock that `emit` counts under, so no event falls between the two.
        let before = self.emitted.get();
        drop(subscribers);
        (receiver, self.emitted.clone(), before)
    }

    /// Adds a subscriber that receives every event emitted from now on.
    pub(crate) fn subscribe(&self) -> EventReceiver {
        let (sender, receiver) = mpsc::unbounded_channel();
        self.lock().push(sender);
        receiver
    }

    /// Delivers one event to every live subscriber; subscribers that went away are dropped.
    pub(crate) fn emit(&self, event: SessionEvent) {
        let mut subscribers = self.lock();
        self.emitted.0.fetch_add(1, Ordering::AcqRel);
        subscribers.retain(|sender| !sender.is_closed());
        if let Some((last, others)) = subscribers.split_last() {
            for sender in others {
                let _ = sender.send(event.clone());
            }
            let _ = last.send(event);
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<mpsc::UnboundedSender<SessionEvent>>> {
        self.subscribers.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_subscriber_gets_every_event_in_order_and_dropped_ones_are_forgotten() {
        let hub = EventHub::default();
        let mut first = hub.subscribe();
        let second = hub.subscribe();
        hub.emit(SessionEvent::TurnStart { turn: 1 });
        drop(second);
        hub.emit(SessionEvent::Settled);
        assert_eq!(first.try_recv().unwrap(), SessionEvent::TurnStart { turn: 1 });
        assert_eq!(first.try_recv().unwrap(), SessionEvent::Settled);
        assert_eq!(hub.lock().len(), 1);
    }

    #[test]
    fn a_counted_subscription_knows_how_many_events_came_before_it() {
        let hub = EventHub::default();
        hub.emit(SessionEvent::Settled);
        let (mut receiver, count, before) = hub.subscribe_counted();
        assert_eq!((count.get(), before), (1, 1));
        hub.emit(SessionEvent::TurnStart { turn: 1 });
        hub.emit(SessionEvent::Settled);
        assert_eq!(count.get() - before, 2);
        assert_eq!(receiver.try_recv().unwrap(), SessionEvent::TurnStart { turn: 1 });
        assert_eq!(receiver.try_recv().unwrap(), SessionEvent::Settled);
    }
}
