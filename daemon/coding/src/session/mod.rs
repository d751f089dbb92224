//! A coding session: one agent harness bound to one project directory and one session file.
//!
//! The daemon holds one `Arc<CodingSession>` per loaded session and calls it from its JSON-RPC
//! methods, one call per method:
//!
//! | method | call |
//! | --- | --- |
//! | `session/create`, `session/open` | [`CodingSession::create`], [`CodingSession::open`] |
//! | `session/state`, `messages`, `tree` | [`CodingSession::state`], [`CodingSession::messages`], [`CodingSession::tree`] |
//! | `session/prompt`, `steer`, `follow_up` | [`CodingSession::prompt`], [`CodingSession::steer`], [`CodingSession::follow_up`] |
//! | `session/cancel`, `queue`, `clear_queue` | [`CodingSession::cancel`], [`CodingSession::queues`], [`CodingSession::clear_queue`] |
//! | `session/set_model`, `set_thinking`, `set_approval_policy` | [`CodingSession::set_model`], [`CodingSession::set_thinking`], [`CodingSession::set_approval_policy`] |
//! | `session/label`, `rename` | [`CodingSession::label`], [`CodingSession::rename`] |
//! | `session/branch`, `compact`, `fork`, `export` | [`CodingSession::branch`], [`CodingSession::compact`], [`CodingSession::fork`], [`CodingSession::export`] |
//! | `session/shell` | [`CodingSession::shell`] |
//! | `approval/respond` | [`CodingSession::respond_approval`] |
//! | `trust/set` (for sessions of that project) | [`CodingSession::refresh_trust`] |
//! | `session/close` | [`CodingSession::close`] |
//!
//! Events go to the [`EventSink`] the daemon gives at create/open time, in order; the daemon
//! numbers them and fans them out.
//!
//! # Persistence
//!
//! Every message the harness appends (prompt, steering, assistant reply, tool result) is
//! appended to the session file when its `MessageEnd` arrives, before that event is passed on,
//! and is followed by an `EntryAppended` event (see `pump`); messages that arrive together
//! share one append and one fsync. Model and thinking-level changes,
//! labels, names, compactions, branch moves and branch summaries are entries too, each
//! announced with `EntryAppended`. A message that cannot be written (a full disk) stops the run
//! with an `io` error event; the harness's history is then taken from the file again before the
//! next request, so the model never sees what the file does not hold (see `unsaved`). Reopening
//! replays the active path: messages (with tool
//! history repaired), model and thinking level. The approval policy is not recorded: a session
//! that is opened again starts from the configured default, the safer choice.
//!
//! # Before each request
//!
//! The `before_request` hook reloads the project context (AGENTS.md, skills) only when its
//! fingerprint moved and rebuilds the system prompt; compacts when the context passed the
//! window minus the reserve (`compaction_start`/`compaction_end`, reason `threshold`); and
//! repairs the tool history it sends if it is not valid. When the provider still rejects a
//! request as too long, the overflow hook compacts (reason `overflow`) and the harness retries
//! once.
//!
//! # Busy rules
//!
//! - `prompt` during a run fails with `session_busy` unless `when_busy` steers or queues it.
//! - `branch`, `compact` and `set_model` need an idle session (`session_busy`); a second
//!   compaction gets `compaction_in_progress`, and so does a prompt during a compaction.
//! - A user shell command with `add_to_context` needs an idle session and keeps it busy until
//!   it ends, since its output becomes a message of the history; without `add_to_context` it
//!   may run beside a run. One user shell command runs at a time.
//!
//! # Model
//!
//! A model that cannot be resolved (unknown provider, API key not set) does not stop a session
//! from opening: `prompt` fails with `model_not_found` naming what to set, and the state still
//! shows the model asked for.

mod blocking;
mod checkpoints;
mod command_hooks;
mod context;
mod environment;
mod error;
mod escalation;
mod history;
mod hooks;
mod journal;
mod mcp_tools;
mod model;
mod pump;
mod run_record;
mod sandbox_record;
mod shell;
mod unsaved;
mod verification;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use rein_agent::{Harness, HarnessConfig, PromptReceipt, RunLimits};
use rein_protocol::event::{ApprovalDecision, QueueState, SessionEvent};
use rein_protocol::message::{ContentBlock, Message};
use rein_protocol::method::{
    ApprovalPolicy, BusyBehavior, CreateSessionParams, PromptDisposition, PromptParams,
    PromptResult, QueueMessageResult, QueueSelector, SessionState, SessionSummary, TreeResult,
};
use rein_protocol::model::ThinkingLevel;
use rein_protocol::{EntryKind, SessionEntry};
use rein_session::Session;
use tokio_util::sync::CancellationToken;

