//! Tool-history repair: pure rules that make a message path valid for a provider (every tool
//! call answered exactly once, right behind its call).
//!
//! Each rule is a small function from a path to a repaired path plus the [`RepairAction`]s it
//! took. [`normalize_tool_history`] applies the rules that only drop or move messages (safe to
//! run on every replay); [`repair_tool_history`] adds the rule that answers dangling calls,
//! for the load-time repair and for the check before each request.

use std::borrow::Borrow;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use rein_protocol::entry::RepairAction;
use rein_protocol::message::{ContentBlock, Message, ToolResultMessage, starts_with_same};
use serde_json::json;

/// The text of the error result given to a tool call that never got one.
pub const INTERRUPTED_RESULT_TEXT: &str = "The tool call was interrupted before it returned a result (rein stopped or the run was \
     cancelled). It may or may not have taken effect.";

/// A message on a path, with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct PathMessage {
    /// The entry holding the message (for summaries, the summary entry).
    pub entry_id: String,
    /// The message.
    pub message: Message,
}

/// What a rule returns: the repaired path and the repairs made.
pub type RuleOutput = (Vec<PathMessage>, Vec<RepairAction>);

fn as_result(message: &PathMessage) -> Option<&ToolResultMessage> {
    match &message.message {
        Message::ToolResult(result) => Some(result),
        _ => None,
    }
}

fn call_ids(message: &PathMessage) -> Vec<&str> {
    match &message.message {
        Message::Assistant(assistant) => assistant.tool_calls().map(|c| c.id.as_str()).collect(),
        _ => Vec::new(),
    }
}

/// Whether a result is one rein made up for an interrupted call.
pub fn is_interrupted_result(result: &ToolResultMessage) -> bool {
    result.is_error
        && result.details.as_ref().and_then(|d| d.get("interrupted")).and_then(|v| v.as_bool())
            == Some(true)
}

/// The error result rein gives an interrupted call.
pub fn interrupted_result(tool_call_id: &str, tool_name: &str, timestamp: i64) -> Message {
    Message::ToolResult(ToolResultMessage {
        tool_call_id: tool_call_id.to_string(),
        tool_name: tool_name.to_string(),
        content: vec![ContentBlock::text(INTERRUPTED_RESULT_TEXT)],
        is_error: true,
        details: Some(json!({ "interrupted": true })),
        timestamp,
    })
}

/// Rule: a result whose call id no assistant message on the path issued is dropped.
pub fn drop_orphan_results(messages: Vec<PathMessage>) -> RuleOutput {
    let calls: HashSet<String> = messages.iter().flat_map(call_ids).map(str::to_string).collect();
    let mut actions = Vec::new();
    let kept = messages
        .into_iter()
        .filter(|message| match as_result(message) {
            Some(result) if !calls.contains(&result.tool_call_id) => {
                actions.push(RepairAction::OrphanResultDropped {
                    tool_call_id: result.tool_call_id.clone(),
                    entry_id: message.entry_id.clone(),
                });
                false
            }
            _ => true,
        })
        .collect();
    (kept, actions)
}

/// Rule: when a call has several results, the real one stays (the first that is not an
/// interrupted placeholder, else the first) and the others are dropped.
pub fn drop_duplicate_results(messages: Vec<PathMessage>) -> RuleOutput {
    let mut keeper: HashMap<&str, usize> = HashMap::new();
    for (i, message) in messages.iter().enumerate() {
        let Some(result) = as_result(message) else { continue };
        match keeper.get(result.tool_call_id.as_str()) {
            None => {
                keeper.insert(&result.tool_call_id, i);
            }
            Some(&kept) => {
                let kept_is_placeholder =
                    as_result(&messages[kept]).is_some_and(is_interrupted_result);
                if kept_is_placeholder && !is_interrupted_result(result) {
                    keeper.insert(&result.tool_call_id, i);
                }
            }
        }
    }
    let keep: HashSet<usize> = keeper.into_values().collect();
    let mut actions = Vec::new();
    let mut kept = Vec::with_capacity(messages.len());
    for (i, message) in messages.into_iter().enumerate() {
        match as_result(&message) {
            Some(result) if !keep.contains(&i) => {
                actions.push(RepairAction::DuplicateResultDropped {
                    tool_call_id: result.tool_call_id.clone(),
                    entry_id: message.entry_id.clone(),
                });
            }
            _ => kept.push(message),
        }
    }
    (kept, actions)
}

