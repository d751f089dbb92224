//! Example values for the reference, built from the real types.
//!
//! They tell one small story: a client opens a session on a project, asks the model to fix a
//! failing test, the model reads a file and runs the tests, and a bash call waits for approval.
//! Every value goes through serde on its way into the docs, so an example can never show a shape
//! the daemon would not send or accept.

use rein_protocol::checkpoint::{
    CheckpointInfo, DiffParams, DiffResult, FileChange, FileChangeKind, SkippedFile, UndoParams,
    UndoResult,
};
use rein_protocol::entry::{EntryKind, SessionEntry};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::{
    ApprovalDecision, AssistantDelta, ClientIdentity, CompactionReason, DaemonEvent, EndReason,
    EventEnvelope, HookDecision, QueueState, QueuedMessage, SessionEvent, SubscriptionItem,
};
use rein_protocol::message::{
    AssistantMessage, ContentBlock, Cost, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use rein_protocol::method::{
    ApprovalPolicy, ApprovalRespondParams, BranchParams, BranchResult, BusyBehavior, CheckVerdict,
    ClearQueueParams, ClientCapabilities, CompactParams, CompactResult, CreateSessionParams,
    DaemonCapabilities, DaemonInfo, ExcludedFile, ExportFormat, ExportParams, ExportResult,
    ForkParams, HistoryPageParams, InitializeParams, InitializeResult, KeySource, LabelParams,
    ListSessionsParams, ListSessionsResult, ListingError, MessagesResult, ModelsResult,
    PromptDisposition, PromptParams, PromptResult, ProviderCheck, ProviderStatus,
    ProvidersCheckParams, ProvidersCheckResult, QueueMessageParams, QueueMessageResult,
    QueueSelector, RenameParams, RunLimits, SandboxMode, SessionRef, SessionState, SessionSummary,
    SetApprovalPolicyParams, SetModelParams, SetThinkingParams, ShellParams, SubscribeParams,
    SubscriptionNotification, TreeResult, TrustListResult, TrustParams,
};
use rein_protocol::model::{Api, ModelCost, ModelInfo, ModelRef, ThinkingLevel};
use rein_protocol::verify::{RunOutcome, VerifyCheckResult, VerifyRequest};
use rein_protocol::version::PROTOCOL_VERSION;
use serde_json::json;

/// The example session's id.
pub const SESSION_ID: &str = "0193a5c2-7f3e-7b11-9c1a-5d2e8f0b4a61";
/// The example session's event stream (one load of it).
pub const STREAM: &str = "3f9c2a71";
/// The session created by the `session/fork` example.
pub const FORKED_SESSION_ID: &str = "0193a5d0-1c44-7e02-8a37-b0f1d2c3e4a5";
/// The example project directory.
pub const CWD: &str = "/home/ada/src/parser";
/// The example run.
pub const RUN_ID: &str = "run-0193a5c3";
/// The example session subscription.
pub const SESSION_SUBSCRIPTION: &str = "sub-7";
/// The example daemon subscription.
pub const DAEMON_SUBSCRIPTION: &str = "sub-3";
/// The example user shell command.
pub const SHELL_ID: &str = "sh-1";
/// The example approval request.
pub const REQUEST_ID: &str = "ap-1";
/// 2026-11-30T10:00:00Z in milliseconds since the Unix epoch.
const T0: i64 = 1_796_032_800_000;

fn model_ref() -> ModelRef {
    ModelRef { provider: "anthropic".into(), model: "claude-sonnet-4-5".into() }
}

fn text(text: &str) -> Vec<ContentBlock> {
    vec![ContentBlock::text(text)]
}

fn usage() -> Usage {
    Usage {
        input: 1200,
        output: 85,
        cache_read: 3400,
        cache_write: 0,
        total_tokens: 4685,
        cost: Cost {
            input: 0.0036,
            output: 0.001275,
            cache_read: 0.00102,
            cache_write: 0.0,
            total: 0.005895,
        },
    }
}

fn read_call() -> ToolCall {
    ToolCall {
        id: "toolu_01".into(),
        name: "read".into(),
        arguments: json!({"path": "src/lex.rs"}),
    }
}

fn bash_call() -> ToolCall {
    ToolCall {
        id: "toolu_02".into(),
        name: "bash".into(),
        arguments: json!({"command": "cargo test"}),
    }
}

fn user_prompt() -> UserMessage {
    UserMessage::text("The lexer test fails on empty input; fix it.", T0)
}

fn assistant_reading() -> AssistantMessage {
    AssistantMessage {
        content: vec![
            ContentBlock::Thinking {
                thinking: "Look at the lexer first.".into(),
                signature: Some("EqQBCkYIBxgCKkA".into()),
                redacted: false,
            },
            ContentBlock::text("Let me read the lexer."),
            ContentBlock::ToolCall(read_call()),
        ],
        api: Api::Anthropic.as_str().into(),
        provider: "anthropic".into(),
        model: "claude-sonnet-4-5".into(),
        usage: usage(),
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: T0 + 1_000,
    }
}

fn read_result() -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: "toolu_01".into(),
        tool_name: "read".into(),
        content: text("pub fn lex(input: &str) -> Vec<Token> {\n    input[0..1]..."),
        is_error: false,
        details: None,
        timestamp: T0 + 1_200,
    }
}

