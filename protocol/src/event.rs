//! The live event stream.
//!
//! A session's events follow its agent loop. Each is wrapped in an [`EventEnvelope`] carrying the
//! session id and a per-session `seq` that increases by one per event, so a client that
//! reconnects with its last `seq` can be given exactly what it missed.

use crate::checkpoint::SkippedFile;
use crate::entry::SessionEntry;
use crate::error::ErrorKind;
use crate::message::{AssistantMessage, ContentBlock, Message, ToolCall, ToolResultMessage, Usage};
use crate::method::ApprovalPolicy;
use crate::model::{ModelRef, ThinkingLevel};
use crate::verify::{RunOutcome, VerifyCheckResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::Arc;

/// One event of a session, numbered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EventEnvelope {
    /// The session the event belongs to.
    pub session_id: String,
    /// Per-session sequence number, starting at 1 each time the daemon loads the session and
    /// increasing by one per event. The load is named by `stream` in `session/state`.
    pub seq: u64,
    /// Milliseconds since the Unix epoch when the daemon emitted it.
    pub timestamp: i64,
    /// The event itself.
    pub event: SessionEvent,
    /// The client whose request caused the event (an answered approval, a model, thinking
    /// level or policy change, a label or rename, the `agent_end` of a run it cancelled), as
    /// it introduced itself at `initialize`; absent for events the session's own run produced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<ClientIdentity>,
}

/// Who a client is, as it said at `initialize`: enough for several terminals on one session to
/// tell which of them answered or changed something.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ClientIdentity {
    /// The client's name (`anonymous` when it never called `initialize`).
    pub name: String,
    /// The client's process id, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The client's terminal (say `/dev/pts/3`), when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
}

/// What a session subscription delivers, tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)] // a wire type built once per delivery; boxing buys nothing
pub enum SubscriptionItem {
    /// The next event.
    Event(EventEnvelope),
    /// This subscriber fell behind and events were dropped for it. It must resync: fetch
    /// `session/state` and `session/messages`, then subscribe again from the `last_seq` they
    /// return. Nothing more is delivered on this subscription.
    Lagged {
        /// The session.
        session_id: String,
        /// The last seq delivered before the gap.
        last_delivered_seq: u64,
    },
    /// The replay buffer no longer reaches back to the requested `after_seq`; resync as for
    /// `lagged`. Nothing more is delivered on this subscription.
    ResyncRequired {
        /// The session.
        session_id: String,
        /// The oldest seq still buffered.
        oldest_buffered_seq: u64,
    },
    /// Sent about once a second to a subscriber whose client answers approvals, while an
    /// approval request of the session waits, so that a client that went away is noticed at
    /// once (its approver status ends with the failed write) rather than at the next event.
    /// Carries nothing; ignore it.
    Keepalive {
        /// The session.
        session_id: String,
    },
    /// A kind this client version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// Why a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The model answered without calling more tools.
    Completed,
    /// A client cancelled it.
    Cancelled,
    /// The turn limit was reached.
    MaxTurns,
    /// The cost limit was reached.
    CostLimit,
    /// The wall-time limit was reached.
    TimeLimit,
    /// Too many consecutive turns in which every tool call failed.
    ToolFailureLimit,
    /// The provider or the harness failed; `error` says why.
    Error,
}

/// Why a compaction ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CompactionReason {
    /// A client asked for it.
    Manual,
    /// The context passed the model's window minus the reserve.
    Threshold,
    /// The provider rejected the request as too long.
    Overflow,
}

/// A message waiting in a queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueuedMessage {
    /// Identifies the queued item.
    pub id: String,
    /// Text and images.
    pub content: Vec<ContentBlock>,
}

/// The session's two queues.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueState {
    /// Delivered at the next turn boundary of the current run.
    pub steering: Vec<QueuedMessage>,
    /// Each starts a new run when the current one ends.
    pub follow_up: Vec<QueuedMessage>,
}

