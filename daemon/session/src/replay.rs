//! Replay: the state a path of entries puts in force, and the messages the next request sends.

use std::borrow::Cow;
use std::sync::Arc;

use rein_protocol::entry::RepairAction;
use rein_protocol::message::{ContentBlock, Message, UserMessage};
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::{ModelRef, ThinkingLevel};
use rein_protocol::{EntryKind, SessionEntry};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::repair::{PathMessage, normalize_tool_history};

/// The text put before a compaction summary in the user message that carries it.
pub const COMPACTION_SUMMARY_PREFIX: &str = "[Context summary] The earlier part of this \
     conversation was compacted. This summary replaces it:\n\n";

/// The text put before a branch summary in the user message that carries it.
pub const BRANCH_SUMMARY_PREFIX: &str = "[Branch summary] An earlier attempt on another branch \
     of this conversation was abandoned. What was tried there:\n\n";

/// The compaction in force on a path.
#[derive(Debug, Clone, PartialEq)]
pub struct CompactionInForce {
    /// The compaction entry.
    pub entry_id: String,
    /// Its summary.
    pub summary: String,
    /// The first entry kept verbatim (the compaction's own id when nothing was kept).
    pub first_kept_entry_id: String,
    /// Context tokens before it ran.
    pub tokens_before: u64,
}

/// Everything the active path puts in force.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Replay {
    /// The active leaf.
    pub leaf_id: Option<String>,
    /// The entry ids of the root-to-leaf path.
    pub path: Vec<String>,
    /// The model in force (the last model change on the path).
    pub model: Option<ModelRef>,
    /// The thinking level in force (the last thinking-level change on the path).
    pub thinking_level: Option<ThinkingLevel>,
    /// The approval policy in force (the last approval-policy change on the path).
    pub approval_policy: Option<ApprovalPolicy>,
    /// The last compaction on the path.
    pub compaction: Option<CompactionInForce>,
    /// The messages the next request sends: the compaction summary (as a user message) first,
    /// then the kept entries' messages, with branch summaries as user messages, and recorded
    /// tool-history repairs applied.
    pub messages: Vec<PathMessage>,
}

impl Replay {
    /// The messages without their entry ids.
    pub fn message_list(&self) -> Vec<Message> {
        self.messages.iter().map(|m| m.message.clone()).collect()
    }
}

/// The settings a path puts in force: its last model, thinking-level and approval-policy
/// changes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsInForce {
    /// The model in force.
    pub model: Option<ModelRef>,
    /// The thinking level in force.
    pub thinking_level: Option<ThinkingLevel>,
    /// The approval policy in force.
    pub approval_policy: Option<ApprovalPolicy>,
}

/// The settings `path` puts in force, read from its entries in place: unlike [`replay`] it
/// copies no message, so checking them before every run costs no history-sized copy.
pub fn settings_in_force(path: &[&SessionEntry]) -> SettingsInForce {
    let mut settings = SettingsInForce::default();
    for entry in path {
        match &entry.kind {
            EntryKind::ModelChange { provider, model: id } => {
                settings.model = Some(ModelRef { provider: provider.clone(), model: id.clone() });
            }
            EntryKind::ThinkingLevelChange { thinking_level: level } => {
                settings.thinking_level = Some(*level);
            }
            EntryKind::ApprovalPolicyChange { approval_policy: policy } => {
                settings.approval_policy = Some(*policy);
            }
            _ => {}
        }
    }
    settings
}

/// Replays a root-to-leaf path.
pub fn replay(path: &[&SessionEntry]) -> Replay {
    let SettingsInForce { model, thinking_level, approval_policy } = settings_in_force(path);
    let compaction_at = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let compaction = compaction_at.and_then(|at| compaction_in_force(path[at]));
    let entries = context_entries(path);
    let messages = messages_of(&entries);
    let messages =
        if context_is_valid(&entries) { messages } else { normalize_tool_history(messages).0 };
    Replay {
        leaf_id: path.last().map(|e| e.id.clone()),
        path: path.iter().map(|e| e.id.clone()).collect(),
        model,
        thinking_level,
        approval_policy,
        compaction,
        messages,
    }
}