/// Rule: every result is put directly behind the assistant message that made its call, in call
/// order. A result already in the run of results behind its call, after the results of earlier
/// calls, is in place; each other one is moved and reported.
pub fn reorder_results(messages: Vec<PathMessage>) -> RuleOutput {
    // Where each result stood: (position of the assistant its run follows, rank in that run).
    let mut stood: HashMap<String, (usize, usize)> = HashMap::new();
    let mut run_owner: Option<(usize, usize)> = None;
    for (i, message) in messages.iter().enumerate() {
        match &message.message {
            Message::ToolResult(_) => {
                if let Some((owner, rank)) = run_owner.as_mut() {
                    stood.insert(message.entry_id.clone(), (*owner, *rank));
                    *rank += 1;
                }
            }
            Message::Assistant(_) => run_owner = Some((i, 0)),
            Message::User(_) => run_owner = None,
        }
    }
    let mut results: HashMap<String, PathMessage> = HashMap::new();
    let mut rest = Vec::with_capacity(messages.len());
    let mut order = HashMap::new();
    for (i, message) in messages.into_iter().enumerate() {
        order.insert(message.entry_id.clone(), i);
        match as_result(&message) {
            Some(result) => {
                results.insert(result.tool_call_id.clone(), message);
            }
            None => rest.push((i, message)),
        }
    }
    let mut out = Vec::with_capacity(order.len());
    let mut actions = Vec::new();
    for (position, message) in rest {
        let calls: Vec<String> = call_ids(&message).into_iter().map(str::to_string).collect();
        out.push(message);
        let mut last_rank = None;
        for call in calls {
            let Some(result) = results.remove(&call) else { continue };
            let in_place = match stood.get(&result.entry_id) {
                Some(&(owner, rank)) if owner == position && last_rank < Some(rank) => {
                    last_rank = Some(rank);
                    true
                }
                _ => false,
            };
            if !in_place {
                actions.push(RepairAction::ResultReordered {
                    tool_call_id: call,
                    entry_id: result.entry_id.clone(),
                });
            }
            out.push(result);
        }
    }
    // Results whose call never appears stay at the end (the orphan rule removes them).
    let mut leftovers: Vec<PathMessage> = results.into_values().collect();
    leftovers.sort_by_key(|m| order.get(&m.entry_id).copied());
    out.extend(leftovers);
    (out, actions)
}

/// Rule: a call with no result anywhere on the path gets an error result saying it was
/// interrupted, placed behind its call in call order. `new_id` names the added results' entries.
pub fn add_interrupted_results(
    messages: Vec<PathMessage>,
    new_id: &mut dyn FnMut() -> String,
    timestamp: i64,
) -> RuleOutput {
    let answered: HashSet<String> =
        messages.iter().filter_map(as_result).map(|r| r.tool_call_id.clone()).collect();
    let mut out = Vec::with_capacity(messages.len());
    let mut actions = Vec::new();
    let mut rest = messages.into_iter().peekable();
    while let Some(message) = rest.next() {
        let Message::Assistant(assistant) = &message.message else {
            out.push(message);
            continue;
        };
        let calls: Vec<(String, String)> =
            assistant.tool_calls().map(|c| (c.id.clone(), c.name.clone())).collect();
        out.push(message);
        let mut run = Vec::new();
        while let Some(next) = rest.next_if(|m| as_result(m).is_some()) {
            run.push(next);
        }
        for (call_id, name) in calls {
            if let Some(at) =
                run.iter().position(|m| as_result(m).is_some_and(|r| r.tool_call_id == call_id))
            {
                out.push(run.remove(at));
            } else if !answered.contains(&call_id) {
                let entry_id = new_id();
                actions.push(RepairAction::InterruptedToolCall {
                    tool_call_id: call_id.clone(),
                    result_entry_id: entry_id.clone(),
                });
                let message = interrupted_result(&call_id, &name, timestamp);
                out.push(PathMessage { entry_id, message });
            }
        }
        out.extend(run);
    }
    (out, actions)
}

