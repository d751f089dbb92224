//! Methods: their names, params and results.
//!
//! Names are `family/verb`; params are always one JSON object (by name). Every param struct
//! accepts unknown fields, so a newer client can talk to an older daemon within a major version.

use crate::entry::SessionEntry;
use crate::event::{ApprovalDecision, QueueState};
use crate::message::{ContentBlock, Message, Usage};
use crate::model::{ModelInfo, ModelRef, ThinkingLevel};
use crate::version::ProtocolVersion;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Method and notification names, one constant each (derived from the method table in
/// [`requests`](crate::requests)).
pub use crate::requests::names;

/// Params with no fields.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Empty {}

/// What a client can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClientCapabilities {
    /// The client shows approval requests to a person and answers them. The daemon denies an
    /// approval at once when no subscribed client has this capability.
    #[serde(default)]
    pub approvals: bool,
}

/// `initialize` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeParams {
    /// The client's name (shown in `resolved_by` and logs).
    pub client_name: String,
    /// The client's version.
    #[serde(default)]
    pub client_version: String,
    /// The protocol version the client speaks.
    pub protocol_version: ProtocolVersion,
    /// What the client can do.
    #[serde(default)]
    pub capabilities: ClientCapabilities,
    /// The client's process id; events the client causes name it (see `ClientIdentity`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// The client's terminal (say `/dev/pts/3`); events the client causes name it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<String>,
}

/// What the daemon can do.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonCapabilities {
    /// Replay buffer length per session, in events.
    pub replay_buffer: u64,
    /// The longest accepted line, in bytes.
    pub max_line_bytes: u64,
    /// Export formats offered.
    pub export_formats: Vec<ExportFormat>,
}

/// `initialize` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InitializeResult {
    /// The daemon's version.
    pub daemon_version: String,
    /// The protocol version the daemon speaks.
    pub protocol_version: ProtocolVersion,
    /// What the daemon can do.
    pub capabilities: DaemonCapabilities,
}

/// `daemon/info` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DaemonInfo {
    /// The daemon's version.
    pub version: String,
    /// The protocol version it speaks.
    pub protocol_version: ProtocolVersion,
    /// Its process id.
    pub pid: u32,
    /// Milliseconds since it started.
    pub uptime_ms: u64,
    /// The socket it serves.
    pub socket_path: String,
    /// Its state directory.
    pub rein_home: String,
    /// Sessions loaded in memory.
    pub sessions_loaded: u64,
    /// Open connections.
    pub connections: u64,
    /// Bytes free on the file system holding `rein_home`, when it could be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_free_bytes: Option<u64>,
    /// True when `disk_free_bytes` is below `storage.min_free_bytes`: session writes and
    /// command output files may soon fail for lack of space.
    #[serde(default)]
    pub low_disk_space: bool,
    /// The configuration file in force; absent when there is none (defaults apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_path: Option<String>,
    /// Why the configuration file could not be (re)loaded; the daemon keeps the settings it
    /// had. Absent when the file in force loaded cleanly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_error: Option<String>,
    /// The model new sessions get when none is named (`provider/model`); absent when no
    /// model is configured and no provider key is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Names (never values) of the provider API key variables set in the daemon's
    /// environment.
    #[serde(default)]
    pub key_variables: Vec<String>,
    /// Names of the provider API key variables the configuration uses that are not set in the
    /// daemon's environment (a client that has one set can offer `rein daemon restart`).
    #[serde(default)]
    pub missing_key_variables: Vec<String>,
    /// The local model server found at start-up and used as the default, when nothing else
    /// (no `model`, no API key) was set up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_server: Option<LocalServer>,
}

/// A model server found on a loopback port (Ollama, llama.cpp, LM Studio, vLLM).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LocalServer {
    /// What the port suggests it is: `Ollama`, `llama.cpp`, `LM Studio`, `vLLM`, or
    /// `an OpenAI-compatible server` for another port given in `REIN_LOCAL_PROBE_PORTS`.
    pub server: String,
    /// The provider name it is reached under (`ollama`, `llamacpp`, `lmstudio`, `vllm`,
    /// `local`).
    pub provider: String,
    /// Its base URL, always on 127.0.0.1.
    pub base_url: String,
    /// The model used by default, as `provider/model`: the first one it listed.
    pub model: String,
    /// Every model id it listed.
    pub models: Vec<String>,
}

/// Params naming one session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionRef {
    /// The session id.
    pub session_id: String,
}

