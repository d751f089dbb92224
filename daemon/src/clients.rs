//! Who the clients are: the identity each connection gave at `initialize` (name, pid, tty),
//! and the client on whose behalf the current request runs.
//!
//! Every method call runs inside [`on_behalf_of`], which makes its client's identity the
//! task's *caller*. The session hub reads [`caller`] when it numbers an event, so an event a
//! request causes (an answered approval, a model, thinking-level or policy change, a label)
//! names the client in its envelope's `client` field. Events of a run (its own task) name no
//! client.

use rein_protocol::event::ClientIdentity;
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Mutex, Weak};

use crate::sync::lock;

tokio::task_local! {
    static CALLER: ClientIdentity;
}

/// Runs `work` with `identity` as the caller that [`caller`] reports.
pub async fn on_behalf_of<F: Future>(identity: ClientIdentity, work: F) -> F::Output {
    CALLER.scope(identity, work).await
}

/// The client whose request the current task serves, if any.
pub fn caller() -> Option<ClientIdentity> {
    CALLER.try_with(ClientIdentity::clone).ok()
}

/// What a connection said about its process at `initialize`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessInfo {
    /// The client's process id.
    pub pid: Option<u32>,
    /// The client's terminal.
    pub tty: Option<String>,
}

/// The process details of every connection that gave them, by connection number. An entry
/// lives as long as its connection: each holds a weak reference to something the connection
/// owns, and dead entries are dropped whenever a new one is added.
#[derive(Debug, Default)]
pub struct ClientDirectory {
    entries: Mutex<HashMap<usize, Entry>>,
}

/// Something the connection owns (alive while it is), and the details it gave.
type Entry = (Weak<dyn Send + Sync>, ProcessInfo);

impl ClientDirectory {
    /// Records connection `id`'s details; they are forgotten once `owner` is gone.
    pub fn record(&self, id: usize, owner: Weak<dyn Send + Sync>, info: ProcessInfo) {
        let mut entries = lock(&self.entries);
        entries.retain(|_, (owner, _)| owner.strong_count() > 0);
        entries.insert(id, (owner, info));
    }

    /// Connection `id`'s details (empty when it gave none).
    pub fn get(&self, id: usize) -> ProcessInfo {
        lock(&self.entries)
            .get(&id)
            .filter(|(owner, _)| owner.strong_count() > 0)
            .map(|(_, info)| info.clone())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn the_caller_is_known_inside_the_scope_only() {
        assert_eq!(caller(), None);
        let me = ClientIdentity { name: "vim".into(), pid: Some(7), tty: None };
        let seen = on_behalf_of(me.clone(), async { caller() }).await;
        assert_eq!(seen, Some(me));
        assert_eq!(caller(), None);
    }

    #[test]
    fn entries_die_with_their_connection() {
        let directory = ClientDirectory::default();
        let owner: Arc<dyn Send + Sync> = Arc::new(());
        let info = ProcessInfo { pid: Some(3), tty: Some("/dev/pts/1".into()) };
        directory.record(1, Arc::downgrade(&owner), info.clone());
        assert_eq!(directory.get(1), info);
        drop(owner);
        assert_eq!(directory.get(1), ProcessInfo::default());
        let other: Arc<dyn Send + Sync> = Arc::new(());
        directory.record(2, Arc::downgrade(&other), ProcessInfo::default());
        assert!(lock(&directory.entries).get(&1).is_none(), "the dead entry was not pruned");
    }
}