/// The rules that only drop or move messages: orphans, duplicates, order. Replay runs these on
/// every path, so a file with recorded repairs always reads the same.
pub fn normalize_tool_history(messages: Vec<PathMessage>) -> RuleOutput {
    let (messages, mut actions) = drop_orphan_results(messages);
    let (messages, more) = drop_duplicate_results(messages);
    actions.extend(more);
    let (messages, more) = reorder_results(messages);
    actions.extend(more);
    (messages, actions)
}

/// Every rule: normalize, then answer dangling calls. Run before each request (the added
/// results then live only in memory) and at load time (where they are written as entries).
pub fn repair_tool_history(
    messages: Vec<PathMessage>,
    new_id: &mut dyn FnMut() -> String,
    timestamp: i64,
) -> RuleOutput {
    let (messages, mut actions) = normalize_tool_history(messages);
    let (messages, more) = add_interrupted_results(messages, new_id, timestamp);
    actions.extend(more);
    (messages, actions)
}

/// [`repair_tool_history`] over bare messages, for a caller that has no entry ids (the added
/// results get made-up ids that are thrown away).
pub fn repair_messages(messages: Vec<Message>, timestamp: i64) -> Vec<Message> {
    let wrapped = unique_call_ids(messages)
        .into_iter()
        .enumerate()
        .map(|(i, message)| PathMessage { entry_id: format!("m{i}"), message })
        .collect();
    let mut counter = 0_u64;
    let mut new_id = || {
        counter += 1;
        format!("added{counter}")
    };
    let (repaired, _) = repair_tool_history(wrapped, &mut new_id, timestamp);
    repaired.into_iter().map(|m| m.message).collect()
}

/// The entry ids a repair action is about (the dropped, moved or added entry).
pub fn action_entry_id(action: &RepairAction) -> Option<&str> {
    match action {
        RepairAction::InterruptedToolCall { result_entry_id, .. } => Some(result_entry_id),
        RepairAction::DuplicateResultDropped { entry_id, .. }
        | RepairAction::OrphanResultDropped { entry_id, .. }
        | RepairAction::ResultReordered { entry_id, .. } => Some(entry_id),
        RepairAction::CorruptLinesSkipped { .. } | RepairAction::FileRestored { .. } => None,
    }
}

