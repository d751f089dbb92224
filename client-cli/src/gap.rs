//! No silent gaps: following a session's events across a `lagged` subscription.
//!
//! A subscriber that falls behind is sent `lagged` and dropped. [`StreamCursor`] keeps what a
//! client has seen (the last seq, the entries announced) and repairs the stream:
//!
//! 1. after `lagged`, it subscribes again from the last seq it saw; when the daemon's replay
//!    buffer still reaches back, the missed events simply arrive and nothing is lost;
//! 2. when the buffer no longer reaches (`resync_required`), the events between the last seq
//!    seen and the oldest one buffered are gone for good. It subscribes from the oldest one
//!    buffered and fills the hole from what the session keeps on disk: every entry appended
//!    since the client started watching that it has not been shown ([`Gap::entries`]). Those
//!    entries are the durable record of what happened (messages, tool calls and results);
//!    the events lost with them are the transient ones (streaming deltas, tool progress).
//!    The entries are read after the new subscription starts, so nothing falls between the
//!    two; an entry appended in that instant is in the record and also announced by its
//!    `entry_appended` event that follows (the entry id tells them apart).
//!
//! `rein run --json` prints each gap as one record, `{"type": "gap", "session_id", "from_seq",
//! "to_seq", "filled", "entries"}`; when the gap cannot be filled (the run ended inside it, so
//! its outcome is unknown) it prints `"filled": false` with a `reason` and exits 8.