/// `session/messages` and `session/tree` params: a session and which page of its history.
///
/// Histories come in pages so that no reply outgrows the line limit. `session/messages` pages
/// go backwards from the newest message; `session/tree` pages go forwards in file order. A
/// page holds at most `limit` items and, whatever `limit` says, no more than fit the daemon's
/// page size (a few MiB; one item larger than that comes alone). The reply's `next_cursor`,
/// passed back as `cursor`, fetches the next page; it is absent on the last one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPageParams {
    /// The session id.
    pub session_id: String,
    /// Most items in the page; as many as fit when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Where the page starts: a `next_cursor` from an earlier page; the newest messages
    /// (`session/messages`) or the first entries (`session/tree`) when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// Where a session's tools run (docs/sandbox.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Commands run in a bubblewrap sandbox that can write nowhere (a private `/tmp` aside).
    ReadOnly,
    /// Commands run in a bubblewrap sandbox that can write the project directory and a
    /// private `/tmp`; the project's `.git` and `.rein` stay read-only.
    WorkspaceWrite,
    /// Commands run in a container of the session's own, started from the configured image
    /// (`[sandbox_settings] image`) with the Docker- or Podman-compatible CLI; the project is
    /// mounted at the same path.
    Container,
    /// No sandbox: tools run on the host as the daemon's user.
    #[default]
    Off,
}

impl SandboxMode {
    /// The name used in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::Container => "container",
            Self::Off => "off",
        }
    }
}

/// How tool calls are approved.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    /// Every write, edit and bash call asks.
    #[default]
    Ask,
    /// Writes and edits inside the project pass; bash and anything outside ask.
    AutoEdit,
    /// Nothing asks.
    Yolo,
}

impl ApprovalPolicy {
    /// The name used in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::AutoEdit => "auto-edit",
            Self::Yolo => "yolo",
        }
    }
}

/// Limits on one run. In `session/prompt`, unset ones come from the configuration; in a
/// `run_setup` entry they are the limits the run had (unset: unlimited).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunLimits {
    /// Most turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_turns: Option<u32>,
    /// Most cost in US dollars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost: Option<f64>,
    /// Most wall time in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_seconds: Option<u64>,
    /// Most consecutive turns in which every tool call failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_turns: Option<u32>,
}

/// `session/create` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CreateSessionParams {
    /// The project directory (absolute).
    pub cwd: String,
    /// `provider/model`; the configured default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Thinking level; the configured default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<ThinkingLevel>,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Approval policy; the configured default when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    /// Where the session's tools run; the configured `sandbox` when absent. Asking for a
    /// sandbox that cannot be had fails the call instead of running without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxMode>,
    /// MCP servers of this session alone (an editor's own), by name. They run while the
    /// session is loaded and are not recorded in the session file.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub mcp_servers: std::collections::BTreeMap<String, crate::mcp::McpServerConfig>,
}

/// A session as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionSummary {
    /// The session id.
    pub session_id: String,
    /// Its project directory.
    pub cwd: String,
    /// Its name, if set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The first user prompt, shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_prompt: Option<String>,
    /// Entries in the file.
    pub entry_count: u64,
    /// File size in bytes.
    pub size_bytes: u64,
    /// RFC 3339 creation time.
    pub created: String,
    /// RFC 3339 time of the last write.
    pub updated: String,
    /// The session file's path.
    pub path: String,
    /// Whether the daemon has it loaded.
    #[serde(default)]
    pub loaded: bool,
    /// Whether it is running now.
    #[serde(default)]
    pub running: bool,
}

/// `session/list` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsParams {
    /// Only sessions of this project directory; all when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Most sessions in the page (paged like `session/tree`, newest first); as many as fit
    /// when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Where the page starts: a `next_cursor` from an earlier page; the newest session when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `session/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListSessionsResult {
    /// Most recently updated first.
    pub sessions: Vec<SessionSummary>,
    /// Session files and project directories that could not be read; they were skipped and
    /// the rest listed. Empty when everything was read. Reported with the first page only.
    #[serde(default)]
    pub errors: Vec<ListingError>,
    /// Sessions listed in all (this page holds some of them).
    #[serde(default)]
    pub total: u64,
    /// Fetches the next (older) sessions; absent when this page ends with the oldest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// A session file or project directory that `session/list` could not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ListingError {
    /// The file or directory.
    pub path: String,
    /// Why it could not be read.
    pub message: String,
}

/// A project file left out of the prompt, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExcludedFile {
    /// The file.
    pub path: String,
    /// Why (`project not trusted`, ...).
    pub reason: String,
}

