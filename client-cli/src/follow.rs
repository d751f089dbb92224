//! Following one session's events: the loop `rein run` and the interactive client share.
//!
//! A [`Follower`] turns the raw items of a `session/subscribe` subscription into what a
//! client acts on: events, in order, each noted in the [`StreamCursor`], and [`Gap`]s where
//! events were lost for good. It repairs the stream on its own: after `lagged` it subscribes
//! again from the last seq seen; after `resync_required` it fills the hole from the session's
//! entries (see [`crate::gap`]); keepalives and unknown items are skipped.
//!
//! Reading the next item ([`Client::next_session_item`]) is safe to race against the keyboard
//! in a `select!`; the repair calls are made in [`Follower::accept`], after the race.

use crate::client::{Client, ClientError, SessionNotice};
use crate::gap::{Gap, StreamCursor};
use rein_protocol::event::{EventEnvelope, SubscriptionItem};
use serde_json::Value;

/// What a subscription item means to the client.
#[derive(Debug, Clone)]
pub enum Followed {
    /// An event, typed, with the JSON the daemon sent (so `--json` loses no field).
    Event {
        /// The event.
        envelope: Box<EventEnvelope>,
        /// The item as sent.
        raw: Value,
    },
    /// Events were lost for good; the entries the session recorded meanwhile fill the hole.
    Gap(Gap),
}

/// Follows one session's subscription.
#[derive(Debug, Clone)]
pub struct Follower {
    cursor: StreamCursor,
}

impl Follower {
    /// Follows on from where `cursor` is.
    pub fn new(cursor: StreamCursor) -> Self {
        Self { cursor }
    }

    /// Where the follower is in the stream.
    pub fn cursor(&self) -> &StreamCursor {
        &self.cursor
    }

    /// The id of the subscription the follower opened when it repaired the stream, once:
    /// the session's items come under that id from then on.
    pub fn take_resubscribed(&mut self) -> Option<String> {
        self.cursor.take_resubscribed()
    }

    /// Waits for the next item and accepts it (for loops that wait on nothing else).
    pub async fn next(&mut self, client: &mut Client) -> Result<Followed, ClientError> {
        loop {
            let notice = client.next_session_item().await?;
            if let Some(followed) = self.accept(client, notice).await? {
                return Ok(followed);
            }
        }
    }

    /// Takes in one item read with [`Client::next_session_item`]: an event is noted and
    /// returned; a lost stretch is repaired (resubscribing, or filling a [`Gap`]); items with
    /// nothing to show give `None`.
    pub async fn accept(
        &mut self,
        client: &mut Client,
        notice: SessionNotice,
    ) -> Result<Option<Followed>, ClientError> {
        match notice.item {
            SubscriptionItem::Event(envelope) => {
                self.cursor.observe(&envelope);
                Ok(Some(Followed::Event { envelope: Box::new(envelope), raw: notice.raw }))
            }
            SubscriptionItem::Lagged { .. } => {
                // The replay buffer may still hold what was missed.
                self.cursor.resume(client).await?;
                Ok(None)
            }
            SubscriptionItem::ResyncRequired { oldest_buffered_seq, .. } => {
                let gap = self.cursor.fill(client, oldest_buffered_seq).await?;
                Ok(Some(Followed::Gap(gap)))
            }
            SubscriptionItem::Keepalive { .. } | SubscriptionItem::Unknown => Ok(None),
        }
    }
}