use crate::client::{Client, ClientError};
use rein_protocol::entry::{EntryKind, SessionEntry};
use rein_protocol::event::{EventEnvelope, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{HistoryPageParams, SessionRef, SessionState, TreeResult};
use rein_protocol::requests as rq;
use serde_json::{Value, json};
use std::collections::HashSet;

/// Where a client is in a session's event stream.
#[derive(Debug, Clone)]
pub struct StreamCursor {
    session_id: String,
    last_seq: u64,
    /// The leaf when the client started watching: entries after it are new to the client.
    start_leaf: Option<String>,
    /// Entries the client was shown (announced live or recovered into a gap).
    shown: HashSet<String>,
    /// The subscription a repair opened, until the client takes it (its items come under
    /// this id from then on).
    resubscribed: Option<String>,
}

/// Events lost for good, and what the session's entries tell about them.
#[derive(Debug, Clone)]
pub struct Gap {
    /// The session.
    pub session_id: String,
    /// The first seq missing.
    pub from_seq: u64,
    /// The last seq missing.
    pub to_seq: u64,
    /// The entries appended meanwhile that the client was not shown, in file order.
    pub entries: Vec<SessionEntry>,
    /// The run going when the gap was filled (its id; empty when unknown), if any.
    pub running: Option<String>,
    /// The session's last seq when the gap was filled: once the client has seen it, it has
    /// seen everything that happened up to the filling.
    pub last_seq_then: u64,
}

impl StreamCursor {
    /// A client that subscribed after `last_seq`, when the session's leaf was `start_leaf`.
    pub fn new(session_id: &str, last_seq: u64, start_leaf: Option<String>) -> Self {
        Self {
            session_id: session_id.to_string(),
            last_seq,
            start_leaf,
            shown: HashSet::new(),
            resubscribed: None,
        }
    }

    /// The last seq seen.
    pub fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// Notes an event the client was shown.
    pub fn observe(&mut self, envelope: &EventEnvelope) {
        self.last_seq = self.last_seq.max(envelope.seq);
        if let SessionEvent::EntryAppended { entry } = &envelope.event {
            self.shown.insert(entry.id.clone());
        }
    }

    /// After `lagged`: subscribes again from the last seq seen.
    pub async fn resume(&mut self, client: &mut Client) -> Result<(), ClientError> {
        let subscription = client.subscribe(&self.session_id, self.last_seq).await?;
        self.resubscribed = Some(subscription);
        Ok(())
    }

    /// The id of the subscription a repair ([`Self::resume`], [`Self::fill`]) opened since
    /// the last call: a client that tells subscriptions apart follows that one from now on.
    pub fn take_resubscribed(&mut self) -> Option<String> {
        self.resubscribed.take()
    }

    /// After `resync_required` (the buffer's oldest event is `oldest_buffered_seq`): follows
    /// on from the oldest event still buffered and collects the entries that fill the hole.
    pub async fn fill(
        &mut self,
        client: &mut Client,
        oldest_buffered_seq: u64,
    ) -> Result<Gap, ClientError> {
        let from_seq = self.last_seq + 1;
        let to_seq = oldest_buffered_seq.saturating_sub(1).max(self.last_seq);
        let session = SessionRef { session_id: self.session_id.clone() };
        let state: SessionState = client.request::<rq::SessionState>(&session).await?;
        // Subscribe before reading the entries: any entry missing from the tree read below is
        // announced on this subscription.
        self.resubscribed = Some(client.subscribe(&self.session_id, to_seq).await?);
        let page =
            HistoryPageParams { session_id: self.session_id.clone(), limit: None, cursor: None };
        let tree: TreeResult = client.request::<rq::SessionTree>(page).await?;
        let entries = self.unseen(tree.entries);
        self.shown.extend(entries.iter().map(|entry| entry.id.clone()));
        self.last_seq = to_seq;
        Ok(Gap {
            session_id: self.session_id.clone(),
            from_seq,
            to_seq,
            entries,
            running: state.running.then(|| state.run_id.unwrap_or_default()),
            last_seq_then: state.last_seq,
        })
    }

    /// The entries after the starting leaf that the client was not shown.
    fn unseen(&self, entries: Vec<SessionEntry>) -> Vec<SessionEntry> {
        let start = self
            .start_leaf
            .as_ref()
            .and_then(|leaf| entries.iter().position(|entry| entry.id == *leaf))
            .map_or(0, |index| index + 1);
        entries.into_iter().skip(start).filter(|entry| !self.shown.contains(&entry.id)).collect()
    }
}

impl Gap {
    /// The `{"type": "gap", ...}` record; `reason` says why it could not be filled.
    pub fn record(&self, reason: Option<&str>) -> Value {
        let mut record = json!({
            "type": "gap",
            "session_id": self.session_id,
            "from_seq": self.from_seq,
            "to_seq": self.to_seq,
            "filled": reason.is_none(),
            "entries": self.entries,
        });
        if let Some(reason) = reason {
            record["reason"] = json!(reason);
        }
        record
    }

    /// The recovered entries as text for a person: what was said and what the tools returned.
    pub fn text(&self) -> String {
        let mut text = format!(
            "(fell behind the event stream: events {}-{} were lost; {} entries recovered from the session)\n",
            self.from_seq,
            self.to_seq,
            self.entries.len()
        );
        for entry in &self.entries {
            if let EntryKind::Message { message } = &entry.kind {
                let line = match message.as_ref() {
                    Message::User(user) => format!("> {}", crate::render::user_text(&user.content)),
                    Message::Assistant(assistant) => assistant.text(),
                    Message::ToolResult(result) => format!(
                        "[{}{}] {}",
                        result.tool_name,
                        if result.is_error { " failed" } else { "" },
                        crate::render::preview(&result.text())
                    ),
                };
                if !line.trim().is_empty() {
                    text.push_str(line.trim_end());
                    text.push('\n');
                }
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: None,
            timestamp: "2026-12-01T00:00:00Z".into(),
            kind: EntryKind::Label { target_id: "x".into(), label: None },
        }
    }

    #[test]
    fn only_entries_after_the_start_that_were_not_shown_fill_a_gap() {
        let mut cursor = StreamCursor::new("s", 10, Some("b".into()));
        let announced = EventEnvelope {
            session_id: "s".into(),
            seq: 11,
            timestamp: 0,
            event: SessionEvent::EntryAppended { entry: entry("c") },
            client: None,
        };
        cursor.observe(&announced);
        assert_eq!(cursor.last_seq(), 11);
        let all = ["a", "b", "c", "d", "e"].map(entry).to_vec();
        let ids: Vec<String> = cursor.unseen(all.clone()).into_iter().map(|e| e.id).collect();
        assert_eq!(ids, ["d", "e"]);
        // Without a starting leaf (a new session) every unseen entry counts.
        let fresh = StreamCursor::new("s", 0, None);
        assert_eq!(fresh.unseen(all).len(), 5);
    }

    #[test]
    fn the_record_names_the_missing_range() {
        let gap = Gap {
            session_id: "s".into(),
            from_seq: 12,
            to_seq: 40,
            entries: vec![entry("d")],
            running: None,
            last_seq_then: 41,
        };
        let filled = gap.record(None);
        assert_eq!(filled["type"], "gap");
        assert_eq!(filled["from_seq"], 12);
        assert_eq!(filled["to_seq"], 40);
        assert_eq!(filled["filled"], true);
        assert_eq!(filled["entries"][0]["id"], "d");
        let lost = gap.record(Some("the run ended inside the gap"));
        assert_eq!(lost["filled"], false);
        assert_eq!(lost["reason"], "the run ended inside the gap");
    }
}