/// Gives every tool call of one assistant message its own id. Some servers reuse an id for
/// two calls of one reply; the repeats become `ID-2`, `ID-3`, ... (never an id already used),
/// and the results after the message are matched to the calls in order: the n-th result
/// naming the shared id answers the n-th call that had it.
pub fn unique_call_ids(mut messages: Vec<Message>) -> Vec<Message> {
    use std::collections::{HashMap, HashSet, VecDeque};
    let taken: HashSet<String> = messages
        .iter()
        .filter_map(|message| match message {
            Message::Assistant(assistant) => Some(assistant.tool_calls()),
            _ => None,
        })
        .flatten()
        .map(|call| call.id.clone())
        .collect();
    let mut used = taken;
    // For the results after the current assistant message: shared id -> ids in call order.
    let mut pending: HashMap<String, VecDeque<String>> = HashMap::new();
    for message in &mut messages {
        match message {
            Message::Assistant(assistant) => {
                pending.clear();
                let mut seen: HashMap<String, u32> = HashMap::new();
                for block in &mut assistant.content {
                    let rein_protocol::message::ContentBlock::ToolCall(call) = block else {
                        continue;
                    };
                    let count = seen.entry(call.id.clone()).or_insert(0);
                    *count += 1;
                    let original = call.id.clone();
                    if *count > 1 {
                        let mut n = *count;
                        let mut fresh = format!("{original}-{n}");
                        while used.contains(&fresh) {
                            n += 1;
                            fresh = format!("{original}-{n}");
                        }
                        used.insert(fresh.clone());
                        call.id = fresh;
                    }
                    pending.entry(original).or_default().push_back(call.id.clone());
                }
                pending.retain(|_, ids| ids.len() > 1);
            }
            Message::ToolResult(result) => {
                if let Some(id) =
                    pending.get_mut(&result.tool_call_id).and_then(VecDeque::pop_front)
                {
                    result.tool_call_id = id;
                }
            }
            Message::User(_) => {}
        }
    }
    messages
}

/// Whether [`repair_messages`] would return `messages` unchanged: the tool history is valid
/// and no reply uses one call id twice. Checked without copying anything.
pub fn needs_no_repair<M: Borrow<Message>>(messages: &[M]) -> bool {
    is_valid_tool_history(messages)
        && messages.iter().all(|message| match message.borrow() {
            Message::Assistant(assistant) => {
                let mut ids: Vec<&str> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
                let count = ids.len();
                ids.sort_unstable();
                ids.dedup();
                ids.len() == count
            }
            _ => true,
        })
}

/// [`is_valid_tool_history`] of a history that grows at its end, remembered between calls: a
/// history that starts with the very messages found valid last time is checked from there on
/// only (a valid history leaves no call open, so what follows it is checked as a history of
/// its own).
#[derive(Debug, Default)]
pub struct ToolHistoryCheck {
    valid: Mutex<Vec<Arc<Message>>>,
}

impl ToolHistoryCheck {
    /// Whether `messages` is a valid tool history (see [`is_valid_tool_history`]).
    pub fn is_valid(&self, messages: &[Arc<Message>]) -> bool {
        let mut valid = self.valid.lock().unwrap_or_else(PoisonError::into_inner);
        if !starts_with_same(messages, &valid) {
            valid.clear();
        }
        let rest = &messages[valid.len()..];
        if is_valid_tool_history(rest) {
            valid.extend(rest.iter().cloned());
            true
        } else {
            valid.clear();
            false
        }
    }
}

/// Whether every tool call on the path has exactly one result, directly behind its call in
/// call order, and every result has a call. What providers require.
pub fn is_valid_tool_history<M: Borrow<Message>>(messages: &[M]) -> bool {
    is_valid_sequence(messages.iter().map(|message| Some(message.borrow())))
}