fn entry(id: &str, parent: Option<&str>, seconds: u32, kind: EntryKind) -> SessionEntry {
    SessionEntry {
        id: id.into(),
        parent_id: parent.map(str::to_string),
        timestamp: format!("2026-11-30T10:00:{seconds:02}Z"),
        kind,
    }
}

fn prompt_entry() -> SessionEntry {
    entry("a1b2c3d4", None, 0, EntryKind::Message { message: Message::User(user_prompt()).into() })
}

fn assistant_entry() -> SessionEntry {
    entry(
        "b2c3d4e5",
        Some("a1b2c3d4"),
        1,
        EntryKind::Message { message: Message::Assistant(assistant_reading()).into() },
    )
}

fn queued_steering() -> QueuedMessage {
    QueuedMessage { id: "q-1".into(), content: text("Keep the public API unchanged.") }
}

/// `initialize` params.
pub fn initialize_params() -> InitializeParams {
    InitializeParams {
        client_name: "rein.nvim".into(),
        client_version: "0.3.1".into(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: ClientCapabilities { approvals: true },
        pid: Some(48213),
        tty: Some("/dev/pts/3".into()),
    }
}

/// `initialize` result.
pub fn initialize_result() -> InitializeResult {
    InitializeResult {
        daemon_version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: DaemonCapabilities {
            replay_buffer: 4096,
            max_line_bytes: rein_protocol::codec::DEFAULT_MAX_LINE_BYTES as u64,
            export_formats: vec![ExportFormat::Markdown, ExportFormat::Jsonl],
        },
    }
}

/// `daemon/info` result.
pub fn daemon_info() -> DaemonInfo {
    DaemonInfo {
        version: "0.1.0".into(),
        protocol_version: PROTOCOL_VERSION,
        pid: 48213,
        uptime_ms: 3_600_000,
        socket_path: "/home/ada/.local/share/rein/run/reind.sock".into(),
        rein_home: "/home/ada/.local/share/rein".into(),
        sessions_loaded: 2,
        connections: 3,
        disk_free_bytes: Some(48_318_382_080),
        low_disk_space: false,
        config_path: Some("/home/ada/.local/share/rein/config.toml".into()),
        config_error: None,
        default_model: Some("anthropic/claude-sonnet-4-5".into()),
        key_variables: vec!["ANTHROPIC_API_KEY".into()],
        missing_key_variables: vec!["OPENAI_API_KEY".into(), "OPENROUTER_API_KEY".into()],
        local_server: None,
    }
}

/// Params naming the example session.
pub fn session_ref() -> SessionRef {
    SessionRef { session_id: SESSION_ID.into() }
}

/// `session/create` params.
pub fn create_session_params() -> CreateSessionParams {
    CreateSessionParams {
        cwd: CWD.into(),
        model: Some(model_ref().to_string()),
        thinking_level: Some(ThinkingLevel::Medium),
        name: None,
        approval_policy: Some(ApprovalPolicy::AutoEdit),
        sandbox: Some(SandboxMode::WorkspaceWrite),
        mcp_servers: Default::default(),
    }
}

/// The example session's state (the result of create, open and state).
pub fn session_state() -> SessionState {
    SessionState {
        session_id: SESSION_ID.into(),
        cwd: CWD.into(),
        name: Some("fix empty-input lexing".into()),
        model: model_ref(),
        thinking_level: ThinkingLevel::Medium,
        approval_policy: ApprovalPolicy::AutoEdit,
        running: true,
        run_id: Some(RUN_ID.into()),
        queues: queue_state(),
        usage: usage(),
        context_tokens: 4685,
        context_window: 200_000,
        leaf_id: Some("b2c3d4e5".into()),
        trusted: false,
        excluded_files: vec![ExcludedFile {
            path: format!("{CWD}/AGENTS.md"),
            reason: "project not trusted".into(),
        }],
        last_seq: 42,
        stream: STREAM.into(),
    }
}

/// The example session's state right after `session/create`: idle, empty, at seq 0.
pub fn created_state() -> SessionState {
    SessionState {
        name: None,
        running: false,
        run_id: None,
        queues: QueueState::default(),
        usage: Usage::default(),
        context_tokens: 1300,
        leaf_id: None,
        last_seq: 0,
        ..session_state()
    }
}

/// The state of the session created by the `session/fork` example.
pub fn forked_state() -> SessionState {
    SessionState {
        session_id: FORKED_SESSION_ID.into(),
        leaf_id: Some("a1b2c3d4".into()),
        stream: "7d01e4b8".into(),
        ..created_state()
    }
}

/// `session/list` params.
pub fn list_sessions_params() -> ListSessionsParams {
    ListSessionsParams { cwd: Some(CWD.into()), limit: Some(50), cursor: None }
}

/// `session/list` result.
pub fn list_sessions_result() -> ListSessionsResult {
    ListSessionsResult {
        sessions: vec![SessionSummary {
            session_id: SESSION_ID.into(),
            cwd: CWD.into(),
            name: Some("fix empty-input lexing".into()),
            first_prompt: Some("The lexer test fails on empty input; fix it.".into()),
            entry_count: 12,
            size_bytes: 18_342,
            created: "2026-11-30T10:00:00Z".into(),
            updated: "2026-11-30T10:04:12Z".into(),
            path: format!(
                "/home/ada/.local/share/rein/sessions/--home-ada-src-parser--/{SESSION_ID}.jsonl"
            ),
            loaded: true,
            running: true,
        }],
        errors: vec![ListingError {
            path: "/home/ada/.local/share/rein/sessions/--home-ada-src-parser--/0193b2c4.jsonl"
                .into(),
            message: "read /home/ada/.local/share/rein/sessions/--home-ada-src-parser--/\
                      0193b2c4.jsonl: Permission denied (os error 13)"
                .into(),
        }],
        total: 1,
        next_cursor: None,
    }
}

/// `session/fork` params.
pub fn fork_params() -> ForkParams {
    ForkParams { session_id: SESSION_ID.into(), entry_id: "a1b2c3d4".into() }
}

/// `session/messages` result.
pub fn messages_result() -> MessagesResult {
    MessagesResult {
        messages: vec![
            Message::User(user_prompt()),
            Message::Assistant(assistant_reading()),
            Message::ToolResult(read_result()),
        ],
        leaf_id: Some("c3d4e5f6".into()),
        last_seq: 42,
        stream: STREAM.into(),
        total: 3,
        next_cursor: None,
    }
}

/// `session/messages` and `session/tree` params.
pub fn history_page_params() -> HistoryPageParams {
    HistoryPageParams { session_id: SESSION_ID.into(), limit: Some(50), cursor: None }
}

/// `session/tree` result.
pub fn tree_result() -> TreeResult {
    TreeResult {
        entries: vec![
            prompt_entry(),
            assistant_entry(),
            entry(
                "c3d4e5f6",
                Some("b2c3d4e5"),
                2,
                EntryKind::Label { target_id: "a1b2c3d4".into(), label: Some("start".into()) },
            ),
        ],
        leaf_id: Some("c3d4e5f6".into()),
        total: 3,
        next_cursor: None,
    }
}

/// `session/label` params.
pub fn label_params() -> LabelParams {
    LabelParams {
        session_id: SESSION_ID.into(),
        entry_id: "a1b2c3d4".into(),
        label: Some("start".into()),
    }
}

/// `session/rename` params.
pub fn rename_params() -> RenameParams {
    RenameParams { session_id: SESSION_ID.into(), name: "fix empty-input lexing".into() }
}

/// `session/prompt` params.
pub fn prompt_params() -> PromptParams {
    PromptParams {
        session_id: SESSION_ID.into(),
        text: "The lexer test fails on empty input; fix it.".into(),
        images: vec![],
        when_busy: Some(BusyBehavior::FollowUp),
        limits: RunLimits {
            max_turns: Some(20),
            max_cost: Some(0.5),
            max_seconds: None,
            max_failed_turns: None,
        },
        verify: Some(VerifyRequest::Commands(vec!["cargo test".into()])),
    }
}

/// A check that failed, as `verify_finished` reports it.
fn failed_check() -> VerifyCheckResult {
    VerifyCheckResult {
        command: "cargo test".into(),
        passed: false,
        exit_code: Some(101),
        timed_out: false,
        duration_ms: 4_210,
        output_tail: "test lex::empty_input ... FAILED\ntest result: FAILED. 11 passed; 1 failed\n"
            .into(),
        full_output_path: None,
    }
}

/// `session/undo` params.
pub fn undo_params() -> UndoParams {
    UndoParams { session_id: SESSION_ID.into(), turn: Some(4), entry_id: None, force: false }
}

/// `session/undo` result.
pub fn undo_result() -> UndoResult {
    UndoResult {
        turn: 4,
        restored: vec!["src/lex.rs".into()],
        removed: vec!["src/lex_tmp.rs".into()],
        overwritten: vec![],
        entry_id: "c9d0e1f2".into(),
    }
}

/// `session/diff` params.
pub fn diff_params() -> DiffParams {
    DiffParams { session_id: SESSION_ID.into(), turn: Some(4), run_id: None }
}

/// `session/diff` result.
pub fn diff_result() -> DiffResult {
    DiffResult {
        turns: vec![CheckpointInfo {
            turn: 4,
            run_id: RUN_ID.into(),
            run_turn: 2,
            entry_id: "b7c8d9e0".into(),
        }],
        files: vec![FileChange { path: "src/lex.rs".into(), change: FileChangeKind::Modified }],
        patch: "diff --git a/src/lex.rs b/src/lex.rs\n--- a/src/lex.rs\n+++ b/src/lex.rs\n@@ -1 +1 @@\n-fn lex() {}\n+fn lex() -> Vec<Token> { Vec::new() }\n".into(),
    }
}

/// `session/prompt` result.
pub fn prompt_result() -> PromptResult {
    PromptResult { run_id: RUN_ID.into(), disposition: PromptDisposition::Started }
}

/// `session/steer` params.
pub fn steer_params() -> QueueMessageParams {
    QueueMessageParams {
        session_id: SESSION_ID.into(),
        text: "Keep the public API unchanged.".into(),
        images: vec![],
    }
}

/// `session/steer` result.
pub fn steer_result() -> QueueMessageResult {
    QueueMessageResult { id: "q-1".into(), started_run: false }
}

/// `session/follow_up` params.
pub fn follow_up_params() -> QueueMessageParams {
    QueueMessageParams {
        session_id: SESSION_ID.into(),
        text: "Then add a test for whitespace-only input.".into(),
        images: vec![ContentBlock::Image {
            data: "iVBORw0KGgo=".into(),
            mime_type: "image/png".into(),
        }],
    }
}

/// `session/follow_up` result.
pub fn follow_up_result() -> QueueMessageResult {
    QueueMessageResult { id: "q-2".into(), started_run: false }
}

/// The example session's queues.
pub fn queue_state() -> QueueState {
    QueueState { steering: vec![queued_steering()], follow_up: vec![] }
}

/// `session/clear_queue` params.
pub fn clear_queue_params() -> ClearQueueParams {
    ClearQueueParams { session_id: SESSION_ID.into(), queue: QueueSelector::All }
}

/// `session/set_model` params.
pub fn set_model_params() -> SetModelParams {
    SetModelParams { session_id: SESSION_ID.into(), model: "openai/gpt-5.1-codex".into() }
}

/// `session/set_thinking` params.
pub fn set_thinking_params() -> SetThinkingParams {
    SetThinkingParams { session_id: SESSION_ID.into(), level: ThinkingLevel::High }
}

/// `session/set_approval_policy` params.
pub fn set_approval_policy_params() -> SetApprovalPolicyParams {
    SetApprovalPolicyParams { session_id: SESSION_ID.into(), policy: ApprovalPolicy::Ask }
}

/// `session/branch` params.
pub fn branch_params() -> BranchParams {
    BranchParams {
        session_id: SESSION_ID.into(),
        entry_id: Some("a1b2c3d4".into()),
        summarize: true,
    }
}

/// `session/branch` result.
pub fn branch_result() -> BranchResult {
    BranchResult { leaf_id: Some("d4e5f6a7".into()), summary_entry_id: Some("d4e5f6a7".into()) }
}

/// `session/compact` params.
pub fn compact_params() -> CompactParams {
    CompactParams {
        session_id: SESSION_ID.into(),
        instructions: Some("Keep the failing test's output.".into()),
    }
}

/// `session/compact` result.
pub fn compact_result() -> CompactResult {
    CompactResult {
        entry_id: "e5f6a7b8".into(),
        tokens_before: 152_000,
        tokens_after: 9_800,
        summary: "The user asked to fix lexing of empty input; `lex` indexed input[0..1].".into(),
    }
}

/// `session/export` params.
pub fn export_params() -> ExportParams {
    ExportParams {
        session_id: SESSION_ID.into(),
        format: ExportFormat::Markdown,
        limit: None,
        cursor: None,
    }
}

/// `session/export` result.
pub fn export_result() -> ExportResult {
    ExportResult {
        content: "# fix empty-input lexing\n\n## User\n\nThe lexer test fails on empty input; \
                  fix it.\n"
            .into(),
        total: 5,
        next_cursor: None,
    }
}

/// `session/shell` params.
pub fn shell_params() -> ShellParams {
    ShellParams {
        session_id: SESSION_ID.into(),
        command: "git status --short".into(),
        add_to_context: true,
    }
}

/// `session/subscribe` params.
pub fn subscribe_params() -> SubscribeParams {
    SubscribeParams {
        session_id: SESSION_ID.into(),
        after_seq: Some(42),
        stream: Some(STREAM.into()),
    }
}

/// `approval/respond` params.
pub fn approval_respond_params() -> ApprovalRespondParams {
    ApprovalRespondParams {
        session_id: SESSION_ID.into(),
        request_id: REQUEST_ID.into(),
        decision: ApprovalDecision::AllowOnce,
        reason: None,
    }
}

/// `trust/set` params.
pub fn trust_params() -> TrustParams {
    TrustParams { path: CWD.into(), trusted: true, force: false }
}

/// An MCP server as `mcp/list` shows it.
pub fn mcp_server_info() -> rein_protocol::mcp::McpServerInfo {
    use rein_protocol::mcp::{McpScope, McpServerInfo, McpServerState, McpTransport};
    McpServerInfo {
        name: "fs".into(),
        scope: McpScope::Daemon,
        session_id: None,
        transport: McpTransport::Stdio,
        state: McpServerState::Ready,
        tools: vec!["mcp__fs__read_text_file".into(), "mcp__fs__list_directory".into()],
        error: None,
        restarts: 0,
    }
}

/// `mcp/list` params.
pub fn mcp_list_params() -> rein_protocol::mcp::McpListParams {
    rein_protocol::mcp::McpListParams { session_id: Some(SESSION_ID.into()) }
}

/// `mcp/list` result.
pub fn mcp_list_result() -> rein_protocol::mcp::McpListResult {
    rein_protocol::mcp::McpListResult { servers: vec![mcp_server_info()] }
}

/// `trust/list` result.
pub fn trust_list_result() -> TrustListResult {
    TrustListResult { paths: vec![CWD.into(), "/home/ada/src/website".into()] }
}

/// `providers/check` params.
pub fn providers_check_params() -> ProvidersCheckParams {
    ProvidersCheckParams { probe: true }
}

/// `providers/check` result.
pub fn providers_check_result() -> ProvidersCheckResult {
    ProvidersCheckResult {
        default_model: Some(model_ref().to_string()),
        providers: vec![
            ProviderStatus {
                name: "anthropic".into(),
                api: Api::Anthropic,
                base_url: "https://api.anthropic.com/v1".into(),
                key: KeySource::AuthFile { variable: "ANTHROPIC_API_KEY".into() },
                in_use: true,
                check: Some(ProviderCheck {
                    verdict: CheckVerdict::Ok,
                    status: Some(200),
                    message: "listed 9 models".into(),
                    models: 9,
                }),
            },
            ProviderStatus {
                name: "openai".into(),
                api: Api::OpenAiResponses,
                base_url: "https://api.openai.com/v1".into(),
                key: KeySource::Missing { variable: "OPENAI_API_KEY".into() },
                in_use: false,
                check: None,
            },
        ],
    }
}

/// `models/list` result.
pub fn models_result() -> ModelsResult {
    ModelsResult {
        default_model: Some(model_ref().to_string()),
        models: vec![ModelInfo {
            provider: "anthropic".into(),
            id: "claude-sonnet-4-5".into(),
            name: "Claude Sonnet 4.5".into(),
            api: Api::Anthropic,
            context_window: 200_000,
            max_output_tokens: 64_000,
            images: true,
            reasoning: true,
            cost: ModelCost { input: 3.0, output: 15.0, cache_read: 0.3, cache_write: 3.75 },
            known: true,
        }],
    }
}

/// The example event in its envelope, as the first `session/event` example delivers it.
pub fn envelope() -> EventEnvelope {
    EventEnvelope {
        session_id: SESSION_ID.into(),
        seq: 43,
        timestamp: T0,
        event: SessionEvent::AgentStart { run_id: RUN_ID.into() },
        client: None,
    }
}

/// A `session/event` notification's params.
pub fn session_notification() -> SubscriptionNotification<SubscriptionItem> {
    SubscriptionNotification {
        subscription: SESSION_SUBSCRIPTION.into(),
        result: SubscriptionItem::Event(envelope()),
    }
}

/// A `daemon/event` notification's params.
pub fn daemon_notification() -> SubscriptionNotification<DaemonEvent> {
    SubscriptionNotification {
        subscription: DAEMON_SUBSCRIPTION.into(),
        result: DaemonEvent::SessionRunning {
            session_id: SESSION_ID.into(),
            run_id: RUN_ID.into(),
        },
    }
}

/// One example of every session event kind, in the order a run produces them.
pub fn session_events() -> Vec<SessionEvent> {
    let bash = bash_call();
    vec![
        SessionEvent::AgentStart { run_id: RUN_ID.into() },
        SessionEvent::TurnStart { turn: 1 },
        SessionEvent::MessageStart { message: Message::User(user_prompt()) },
        SessionEvent::MessageUpdate {
            delta: AssistantDelta::TextDelta { index: 1, delta: "Let me read".into() },
        },
        SessionEvent::MessageEnd { message: Message::Assistant(assistant_reading()).into() },
        SessionEvent::ToolExecutionStart {
            tool_call_id: "toolu_01".into(),
            tool_name: "read".into(),
            arguments: read_call().arguments,
        },
        SessionEvent::ToolExecutionUpdate {
            tool_call_id: bash.id.clone(),
            tool_name: bash.name.clone(),
            content: text("running 14 tests\n"),
        },
        SessionEvent::ToolExecutionEnd {
            tool_call_id: "toolu_01".into(),
            tool_name: "read".into(),
            result: read_result(),
        },
        SessionEvent::TurnEnd {
            turn: 1,
            message: assistant_reading(),
            tool_results: vec![read_result()],
        },
        SessionEvent::QueueChanged { queues: queue_state() },
        SessionEvent::ApprovalRequested {
            request_id: REQUEST_ID.into(),
            tool_call_id: bash.id.clone(),
            tool_name: bash.name.clone(),
            arguments: bash.arguments.clone(),
            reason: "bash always asks under the auto-edit policy".into(),
        },
        SessionEvent::ApprovalResolved {
            request_id: REQUEST_ID.into(),
            decision: ApprovalDecision::AllowOnce,
            reason: None,
            resolved_by: "rein.nvim".into(),
        },
        SessionEvent::AutoRetry {
            attempt: 1,
            max_attempts: 4,
            delay_ms: 2_000,
            error: "429 Too Many Requests".into(),
        },
        SessionEvent::CompactionStart { reason: CompactionReason::Threshold },
        SessionEvent::CompactionEnd {
            reason: CompactionReason::Threshold,
            entry_id: Some("e5f6a7b8".into()),
            tokens_before: 152_000,
            error: None,
        },
        SessionEvent::ModelChanged { model: model_ref() },
        SessionEvent::ThinkingLevelChanged { level: ThinkingLevel::High },
        SessionEvent::ApprovalPolicyChanged { policy: ApprovalPolicy::AutoEdit },
        SessionEvent::EntryAppended { entry: assistant_entry() },
        SessionEvent::LeafChanged { leaf_id: Some("a1b2c3d4".into()) },
        SessionEvent::ShellStart {
            shell_id: SHELL_ID.into(),
            command: "git status --short".into(),
        },
        SessionEvent::ShellOutput { shell_id: SHELL_ID.into(), chunk: " M src/lex.rs\n".into() },
        SessionEvent::ShellEnd { shell_id: SHELL_ID.into(), exit_code: Some(0), cancelled: false },
        SessionEvent::Error {
            error_kind: ErrorKind::Io,
            message: format!(
                "append to /home/ada/.local/share/rein/sessions/--home-ada-src-parser--/\
                 {SESSION_ID}.jsonl: No space left on device (os error 28)"
            ),
            path: Some(format!(
                "/home/ada/.local/share/rein/sessions/--home-ada-src-parser--/{SESSION_ID}.jsonl"
            )),
        },
        SessionEvent::CheckpointCreated {
            turn: 4,
            run_id: RUN_ID.into(),
            run_turn: 2,
            skipped: vec![SkippedFile { path: "data/dump.bin".into(), bytes: 52_428_800 }],
        },
        SessionEvent::CheckpointFailed {
            run_id: RUN_ID.into(),
            run_turn: 3,
            error: "git write-tree failed: disk full".into(),
        },
        SessionEvent::VerifyStarted {
            run_id: RUN_ID.into(),
            round: 1,
            max_rounds: 2,
            commands: vec!["cargo test".into()],
        },
        SessionEvent::VerifyFinished {
            run_id: RUN_ID.into(),
            round: 1,
            passed: false,
            checks: vec![failed_check()],
            cancelled: false,
        },
        SessionEvent::UndoApplied {
            turn: 4,
            restored: vec!["src/lex.rs".into()],
            removed: vec!["src/lex_tmp.rs".into()],
            overwritten: vec![],
            requested_by: "rein".into(),
        },
        SessionEvent::HookStarted {
            hook_id: "hk-0193a1b2".into(),
            hook_event: "PreToolUse".into(),
            command: ".claude/hooks/guard.sh".into(),
            tool_call_id: Some("toolu_02".into()),
        },
        SessionEvent::HookFinished {
            hook_id: "hk-0193a1b2".into(),
            hook_event: "PreToolUse".into(),
            command: ".claude/hooks/guard.sh".into(),
            decision: HookDecision::Block,
            duration_ms: 14,
            exit_code: Some(2),
            message: Some("rm -rf is not allowed here".into()),
        },
        SessionEvent::AgentEnd {
            run_id: RUN_ID.into(),
            reason: EndReason::Completed,
            error: None,
            usage: usage(),
            turns: 3,
            outcome: RunOutcome::VerifyFailed,
        },
        SessionEvent::Settled,
    ]
}

/// One example of every assistant delta kind, in streaming order.
pub fn assistant_deltas() -> Vec<AssistantDelta> {
    vec![
        AssistantDelta::ThinkingDelta { index: 0, delta: "Look at the lexer".into() },
        AssistantDelta::TextDelta { index: 1, delta: "Let me read".into() },
        AssistantDelta::ToolCallStart { index: 2, id: "toolu_01".into(), name: "read".into() },
        AssistantDelta::ToolCallDelta { index: 2, delta: "{\"path\":\"src/".into() },
        AssistantDelta::ToolCallEnd { index: 2, call: read_call() },
    ]
}

/// One example of every subscription item kind.
pub fn subscription_items() -> Vec<SubscriptionItem> {
    vec![
        SubscriptionItem::Event(envelope()),
        SubscriptionItem::Lagged { session_id: SESSION_ID.into(), last_delivered_seq: 57 },
        SubscriptionItem::ResyncRequired { session_id: SESSION_ID.into(), oldest_buffered_seq: 12 },
        SubscriptionItem::Keepalive { session_id: SESSION_ID.into() },
    ]
}

/// One example of every daemon event kind.
pub fn daemon_events() -> Vec<DaemonEvent> {
    vec![
        DaemonEvent::SessionCreated { session_id: SESSION_ID.into(), cwd: CWD.into() },
        DaemonEvent::SessionRunning { session_id: SESSION_ID.into(), run_id: RUN_ID.into() },
        DaemonEvent::SessionIdle { session_id: SESSION_ID.into() },
        DaemonEvent::SessionDeleted { session_id: FORKED_SESSION_ID.into() },
        DaemonEvent::LowDiskSpace {
            path: "/home/ada/.local/share/rein".into(),
            free_bytes: 120_586_240,
            threshold_bytes: 268_435_456,
        },
        DaemonEvent::ConfigReloaded {
            path: Some("/home/ada/.local/share/rein/config.toml".into()),
            error: None,
        },
        DaemonEvent::McpServerStatus { server: mcp_server_info() },
        DaemonEvent::ShuttingDown,
    ]
}

/// The model's final answer in the walkthrough.
fn assistant_answer() -> AssistantMessage {
    AssistantMessage {
        content: text("Fixed: `lex` now returns no tokens for empty input, and the test passes."),
        stop_reason: StopReason::Stop,
        timestamp: T0 + 9_000,
        ..assistant_reading()
    }
}

/// The events of a short run as the walkthrough shows them, numbered from `first_seq`.
pub fn walkthrough_events(first_seq: u64) -> Vec<SubscriptionNotification<SubscriptionItem>> {
    let answer = assistant_answer();
    let events = vec![
        SessionEvent::AgentStart { run_id: RUN_ID.into() },
        SessionEvent::TurnStart { turn: 1 },
        SessionEvent::MessageStart { message: Message::User(user_prompt()) },
        SessionEvent::MessageEnd { message: Message::User(user_prompt()).into() },
        SessionEvent::MessageUpdate {
            delta: AssistantDelta::TextDelta { index: 0, delta: "Fixed: ".into() },
        },
        SessionEvent::MessageEnd { message: Message::Assistant(answer.clone()).into() },
        SessionEvent::TurnEnd { turn: 1, message: answer, tool_results: vec![] },
        SessionEvent::AgentEnd {
            run_id: RUN_ID.into(),
            reason: EndReason::Completed,
            error: None,
            usage: usage(),
            turns: 1,
            outcome: RunOutcome::Unverified,
        },
        SessionEvent::Settled,
    ];
    events
        .into_iter()
        .zip(first_seq..)
        .map(|(event, seq)| SubscriptionNotification {
            subscription: SESSION_SUBSCRIPTION.into(),
            result: SubscriptionItem::Event(EventEnvelope {
                session_id: SESSION_ID.into(),
                seq,
                timestamp: T0 + seq as i64 * 100,
                // An answered approval names the client that answered.
                client: matches!(event, SessionEvent::ApprovalResolved { .. }).then(|| {
                    ClientIdentity {
                        name: "rein.nvim".into(),
                        pid: Some(48213),
                        tty: Some("/dev/pts/3".into()),
                    }
                }),
                event,
            }),
        })
        .collect()
}
