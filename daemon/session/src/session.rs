//! An open session: its locked file, its entry tree, and the writes a harness makes.

use std::collections::HashSet;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rein_protocol::entry::RepairAction;
use rein_protocol::message::Message;
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::{ModelRef, ThinkingLevel};
use rein_protocol::{EntryKind, SessionEntry};

use crate::context_tally::ContextTally;
use crate::error::SessionError;
use crate::header::SessionHeader;
use crate::ids::{new_entry_id, now_millis, now_rfc3339};
use crate::repair::{PathMessage, normalize_tool_history, repair_tool_history};
use crate::replay::{Replay, recorded_repairs, replay};
use crate::storage::{PathState, SessionFile, encode_file, keep_damaged_lines};
use crate::tree::{SessionTree, leaf_move_kind};

mod append;
pub use append::QueuedAppend;

/// What opening a session repaired (also written to the file as one repair entry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LoadReport {
    /// Every repair made, in the order written.
    pub actions: Vec<RepairAction>,
    /// The repair entry, when anything was repaired.
    pub repair_entry_id: Option<String>,
}

/// An open session. Holds the file's lock until dropped; every write is durable (fsync'd) when
/// the call returns.
#[derive(Debug)]
pub struct Session {
    header: SessionHeader,
    file: SessionFile,
    tree: SessionTree,
    pub(crate) compaction_running: Arc<AtomicBool>,
    /// The context's token count, moved along with every append (see [`ContextTally`]).
    context_tally: Mutex<Option<ContextTally>>,
}

impl Session {
    /// Wraps a freshly created file.
    pub(crate) fn from_new_file(
        header: SessionHeader,
        file: SessionFile,
        entries: Vec<SessionEntry>,
    ) -> Self {
        Self::from_tree(header, file, SessionTree::from_entries(entries))
    }

    /// Wraps a file whose entries were read into `tree`.
    fn from_tree(header: SessionHeader, file: SessionFile, tree: SessionTree) -> Self {
        Self {
            header,
            file,
            tree,
            compaction_running: Arc::default(),
            context_tally: Mutex::new(None),
        }
    }

    /// Opens and locks an existing session file, then repairs what needs it: damaged lines are
    /// set aside in the `.corrupt` sidecar and cut out of the file (atomic rewrite), and the
    /// active path's tool history is repaired. Repairs are recorded in one repair entry.
    pub fn open(path: &Path) -> Result<(Self, LoadReport), SessionError> {
        let (mut file, parsed) = SessionFile::open(path)?;
        let mut actions = Vec::new();
        if let Some(clean) = &parsed.repaired_bytes {
            if !parsed.damaged.is_empty() {
                let sidecar = keep_damaged_lines(path, &parsed.damaged, &now_rfc3339())?;
                let lines: Vec<u64> = parsed.damaged.iter().map(|d| d.line).collect();
                tracing::warn!(path = %path.display(), ?lines, "skipped damaged session lines");
                actions.push(RepairAction::CorruptLinesSkipped {
                    lines,
                    sidecar: sidecar.display().to_string(),
                });
            }
            file.rewrite(clean)?;
        }
        let mut session = Self::from_tree(parsed.header, file, parsed.tree);
        let report = session.repair_with(actions)?;
        Ok((session, report))
    }

    /// Repairs the active path's tool history (dangling calls answered, duplicates and orphans
    /// dropped, results put back behind their calls) and writes what was done, once: repairs
    /// already recorded on the path are not repeated. Runs on open.
    pub fn repair_active_path(&mut self) -> Result<LoadReport, SessionError> {
        self.repair_with(Vec::new())
    }