/// The compaction an entry records, if it is a compaction entry.
fn compaction_in_force(entry: &SessionEntry) -> Option<CompactionInForce> {
    match &entry.kind {
        EntryKind::Compaction { summary, first_kept_entry_id, tokens_before, .. } => {
            Some(CompactionInForce {
                entry_id: entry.id.clone(),
                summary: summary.clone(),
                first_kept_entry_id: first_kept_entry_id.clone(),
                tokens_before: *tokens_before,
            })
        }
        _ => None,
    }
}

/// The entries whose messages form the context of a path, in order: the last compaction (its
/// summary comes first), then the entries it kept and those after it. Entries that contribute
/// no message are left in; [`entry_message`] skips them.
pub fn context_entries<'a>(path: &[&'a SessionEntry]) -> Vec<&'a SessionEntry> {
    let compaction_at = path.iter().rposition(|e| matches!(e.kind, EntryKind::Compaction { .. }));
    let Some(at) = compaction_at else { return path.to_vec() };
    let EntryKind::Compaction { first_kept_entry_id, .. } = &path[at].kind else {
        return path.to_vec();
    };
    let start = path[..at].iter().position(|e| e.id == *first_kept_entry_id).unwrap_or(at + 1);
    let mut entries = Vec::with_capacity(path.len() - start + 1);
    entries.push(path[at]);
    // The compaction in force and earlier ones in the kept part add no message of their own.
    entries.extend(
        path[start..].iter().filter(|e| !matches!(e.kind, EntryKind::Compaction { .. })).copied(),
    );
    entries
}

/// Whether the context of a path already has a valid tool history (the common case), checked
/// without copying any message.
pub fn context_is_valid(entries: &[&SessionEntry]) -> bool {
    crate::repair::is_valid_sequence(entries.iter().filter_map(|entry| match &entry.kind {
        EntryKind::Message { message } => Some(Some(message.as_ref())),
        EntryKind::BranchSummary { .. } | EntryKind::Compaction { .. } => Some(None),
        _ => None,
    }))
}

/// The context messages of a path before any tool-history rule runs: the last compaction's
/// summary (as a user message), then the messages of the entries it kept and of those after
/// it, with branch summaries as user messages.
pub fn raw_context(path: &[&SessionEntry]) -> Vec<PathMessage> {
    messages_of(&context_entries(path))
}

/// The messages the next request sends on a path, as [`replay`] gives them, without their
/// entry ids; copies each message once (and builds nothing else) when the context's tool
/// history is already valid, the common case.
pub fn context_message_list(path: &[&SessionEntry]) -> Vec<Message> {
    let entries = context_entries(path);
    if !context_is_valid(&entries) {
        let messages = normalize_tool_history(messages_of(&entries)).0;
        return messages.into_iter().map(|m| m.message).collect();
    }
    entries.iter().filter_map(|entry| context_message(entry)).collect()
}

/// [`context_message_list`] with each message shared with the entry that holds it (summaries
/// are made fresh): what the harness keeps as its history, so that a loaded session holds one
/// copy of each message. Messages are copied only when the tool history needs normalizing.
pub fn context_shared_list(path: &[&SessionEntry]) -> Vec<Arc<Message>> {
    let entries = context_entries(path);
    if !context_is_valid(&entries) {
        let messages = normalize_tool_history(messages_of(&entries)).0;
        return messages.into_iter().map(|m| Arc::new(m.message)).collect();
    }
    entries.iter().filter_map(|entry| context_message_shared(entry)).collect()
}

/// [`context_message`], sharing the entry's own message.
fn context_message_shared(entry: &SessionEntry) -> Option<Arc<Message>> {
    match &entry.kind {
        EntryKind::Message { message } => Some(Arc::clone(message)),
        _ => context_message_ref(entry).map(|message| Arc::new(message.into_owned())),
    }
}

/// The message a context entry contributes (see [`context_entries`]): a compaction's summary,
/// or [`entry_message`].
fn context_message(entry: &SessionEntry) -> Option<Message> {
    context_message_ref(entry).map(Cow::into_owned)
}