/// An incremental change to the assistant message being streamed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AssistantDelta {
    /// Text appended to the text block at `index`.
    TextDelta {
        /// Block index in the message.
        index: usize,
        /// The new text.
        delta: String,
    },
    /// Reasoning appended to the thinking block at `index`.
    ThinkingDelta {
        /// Block index in the message.
        index: usize,
        /// The new text.
        delta: String,
    },
    /// A tool call block opened at `index`.
    ToolCallStart {
        /// Block index in the message.
        index: usize,
        /// The call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A fragment of the tool call's JSON arguments.
    ToolCallDelta {
        /// Block index in the message.
        index: usize,
        /// The raw fragment.
        delta: String,
    },
    /// The tool call at `index` is complete.
    ToolCallEnd {
        /// Block index in the message.
        index: usize,
        /// The parsed call.
        call: ToolCall,
    },
    /// A delta kind this client version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// How an approval request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovalDecision {
    /// Run this one call.
    AllowOnce,
    /// Run it, and do not ask again for this tool in this session.
    AllowSession,
    /// Do not run it; the model sees the reason.
    Deny,
}

/// An event of one session, tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SessionEvent {
    /// A run started.
    AgentStart {
        /// The run's id, as returned by `session/prompt`.
        run_id: String,
    },
    /// A run ended.
    AgentEnd {
        /// The run's id.
        run_id: String,
        /// Why it ended.
        reason: EndReason,
        /// What went wrong, when `reason` is `error`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Usage summed over the run.
        usage: Usage,
        /// Turns the run took.
        turns: u32,
        /// Whether the result passed the project's checks: `verified`, `verify_failed` or
        /// `unverified` (no check ran). Separate from `reason`.
        #[serde(default)]
        outcome: RunOutcome,
    },
    /// A turn (one provider request and its tool calls) started.
    TurnStart {
        /// 1-based turn number within the run.
        turn: u32,
    },
    /// A turn ended.
    TurnEnd {
        /// 1-based turn number within the run.
        turn: u32,
        /// The assistant's message.
        message: AssistantMessage,
        /// Results of its tool calls, in call order.
        tool_results: Vec<ToolResultMessage>,
    },
    /// A message started: the user's prompt, a tool result, or an assistant message that will
    /// now stream.
    MessageStart {
        /// The message as known so far.
        message: Message,
    },
    /// The streaming assistant message changed.
    MessageUpdate {
        /// The change.
        delta: AssistantDelta,
    },
    /// A message is complete.
    MessageEnd {
        /// The final message.
        // Shared (not copied) with the harness's history and the session entry that hold it.
        message: Arc<Message>,
    },
    /// A tool call began executing.
    ToolExecutionStart {
        /// The call id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// The validated arguments.
        arguments: Value,
    },
    /// A running tool reported progress (for `bash`, a chunk of output).
    ToolExecutionUpdate {
        /// The call id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Progress content.
        content: Vec<ContentBlock>,
    },
    /// A tool call finished.
    ToolExecutionEnd {
        /// The call id.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Its result.
        result: ToolResultMessage,
    },
    /// The steering or follow-up queue changed.
    QueueChanged {
        /// Both queues as they are now.
        queues: QueueState,
    },
    /// A compaction started.
    CompactionStart {
        /// Why.
        reason: CompactionReason,
    },
    /// A compaction ended.
    CompactionEnd {
        /// Why it ran.
        reason: CompactionReason,
        /// The compaction entry, when it succeeded.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        entry_id: Option<String>,
        /// Context tokens before.
        tokens_before: u64,
        /// What went wrong, when it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A provider request failed and will be retried.
    AutoRetry {
        /// 1-based attempt that failed.
        attempt: u32,
        /// The most attempts that will be made.
        max_attempts: u32,
        /// Wait before the next attempt.
        delay_ms: u64,
        /// What failed.
        error: String,
    },
    /// A tool call needs a client's approval; answer with `approval/respond`.
    ApprovalRequested {
        /// Identifies the request.
        request_id: String,
        /// The call waiting.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Its arguments.
        arguments: Value,
        /// Why approval is needed.
        reason: String,
    },
    /// An approval request was answered (or expired).
    ApprovalResolved {
        /// The request.
        request_id: String,
        /// The answer.
        decision: ApprovalDecision,
        /// The reason given with a denial.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// Which client answered (its `initialize` name), or `daemon` when none could.
        resolved_by: String,
    },
    /// The session's model changed.
    ModelChanged {
        /// The new model.
        model: ModelRef,
    },
    /// The session's thinking level changed.
    ThinkingLevelChanged {
        /// The new level.
        level: ThinkingLevel,
    },
    /// An entry was appended to the session file (it is durable now).
    EntryAppended {
        /// The entry.
        entry: SessionEntry,
    },
    /// The session's approval policy changed (`session/set_approval_policy`).
    ApprovalPolicyChanged {
        /// The new policy.
        policy: ApprovalPolicy,
    },
    /// The active leaf moved (branching).
    LeafChanged {
        /// The new leaf.
        leaf_id: Option<String>,
    },
    /// A user shell command (`session/shell`) started.
    ShellStart {
        /// Identifies the command.
        shell_id: String,
        /// The command line.
        command: String,
    },
    /// Output of a user shell command.
    ShellOutput {
        /// Identifies the command.
        shell_id: String,
        /// A chunk of merged stdout and stderr.
        chunk: String,
    },
    /// A user shell command ended.
    ShellEnd {
        /// Identifies the command.
        shell_id: String,
        /// Its exit code, if it exited.
        exit_code: Option<i32>,
        /// True when it was cancelled.
        cancelled: bool,
    },
    /// The model ended a run and its checks start (one verification round).
    VerifyStarted {
        /// The run.
        run_id: String,
        /// 1-based round within the run.
        round: u32,
        /// The most rounds the run gets.
        max_rounds: u32,
        /// The commands, in the order they run.
        commands: Vec<String>,
    },
    /// A verification round ended. When it failed and rounds are left, the failing output goes
    /// back to the model as a user message and the run goes on.
    VerifyFinished {
        /// The run.
        run_id: String,
        /// 1-based round within the run.
        round: u32,
        /// True when every check passed.
        passed: bool,
        /// Each check that ran, in order (checks after the first failure do not run).
        checks: Vec<VerifyCheckResult>,
        /// True when the round was cut short by a cancel; `checks` has what finished.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cancelled: bool,
    },
    /// The project tree was snapshotted before and after a turn's tools ran; `session/undo`
    /// can go back to before them.
    CheckpointCreated {
        /// The checkpoint's turn number in the session (what `session/undo` takes).
        turn: u32,
        /// The run.
        run_id: String,
        /// 1-based turn within the run.
        run_turn: u32,
        /// Files left out because they exceed the per-file cap.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        skipped: Vec<SkippedFile>,
    },
    /// A snapshot could not be taken (the snapshot cap was hit, or `git` failed); that turn
    /// cannot be undone.
    CheckpointFailed {
        /// The run.
        run_id: String,
        /// 1-based turn within the run.
        run_turn: u32,
        /// Why.
        error: String,
    },
    /// Files were restored by `session/undo`.
    UndoApplied {
        /// The checkpointed turn restored to (the state before its tools ran).
        turn: u32,
        /// Files written back.
        restored: Vec<String>,
        /// Files removed.
        removed: Vec<String>,
        /// Files changed outside rein that were overwritten (forced).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        overwritten: Vec<String>,
        /// Which client asked.
        requested_by: String,
    },
    /// A command hook started (see `docs/extensions.md`).
    HookStarted {
        /// Identifies this run of the hook; `hook_finished` carries the same id.
        hook_id: String,
        /// The hook event that fired it, as Claude Code names it (`PreToolUse`, `Stop`, ...).
        hook_event: String,
        /// The hook's command line.
        command: String,
        /// The tool call it is about, for the tool events.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tool_call_id: Option<String>,
    },
    /// A command hook finished.
    HookFinished {
        /// The id its `hook_started` carried.
        hook_id: String,
        /// The hook event that fired it.
        hook_event: String,
        /// The hook's command line.
        command: String,
        /// What the hook decided.
        decision: HookDecision,
        /// How long it ran, in milliseconds.
        duration_ms: u64,
        /// Its exit code; absent when it was killed (timeout) or could not start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exit_code: Option<i32>,
        /// The reason or message it gave (a block reason, an error's stderr), cut to a few KiB.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// The session is idle: no run and no queued follow-up. Nothing more comes until a client
    /// acts.
    Settled,
    /// Something failed that the run cannot go on without; for `io`, the session file could
    /// not be written (a full disk, say). The run stops, nothing after the last
    /// `entry_appended` is recorded, and the session continues from the file once the cause
    /// is gone.
    Error {
        /// What kind of failure (`io` for the file system).
        error_kind: ErrorKind,
        /// What failed, naming the file and the cause.
        message: String,
        /// The file involved, when there is one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
    },
    /// An event kind this client version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

/// What a command hook decided (`hook_finished`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HookDecision {
    /// It succeeded without a decision; things go on as they would without it.
    None,
    /// It allowed the tool call (or permission) without asking.
    Allow,
    /// It asked for the user's confirmation of the tool call.
    Ask,
    /// It blocked: the tool call, the prompt, or (for `Stop`) the end of the run.
    Block,
    /// It asked to stop the run (`"continue": false`).
    Stop,
    /// It failed (exit code other than 0 and 2, timeout, could not start) and did not block.
    Error,
}

/// A daemon-wide event (`daemon/subscribe`), tagged by `kind`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DaemonEvent {
    /// A session was created.
    SessionCreated {
        /// The session.
        session_id: String,
        /// Its project directory.
        cwd: String,
    },
    /// A session was deleted.
    SessionDeleted {
        /// The session.
        session_id: String,
    },
    /// A session started a run.
    SessionRunning {
        /// The session.
        session_id: String,
        /// The run.
        run_id: String,
    },
    /// A session settled.
    SessionIdle {
        /// The session.
        session_id: String,
    },
    /// The daemon noticed its configuration file changed and read it again. With `error`,
    /// the file could not be used and the daemon keeps the settings it had.
    ConfigReloaded {
        /// The configuration file now in force; absent when there is none.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        path: Option<String>,
        /// What is wrong with the file, when it could not be used.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An MCP server's state changed (started, failed, restarted, tools changed).
    McpServerStatus {
        /// The server as `mcp/list` shows it.
        server: crate::mcp::McpServerInfo,
    },
    /// The daemon is shutting down.
    ShuttingDown,
    /// The file system holding `REIN_HOME` has less free space than
    /// `storage.min_free_bytes`; session writes may soon fail. Sent when free space drops
    /// below the threshold (checked a second after the daemon starts, then every minute), and
    /// again after it recovered and dropped again.
    LowDiskSpace {
        /// The directory checked (`REIN_HOME`).
        path: String,
        /// Bytes free for the daemon's user.
        free_bytes: u64,
        /// The threshold (`storage.min_free_bytes`).
        threshold_bytes: u64,
    },
    /// A kind this client version does not know.
    #[serde(other)]
    #[schemars(skip)]
    Unknown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{StopReason, UserMessage};
    use serde_json::json;

    fn assistant() -> AssistantMessage {
        AssistantMessage {
            content: vec![ContentBlock::text("ok")],
            api: "openai-chat".into(),
            provider: "local".into(),
            model: "m".into(),
            usage: Usage::default(),
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp: 0,
        }
    }

    fn result() -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text("out")],
            is_error: false,
            details: None,
            timestamp: 0,
        }
    }

    fn all_events() -> Vec<SessionEvent> {
        vec![
            SessionEvent::AgentStart { run_id: "r".into() },
            SessionEvent::AgentEnd {
                run_id: "r".into(),
                reason: EndReason::MaxTurns,
                error: None,
                usage: Usage::default(),
                turns: 3,
                outcome: RunOutcome::Verified,
            },
            SessionEvent::TurnStart { turn: 1 },
            SessionEvent::TurnEnd { turn: 1, message: assistant(), tool_results: vec![result()] },
            SessionEvent::MessageStart { message: Message::User(UserMessage::text("q", 0)) },
            SessionEvent::MessageUpdate {
                delta: AssistantDelta::TextDelta { index: 0, delta: "o".into() },
            },
            SessionEvent::MessageUpdate {
                delta: AssistantDelta::ThinkingDelta { index: 0, delta: "o".into() },
            },
            SessionEvent::MessageUpdate {
                delta: AssistantDelta::ToolCallStart {
                    index: 1,
                    id: "c".into(),
                    name: "bash".into(),
                },
            },
            SessionEvent::MessageUpdate {
                delta: AssistantDelta::ToolCallDelta { index: 1, delta: "{\"com".into() },
            },
            SessionEvent::MessageUpdate {
                delta: AssistantDelta::ToolCallEnd {
                    index: 1,
                    call: ToolCall { id: "c".into(), name: "bash".into(), arguments: json!({}) },
                },
            },
            SessionEvent::MessageEnd { message: Arc::new(Message::Assistant(assistant())) },
            SessionEvent::ToolExecutionStart {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                arguments: json!({"command": "ls"}),
            },
            SessionEvent::ToolExecutionUpdate {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                content: vec![ContentBlock::text("a\n")],
            },
            SessionEvent::ToolExecutionEnd {
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                result: result(),
            },
            SessionEvent::QueueChanged {
                queues: QueueState {
                    steering: vec![QueuedMessage {
                        id: "q1".into(),
                        content: vec![ContentBlock::text("stop")],
                    }],
                    follow_up: vec![],
                },
            },
            SessionEvent::CompactionStart { reason: CompactionReason::Overflow },
            SessionEvent::CompactionEnd {
                reason: CompactionReason::Threshold,
                entry_id: Some("e".into()),
                tokens_before: 9,
                error: None,
            },
            SessionEvent::AutoRetry {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 500,
                error: "429".into(),
            },
            SessionEvent::ApprovalRequested {
                request_id: "a".into(),
                tool_call_id: "c".into(),
                tool_name: "bash".into(),
                arguments: json!({"command": "rm x"}),
                reason: "bash asks under auto-edit".into(),
            },
            SessionEvent::ApprovalResolved {
                request_id: "a".into(),
                decision: ApprovalDecision::Deny,
                reason: Some("no".into()),
                resolved_by: "nvim".into(),
            },
            SessionEvent::ModelChanged {
                model: ModelRef { provider: "p".into(), model: "m".into() },
            },
            SessionEvent::ThinkingLevelChanged { level: ThinkingLevel::Low },
            SessionEvent::ApprovalPolicyChanged { policy: ApprovalPolicy::AutoEdit },
            SessionEvent::LeafChanged { leaf_id: Some("e".into()) },
            SessionEvent::ShellStart { shell_id: "s".into(), command: "ls".into() },
            SessionEvent::ShellOutput { shell_id: "s".into(), chunk: "x".into() },
            SessionEvent::ShellEnd { shell_id: "s".into(), exit_code: Some(0), cancelled: false },
            SessionEvent::Settled,
        ]
    }

    #[test]
    fn every_session_event_round_trips_in_an_envelope() {
        for (i, event) in all_events().into_iter().enumerate() {
            let item = SubscriptionItem::Event(EventEnvelope {
                session_id: "s1".into(),
                seq: i as u64 + 1,
                timestamp: 5,
                event,
                client: None,
            });
            let text = serde_json::to_string(&item).unwrap();
            assert!(!text.contains('\n'));
            let back: SubscriptionItem = serde_json::from_str(&text).unwrap();
            assert_eq!(back, item, "{text}");
        }
    }

    #[test]
    fn subscription_notices_and_daemon_events_round_trip() {
        let items = vec![
            SubscriptionItem::Lagged { session_id: "s".into(), last_delivered_seq: 4 },
            SubscriptionItem::ResyncRequired { session_id: "s".into(), oldest_buffered_seq: 9 },
        ];
        for item in items {
            let text = serde_json::to_string(&item).unwrap();
            assert_eq!(serde_json::from_str::<SubscriptionItem>(&text).unwrap(), item);
        }
        let events = vec![
            DaemonEvent::SessionCreated { session_id: "s".into(), cwd: "/p".into() },
            DaemonEvent::SessionDeleted { session_id: "s".into() },
            DaemonEvent::SessionRunning { session_id: "s".into(), run_id: "r".into() },
            DaemonEvent::SessionIdle { session_id: "s".into() },
            DaemonEvent::ShuttingDown,
        ];
        for event in events {
            let text = serde_json::to_string(&event).unwrap();
            assert_eq!(serde_json::from_str::<DaemonEvent>(&text).unwrap(), event);
        }
    }

    #[test]
    fn an_old_client_skips_unknown_event_kinds_and_fields() {
        let text = r#"{"type":"event","session_id":"s","seq":7,"timestamp":1,"extra":true,
            "event":{"kind":"telepathy","strength":9}}"#;
        let item: SubscriptionItem = serde_json::from_str(text).unwrap();
        match item {
            SubscriptionItem::Event(envelope) => {
                assert_eq!(envelope.seq, 7);
                assert_eq!(envelope.event, SessionEvent::Unknown);
            }
            other => panic!("unexpected {other:?}"),
        }
        let text = r#"{"type":"hologram","x":1}"#;
        assert_eq!(
            serde_json::from_str::<SubscriptionItem>(text).unwrap(),
            SubscriptionItem::Unknown
        );
        let text = r#"{"kind":"turn_start","turn":2,"new":"field"}"#;
        assert_eq!(
            serde_json::from_str::<SessionEvent>(text).unwrap(),
            SessionEvent::TurnStart { turn: 2 }
        );
        let text = r#"{"kind":"moon_phase"}"#;
        assert_eq!(serde_json::from_str::<DaemonEvent>(text).unwrap(), DaemonEvent::Unknown);
    }
}