    fn repair_with(&mut self, mut actions: Vec<RepairAction>) -> Result<LoadReport, SessionError> {
        let path = self.tree.active_path();
        if actions.is_empty()
            && crate::replay::context_is_valid(&crate::replay::context_entries(&path))
        {
            return Ok(LoadReport::default());
        }
        let raw = crate::replay::raw_context(&path);
        let recorded = recorded_repairs(&path);
        let mut minted: HashSet<String> = HashSet::new();
        let tree = &self.tree;
        let mut new_id = || {
            let id = new_entry_id(|id| tree.contains(id) || minted.contains(id));
            minted.insert(id.clone());
            id
        };
        let (repaired, tool_actions) = repair_tool_history(raw.clone(), &mut new_id, now_millis());
        let added: Vec<PathMessage> =
            repaired.into_iter().filter(|m| minted.contains(&m.entry_id)).collect();
        // The added results are written after the leaf, not behind their calls, so replaying
        // the file later moves results they now stand after. Those moves are recorded here
        // too, so that the next open finds nothing new to repair.
        let mut written_path = raw;
        written_path.extend(added.iter().cloned());
        let (_, implied) = normalize_tool_history(written_path);
        for action in tool_actions.into_iter().chain(implied) {
            let named = |id: &str| {
                recorded.contains(id)
                    || actions.iter().any(|a| crate::repair::action_entry_id(a) == Some(id))
            };
            if !crate::repair::action_entry_id(&action).is_some_and(named) {
                actions.push(action);
            }
        }
        if actions.is_empty() {
            return Ok(LoadReport::default());
        }
        let mut entries: Vec<(Option<String>, EntryKind)> = added
            .into_iter()
            .map(|m| (Some(m.entry_id), EntryKind::Message { message: m.message.into() }))
            .collect();
        entries.push((None, EntryKind::Repair { actions: actions.clone() }));
        let written = self.append_entries(entries)?;
        tracing::info!(session = %self.header.id, count = actions.len(), "repaired session");
        Ok(LoadReport { actions, repair_entry_id: written.last().map(|e| e.id.clone()) })
    }