/// `session/state` result (also returned by create and open).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SessionState {
    /// The session id.
    pub session_id: String,
    /// Its project directory.
    pub cwd: String,
    /// Its name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The model in force.
    pub model: ModelRef,
    /// The thinking level in force.
    pub thinking_level: ThinkingLevel,
    /// The approval policy.
    pub approval_policy: ApprovalPolicy,
    /// Whether a run is active.
    pub running: bool,
    /// The active run's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// The queues.
    pub queues: QueueState,
    /// Usage summed over the session.
    pub usage: Usage,
    /// Estimated tokens of the context the next request sends.
    pub context_tokens: u64,
    /// The model's context window.
    pub context_window: u64,
    /// The active leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_id: Option<String>,
    /// Whether the project directory is trusted.
    pub trusted: bool,
    /// Project files left out of the prompt.
    #[serde(default)]
    pub excluded_files: Vec<ExcludedFile>,
    /// The last event seq; subscribe with `after_seq` set to it to continue from this state.
    pub last_seq: u64,
    /// Names this load's event numbering (seqs start again at 1 each time the daemon loads the
    /// session). Pass it to `session/subscribe` with `after_seq`, so a cursor kept across a
    /// daemon restart is answered with `resync_required` instead of the wrong events.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stream: String,
}

/// `session/messages` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MessagesResult {
    /// The messages on the active path, as the model will see them next (a compaction summary
    /// appears as a leading user message).
    pub messages: Vec<Message>,
    /// The active leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_id: Option<String>,
    /// The last event seq.
    pub last_seq: u64,
    /// The event numbering `last_seq` belongs to (see `SessionState::stream`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub stream: String,
    /// Messages on the active path in all (this page holds the last ones before the cursor).
    #[serde(default)]
    pub total: u64,
    /// Fetches the page of older messages; absent when this page starts with the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `session/tree` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TreeResult {
    /// Entries in file order (one page of them).
    pub entries: Vec<SessionEntry>,
    /// The active leaf.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leaf_id: Option<String>,
    /// Entries in the session file in all.
    #[serde(default)]
    pub total: u64,
    /// Fetches the next entries; absent when this page ends with the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `session/fork` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ForkParams {
    /// The session to fork.
    pub session_id: String,
    /// The entry whose root-to-entry path the new session starts with.
    pub entry_id: String,
}

/// `session/label` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LabelParams {
    /// The session.
    pub session_id: String,
    /// The entry to label.
    pub entry_id: String,
    /// The label; null removes it.
    pub label: Option<String>,
}

/// `session/rename` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RenameParams {
    /// The session.
    pub session_id: String,
    /// The new name.
    pub name: String,
}

/// What to do with a prompt when the session is already running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BusyBehavior {
    /// Deliver it at the next turn boundary.
    Steer,
    /// Run it after the current run.
    FollowUp,
}

/// `session/prompt` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptParams {
    /// The session.
    pub session_id: String,
    /// The prompt text.
    pub text: String,
    /// Images sent with it (`image` content blocks).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContentBlock>,
    /// When the session is running: steer or follow up instead of failing with `session_busy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_busy: Option<BusyBehavior>,
    /// Limits for this run.
    #[serde(default)]
    pub limits: RunLimits,
    /// Checks to run when the model ends this run, instead of the configured `[verify]`
    /// ones; an empty list runs none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify: Option<crate::verify::VerifyRequest>,
}

/// `session/prompt` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PromptResult {
    /// The run's id; a queued prompt gets the id its run will have.
    pub run_id: String,
    /// `started`, `steered` or `queued`.
    pub disposition: PromptDisposition,
}

/// What happened to a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PromptDisposition {
    /// A run started.
    Started,
    /// It was queued as steering for the current run.
    Steered,
    /// It was queued as a follow-up.
    Queued,
}

/// `session/steer` and `session/follow_up` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueMessageParams {
    /// The session.
    pub session_id: String,
    /// The text.
    pub text: String,
    /// Images sent with it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContentBlock>,
}

/// `session/steer` and `session/follow_up` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct QueueMessageResult {
    /// The queued item's id.
    pub id: String,
    /// True when the session was idle and the message started a run instead.
    pub started_run: bool,
}

/// `session/cancel` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CancelResult {
    /// True when a run or shell command was cancelled; false when there was nothing to cancel.
    pub cancelled: bool,
}

/// Which queue to clear.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum QueueSelector {
    /// Both queues.
    #[default]
    All,
    /// Steering only.
    Steering,
    /// Follow-ups only.
    FollowUp,
}

