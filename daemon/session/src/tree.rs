//! The entry tree in memory: entries in file order, parent links, the active leaf and paths.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};

use hashbrown::hash_table::{Entry, HashTable};

use rein_protocol::message::{Message, Usage};
use rein_protocol::{EntryKind, SessionEntry};
use serde_json::json;

/// `custom_type` of the entry that records a pure move of the active leaf (a branch with no new
/// entry). Its `data` is `{"leaf_id": <id or null>}`; it is never part of a path.
pub const LEAF_MOVE_TYPE: &str = "rein.leaf";

/// If an entry of this kind records a leaf move, the leaf it moved to (`Some(None)` for "no
/// leaf").
pub fn leaf_move_target(kind: &EntryKind) -> Option<Option<&str>> {
    match kind {
        EntryKind::Custom { custom_type, data } if custom_type == LEAF_MOVE_TYPE => {
            Some(data.get("leaf_id").and_then(|v| v.as_str()))
        }
        _ => None,
    }
}

/// The kind of a leaf-move entry to `target`.
pub fn leaf_move_kind(target: Option<&str>) -> EntryKind {
    EntryKind::Custom {
        custom_type: LEAF_MOVE_TYPE.to_string(),
        data: json!({ "leaf_id": target }),
    }
}

/// Every entry of a session, indexed, with the active leaf.
///
/// The leaf is the last appended entry, except that a leaf-move entry sets it to its target.
/// A parent link is only followed when the parent appears earlier in the file, so every path is
/// finite even in a damaged file.
#[derive(Debug, Clone, Default)]
pub struct SessionTree {
    entries: Vec<SessionEntry>,
    /// Positions in `entries` by id: the table holds positions only, the ids are the entries'
    /// own (no second copy of 100,000 ids).
    index: HashTable<usize>,
    hasher: RandomState,
    parents: Vec<Option<usize>>,
    leaf: Option<usize>,
    /// The position of the latest session-info entry (the one that names the session).
    info: Option<usize>,
    /// The usage of every reply in the file, on every branch.
    usage: Usage,
}

impl SessionTree {
    /// An empty tree with room for `entries` entries, so that reading a file of known length
    /// does not grow (and copy) its vectors as it goes.
    pub fn with_capacity(entries: usize) -> Self {
        Self {
            entries: Vec::with_capacity(entries),
            index: HashTable::with_capacity(entries),
            hasher: RandomState::default(),
            parents: Vec::with_capacity(entries),
            leaf: None,
            info: None,
            usage: Usage::default(),
        }
    }

    /// A tree of these entries, in file order.
    pub fn from_entries(entries: Vec<SessionEntry>) -> Self {
        let mut tree = Self::default();
        tree.entries.reserve(entries.len());
        for entry in entries {
            tree.push(entry);
        }
        tree
    }

    /// Adds an entry (already written to the file) and moves the leaf as replay would. A
    /// repeated id names the latest entry from then on, as a map insert would.
    pub fn push(&mut self, entry: SessionEntry) {
        self.add(entry, true);
    }

    /// Adds an entry as [`SessionTree::push`] does unless its id is taken already: then the
    /// entry is dropped, the tree left as it was, and false returned (a file that repeats an
    /// id is damaged there). Reading a file this way needs no second set of its ids.
    pub fn push_new(&mut self, entry: SessionEntry) -> bool {
        self.add(entry, false)
    }

