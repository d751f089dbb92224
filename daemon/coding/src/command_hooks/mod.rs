//! Command hooks in Claude Code's format: shell commands that run at fixed moments of a
//! session (a tool call about to run, a run about to complete, ...), get the moment as one
//! JSON object on stdin, and answer with their exit code and optional JSON on stdout. Scripts
//! written for Claude Code (or Codex, which follows the same protocol) run unchanged.
//!
//! [`HookRunner`] holds the hooks of one session, compiled once; [`HookRunner::fire`] runs the
//! hooks whose matcher selects the moment, all at once, each in its own process group with its
//! timeout, and folds their answers into one [`HookOutcome`]. Each run is announced with
//! `hook_started` and `hook_finished` events. What each event's outcome does is decided by the
//! session (see `session::command_hooks`).

mod config;
mod process;
mod verdict;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::join_all;
use rein_protocol::event::{HookDecision, SessionEvent};
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

pub use config::{
    ClaudeSettingsError, DEFAULT_HOOK_TIMEOUT_SECS, HookCommand, HookEvent, HookKind, HookMatcher,
    HooksConfig, OnError, claude_tool_alias, read_claude_settings,
};
pub use process::MAX_HOOK_OUTPUT;
pub use verdict::HookVerdict;

use config::CompiledMatcher;
use process::{HookProcess, run_hook_process};

/// The Claude Code settings files of a project whose hooks are read when
/// `hooks_from_claude_settings` is on, relative to the project directory.
pub const CLAUDE_SETTINGS_FILES: [&str; 2] =
    [".claude/settings.json", ".claude/settings.local.json"];

struct RegisteredHook {
    event: HookEvent,
    matcher: CompiledMatcher,
    command: HookCommand,
}

/// The fields every hook input carries, from the session.
#[derive(Debug, Clone)]
pub struct HookSession {
    /// The session id.
    pub session_id: String,
    /// The session file.
    pub transcript_path: String,
    /// The approval policy, in Claude Code's words (`default`, `acceptEdits`,
    /// `bypassPermissions`).
    pub permission_mode: &'static str,
}

/// One moment hooks may run at.
#[derive(Debug, Clone)]
pub struct HookMoment {
    /// Which event.
    pub event: HookEvent,
    /// What matchers are compared with (tool names, a source, a trigger...); empty for
    /// events without a subject.
    pub subjects: Vec<String>,
    /// The event's own input fields (`tool_name`, `prompt`, `stop_hook_active`, ...).
    pub fields: Map<String, Value>,
    /// The tool call it is about, for the events.
    pub tool_call_id: Option<String>,
}

impl HookMoment {
    /// A moment with no subject and no fields yet.
    pub fn new(event: HookEvent) -> Self {
        Self { event, subjects: Vec::new(), fields: Map::new(), tool_call_id: None }
    }

    /// Adds an input field.
    pub fn field(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.fields.insert(name.to_string(), value.into());
        self
    }

    /// Sets what matchers compare with.
    pub fn subject(mut self, subject: impl Into<String>) -> Self {
        self.subjects.push(subject.into());
        self
    }
}

/// One hook that ran, as recorded in the session.
#[derive(Debug, Clone)]
pub struct HookRunReport {
    /// The id its events carried.
    pub hook_id: String,
    /// The event.
    pub event: HookEvent,
    /// The command line.
    pub command: String,
    /// What it decided.
    pub verdict: HookVerdict,
    /// How long it ran.
    pub duration: Duration,
}

/// The folded answer of every hook that ran for one moment.
#[derive(Debug, Clone)]
pub struct HookOutcome {
    /// The strongest decision: stop, then block, then ask, then allow, then none.
    pub decision: HookDecision,
    /// The reasons of the hooks that made that decision (block reasons for the model).
    pub reasons: Vec<String>,
    /// New tool arguments, from the last hook that gave any.
    pub updated_input: Option<Value>,
    /// Context for the model, from every hook that gave any.
    pub contexts: Vec<String>,
    /// Why the run should stop, when a hook said `continue: false`.
    pub stop_reason: Option<String>,
    /// Every hook that ran.
    pub runs: Vec<HookRunReport>,
}

impl HookOutcome {
    fn empty() -> Self {
        Self {
            decision: HookDecision::None,
            reasons: Vec::new(),
            updated_input: None,
            contexts: Vec::new(),
            stop_reason: None,
            runs: Vec::new(),
        }
    }

    /// The reasons as one text.
    pub fn reason(&self) -> String {
        self.reasons.join("\n")
    }

    /// The contexts as one text, `None` when there is none.
    pub fn context(&self) -> Option<String> {
        (!self.contexts.is_empty()).then(|| self.contexts.join("\n"))
    }
}

/// How strong a decision is when several hooks answer.
fn rank(decision: HookDecision) -> u8 {
    match decision {
        HookDecision::Stop => 5,
        HookDecision::Block => 4,
        HookDecision::Ask => 3,
        HookDecision::Allow => 2,
        HookDecision::None | HookDecision::Error => 0,
    }
}

/// The hooks of one session. See the module docs.
pub struct HookRunner {
    hooks: Vec<RegisteredHook>,
    cwd: PathBuf,
    shell: PathBuf,
    env: Vec<(String, String)>,
    hidden_env: Vec<String>,
}

impl std::fmt::Debug for HookRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HookRunner").field("hooks", &self.hooks.len()).finish_non_exhaustive()
    }
}