/// `session/clear_queue` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ClearQueueParams {
    /// The session.
    pub session_id: String,
    /// Which queue; both when absent.
    #[serde(default)]
    pub queue: QueueSelector,
}

/// `session/set_model` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetModelParams {
    /// The session.
    pub session_id: String,
    /// `provider/model`.
    pub model: String,
}

/// `session/set_thinking` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetThinkingParams {
    /// The session.
    pub session_id: String,
    /// The level.
    pub level: ThinkingLevel,
}

/// `session/set_approval_policy` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SetApprovalPolicyParams {
    /// The session.
    pub session_id: String,
    /// The policy.
    pub policy: ApprovalPolicy,
}

/// `session/branch` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BranchParams {
    /// The session.
    pub session_id: String,
    /// The entry that becomes the active leaf; null for an empty conversation.
    pub entry_id: Option<String>,
    /// Summarize the abandoned path into a branch-summary entry with the session's model.
    #[serde(default)]
    pub summarize: bool,
}

/// `session/branch` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BranchResult {
    /// The new leaf (the summary entry when one was written).
    pub leaf_id: Option<String>,
    /// The branch-summary entry, when `summarize` was set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary_entry_id: Option<String>,
}

/// `session/compact` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactParams {
    /// The session.
    pub session_id: String,
    /// What the summary should focus on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
}

/// `session/compact` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompactResult {
    /// The compaction entry.
    pub entry_id: String,
    /// Context tokens before.
    pub tokens_before: u64,
    /// Estimated context tokens after.
    pub tokens_after: u64,
    /// The summary.
    pub summary: String,
}

/// Export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ExportFormat {
    /// A readable transcript.
    Markdown,
    /// One JSON object per line: messages, then run info.
    Jsonl,
}

/// `session/export` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportParams {
    /// The session.
    pub session_id: String,
    /// The format.
    pub format: ExportFormat,
    /// Most lines of the text in the page (paged like `session/tree`, from the first line);
    /// as many as fit when absent, which is the whole text unless it is very large.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Where the page starts: a `next_cursor` from an earlier page; the first line when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// `session/export` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExportResult {
    /// The exported text (one page of its lines, each with its line end; the pages joined
    /// in order are the whole text).
    pub content: String,
    /// Lines of the whole text.
    #[serde(default)]
    pub total: u64,
    /// Fetches the next lines; absent when this page ends the text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// `session/shell` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShellParams {
    /// The session (the command runs in its directory).
    pub session_id: String,
    /// The command line, run by `sh -c`.
    pub command: String,
    /// Add the command and its output to the context as a user message.
    #[serde(default = "default_true")]
    pub add_to_context: bool,
}

fn default_true() -> bool {
    true
}

/// `session/shell` result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ShellResult {
    /// Identifies the command in `shell_*` events.
    pub shell_id: String,
}

/// `session/subscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SubscribeParams {
    /// The session.
    pub session_id: String,
    /// Deliver events after this seq first (from the replay buffer); only live events when
    /// absent; 0 means every event since the daemon loaded the session. Clients whose JSON numbers are doubles may send it as an integral float
    /// (`1796037481722400.0`).
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "lenient_seq")]
    pub after_seq: Option<u64>,
    /// The `stream` that `after_seq` came from (from `session/state` or `session/messages`).
    /// When it is not the current one, the only item is `resync_required`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
}

/// Reads a seq written as an integer or as an integral float below 2^53.
fn lenient_seq<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<u64>, D::Error> {
    const EXACT: f64 = 9_007_199_254_740_992.0; // 2^53: doubles are exact integers below it
    match Option::<serde_json::Number>::deserialize(deserializer)? {
        None => Ok(None),
        Some(number) => {
            if let Some(seq) = number.as_u64() {
                return Ok(Some(seq));
            }
            match number.as_f64() {
                Some(value) if value >= 0.0 && value.fract() == 0.0 && value < EXACT => {
                    Ok(Some(value as u64))
                }
                _ => Err(serde::de::Error::custom(format!(
                    "invalid seq {number}: expected a non-negative integer"
                ))),
            }
        }
    }
}

/// `approval/respond` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApprovalRespondParams {
    /// The session.
    pub session_id: String,
    /// The request, from `approval_requested`.
    pub request_id: String,
    /// The answer.
    pub decision: ApprovalDecision,
    /// A reason the model sees when denied.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `trust/set` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrustParams {
    /// The project directory.
    pub path: String,
    /// Trust (true) or revoke (false).
    pub trusted: bool,
    /// Trusting `/` or the home directory trusts every project below it, so it is refused
    /// unless this is true.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force: bool,
}