    /// The context's token tally, for [`Session::context_tokens`].
    pub(crate) fn context_tally(&self) -> MutexGuard<'_, Option<ContextTally>> {
        self.context_tally.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a compaction of this session is generating its summary now.
    pub fn is_compacting(&self) -> bool {
        self.compaction_running.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The header line.
    pub fn header(&self) -> &SessionHeader {
        &self.header
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.header.id
    }

    /// The project directory.
    pub fn cwd(&self) -> &str {
        &self.header.cwd
    }

    /// The session file.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// How many fsyncs of appends the session file has had since it was opened (entries
    /// appended together share one).
    pub fn file_syncs(&self) -> u64 {
        self.file.syncs()
    }

    /// The entry tree (every entry, for navigation).
    pub fn tree(&self) -> &SessionTree {
        &self.tree
    }

    /// The active leaf.
    pub fn leaf_id(&self) -> Option<&str> {
        self.tree.leaf_id()
    }

    /// The session's name.
    pub fn name(&self) -> Option<&str> {
        self.tree.name()
    }

    /// Everything the active path puts in force.
    pub fn replay(&self) -> Replay {
        replay(&self.tree.active_path())
    }

    /// The model, thinking level and approval policy the active path puts in force, without
    /// the message copies of a whole [`Session::replay`].
    pub fn settings(&self) -> crate::replay::SettingsInForce {
        crate::replay::settings_in_force(&self.tree.active_path())
    }

    /// The messages on the active path as the model sees them (the compaction summary first),
    /// with recorded repairs applied. Dangling calls of a run in progress are left as they are.
    pub fn context_messages(&self) -> Vec<Message> {
        crate::replay::context_message_list(&self.tree.active_path())
    }

    /// The messages to send in the next request: [`Session::context_messages`] with the full
    /// tool-history repair applied in memory, so the request is always valid. A history that
    /// needs no repair (the common case) is returned as it is, without running the rules, and
    /// shares each message with its entry (no copy: the harness keeps this as its history).
    pub fn request_messages(&self) -> Vec<Arc<Message>> {
        let messages = crate::replay::context_shared_list(&self.tree.active_path());
        if crate::repair::needs_no_repair(&messages) {
            return messages;
        }
        let owned = messages.iter().map(|message| message.as_ref().clone()).collect();
        crate::repair::repair_messages(owned, now_millis()).into_iter().map(Arc::new).collect()
    }

    /// Appends one entry after the active leaf; it becomes the leaf. Durable on return.
    pub fn append(&mut self, kind: EntryKind) -> Result<SessionEntry, SessionError> {
        self.append_with_id(None, kind)
    }

    /// Appends one entry after the active leaf under `id` (a fresh id when `None`).
    pub(crate) fn append_with_id(
        &mut self,
        id: Option<String>,
        kind: EntryKind,
    ) -> Result<SessionEntry, SessionError> {
        let mut written = self.append_entries(vec![(id, kind)])?;
        written.pop().ok_or_else(|| SessionError::EntryNotFound("the appended entry".into()))
    }

    /// Appends several entries as a chain after the active leaf with one fsync; the last
    /// becomes the leaf. Durable on return.
    pub fn append_all(&mut self, kinds: Vec<EntryKind>) -> Result<Vec<SessionEntry>, SessionError> {
        self.append_entries(kinds.into_iter().map(|k| (None, k)).collect())
    }

    /// Appends a message after the active leaf.
    pub fn append_message(&mut self, message: Message) -> Result<SessionEntry, SessionError> {
        self.append(EntryKind::Message { message: message.into() })
    }

    /// Records a model change.
    pub fn set_model(&mut self, model: &ModelRef) -> Result<SessionEntry, SessionError> {
        self.append(EntryKind::ModelChange {
            provider: model.provider.clone(),
            model: model.model.clone(),
        })
    }

    /// Records a thinking-level change.
    pub fn set_thinking_level(
        &mut self,
        thinking_level: ThinkingLevel,
    ) -> Result<SessionEntry, SessionError> {
        self.append(EntryKind::ThinkingLevelChange { thinking_level })
    }

    /// Records an approval-policy change.
    pub fn set_approval_policy(
        &mut self,
        approval_policy: ApprovalPolicy,
    ) -> Result<SessionEntry, SessionError> {
        self.append(EntryKind::ApprovalPolicyChange { approval_policy })
    }

    /// Names the session (`None` clears the name).
    pub fn set_name(&mut self, name: Option<String>) -> Result<SessionEntry, SessionError> {
        self.append(EntryKind::SessionInfo { name })
    }

    /// Labels an entry (`None` removes its label).
    pub fn label(
        &mut self,
        target_id: &str,
        label: Option<String>,
    ) -> Result<SessionEntry, SessionError> {
        self.require_entry(target_id)?;
        self.append(EntryKind::Label { target_id: target_id.to_string(), label })
    }

    /// Moves the active leaf to an earlier entry (`None`: an empty conversation) without
    /// adding to any path. The move is written as a leaf-move entry so reopening lands here.
    pub fn move_leaf(&mut self, target: Option<&str>) -> Result<(), SessionError> {
        if let Some(id) = target {
            self.require_entry(id)?;
        }
        if self.leaf_id() == target {
            return Ok(());
        }
        self.append(leaf_move_kind(target)).map(|_| ())
    }

    /// Fails with `EntryNotFound` unless the entry exists.
    pub(crate) fn require_entry(&self, id: &str) -> Result<&SessionEntry, SessionError> {
        self.tree.get(id).ok_or_else(|| SessionError::EntryNotFound(id.to_string()))
    }

    /// Writes entries as a chain from the leaf with one fsync, waiting for it. An entry may
    /// bring its own id (synthesized repair results do); otherwise a fresh one is made.
    pub(crate) fn append_entries(
        &mut self,
        entries: Vec<(Option<String>, EntryKind)>,
    ) -> Result<Vec<SessionEntry>, SessionError> {
        let (queued, ticket) = self.queue_entries(entries)?;
        let durable = ticket.wait();
        self.finish_append(queued, durable)
    }

    /// Writes the file again from memory (every entry known, then `pending`, then a repair
    /// entry saying what happened) after it was deleted or replaced under the session, moving
    /// a replacement aside first. Returns the repair entry. Fails, changing nothing in
    /// memory, when the file cannot be written back or the path still does not name it.
    fn restore_file(
        &mut self,
        lost: PathState,
        pending: &[SessionEntry],
        parent: Option<String>,
    ) -> Result<SessionEntry, SessionError> {
        let path = self.file.path().to_path_buf();
        tracing::warn!(path = %path.display(), state = lost.as_str(),
            "the session file was changed under the daemon; writing it again");
        let set_aside = (lost == PathState::Replaced)
            .then(|| crate::paths::replaced_file(&path, &now_millis().to_string()));
        let tree = &self.tree;
        let id = new_entry_id(|id| tree.contains(id) || pending.iter().any(|e| e.id == id));
        let repair = SessionEntry {
            id,
            parent_id: parent,
            timestamp: now_rfc3339(),
            kind: EntryKind::Repair {
                actions: vec![RepairAction::FileRestored {
                    cause: lost.as_str().to_string(),
                    set_aside: set_aside.as_ref().map(|p| p.display().to_string()),
                }],
            },
        };
        let mut entries: Vec<SessionEntry> = self.tree.entries().to_vec();
        entries.extend(pending.iter().cloned());
        entries.push(repair.clone());
        let bytes = encode_file(&self.header, &entries)?;
        self.file.restore(&bytes, set_aside.as_deref())?;
        match self.file.path_state()? {
            PathState::Same => Ok(repair),
            other => Err(SessionError::Io {
                action: "write back",
                path,
                source: std::io::Error::other(format!(
                    "the session file is {} again right after it was written",
                    other.as_str()
                )),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use crate::store::SessionStore;

    fn store() -> (tempfile::TempDir, SessionStore) {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        (dir, store)
    }

    fn append(session: &mut Session, message: PathMessage) -> String {
        session.append_message(message.message).unwrap().id
    }

    #[test]
    fn appends_chain_and_reopen_replays_the_same() {
        let (_dir, store) = store();
        let mut session = store.create("/work/p").unwrap();
        let u = append(&mut session, user("hello"));
        let a = append(&mut session, assistant("x", &["c1"]));
        let r = append(&mut session, result("y", "c1"));
        session.set_model(&ModelRef { provider: "p".into(), model: "m".into() }).unwrap();
        session.set_thinking_level(ThinkingLevel::Low).unwrap();
        let before = session.replay();
        assert_eq!(before.messages.len(), 3);
        assert_eq!(session.tree().get(&a).unwrap().parent_id.as_deref(), Some(u.as_str()));
        assert_eq!(session.tree().get(&r).unwrap().parent_id.as_deref(), Some(a.as_str()));
        let id = session.id().to_string();
        drop(session);
        let (session, report) = store.open(&id).unwrap();
        assert_eq!(report, LoadReport::default());
        assert_eq!(session.replay(), before);
        assert_eq!(session.replay().thinking_level, Some(ThinkingLevel::Low));
    }

    /// A loaded session holds one copy of each message: the history handed to the harness
    /// is made of the entry tree's own allocations, not of copies.
    #[test]
    fn request_messages_share_the_entries_messages() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        append(&mut session, user("one"));
        append(&mut session, assistant("a", &["c1"]));
        append(&mut session, result("r", "c1"));
        session.set_name(Some("named".into())).unwrap();
        append(&mut session, user("two"));
        let id = session.id().to_string();
        drop(session);
        let (session, _) = store.open(&id).unwrap();
        let history = session.request_messages();
        let held: Vec<&Arc<Message>> = session
            .tree()
            .active_path()
            .into_iter()
            .filter_map(|entry| match &entry.kind {
                EntryKind::Message { message } => Some(message),
                _ => None,
            })
            .collect();
        assert_eq!(history.len(), 4);
        assert_eq!(held.len(), history.len());
        for (shared, entry) in history.iter().zip(held) {
            assert!(Arc::ptr_eq(shared, entry), "{shared:?} was copied");
            assert_eq!(Arc::strong_count(shared), 2, "held by the tree and the history only");
        }
        drop(history);
        let tree_only = session.tree().entries().iter().find_map(|entry| match &entry.kind {
            EntryKind::Message { message } => Some(Arc::strong_count(message)),
            _ => None,
        });
        assert_eq!(tree_only, Some(1));
    }

    #[test]
    fn reopen_lands_on_the_branch() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        let u1 = append(&mut session, user("one"));
        let a1 = append(&mut session, assistant("a", &[]));
        let _u2 = append(&mut session, user("two"));
        session.move_leaf(Some(&a1)).unwrap();
        assert_eq!(session.leaf_id(), Some(a1.as_str()));
        let id = session.id().to_string();
        drop(session);
        let (mut session, _) = store.open(&id).unwrap();
        assert_eq!(session.leaf_id(), Some(a1.as_str()));
        let u3 = append(&mut session, user("three"));
        assert_eq!(session.tree().get(&u3).unwrap().parent_id.as_deref(), Some(a1.as_str()));
        session.move_leaf(None).unwrap();
        drop(session);
        let (mut session, _) = store.open(&id).unwrap();
        assert_eq!(session.leaf_id(), None);
        assert!(session.context_messages().is_empty());
        let root = append(&mut session, user("fresh"));
        assert_eq!(session.tree().get(&root).unwrap().parent_id, None);
        assert_eq!(session.tree().path_to(Some(&u3)).len(), 3);
        assert!(matches!(session.move_leaf(Some("nope")), Err(SessionError::EntryNotFound(_))));
        assert_eq!(session.tree().get(&u1).unwrap().parent_id, None);
    }

    #[test]
    fn labels_and_names_are_recorded() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        let u = append(&mut session, user("one"));
        session.label(&u, Some("start".into())).unwrap();
        session.set_name(Some("fix the bug".into())).unwrap();
        assert!(matches!(session.label("zzz", None), Err(SessionError::EntryNotFound(_))));
        let id = session.id().to_string();
        drop(session);
        let (session, _) = store.open(&id).unwrap();
        assert_eq!(session.tree().labels().get(u.as_str()), Some(&"start"));
        assert_eq!(session.name(), Some("fix the bug"));
        assert_eq!(session.context_messages().len(), 1);
    }

    #[test]
    fn second_open_in_the_same_process_is_refused() {
        let (_dir, store) = store();
        let session = store.create("/p").unwrap();
        let err = store.open(session.id()).unwrap_err();
        assert!(matches!(err, SessionError::Locked { .. }), "{err}");
        assert_eq!(err.kind(), rein_protocol::ErrorKind::SessionLocked);
        let id = session.id().to_string();
        drop(session);
        assert!(store.open(&id).is_ok());
    }

    #[test]
    fn load_repairs_tool_history_once() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        append(&mut session, user("u"));
        append(&mut session, assistant("a", &["c1", "c2"]));
        append(&mut session, result("r2", "c2"));
        append(&mut session, user("again"));
        append(&mut session, result("r2b", "c2"));
        append(&mut session, result("orphan", "zz"));
        let id = session.id().to_string();
        drop(session);

        let (session, report) = store.open(&id).unwrap();
        let kinds: Vec<&str> = report
            .actions
            .iter()
            .map(|a| match a {
                RepairAction::InterruptedToolCall { .. } => "interrupted",
                RepairAction::DuplicateResultDropped { .. } => "duplicate",
                RepairAction::OrphanResultDropped { .. } => "orphan",
                RepairAction::ResultReordered { .. } => "reordered",
                RepairAction::CorruptLinesSkipped { .. } => "corrupt",
                RepairAction::FileRestored { .. } => "restored",
            })
            .collect();
        assert_eq!(kinds, ["orphan", "duplicate", "interrupted"]);
        let messages = session.context_messages();
        assert!(crate::repair::is_valid_tool_history(&messages), "{messages:#?}");
        assert_eq!(messages.len(), 5);
        let entries = session.tree().entries().len();
        drop(session);

        let (session, report) = store.open(&id).unwrap();
        assert_eq!(report, LoadReport::default());
        assert_eq!(session.tree().entries().len(), entries);
        assert_eq!(session.context_messages(), messages);
    }

    /// Found by the `session_file` fuzz target: an interrupted result written after a real
    /// result of a later call in the same run made the second open record that result as
    /// reordered, so opening repaired twice.
    #[test]
    fn a_repair_is_complete_when_an_added_result_lands_behind_a_real_one() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        append(&mut session, user("u"));
        append(&mut session, assistant("a", &["c1", "c2"]));
        let real = append(&mut session, result("r2", "c2"));
        let id = session.id().to_string();
        drop(session);

        let (session, report) = store.open(&id).unwrap();
        assert!(report.actions.iter().any(|a| matches!(a,
            RepairAction::ResultReordered { entry_id, .. } if *entry_id == real)));
        let messages = session.context_messages();
        assert!(crate::repair::is_valid_tool_history(&messages), "{messages:#?}");
        drop(session);

        let (session, report) = store.open(&id).unwrap();
        assert_eq!(report, LoadReport::default(), "the second open repairs nothing");
        assert_eq!(session.context_messages(), messages);
    }