impl HookRunner {
    /// Compiles the hooks of every configuration (in order) for a session in `cwd`. A hook
    /// with a matcher that is not a valid regular expression is left out and logged.
    pub fn new(configs: &[HooksConfig], cwd: &Path, hidden_env: Vec<String>) -> Self {
        let mut hooks = Vec::new();
        for config in configs {
            for (&event, groups) in &config.events {
                for group in groups {
                    let matcher = match CompiledMatcher::new(group.matcher.as_deref()) {
                        Ok(matcher) => matcher,
                        Err(error) => {
                            tracing::warn!(event = event.name(), %error, "hook matcher is not a valid regular expression; its hooks are left out");
                            continue;
                        }
                    };
                    for command in &group.hooks {
                        hooks.push(RegisteredHook {
                            event,
                            matcher: matcher.clone(),
                            command: command.clone(),
                        });
                    }
                }
            }
        }
        let dir = cwd.display().to_string();
        Self {
            hooks,
            cwd: cwd.to_path_buf(),
            shell: crate::tools::default_shell().to_path_buf(),
            env: vec![
                ("CLAUDE_PROJECT_DIR".to_string(), dir.clone()),
                ("REIN_PROJECT_DIR".to_string(), dir),
            ],
            hidden_env,
        }
    }

    /// A runner with no hooks.
    pub fn empty(cwd: &Path) -> Self {
        Self::new(&[], cwd, Vec::new())
    }

    /// Whether any hook is configured for `event` (whatever its matcher).
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|hook| hook.event == event)
    }

    /// Runs every hook whose matcher selects `moment`, at once, and folds their answers.
    /// `emit` gets `hook_started` and `hook_finished` for each. Identical commands run once.
    pub async fn fire(
        &self,
        session: &HookSession,
        moment: HookMoment,
        emit: &(dyn Fn(SessionEvent) + Sync),
        cancel: &CancellationToken,
    ) -> HookOutcome {
        let subjects: Vec<&str> = moment.subjects.iter().map(String::as_str).collect();
        let mut seen = HashSet::new();
        let selected: Vec<&RegisteredHook> = self
            .hooks
            .iter()
            .filter(|hook| hook.event == moment.event && hook.matcher.matches(&subjects))
            .filter(|hook| seen.insert(hook.command.command.clone()))
            .collect();
        if selected.is_empty() {
            return HookOutcome::empty();
        }
        let mut input = Map::new();
        input.insert("session_id".into(), session.session_id.clone().into());
        input.insert("transcript_path".into(), session.transcript_path.clone().into());
        input.insert("cwd".into(), self.cwd.display().to_string().into());
        input.insert("permission_mode".into(), session.permission_mode.into());
        input.insert("hook_event_name".into(), moment.event.name().into());
        input.extend(moment.fields.clone());
        let input = serde_json::to_vec(&Value::Object(input)).unwrap_or_default();
        let runs =
            join_all(selected.into_iter().map(|hook| {
                self.run_one(hook, &input, moment.tool_call_id.as_deref(), emit, cancel)
            }))
            .await;
        fold(runs)
    }

    async fn run_one(
        &self,
        hook: &RegisteredHook,
        input: &[u8],
        tool_call_id: Option<&str>,
        emit: &(dyn Fn(SessionEvent) + Sync),
        cancel: &CancellationToken,
    ) -> HookRunReport {
        let hook_id = format!("hk-{}", uuid::Uuid::now_v7());
        let command = hook.command.command.clone();
        emit(SessionEvent::HookStarted {
            hook_id: hook_id.clone(),
            hook_event: hook.event.name().to_string(),
            command: command.clone(),
            tool_call_id: tool_call_id.map(str::to_string),
        });
        let timeout = hook.command.timeout.unwrap_or(DEFAULT_HOOK_TIMEOUT_SECS);
        let process = HookProcess {
            shell: &self.shell,
            command: &command,
            cwd: &self.cwd,
            env: &self.env,
            hidden_env: &self.hidden_env,
            timeout: Duration::from_secs(timeout.max(1)),
        };
        let result = run_hook_process(&process, input, cancel).await;
        let verdict = verdict::interpret(hook.event, &command, hook.command.on_error, &result);
        if verdict.decision == HookDecision::Error {
            tracing::warn!(event = hook.event.name(), command = %command, reason = ?verdict.reason, "hook failed");
        }
        emit(SessionEvent::HookFinished {
            hook_id: hook_id.clone(),
            hook_event: hook.event.name().to_string(),
            command: command.clone(),
            decision: verdict.decision,
            duration_ms: u64::try_from(result.duration.as_millis()).unwrap_or(u64::MAX),
            exit_code: verdict.exit_code,
            message: verdict.message(),
        });
        HookRunReport { hook_id, event: hook.event, command, verdict, duration: result.duration }
    }
}

/// Folds the answers of the hooks of one moment.
fn fold(runs: Vec<HookRunReport>) -> HookOutcome {
    let mut outcome = HookOutcome::empty();
    for run in &runs {
        let verdict = &run.verdict;
        if rank(verdict.decision) > rank(outcome.decision) {
            outcome.decision = verdict.decision;
            outcome.reasons.clear();
        }
        if verdict.decision == outcome.decision
            && rank(verdict.decision) > 0
            && let Some(reason) = &verdict.reason
        {
            outcome.reasons.push(reason.clone());
        }
        if let Some(input) = &verdict.updated_input {
            outcome.updated_input = Some(input.clone());
        }
        if let Some(context) = &verdict.additional_context {
            outcome.contexts.push(context.clone());
        }
        if let Some(stop) = &verdict.stop_reason {
            outcome.stop_reason.get_or_insert_with(|| stop.clone());
        }
    }
    outcome.runs = runs;
    outcome
}