/// [`context_message`], borrowed where the entry holds the message itself.
pub(crate) fn context_message_ref(entry: &SessionEntry) -> Option<Cow<'_, Message>> {
    match &entry.kind {
        EntryKind::Message { message } => Some(Cow::Borrowed(message)),
        EntryKind::Compaction { summary, .. } => {
            Some(Cow::Owned(summary_message(COMPACTION_SUMMARY_PREFIX, summary, &entry.timestamp)))
        }
        EntryKind::BranchSummary { summary, .. } => {
            Some(Cow::Owned(summary_message(BRANCH_SUMMARY_PREFIX, summary, &entry.timestamp)))
        }
        _ => None,
    }
}

/// The messages of context entries (see [`context_entries`]).
fn messages_of(entries: &[&SessionEntry]) -> Vec<PathMessage> {
    entries
        .iter()
        .filter_map(|entry| {
            Some(PathMessage { entry_id: entry.id.clone(), message: context_message(entry)? })
        })
        .collect()
}

/// The message an entry contributes to the context: its message, or a branch summary as a
/// user message. Other kinds contribute none.
pub fn entry_message(entry: &SessionEntry) -> Option<Message> {
    match &entry.kind {
        EntryKind::Message { message } => Some(message.as_ref().clone()),
        EntryKind::BranchSummary { summary, .. } => {
            Some(summary_message(BRANCH_SUMMARY_PREFIX, summary, &entry.timestamp))
        }
        _ => None,
    }
}

/// The entry ids that repair entries on the path already dealt with.
pub fn recorded_repairs<'a>(path: &[&'a SessionEntry]) -> std::collections::HashSet<&'a str> {
    path.iter()
        .filter_map(|entry| match &entry.kind {
            EntryKind::Repair { actions } => Some(actions),
            _ => None,
        })
        .flatten()
        .filter_map(|action: &RepairAction| crate::repair::action_entry_id(action))
        .collect()
}

fn summary_message(prefix: &str, summary: &str, timestamp: &str) -> Message {
    Message::User(UserMessage {
        content: vec![ContentBlock::text(format!("{prefix}{summary}"))],
        timestamp: rfc3339_to_millis(timestamp),
    })
}