    /// Adds the entry; false when its id is taken and `repeat` does not allow it.
    fn add(&mut self, entry: SessionEntry, repeat: bool) -> bool {
        let position = self.entries.len();
        // Looked up before the entry is indexed, so an entry never becomes its own parent.
        // Most entries hang off the one before them, which is always the entry its id names
        // (the latest added): that needs no lookup in the index.
        let parent = entry.parent_id.as_deref().and_then(|id| match self.entries.last() {
            Some(last) if last.id == id => Some(position - 1),
            _ => self.position(id),
        });
        let leaf = match leaf_move_target(&entry.kind) {
            Some(target) => target.and_then(|id| self.position(id)),
            None => Some(position),
        };
        let hash = self.hasher.hash_one(entry.id.as_str());
        let (entries, hasher) = (&self.entries, &self.hasher);
        match self.index.entry(
            hash,
            |&i| entries[i].id == entry.id,
            |&i| hasher.hash_one(entries[i].id.as_str()),
        ) {
            Entry::Occupied(_) if !repeat => return false,
            Entry::Occupied(mut slot) => *slot.get_mut() = position,
            Entry::Vacant(slot) => {
                slot.insert(position);
            }
        }
        self.leaf = leaf;
        match &entry.kind {
            EntryKind::SessionInfo { .. } => self.info = Some(position),
            EntryKind::Message { message } => {
                if let Message::Assistant(reply) = message.as_ref() {
                    self.usage.add(&reply.usage);
                }
            }
            _ => {}
        }
        self.parents.push(parent);
        self.entries.push(entry);
        true
    }

    /// Gives back the spare capacity the tree's vectors grew while a file was read.
    pub fn shrink_to_fit(&mut self) {
        let (entries, hasher) = (&self.entries, &self.hasher);
        self.index.shrink_to_fit(|&i| hasher.hash_one(entries[i].id.as_str()));
        self.entries.shrink_to_fit();
        self.parents.shrink_to_fit();
    }

    /// The position of the entry with this id.
    fn position(&self, id: &str) -> Option<usize> {
        let hash = self.hasher.hash_one(id);
        self.index.find(hash, |&i| self.entries[i].id == id).copied()
    }

    /// Every entry in file order.
    pub fn entries(&self) -> &[SessionEntry] {
        &self.entries
    }

    /// Every entry, taken out of the tree.
    pub fn into_entries(self) -> Vec<SessionEntry> {
        self.entries
    }

    /// The entry with this id.
    pub fn get(&self, id: &str) -> Option<&SessionEntry> {
        self.position(id).map(|i| &self.entries[i])
    }

    /// Whether an entry has this id.
    pub fn contains(&self, id: &str) -> bool {
        self.position(id).is_some()
    }

    /// The active leaf's id; `None` for an empty conversation.
    pub fn leaf_id(&self) -> Option<&str> {
        self.leaf.map(|i| self.entries[i].id.as_str())
    }

    /// The root-to-entry path ending at `id` (empty for `None` or an unknown id).
    pub fn path_to(&self, id: Option<&str>) -> Vec<&SessionEntry> {
        let mut path = Vec::new();
        let mut cursor = id.and_then(|id| self.position(id));
        while let Some(i) = cursor {
            path.push(&self.entries[i]);
            cursor = self.parents[i];
        }
        path.reverse();
        path
    }

    /// The active leaf's root-to-leaf path.
    pub fn active_path(&self) -> Vec<&SessionEntry> {
        self.path_to(self.leaf_id())
    }

    /// The current label of each labelled entry (the last label entry for it wins).
    pub fn labels(&self) -> HashMap<&str, &str> {
        let mut labels = HashMap::new();
        for entry in &self.entries {
            if let EntryKind::Label { target_id, label } = &entry.kind {
                match label {
                    Some(text) => labels.insert(target_id.as_str(), text.as_str()),
                    None => labels.remove(target_id.as_str()),
                };
            }
        }
        labels
    }

    /// The session's name: the last session-info entry in the file.
    pub fn name(&self) -> Option<&str> {
        match &self.entries.get(self.info?)?.kind {
            EntryKind::SessionInfo { name } => name.as_deref(),
            _ => None,
        }
    }