/// `trust/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TrustListResult {
    /// Trusted directories.
    pub paths: Vec<String>,
}

/// `models/list` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelsResult {
    /// The configured default, as `provider/model`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Known models of configured providers.
    pub models: Vec<ModelInfo>,
}

/// `providers/check` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvidersCheckParams {
    /// Also ask each provider in use for its model list (one `GET {base_url}/models`), to see
    /// that it answers and accepts its key.
    #[serde(default)]
    pub probe: bool,
}

/// `providers/check` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProvidersCheckResult {
    /// The model a new session gets, as `provider/model`; absent when none can be chosen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_model: Option<String>,
    /// Every provider the daemon knows, built in or configured.
    pub providers: Vec<ProviderStatus>,
}

/// One provider as the daemon sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderStatus {
    /// The provider's name.
    pub name: String,
    /// Its wire API.
    pub api: crate::model::Api,
    /// Its base URL.
    pub base_url: String,
    /// Where its API key comes from.
    pub key: KeySource,
    /// Whether it is set up for use: the default model's provider, a configured table, a
    /// detected local server, or a provider whose key is available.
    pub in_use: bool,
    /// The outcome of the models request (only with `probe`, only for providers in use).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<ProviderCheck>,
}

/// Where a provider's API key comes from. Never carries the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum KeySource {
    /// The provider takes no key.
    NotNeeded,
    /// The daemon's environment variable (it wins over a stored key).
    Environment {
        /// The variable.
        variable: String,
    },
    /// `REIN_HOME/auth.toml`, stored by `rein login`.
    AuthFile {
        /// The environment variable that would win over it.
        variable: String,
    },
    /// Neither the variable nor a stored key.
    Missing {
        /// The variable to set (or use `rein login PROVIDER`).
        variable: String,
    },
    /// A source this client does not know.
    #[serde(other)]
    Unknown,
}

/// What a provider's models request showed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProviderCheck {
    /// The verdict.
    pub verdict: CheckVerdict,
    /// The HTTP status, when the server answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// What happened, for people (never contains the key).
    pub message: String,
    /// How many models it listed.
    pub models: u64,
}

/// The verdict of a provider check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckVerdict {
    /// It answered with its models.
    Ok,
    /// No answer: nothing listens, DNS or TLS failed, or it timed out.
    Unreachable,
    /// HTTP 401 or 403: the key is wrong, expired or missing.
    KeyRejected,
    /// Any other answer.
    Error,
    /// Not checked because its key is missing.
    Skipped,
    /// A verdict this client does not know.
    #[serde(other)]
    Unknown,
}

/// Result of a subscribe call: the subscription id used by its notifications.
pub type SubscriptionId = String;

/// `session/unsubscribe` and `daemon/unsubscribe` params.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnsubscribeParams {
    /// The id the subscribe call returned.
    pub subscription: SubscriptionId,
}

/// Params of a subscription notification (`session/event`, `daemon/event`): which subscription
/// it belongs to and the item it delivers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "{T}Notification")]
pub struct SubscriptionNotification<T> {
    /// The id the subscribe call returned.
    pub subscription: SubscriptionId,
    /// The delivered item.
    pub result: T,
}

/// Result of methods that only acknowledge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ack {
    /// Always true.
    pub ok: bool,
}

impl Ack {
    /// The acknowledgement.
    pub fn ok() -> Self {
        Self { ok: true }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_seq_accepts_integers_and_integral_floats_only() {
        let parse = |text: &str| serde_json::from_str::<SubscribeParams>(text).map(|p| p.after_seq);
        assert_eq!(parse(r#"{"session_id":"s"}"#).unwrap(), None);
        assert_eq!(parse(r#"{"session_id":"s","after_seq":null}"#).unwrap(), None);
        assert_eq!(parse(r#"{"session_id":"s","after_seq":42}"#).unwrap(), Some(42));
        assert_eq!(
            parse(r#"{"session_id":"s","after_seq":1796037481722400.0}"#).unwrap(),
            Some(1_796_037_481_722_400)
        );
        assert!(parse(r#"{"session_id":"s","after_seq":1.5}"#).is_err());
        assert!(parse(r#"{"session_id":"s","after_seq":-1}"#).is_err());
        assert!(parse(r#"{"session_id":"s","after_seq":"7"}"#).is_err());
    }
}