/// Milliseconds since the epoch of an RFC 3339 time; 0 when it does not parse.
pub fn rfc3339_to_millis(text: &str) -> i64 {
    OffsetDateTime::parse(text, &Rfc3339)
        .map(|t| i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(0))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use crate::tree::{SessionTree, leaf_move_kind};

    fn entry(id: &str, parent: Option<&str>, kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(Into::into),
            timestamp: "2026-11-30T10:00:00Z".into(),
            kind,
        }
    }

    fn message(p: PathMessage, parent: Option<&str>) -> SessionEntry {
        entry(&p.entry_id, parent, EntryKind::Message { message: p.message.into() })
    }

    fn text_of(message: &Message) -> String {
        match message {
            Message::User(u) => u.content.iter().filter_map(ContentBlock::as_text).collect(),
            Message::Assistant(a) => a.text(),
            Message::ToolResult(r) => r.text(),
        }
    }

    /// u1 - a1(c1) - r1 - m(model) - u2 - a2        (first branch)
    ///                     \- t(thinking) - u3 - a3 - s(branch summary) (second branch)
    fn branched_tree() -> SessionTree {
        SessionTree::from_entries(vec![
            message(user("u1"), None),
            message(assistant("a1", &["c1"]), Some("u1")),
            message(result("r1", "c1"), Some("a1")),
            entry(
                "m",
                Some("r1"),
                EntryKind::ModelChange { provider: "p".into(), model: "x".into() },
            ),
            message(user("u2"), Some("m")),
            message(assistant("a2", &[]), Some("u2")),
            entry("mv", Some("a2"), leaf_move_kind(Some("r1"))),
            entry(
                "t",
                Some("r1"),
                EntryKind::ThinkingLevelChange { thinking_level: ThinkingLevel::High },
            ),
            message(user("u3"), Some("t")),
            message(assistant("a3", &[]), Some("u3")),
            entry(
                "s",
                Some("a3"),
                EntryKind::BranchSummary {
                    from_id: "a2".into(),
                    summary: "tried x".into(),
                    usage: None,
                },
            ),
        ])
    }

    #[test]
    fn replay_of_a_branched_tree_follows_the_active_branch() {
        let tree = branched_tree();
        let state = replay(&tree.active_path());
        assert_eq!(context_message_list(&tree.active_path()), state.message_list());
        assert_eq!(state.leaf_id.as_deref(), Some("s"));
        assert_eq!(state.path, ["u1", "a1", "r1", "t", "u3", "a3", "s"]);
        assert_eq!(state.model, None);
        assert_eq!(state.thinking_level, Some(ThinkingLevel::High));
        let ids: Vec<_> = state.messages.iter().map(|m| m.entry_id.as_str()).collect();
        assert_eq!(ids, ["u1", "a1", "r1", "u3", "a3", "s"]);
        assert_eq!(text_of(&state.messages[5].message), format!("{BRANCH_SUMMARY_PREFIX}tried x"));
        assert!(matches!(state.messages[5].message, Message::User(_)));

        let other = replay(&tree.path_to(Some("a2")));
        assert_eq!(other.model, Some(ModelRef { provider: "p".into(), model: "x".into() }));
        assert_eq!(other.thinking_level, None);
        let ids: Vec<_> = other.messages.iter().map(|m| m.entry_id.as_str()).collect();
        assert_eq!(ids, ["u1", "a1", "r1", "u2", "a2"]);
    }

    #[test]
    fn settings_in_force_are_those_of_the_replay() {
        let tree = branched_tree();
        for path in [tree.active_path(), tree.path_to(Some("a2"))] {
            let full = replay(&path);
            let settings = settings_in_force(&path);
            assert_eq!(settings.model, full.model);
            assert_eq!(settings.thinking_level, full.thinking_level);
            assert_eq!(settings.approval_policy, full.approval_policy);
        }
        let other = settings_in_force(&tree.path_to(Some("a2")));
        assert_eq!(other.model, Some(ModelRef { provider: "p".into(), model: "x".into() }));
        assert_eq!(
            settings_in_force(&tree.active_path()).thinking_level,
            Some(ThinkingLevel::High)
        );
    }

    #[test]
    fn compaction_replaces_older_messages_with_its_summary() {
        let mut entries = branched_tree().into_entries();
        entries.push(entry(
            "k",
            Some("s"),
            EntryKind::Compaction {
                summary: "did things".into(),
                first_kept_entry_id: "u3".into(),
                tokens_before: 900,
                usage: None,
                reason: "manual".into(),
            },
        ));
        entries.push(message(user("u4"), Some("k")));
        let tree = SessionTree::from_entries(entries);
        let state = replay(&tree.active_path());
        assert_eq!(context_message_list(&tree.active_path()), state.message_list());
        let ids: Vec<_> = state.messages.iter().map(|m| m.entry_id.as_str()).collect();
        assert_eq!(ids, ["k", "u3", "a3", "s", "u4"]);
        assert_eq!(
            text_of(&state.messages[0].message),
            format!("{COMPACTION_SUMMARY_PREFIX}did things")
        );
        assert_eq!(state.messages[0].message.timestamp(), 1_796_032_800_000);
        let compaction = state.compaction.unwrap();
        assert_eq!(compaction.first_kept_entry_id, "u3");
        assert_eq!(compaction.tokens_before, 900);
        assert_eq!(state.thinking_level, Some(ThinkingLevel::High));
    }

    #[test]
    fn compaction_that_kept_nothing_keeps_only_later_entries() {
        let tree = SessionTree::from_entries(vec![
            message(user("u1"), None),
            entry(
                "k",
                Some("u1"),
                EntryKind::Compaction {
                    summary: "all".into(),
                    first_kept_entry_id: "k".into(),
                    tokens_before: 1,
                    usage: None,
                    reason: "overflow".into(),
                },
            ),
            message(user("u2"), Some("k")),
        ]);
        let ids: Vec<_> =
            replay(&tree.active_path()).messages.into_iter().map(|m| m.entry_id).collect();
        assert_eq!(ids, ["k", "u2"]);
    }
}