    /// The usage of every reply in the file, on every branch (what the session has cost).
    pub fn total_usage(&self) -> &Usage {
        &self.usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, parent: Option<&str>, kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(Into::into),
            timestamp: "t".into(),
            kind,
        }
    }

    fn info(id: &str, parent: Option<&str>) -> SessionEntry {
        entry(id, parent, EntryKind::SessionInfo { name: Some(id.into()) })
    }

    fn ids(path: Vec<&SessionEntry>) -> Vec<&str> {
        path.into_iter().map(|e| e.id.as_str()).collect()
    }

    #[test]
    fn leaf_follows_appends_and_moves() {
        let mut tree = SessionTree::from_entries(vec![info("a", None), info("b", Some("a"))]);
        assert_eq!(tree.leaf_id(), Some("b"));
        tree.push(entry("m", Some("b"), leaf_move_kind(Some("a"))));
        assert_eq!(tree.leaf_id(), Some("a"));
        assert_eq!(ids(tree.active_path()), ["a"]);
        tree.push(info("c", Some("a")));
        assert_eq!(ids(tree.active_path()), ["a", "c"]);
        tree.push(entry("n", Some("c"), leaf_move_kind(None)));
        assert_eq!(tree.leaf_id(), None);
        assert!(tree.active_path().is_empty());
        assert_eq!(ids(tree.path_to(Some("b"))), ["a", "b"]);
    }

    #[test]
    fn a_repeated_id_names_its_latest_entry() {
        let again = entry("a", Some("b"), EntryKind::SessionInfo { name: Some("again".into()) });
        let tree = SessionTree::from_entries(vec![info("a", None), info("b", Some("a")), again]);
        assert_eq!(tree.get("a").unwrap().parent_id.as_deref(), Some("b"));
        assert!(tree.contains("b") && !tree.contains("z"));
        assert_eq!(tree.entries().len(), 3);
    }

    #[test]
    fn parents_must_come_first() {
        let tree = SessionTree::from_entries(vec![info("a", Some("b")), info("b", Some("a"))]);
        assert_eq!(ids(tree.active_path()), ["a", "b"]);
    }

    #[test]
    fn labels_and_name_take_the_last_word() {
        let tree = SessionTree::from_entries(vec![
            info("a", None),
            entry(
                "l1",
                Some("a"),
                EntryKind::Label { target_id: "a".into(), label: Some("x".into()) },
            ),
            entry(
                "l2",
                Some("l1"),
                EntryKind::Label { target_id: "a".into(), label: Some("y".into()) },
            ),
            entry(
                "l3",
                Some("l2"),
                EntryKind::Label { target_id: "l1".into(), label: Some("z".into()) },
            ),
            entry("l4", Some("l3"), EntryKind::Label { target_id: "l1".into(), label: None }),
        ]);
        assert_eq!(tree.labels().into_iter().collect::<Vec<_>>(), [("a", "y")]);
        assert_eq!(tree.name(), Some("a"));
    }

    #[test]
    fn the_name_is_the_latest_session_info_even_when_it_clears_it() {
        let mut tree = SessionTree::default();
        assert_eq!(tree.name(), None);
        tree.push(info("a", None));
        tree.push(entry("x", Some("a"), leaf_move_kind(None)));
        assert_eq!(tree.name(), Some("a"));
        tree.push(entry("b", None, EntryKind::SessionInfo { name: None }));
        assert_eq!(tree.name(), None);
        tree.push(info("c", Some("b")));
        assert_eq!(tree.name(), Some("c"));
    }

    #[test]
    fn total_usage_counts_every_reply_on_every_branch() {
        use rein_protocol::message::{AssistantMessage, StopReason, UserMessage};
        let reply = |input: u64, cost: f64| {
            let mut usage = Usage { input, output: 1, ..Usage::default() };
            usage.cost.total = cost;
            let message = Message::Assistant(AssistantMessage {
                content: Vec::new(),
                api: "a".into(),
                provider: "p".into(),
                model: "m".into(),
                usage,
                stop_reason: StopReason::Stop,
                error_message: None,
                timestamp: 0,
            });
            EntryKind::Message { message: message.into() }
        };
        let user = EntryKind::Message { message: Message::User(UserMessage::text("u", 0)).into() };
        let mut tree = SessionTree::default();
        tree.push(entry("u1", None, user));
        tree.push(entry("r1", Some("u1"), reply(10, 0.25)));
        // A branch from the user message, and a repeated id: both count, as written.
        tree.push(entry("r2", Some("u1"), reply(20, 0.5)));
        tree.push(entry("r1", Some("r2"), reply(5, 0.125)));
        let total = tree.total_usage();
        assert_eq!((total.input, total.output, total.cost.total), (35, 3, 0.875));
    }
}