    /// The ids the file at `path` holds, in order.
    fn ids_on_disk(path: &Path) -> Vec<String> {
        let text = std::fs::read_to_string(path).unwrap();
        text.lines().skip(1).map(|l| serde_json::from_str::<SessionEntry>(l).unwrap().id).collect()
    }

    #[test]
    fn a_deleted_file_is_written_again_before_an_append_is_acknowledged() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        let u1 = append(&mut session, user("one"));
        let path = session.path().to_path_buf();
        // `git clean` takes the whole project directory, lock file included.
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
        let u2 = append(&mut session, user("two"));
        let on_disk = ids_on_disk(&path);
        assert_eq!(on_disk[..2], [u1.clone(), u2.clone()]);
        let repair = session.tree().get(&on_disk[2]).unwrap();
        assert_eq!(
            repair.kind,
            EntryKind::Repair {
                actions: vec![RepairAction::FileRestored {
                    cause: "missing".into(),
                    set_aside: None
                }]
            }
        );
        assert_eq!(session.leaf_id(), Some(on_disk[2].as_str()));
        // The lock was taken again: nobody else can open the restored file.
        assert!(matches!(store.open(session.id()), Err(SessionError::Locked { .. })));
        let u3 = append(&mut session, user("three"));
        assert_eq!(ids_on_disk(&path).last(), Some(&u3));
        let id = session.id().to_string();
        drop(session);
        let (session, report) = store.open(&id).unwrap();
        assert_eq!(report, LoadReport::default());
        assert_eq!(session.context_messages().len(), 3);
    }

    #[test]
    fn a_replaced_file_is_set_aside_and_written_again() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        append(&mut session, user("one"));
        let path = session.path().to_path_buf();
        let old_copy = std::fs::read(&path).unwrap();
        append(&mut session, user("two"));
        // A sync tool puts back an older copy (a new inode at the same path).
        let temp = path.with_extension("sync");
        std::fs::write(&temp, &old_copy).unwrap();
        std::fs::rename(&temp, &path).unwrap();
        let u3 = append(&mut session, user("three"));
        let on_disk = ids_on_disk(&path);
        assert_eq!(on_disk.len(), 4, "one, two, three and the repair");
        assert_eq!(on_disk[2], u3);
        let EntryKind::Repair { actions } = &session.tree().get(&on_disk[3]).unwrap().kind else {
            panic!("no repair entry")
        };
        let [RepairAction::FileRestored { cause, set_aside: Some(aside) }] = actions.as_slice()
        else {
            panic!("unexpected repair {actions:?}")
        };
        assert_eq!(cause, "replaced");
        assert_eq!(std::fs::read(aside).unwrap(), old_copy, "the replacement is kept");
        let id = session.id().to_string();
        drop(session);
        let (session, _) = store.open(&id).unwrap();
        let texts: Vec<String> =
            session.context_messages().iter().map(|m| format!("{m:?}")).collect();
        assert_eq!(texts.len(), 3);
        assert!(texts[2].contains("three"), "{texts:?}");
    }

    #[test]
    fn torn_last_line_and_corrupt_middle_line_are_set_aside() {
        let (_dir, store) = store();
        let mut session = store.create("/p").unwrap();
        let u1 = append(&mut session, user("one"));
        let a1 = append(&mut session, assistant("a", &[]));
        let id = session.id().to_string();
        let path = session.path().to_path_buf();
        drop(session);
        // Damage: a corrupt line in the middle, then an entry, then a torn last line.
        let mut text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let u1_line = lines[1].to_string();
        let a1_line = lines[2].to_string();
        text = format!(
            "{}\n{u1_line}\n{{\"id\":\"broken\n{a1_line}\n{{\"id\":\"torn\",\"par",
            lines[0]
        );
        std::fs::write(&path, &text).unwrap();

        let (mut session, report) = store.open(&id).unwrap();
        let sidecar = crate::paths::corrupt_file(&path);
        assert_eq!(
            report.actions,
            [RepairAction::CorruptLinesSkipped {
                lines: vec![3, 5],
                sidecar: sidecar.display().to_string()
            }]
        );
        let kept = std::fs::read_to_string(&sidecar).unwrap();
        assert!(kept.contains("\"line\":3") && kept.contains("broken"), "{kept}");
        assert!(kept.contains("\"line\":5") && kept.contains("torn"), "{kept}");
        assert_eq!(session.replay().path[..2], [u1.clone(), a1.clone()]);
        let u2 = append(&mut session, user("two"));
        drop(session);

        // The file is valid JSONL again: every line parses, and nothing is repaired twice.
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with('\n'));
        for line in text.lines().skip(1) {
            serde_json::from_str::<SessionEntry>(line).unwrap();
        }
        let (session, report) = store.open(&id).unwrap();
        assert_eq!(report, LoadReport::default());
        assert_eq!(session.leaf_id(), Some(u2.as_str()));
        assert_eq!(session.context_messages().len(), 3);
    }
}