use crate::approval::{ApprovalAnswer, Approvals};
use crate::file_tracker::FileTracker;
use crate::project::{ContextSources, ProjectContext};
use crate::project_config::ProjectConfig;
use crate::tools::ToolContext;
use context::PromptContext;
use journal::Journal;
use model::ModelSlot;
use pump::EventPump;

pub use blocking::on_a_blocking_thread;
pub use checkpoints::{CHECKPOINT_ENTRY_TYPE, UNDO_ENTRY_TYPE};
pub use command_hooks::{HOOK_RUN_ENTRY, MAX_STOP_HOOK_CONTINUATIONS};
pub use environment::{
    ApprovalGate, CodingEnvironment, DEFAULT_APPROVAL_GRACE, EventSink, SessionDefaults,
    ignore_mcp_status,
};
pub use error::CodingError;
pub use hooks::{APPROVAL_CANCELLED_REASON, NO_APPROVER_LEFT_REASON, NO_APPROVER_REASON};
pub use verification::VERIFICATION_ENTRY_TYPE;

/// The name given as `resolved_by` when the daemon itself answers an approval.
pub const DAEMON_RESOLVER: &str = "daemon";

/// What a session is loaded with beyond its file: an editor's own MCP servers, the sandbox
/// asked for and, at creation, the project context already loaded.
#[derive(Debug, Default)]
struct LoadExtensions {
    mcp_servers: std::collections::BTreeMap<String, rein_protocol::mcp::McpServerConfig>,
    /// The sandbox asked for at creation; the configured one when `None`.
    sandbox: Option<rein_protocol::method::SandboxMode>,
    /// The project context as creation loaded it (for its config file), so it is not loaded
    /// twice; loaded here when `None`.
    project: Option<(ContextSources, ProjectContext)>,
}

/// What keeps a session from starting a run while it lasts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Compaction,
    Branch,
    ShellIntoContext,
    ModelChange,
    Undo,
}

impl Operation {
    fn busy_error(self) -> CodingError {
        match self {
            Self::Compaction => CodingError::CompactionInProgress,
            Self::Branch => CodingError::Busy("a branch is being made"),
            Self::ShellIntoContext => CodingError::Busy("a shell command is running"),
            Self::ModelChange => CodingError::Busy("the model is being changed"),
            Self::Undo => CodingError::Busy("an undo is running"),
        }
    }
}

/// The operation in progress and how to cancel it.
struct ActiveOperation {
    kind: Operation,
    cancel: CancellationToken,
}

/// Marks an operation as running until dropped.
struct OperationGuard<'a> {
    session: &'a CodingSession,
    cancel: CancellationToken,
}

impl Drop for OperationGuard<'_> {
    fn drop(&mut self) {
        *self.session.operation() = None;
    }
}

/// What a loaded session's methods and hooks read and replace while it lives, under one lock
/// ([`CodingSession::live`]). The lock is a leaf: it is held only to read, update or replace
/// these fields, never across an `.await`, a harness call, a journal call or another session
/// lock.
struct LiveState {
    /// The daemon-wide environment as of now (a configuration reload replaces it).
    env: Arc<CodingEnvironment>,
    /// The approval policy in force.
    policy: ApprovalPolicy,
    /// The model in force and what it resolved to.
    model: ModelSlot,
    /// The project context and the system prompt built from it.
    prompt: PromptContext,
    /// What the session's tools are built with.
    tool_context: ToolContext,
    /// The command hooks in force (rebuilt when the project's trust changes).
    command_hooks: Arc<crate::command_hooks::HookRunner>,
    /// Context from `SessionStart` hooks, added to the next prompt.
    hook_context: Vec<String>,
    /// Tool calls that were let through to run, so only they get `PostToolUse` hooks.
    ran_calls: std::collections::HashSet<String>,
    /// The MCP tools annotated read-only.
    mcp_read_only: std::collections::HashSet<String>,
}

/// One project directory, one session file, one agent harness. See the module docs.
///
/// # Locks
///
/// A session's state sits behind a few locks, taken in this order and never the other way
/// round; no `std` lock is held across an `.await` (`docs/architecture.md`, "Lock order",
/// places them among the daemon's):
///
/// 1. the run plans of [`verification::RunPlans`], held by `prompt` until the run it starts
///    has its checks registered;
/// 2. `operation` (the operation in progress): held while the harness decides whether a run
///    starts, so no operation starts between the check and the run;
/// 3. either the harness's own locks (`rein-agent`, inside its calls) or the journal: its
///    write turn (async, held across the wait for a write, taken with no `std` lock held),
///    the session file ([`Journal`]), then its failure state ([`unsaved`]), then its queued
///    entries, then the event sink (the daemon's pending approvals, then its event log) while
///    entries are announced. The harness's locks and the journal's are never held together;
/// 4. leaves, held only for a read or an update with no other lock taken inside: `live`
///    ([`LiveState`]), the run setup slot, the shell slot, the checkpoints, the approvals.
///
/// No async worker waits for a disk: the journal awaits an append's fsync with no lock held,
/// and the writes that hold the file's lock until durable run on a blocking thread
/// (`docs/architecture.md`, "Session file writes").
pub struct CodingSession {
    id: String,
    cwd: String,
    harness: Harness,
    journal: Arc<Journal>,
    pump: EventPump,
    sink: EventSink,
    gate: Arc<dyn ApprovalGate>,
    approvals: Approvals,
    live: Mutex<LiveState>,
    run_setup: run_record::SetupSlot,
    operation: Mutex<Option<ActiveOperation>>,
    shell: shell::ShellSlot,
    run_plans: verification::RunPlans,
    checkpoints: checkpoints::SessionCheckpoints,
    /// The tool-history check before each request, remembered so a request checks only what
    /// was appended since the last.
    tool_history: rein_session::repair::ToolHistoryCheck,
    /// The session's own MCP servers.
    mcp: crate::mcp::McpServers,
    /// The MCP tool generation the tools were last built from.
    mcp_built: std::sync::atomic::AtomicU64,
    me: Weak<CodingSession>,
}