/// [`is_valid_tool_history`] over a sequence where `None` stands for a user message that is
/// not stored as one (a summary), so a path can be checked without building its messages.
pub(crate) fn is_valid_sequence<'a>(
    messages: impl IntoIterator<Item = Option<&'a Message>>,
) -> bool {
    let mut expected: std::collections::VecDeque<&str> = Default::default();
    for message in messages {
        match message {
            Some(Message::ToolResult(result)) => {
                if expected.pop_front() != Some(result.tool_call_id.as_str()) {
                    return false;
                }
            }
            Some(Message::Assistant(assistant)) => {
                if !expected.is_empty() {
                    return false;
                }
                expected.extend(assistant.tool_calls().map(|c| c.id.as_str()));
            }
            Some(Message::User(_)) | None => {
                if !expected.is_empty() {
                    return false;
                }
            }
        }
    }
    expected.is_empty()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rein_protocol::message::{AssistantMessage, StopReason, ToolCall, Usage, UserMessage};

    /// The shortcut of `Session::request_messages` is taken only where the rules change
    /// nothing.
    #[test]
    fn histories_that_need_no_repair_come_back_unchanged() {
        let bare = |messages: Vec<PathMessage>| -> Vec<Message> {
            messages.into_iter().map(|m| m.message).collect()
        };
        let cases = [
            vec![user("u"), assistant("a", &["c1", "c2"]), result("r1", "c1"), result("r2", "c2")],
            vec![user("u"), assistant("a", &["c1", "c1"]), result("r1", "c1"), result("r2", "c1")],
            vec![user("u"), assistant("a", &["c1"])],
            vec![user("u"), result("r", "nowhere"), assistant("a", &[])],
            vec![user("u"), assistant("a", &["c1", "c2"]), result("r2", "c2"), result("r1", "c1")],
            vec![user("u"), assistant("a", &[])],
        ];
        let mut shortcuts = 0;
        for case in cases {
            let messages = bare(case);
            if needs_no_repair(&messages) {
                shortcuts += 1;
                assert_eq!(repair_messages(messages.clone(), 7), messages);
            } else {
                assert_ne!(repair_messages(messages.clone(), 7), messages);
            }
        }
        assert_eq!(shortcuts, 2);
    }

    pub(crate) fn user(id: &str) -> PathMessage {
        PathMessage { entry_id: id.into(), message: Message::User(UserMessage::text(id, 0)) }
    }

    pub(crate) fn assistant(id: &str, calls: &[&str]) -> PathMessage {
        let content = calls
            .iter()
            .map(|c| {
                ContentBlock::ToolCall(ToolCall {
                    id: (*c).into(),
                    name: "read".into(),
                    arguments: json!({}),
                })
            })
            .collect();
        PathMessage {
            entry_id: id.into(),
            message: Message::Assistant(AssistantMessage {
                content,
                api: "openai-chat".into(),
                provider: "p".into(),
                model: "m".into(),
                usage: Usage::default(),
                stop_reason: if calls.is_empty() { StopReason::Stop } else { StopReason::ToolUse },
                error_message: None,
                timestamp: 0,
            }),
        }
    }

    pub(crate) fn result(id: &str, call: &str) -> PathMessage {
        PathMessage {
            entry_id: id.into(),
            message: Message::ToolResult(ToolResultMessage {
                tool_call_id: call.into(),
                tool_name: "read".into(),
                content: vec![ContentBlock::text(format!("output of {call}"))],
                is_error: false,
                details: None,
                timestamp: 0,
            }),
        }
    }

    fn placeholder(id: &str, call: &str) -> PathMessage {
        PathMessage { entry_id: id.into(), message: interrupted_result(call, "read", 0) }
    }

    fn ids(messages: &[PathMessage]) -> Vec<&str> {
        messages.iter().map(|m| m.entry_id.as_str()).collect()
    }

    #[test]
    fn orphan_result_is_dropped() {
        let path = vec![user("u"), assistant("a", &["c1"]), result("r1", "c1"), result("rx", "zz")];
        let (out, actions) = drop_orphan_results(path);
        assert_eq!(ids(&out), ["u", "a", "r1"]);
        assert_eq!(
            actions,
            [RepairAction::OrphanResultDropped {
                tool_call_id: "zz".into(),
                entry_id: "rx".into()
            }]
        );
    }

    #[test]
    fn duplicate_keeps_the_real_result_over_a_placeholder() {
        let path = vec![
            assistant("a", &["c1", "c2"]),
            placeholder("p1", "c1"),
            result("r1", "c1"),
            result("r2", "c2"),
            result("r2b", "c2"),
        ];
        let (out, actions) = drop_duplicate_results(path);
        assert_eq!(ids(&out), ["a", "r1", "r2"]);
        assert_eq!(
            actions,
            [
                RepairAction::DuplicateResultDropped {
                    tool_call_id: "c1".into(),
                    entry_id: "p1".into()
                },
                RepairAction::DuplicateResultDropped {
                    tool_call_id: "c2".into(),
                    entry_id: "r2b".into()
                },
            ]
        );
    }

    #[test]
    fn out_of_order_results_go_back_behind_their_call() {
        let path = vec![
            assistant("a", &["c1", "c2"]),
            result("r2", "c2"),
            user("u"),
            result("r1", "c1"),
            assistant("b", &[]),
        ];
        let (out, actions) = reorder_results(path);
        assert_eq!(ids(&out), ["a", "r1", "r2", "u", "b"]);
        assert_eq!(
            actions,
            [RepairAction::ResultReordered { tool_call_id: "c1".into(), entry_id: "r1".into() }]
        );
        let swapped = vec![assistant("a", &["c1", "c2"]), result("r2", "c2"), result("r1", "c1")];
        let (out, actions) = reorder_results(swapped);
        assert_eq!(ids(&out), ["a", "r1", "r2"]);
        assert_eq!(
            actions,
            [RepairAction::ResultReordered { tool_call_id: "c2".into(), entry_id: "r2".into() }]
        );
        let clean = vec![assistant("a", &["c1"]), result("r1", "c1"), user("u")];
        let (out, actions) = reorder_results(clean.clone());
        assert_eq!(out, clean);
        assert!(actions.is_empty());
    }

    #[test]
    fn dangling_call_gets_an_interrupted_result() {
        let path = vec![
            assistant("a", &["c1", "c2"]),
            result("r2", "c2"),
            user("u"),
            assistant("b", &["c3"]),
        ];
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("new{n}")
        };
        let (out, actions) = add_interrupted_results(path, &mut new_id, 7);
        assert_eq!(ids(&out), ["a", "new1", "r2", "u", "b", "new2"]);
        assert_eq!(
            actions,
            [
                RepairAction::InterruptedToolCall {
                    tool_call_id: "c1".into(),
                    result_entry_id: "new1".into()
                },
                RepairAction::InterruptedToolCall {
                    tool_call_id: "c3".into(),
                    result_entry_id: "new2".into()
                },
            ]
        );
        let added = as_result(&out[1]).unwrap();
        assert!(is_interrupted_result(added));
        assert_eq!(added.timestamp, 7);
        assert_eq!(added.text(), INTERRUPTED_RESULT_TEXT);
    }

    #[test]
    fn full_repair_yields_valid_history_and_is_idempotent() {
        let path = vec![
            user("u0"),
            result("orphan", "nope"),
            assistant("a", &["c1", "c2"]),
            result("r2", "c2"),
            user("u1"),
            result("r1", "c1"),
            result("r1b", "c1"),
            assistant("b", &["c3"]),
        ];
        let mut n = 0;
        let mut new_id = || {
            n += 1;
            format!("new{n}")
        };
        let (out, actions) = repair_tool_history(path, &mut new_id, 0);
        assert_eq!(ids(&out), ["u0", "a", "r1", "r2", "u1", "b", "new1"]);
        assert_eq!(actions.len(), 4, "{actions:?}");
        let messages: Vec<Message> = out.iter().map(|m| m.message.clone()).collect();
        assert!(is_valid_tool_history(&messages));
        let (again, actions) = repair_tool_history(out.clone(), &mut || unreachable!(), 0);
        assert_eq!(again, out);
        assert!(actions.is_empty());
        assert_eq!(repair_messages(messages.clone(), 0), messages);
    }

    #[test]
    fn validity_check_catches_each_fault() {
        let m = |list: Vec<PathMessage>| list.into_iter().map(|p| p.message).collect::<Vec<_>>();
        assert!(is_valid_tool_history(&m(vec![assistant("a", &["c"]), result("r", "c")])));
        assert!(!is_valid_tool_history(&m(vec![assistant("a", &["c"])])));
        assert!(!is_valid_tool_history(&m(vec![assistant("a", &["c"]), user("u")])));
        assert!(!is_valid_tool_history(&m(vec![result("r", "c")])));
    }

    #[test]
    fn the_remembered_check_agrees_with_checking_the_whole_history() {
        fn shared(list: Vec<PathMessage>) -> Vec<Arc<Message>> {
            list.into_iter().map(|p| Arc::new(p.message)).collect()
        }
        type Step = fn(&mut Vec<Arc<Message>>);
        let check = ToolHistoryCheck::default();
        let mut history = shared(vec![user("u"), assistant("a", &["c1"]), result("r", "c1")]);
        // Each step: messages appended (valid or not), a step back, or copies of the same
        // messages (a history made anew); the answer always equals the whole check's.
        let steps: [Step; 8] = [
            |h| h.extend(shared(vec![assistant("b", &["c2", "c3"])])),
            |h| h.extend(shared(vec![result("r2", "c2")])),
            |h| h.extend(shared(vec![result("r3", "c3"), user("u2")])),
            |h| h.extend(shared(vec![result("stray", "c9")])),
            |h| h.truncate(h.len() - 1),
            |h| *h = h.iter().map(|m| Arc::new(m.as_ref().clone())).collect(),
            |h| h.truncate(2),
            |h| h.extend(shared(vec![result("r", "c1"), user("u3")])),
        ];
        assert!(check.is_valid(&history));
        for step in steps {
            step(&mut history);
            let whole = is_valid_tool_history(&history);
            assert_eq!(check.is_valid(&history), whole, "{history:#?}");
            assert_eq!(check.is_valid(&history), whole, "asked twice: {history:#?}");
        }
        // What was found valid is remembered, as the messages themselves.
        let remembered = check.valid.lock().unwrap().clone();
        assert_eq!(remembered.len(), history.len());
        assert!(starts_with_same(&history, &remembered));
    }

    #[test]
    fn repeated_call_ids_in_one_message_are_made_unique_with_results_in_order() {
        use rein_protocol::message::{AssistantMessage, ContentBlock, StopReason, ToolCall};
        let call = |id: &str| {
            ContentBlock::ToolCall(ToolCall {
                id: id.into(),
                name: "bash".into(),
                arguments: serde_json::json!({}),
            })
        };
        let assistant = Message::Assistant(AssistantMessage {
            content: vec![call("c"), call("c"), call("c-2"), call("c")],
            api: "openai-chat".into(),
            provider: "p".into(),
            model: "m".into(),
            usage: Default::default(),
            stop_reason: StopReason::ToolUse,
            error_message: None,
            timestamp: 0,
        });
        let result = |id: &str, text: &str| {
            Message::ToolResult(rein_protocol::message::ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "bash".into(),
                content: vec![ContentBlock::text(text)],
                is_error: false,
                details: None,
                timestamp: 0,
            })
        };
        let messages = vec![
            assistant,
            result("c", "first"),
            result("c", "second"),
            result("c-2", "own"),
            result("c", "fourth"),
        ];
        let fixed = unique_call_ids(messages);
        let Message::Assistant(assistant) = &fixed[0] else { panic!("not assistant") };
        let ids: Vec<&str> = assistant.tool_calls().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c", "c-3", "c-2", "c-4"]);
        let answered: Vec<(String, String)> = fixed[1..]
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult(r) => Some((r.tool_call_id.clone(), r.text())),
                _ => None,
            })
            .collect();
        assert_eq!(
            answered,
            [
                ("c".to_string(), "first".to_string()),
                ("c-3".to_string(), "second".to_string()),
                ("c-2".to_string(), "own".to_string()),
                ("c-4".to_string(), "fourth".to_string()),
            ]
        );
        assert!(is_valid_tool_history(&repair_messages(fixed, 0)));
    }
}