impl std::fmt::Debug for CodingSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodingSession").field("id", &self.id).field("cwd", &self.cwd).finish()
    }
}

/// Where a session in `cwd` finds its project context, with the project's trust as now.
fn context_sources(env: &CodingEnvironment, cwd: &str) -> ContextSources {
    ContextSources {
        cwd: PathBuf::from(cwd),
        global_dir: Some(env.global_dir.clone()),
        global_skills_dir: Some(env.global_skills_dir.clone()),
        trusted: env.trust.is_trusted(Path::new(cwd)),
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl CodingSession {
    /// Creates a session file for `params.cwd` and loads it. The model, thinking level and
    /// approval policy come from `params`, else from the configuration.
    pub async fn create(
        env: CodingEnvironment,
        params: CreateSessionParams,
        sink: EventSink,
        gate: Arc<dyn ApprovalGate>,
    ) -> Result<Arc<Self>, CodingError> {
        let cwd = PathBuf::from(&params.cwd);
        if !cwd.is_absolute() || !cwd.is_dir() {
            return Err(CodingError::InvalidParams(format!(
                "cwd must be an existing absolute directory: {}",
                params.cwd
            )));
        }
        // The project file, the sandbox check and the new file's writes (each name or sandbox
        // record with the file's first fsync after the header) are blocking work.
        let mut ahead = Vec::new();
        if let Some(name) = params.name.clone() {
            ahead.push(EntryKind::SessionInfo { name: Some(name) });
        }
        if let Some(mode) = params.sandbox {
            ahead.push(sandbox_record::entry(mode));
        }
        let (project, loaded_context, file) = {
            let env = env.clone();
            let cwd_text = params.cwd.clone();
            let sandbox = params.sandbox;
            blocking::off_the_workers(move || {
                // Read before the file is created, so a broken project file leaves no empty
                // session.
                let sources = context_sources(&env, &cwd_text);
                let context = sources.load();
                let project = ProjectConfig::load(&context.project_config)?;
                // A sandbox that cannot be had fails the call before a session file exists.
                crate::environment::for_session(
                    sandbox.unwrap_or(env.defaults.sandbox),
                    &cwd,
                    &env.defaults.sandbox_settings,
                    &env.defaults.hidden_files,
                )?;
                let mut file = env.store.create(&cwd_text)?;
                if !ahead.is_empty() {
                    file.append_all(ahead)?;
                }
                Ok((project, (sources, context), file))
            })
            .await?
        };
        let model =
            ModelSlot::resolve(&env.registry, params.model.as_deref().or(project.model.as_deref()));
        let thinking = params.thinking_level.unwrap_or(env.defaults.thinking_level);
        let policy = params
            .approval_policy
            .or(project.approval_policy)
            .unwrap_or(env.defaults.approval_policy);
        let extensions = LoadExtensions {
            mcp_servers: params.mcp_servers.clone(),
            sandbox: params.sandbox,
            project: Some(loaded_context),
        };
        let session = Self::load(env, file, model, thinking, policy, sink, gate, extensions)?;
        session.record_settings()?;
        session.journal.settle().await?;
        session.session_start_hooks("startup").await;
        Ok(session)
    }

    /// Opens the session file with this id (repairing it if needed) and loads it. The model
    /// and thinking level are the ones its active path records, else the configured defaults.
    pub async fn open(
        env: CodingEnvironment,
        session_id: &str,
        sink: EventSink,
        gate: Arc<dyn ApprovalGate>,
    ) -> Result<Arc<Self>, CodingError> {
        let (file, report) = {
            let store = env.store.clone();
            let id = session_id.to_string();
            // Reading, repairing and locking the file is blocking work.
            blocking::off_the_workers(move || Ok(store.open(&id)?)).await?
        };
        if !report.actions.is_empty() {
            tracing::info!(
                session = session_id,
                repairs = report.actions.len(),
                "repaired on open"
            );
        }
        // The settings only: a full replay would copy every message of the path.
        let settings = file.settings();
        let reference = settings.model.map(|model| model.to_string());
        let model = ModelSlot::resolve(&env.registry, reference.as_deref());
        let thinking = settings.thinking_level.unwrap_or(env.defaults.thinking_level);
        let policy = settings.approval_policy.unwrap_or(env.defaults.approval_policy);
        let extensions =
            LoadExtensions { sandbox: sandbox_record::recorded(&file), ..Default::default() };
        let session = Self::load(env, file, model, thinking, policy, sink, gate, extensions)?;
        session.session_start_hooks("resume").await;
        Ok(session)
    }

    /// Builds the session around an open file.
    #[allow(clippy::too_many_arguments)]
    fn load(
        env: CodingEnvironment,
        file: Session,
        model: ModelSlot,
        thinking: ThinkingLevel,
        policy: ApprovalPolicy,
        sink: EventSink,
        gate: Arc<dyn ApprovalGate>,
        extensions: LoadExtensions,
    ) -> Result<Arc<Self>, CodingError> {
        let id = file.id().to_string();
        let cwd = file.cwd().to_string();
        let messages = file.request_messages();
        let sandbox = extensions.sandbox.unwrap_or(env.defaults.sandbox);
        let environment = crate::environment::for_session(
            sandbox,
            Path::new(&cwd),
            &env.defaults.sandbox_settings,
            &env.defaults.hidden_files,
        )?;
        tracing::debug!(session = %id, environment = %environment.describe(), "tools' environment");
        let escalation = escalation::SessionEscalation::default();
        let tool_context = ToolContext {
            env: environment,
            escalation: Some(Arc::new(escalation.clone())),
            cwd: PathBuf::from(&cwd),
            images_allowed: model.info.images,
            bash: env.defaults.bash.clone(),
            files: FileTracker::new(),
            locks: env.file_locks.clone(),
            output_dir: crate::tools::spill::session_dir(&env.output_dir, &id),
            hidden_files: env.defaults.hidden_files.clone(),
        };
        let (sources, context) = extensions.project.unwrap_or_else(|| {
            let sources = context_sources(&env, &cwd);
            let context = sources.load();
            (sources, context)
        });
        let trusted = sources.trusted;
        let mcp = mcp_tools::start_session_servers(
            &env,
            &id,
            Path::new(&cwd),
            trusted,
            &extensions.mcp_servers,
        );
        let mcp_built = env.mcp.generation().wrapping_add(mcp.generation());
        let (tools, mcp_read_only) =
            mcp_tools::session_tools(tool_context.clone(), &[&env.mcp, &mcp]);
        let prompt = PromptContext::new(
            sources,
            context,
            tools.clone(),
            env.defaults.extra_prompt_sections.clone(),
        );
        let mut config = HarnessConfig::new(model.harness_provider(), model.info.clone());
        config.thinking_level = thinking;
        config.system_prompt = prompt.prompt();
        config.tools = tools;
        config.limits = env.defaults.limits.clone();
        config.messages = messages;
        let harness = Harness::new(config)?;
        let journal = Arc::new(Journal::new(file, sink.clone()));
        let hook_runner = command_hooks::session_hook_runner(&env, Path::new(&cwd), trusted);
        Ok(Arc::new_cyclic(|me: &Weak<CodingSession>| {
            escalation.bind(me.clone());
            harness.set_hooks(Arc::new(hooks::SessionHooks::new(me.clone())));
            let stopper = me.clone();
            let on_failure: pump::OnFailure = Box::new(move || {
                if let Some(session) = stopper.upgrade() {
                    session.harness.cancel_all();
                }
            });
            let run_setup = run_record::SetupSlot::default();
            let pump = EventPump::start(
                &harness,
                Arc::clone(&journal),
                sink.clone(),
                on_failure,
                run_setup.clone(),
            );
            let live = LiveState {
                env: Arc::new(env),
                policy,
                model,
                prompt,
                tool_context,
                command_hooks: Arc::new(hook_runner),
                hook_context: Vec::new(),
                ran_calls: std::collections::HashSet::new(),
                mcp_read_only,
            };
            CodingSession {
                id,
                cwd,
                harness,
                journal,
                pump,
                sink,
                gate,
                approvals: Approvals::new(),
                live: Mutex::new(live),
                run_setup,
                operation: Mutex::new(None),
                shell: shell::ShellSlot::default(),
                run_plans: verification::RunPlans::default(),
                checkpoints: checkpoints::SessionCheckpoints::default(),
                tool_history: rein_session::repair::ToolHistoryCheck::default(),
                mcp,
                mcp_built: std::sync::atomic::AtomicU64::new(mcp_built),
                me: me.clone(),
            }
        }))
    }

    /// The session id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The project directory.
    pub fn cwd(&self) -> &str {
        &self.cwd
    }

    /// The daemon-wide environment as of now (a configuration reload replaces it).
    fn env(&self) -> Arc<CodingEnvironment> {
        Arc::clone(&self.live().env)
    }

    /// Puts a reloaded configuration in force: providers and models (the session's model is
    /// resolved again, so a provider or key that appeared makes it usable), session defaults
    /// and the variables hidden from tools. Applies from the next request.
    pub fn reconfigure(&self, env: CodingEnvironment) {
        let hidden_changed = env.defaults.bash != self.live().env.defaults.bash;
        let env = Arc::new(env);
        self.live().env = Arc::clone(&env);
        self.harness.set_limits(env.defaults.limits.clone());
        if hidden_changed {
            let context = {
                let mut live = self.live();
                live.tool_context.bash = env.defaults.bash.clone();
                live.tool_context.clone()
            };
            self.replace_tools(context);
        }
        let reference = self.live().model.reference.to_string();
        let reference = (!reference.trim_matches('/').is_empty()).then_some(reference);
        self.apply_model(ModelSlot::resolve(&env.registry, reference.as_deref()));
    }

    /// The session's live state (a leaf lock: see [`LiveState`]).
    fn live(&self) -> MutexGuard<'_, LiveState> {
        lock(&self.live)
    }

    fn emit(&self, event: SessionEvent) {
        (self.sink)(event);
    }

    fn operation(&self) -> MutexGuard<'_, Option<ActiveOperation>> {
        lock(&self.operation)
    }

    /// Starts an operation that needs the session idle; refused while a run or another such
    /// operation is active.
    fn begin(&self, kind: Operation) -> Result<OperationGuard<'_>, CodingError> {
        let mut operation = self.operation();
        if let Some(active) = operation.as_ref() {
            return Err(match (active.kind, kind) {
                (Operation::Compaction, Operation::Compaction) => CodingError::CompactionInProgress,
                (active, _) => active.busy_error(),
            });
        }
        if self.is_running() {
            return Err(CodingError::Busy("a run is active"));
        }
        let cancel = CancellationToken::new();
        *operation = Some(ActiveOperation { kind, cancel: cancel.clone() });
        Ok(OperationGuard { session: self, cancel })
    }

    /// The state the daemon reports for `session/state` (and create/open), with the last
    /// event seq it numbered.
    pub fn state(&self, last_seq: u64) -> SessionState {
        let (model, policy, trusted, excluded_files) = {
            let live = self.live();
            (live.model.clone(), live.policy, live.prompt.trusted(), live.prompt.excluded())
        };
        let (name, usage, context_tokens, leaf_id) = self
            .journal
            .read(|file| {
                (
                    file.name().map(str::to_string),
                    file.tree().total_usage().clone(),
                    file.context_tokens(),
                    file.leaf_id().map(str::to_string),
                )
            })
            .unwrap_or_default();
        SessionState {
            session_id: self.id.clone(),
            cwd: self.cwd.clone(),
            name,
            model: model.reference,
            thinking_level: self.harness.thinking_level(),
            approval_policy: policy,
            running: self.is_running(),
            run_id: self.harness.current_run(),
            queues: self.harness.queues(),
            usage,
            context_tokens,
            context_window: model.info.context_window,
            leaf_id,
            trusted,
            excluded_files,
            last_seq,
            stream: String::new(),
        }
    }

    /// The messages on the active path as the model will see them next (a compaction summary
    /// first), as recorded in the session file.
    pub fn messages(&self) -> Vec<Message> {
        self.journal.read(Session::context_messages).unwrap_or_default()
    }

    /// The active leaf.
    pub fn leaf_id(&self) -> Option<String> {
        self.journal.read(|file| file.leaf_id().map(str::to_string)).ok().flatten()
    }

    /// Every entry of the session file, for navigation.
    pub fn tree(&self) -> TreeResult {
        self.read_tree(|entries, leaf_id| TreeResult {
            entries: entries.to_vec(),
            leaf_id: leaf_id.map(str::to_string),
            total: entries.len() as u64,
            next_cursor: None,
        })
        .unwrap_or(TreeResult {
            entries: Vec::new(),
            leaf_id: None,
            total: 0,
            next_cursor: None,
        })
    }

    /// Reads the entries of the session file (in file order) and the active leaf in place,
    /// without copying them; `None` when the session file cannot be read.
    pub fn read_tree<R>(&self, read: impl FnOnce(&[SessionEntry], Option<&str>) -> R) -> Option<R> {
        self.journal.read(|file| read(file.tree().entries(), file.leaf_id())).ok()
    }

    /// The session as `session/list` shows it, summarized from memory (its file is not read
    /// again).
    pub fn summary(&self) -> Result<SessionSummary, CodingError> {
        let mut summary = self.journal.read(rein_session::listing::summarize_session)??;
        summary.loaded = true;
        summary.running = self.harness.is_running();
        Ok(summary)
    }

    /// Starts a run with the prompt, or, while one is active and `when_busy` says so, steers
    /// it or queues the prompt as a follow-up. Returns at once; progress arrives as events.
    pub async fn prompt(&self, params: PromptParams) -> Result<PromptResult, CodingError> {
        self.wait_for_mcp_startup().await;
        let content = self.submitted_content(params.text, params.images).await?;
        let limits = self.run_limits()?.with_overrides(&params.limits);
        // Held until the run's checks are registered, so its first stop finds them.
        let mut plans = self.run_plans.lock();
        let receipt = self.submit(content, Some(limits), params.when_busy)?;
        if let Some(request) = &params.verify
            && receipt.disposition != PromptDisposition::Steered
        {
            plans.set(receipt.id.clone(), self.verify_config().plan(Some(request)));
        }
        drop(plans);
        Ok(PromptResult { run_id: receipt.id, disposition: receipt.disposition })
    }

    /// Queues a message delivered after the current tool batch; starts a run when idle.
    pub async fn steer(
        &self,
        text: String,
        images: Vec<ContentBlock>,
    ) -> Result<QueueMessageResult, CodingError> {
        let content = self.submitted_content(text, images).await?;
        let limits = Some(self.run_limits()?);
        let receipt = self.submit(content, limits, Some(BusyBehavior::Steer))?;
        Ok(queue_result(receipt))
    }

    /// Queues a message that starts a run after the current one; starts a run when idle.
    pub async fn follow_up(
        &self,
        text: String,
        images: Vec<ContentBlock>,
    ) -> Result<QueueMessageResult, CodingError> {
        let content = self.submitted_content(text, images).await?;
        let limits = Some(self.run_limits()?);
        let receipt = self.submit(content, limits, Some(BusyBehavior::FollowUp))?;
        Ok(queue_result(receipt))
    }

    /// What the user submitted (a prompt, a steer or a follow-up) as the message content, once
    /// the `UserPromptSubmit` hooks let it through: their context (and what `SessionStart`
    /// hooks left for the next prompt) is added to it.
    async fn submitted_content(
        &self,
        text: String,
        images: Vec<ContentBlock>,
    ) -> Result<Vec<ContentBlock>, CodingError> {
        let hook_context = self.prompt_hooks(&text).await.map_err(CodingError::BlockedByHook)?;
        let mut content = user_content(text, images)?;
        for context in self.take_hook_context().into_iter().chain(hook_context) {
            content.push(ContentBlock::text(format!(
                "\n\n<hook-context>\n{context}\n</hook-context>"
            )));
        }
        Ok(content)
    }

    /// Hands user input to the harness, refusing while an operation keeps the session busy or
    /// when the model cannot be used and the input would start a run.
    fn submit(
        &self,
        content: Vec<ContentBlock>,
        limits: Option<RunLimits>,
        when_busy: Option<BusyBehavior>,
    ) -> Result<PromptReceipt, CodingError> {
        // A closed session refuses before anything else is checked.
        self.journal.read(|_| ())?;
        // Captured before the operation lock is taken: it asks git, which may take a moment.
        let setup = (!self.harness.is_running()).then(|| {
            let effective = limits.clone().unwrap_or_else(|| self.harness.limits());
            self.capture_setup(&effective)
        });
        // Held while the harness decides, so no operation starts between the check and the
        // run.
        let operation = self.operation();
        if let Some(active) = operation.as_ref() {
            return Err(active.kind.busy_error());
        }
        let running = self.harness.is_running();
        if !running {
            self.live().model.usable()?;
            self.record_settings()?;
            let effective = limits.clone().unwrap_or_else(|| self.harness.limits());
            let setup = setup.unwrap_or_else(|| self.capture_setup(&effective));
            self.run_setup.set(setup);
            self.refresh_mcp_tools();
        }
        let receipt = match when_busy {
            None => {
                let limits = limits.unwrap_or_else(|| self.harness.limits());
                let id = self.harness.prompt_with_limits(content, limits)?;
                PromptReceipt { id, disposition: PromptDisposition::Started }
            }
            Some(behavior) => self.harness.prompt_or_queue(content, limits, behavior)?,
        };
        drop(operation);
        Ok(receipt)
    }

    /// What a run starting now is set up with (recorded with its end).
    fn capture_setup(&self, limits: &RunLimits) -> rein_protocol::entry::RunSetup {
        let model = self.live().model.reference.clone();
        let mut config_files: Vec<PathBuf> =
            self.env().defaults.config_file.iter().cloned().collect();
        config_files.extend(self.live().prompt.project_config_files());
        run_record::capture(&run_record::SetupInputs {
            model: &model,
            limits,
            system_prompt: &self.harness.system_prompt(),
            config_files: &config_files,
            cwd: Path::new(&self.cwd),
        })
    }

    /// Records the model, thinking level and approval policy in force on the active path when
    /// it does not already, so reopening the session (or this branch of it) finds them. The
    /// entries are queued ([`Journal::queue`]), not written: they go to the file ahead of the
    /// next write (before a run, the run's first message) in the same append, so they cost
    /// no fsync of their own and nothing waits for a disk here.
    fn record_settings(&self) -> Result<(), CodingError> {
        let reference = self.live().model.reference.clone();
        let thinking = self.harness.thinking_level();
        // Before every run: the settings alone, not a replay copying the whole history.
        let replay = self.journal.read(Session::settings)?;
        let mut kinds = Vec::new();
        if !reference.provider.is_empty() && replay.model.as_ref() != Some(&reference) {
            kinds.push(EntryKind::ModelChange {
                provider: reference.provider.clone(),
                model: reference.model.clone(),
            });
        }
        if replay.thinking_level != Some(thinking) {
            kinds.push(EntryKind::ThinkingLevelChange { thinking_level: thinking });
        }
        let policy = self.approval_policy();
        if replay.approval_policy != Some(policy) {
            kinds.push(EntryKind::ApprovalPolicyChange { approval_policy: policy });
        }
        // Called while the operation lock is held: queued, written by the next write.
        self.journal.queue(kinds);
        Ok(())
    }

    /// Cancels the current run and any user shell command or compaction. Queued follow-ups
    /// still run (clear the queue first to stop everything). False when nothing was running.
    pub fn cancel(&self) -> bool {
        let run = self.harness.cancel();
        let shell = self.shell.cancel();
        let operation = match self.operation().as_ref() {
            Some(active) if active.kind != Operation::ShellIntoContext => {
                active.cancel.cancel();
                true
            }
            _ => false,
        };
        run || shell || operation
    }

    /// Both queues.
    pub fn queues(&self) -> QueueState {
        self.harness.queues()
    }

    /// Empties one or both queues and returns what is left.
    pub fn clear_queue(&self, which: QueueSelector) -> QueueState {
        self.harness.clear_queue(which);
        self.harness.queues()
    }

    /// Switches to another model for the following runs. Refused during a run; a model that
    /// cannot be resolved is `model_not_found` and changes nothing.
    pub async fn set_model(&self, reference: &str) -> Result<(), CodingError> {
        let _operation = self.begin(Operation::ModelChange)?;
        let slot = ModelSlot::resolve(&self.env().registry, Some(reference));
        slot.usable()?;
        let model_ref = slot.reference.clone();
        self.apply_model(slot);
        let recorded = model_ref.clone();
        self.journal.write(move |file| file.set_model(&recorded)).await?;
        self.emit(SessionEvent::ModelChanged { model: model_ref });
        Ok(())
    }

    /// Puts a model in force: harness, tools (images follow the model) and system prompt.
    fn apply_model(&self, slot: ModelSlot) {
        let images = slot.info.images;
        self.harness.set_model(slot.harness_provider(), slot.info.clone());
        let context = {
            let mut live = self.live();
            let previous = std::mem::replace(&mut live.model, slot);
            (images != previous.info.images)
                .then(|| ToolContext { images_allowed: images, ..live.tool_context.clone() })
        };
        if let Some(context) = context {
            self.replace_tools(context);
        }
    }

    /// Builds the tools for `context` and puts them (and the system prompt listing them) in
    /// force.
    fn replace_tools(&self, context: ToolContext) {
        let tools = self.build_tools(context);
        match self.harness.set_tools(tools.clone()) {
            Ok(()) => {
                let prompt = self.live().prompt.set_tools(tools);
                self.harness.set_system_prompt(prompt);
            }
            Err(error) => tracing::error!(%error, "could not replace the tools"),
        }
    }

    /// Changes the thinking level for the following runs; recorded in the session file.
    pub async fn set_thinking(&self, level: ThinkingLevel) -> Result<(), CodingError> {
        self.harness.set_thinking_level(level);
        self.journal.write(move |file| file.set_thinking_level(level)).await?;
        self.emit(SessionEvent::ThinkingLevelChanged { level });
        Ok(())
    }

    /// Changes the approval policy; it applies to the next tool call and is recorded in the
    /// session file, so the session keeps it when it is loaded again.
    pub async fn set_approval_policy(&self, policy: ApprovalPolicy) -> Result<(), CodingError> {
        self.journal.write(move |file| file.set_approval_policy(policy)).await?;
        self.live().policy = policy;
        self.emit(SessionEvent::ApprovalPolicyChanged { policy });
        Ok(())
    }

    /// The trusted project's settings as its `.rein/config.toml` files say now (read at each
    /// prompt, so an edit applies to the next run); empty for an untrusted project.
    pub fn project_config(&self) -> Result<ProjectConfig, CodingError> {
        let files = self.live().prompt.project_config_files();
        Ok(ProjectConfig::load(&files)?)
    }

    /// The checks of a run starting now: the trusted project's `[verify]` when it names
    /// commands, else the user's. A project file that cannot be read leaves the user's.
    pub(crate) fn verify_config(&self) -> crate::verify::VerifyConfig {
        let project = self.project_config().ok().and_then(|project| project.verify);
        self.env().defaults.verify.overridden_by(project.as_ref())
    }

    /// The limits of a run starting now: the configured ones with the trusted project's in
    /// their place where it sets them.
    fn run_limits(&self) -> Result<RunLimits, CodingError> {
        Ok(self.project_config()?.limits(&self.env().defaults.limits))
    }

    /// The approval policy in force.
    pub fn approval_policy(&self) -> ApprovalPolicy {
        self.live().policy
    }

    /// Answers a pending approval request. The first answer wins; later ones (and answers to
    /// requests that ended) are `approval_not_found`. Every subscriber sees the
    /// `approval_resolved` event.
    pub fn respond_approval(
        &self,
        request_id: &str,
        decision: ApprovalDecision,
        reason: Option<String>,
        resolved_by: &str,
    ) -> Result<(), CodingError> {
        let answer = ApprovalAnswer { decision, reason, resolved_by: resolved_by.to_string() };
        self.approvals.answer(request_id, answer, |answer| {
            self.emit(SessionEvent::ApprovalResolved {
                request_id: request_id.to_string(),
                decision: answer.decision,
                reason: answer.reason.clone(),
                resolved_by: answer.resolved_by.clone(),
            });
        })?;
        Ok(())
    }

    /// Reads the project's trust again (after `trust/set` changed it) and rebuilds the system
    /// prompt; it applies from the next request.
    pub fn refresh_trust(&self) {
        let trusted = self.env().trust.is_trusted(&PathBuf::from(&self.cwd));
        self.reload_hooks(trusted);
        let prompt = self.live().prompt.set_trusted(trusted);
        self.harness.set_system_prompt(prompt);
    }

    /// True while a run, a user shell command, a compaction or a branch is active.
    pub fn is_busy(&self) -> bool {
        self.is_running()
            || self.operation().is_some()
            || self.shell.is_running()
            || self.journal.read(Session::is_compacting).unwrap_or(false)
    }

    /// True while a run is active, or until its `agent_end` is passed on: a run is over once
    /// its last message and its end are in the session file (and in every read of it).
    pub fn is_running(&self) -> bool {
        self.harness.is_running() || self.pump.run_open()
    }

    /// Cancels everything (queues included), waits until the session is idle and every event
    /// is forwarded, then closes the session file, releasing its lock.
    pub async fn close(&self) {
        self.harness.cancel_all();
        self.cancel();
        self.harness.wait_idle().await;
        self.shell.wait().await;
        self.session_end_hooks().await;
        self.mcp.stop();
        let environment = self.live().tool_context.env.clone();
        environment.shutdown().await;
        self.pump.catch_up().await;
        self.pump.stop();
        // Tool results a failed write held back are recorded now if there is room again, so
        // the next load does not answer those calls as "interrupted".
        if let Err(error) = self.journal.write(|_| Ok(())).await {
            tracing::warn!(session = %self.id, %error, "closing with tool results not recorded");
        }
        // Dropping the file waits for its writer thread to finish.
        let journal = Arc::clone(&self.journal);
        if let Err(error) = blocking::off_the_workers(move || Ok(journal.close())).await {
            tracing::warn!(session = %self.id, %error, "closing the session file");
        }
    }

    /// The system prompt in force (for diagnostics and tests).
    pub fn system_prompt(&self) -> String {
        self.harness.system_prompt()
    }

    /// Waits until no run is active and no follow-up waits.
    pub async fn wait_idle(&self) {
        self.harness.wait_idle().await;
    }
}

/// The content of a user message: the text, then the images.
fn user_content(text: String, images: Vec<ContentBlock>) -> Result<Vec<ContentBlock>, CodingError> {
    if let Some(other) = images.iter().find(|block| !matches!(block, ContentBlock::Image { .. })) {
        return Err(CodingError::InvalidParams(format!(
            "images must be image blocks, got {}",
            serde_json::to_value(other).map(|v| v["type"].to_string()).unwrap_or_default()
        )));
    }
    let mut content = Vec::with_capacity(images.len() + 1);
    if !text.is_empty() || images.is_empty() {
        content.push(ContentBlock::text(text));
    }
    content.extend(images);
    Ok(content)
}

fn queue_result(receipt: PromptReceipt) -> QueueMessageResult {
    QueueMessageResult {
        started_run: receipt.disposition == PromptDisposition::Started,
        id: receipt.id,
    }
}
