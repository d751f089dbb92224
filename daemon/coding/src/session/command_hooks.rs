//! Where a session fires its command hooks (see [`crate::command_hooks`]) and what their
//! answers do:
//!
//! | event | fired | an answer that blocks | context |
//! | --- | --- | --- | --- |
//! | `SessionStart` | create (`startup`) and load (`resume`) | — | added to the next prompt |
//! | `SessionEnd` | close and unload (`other`) | — | — |
//! | `UserPromptSubmit` | `session/prompt`, before the run | the prompt is refused | added to the prompt |
//! | `PreToolUse` | before approval | the call is not run; the model gets the reason | added to the result |
//! | `PermissionRequest` | when the policy asks | the call is denied; `allow` skips asking | — |
//! | `PostToolUse`, `PostToolUseFailure` | after a call ran | the reason is added to the result | added to the result |
//! | `Stop` | the run is about to complete | the run goes on with the reason as a user message | — |
//! | `PreCompact`, `PostCompact` | around each compaction | — | — |
//! | `Notification` | an approval waits (`permission_prompt`) | — | — |
//!
//! `"continue": false` from a tool or `Stop` hook ends the run (cancelled), and refuses a
//! prompt. Each hook run is recorded in the session file as a `custom` entry of type
//! `hook_run`.

use std::path::Path;
use std::sync::Arc;

use rein_agent::ToolCallContext;
use rein_protocol::EntryKind;
use rein_protocol::event::HookDecision;
use rein_protocol::message::{ContentBlock, ToolResultMessage};
use rein_protocol::method::ApprovalPolicy;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::CodingSession;
use crate::command_hooks::{
    CLAUDE_SETTINGS_FILES, HookEvent, HookMoment, HookOutcome, HookRunner, HookSession,
    claude_tool_alias, read_claude_settings,
};
use crate::project_extensions::read_project_extensions;

/// How many times `Stop` hooks may continue one run; after that the run completes whatever
/// they say.
pub const MAX_STOP_HOOK_CONTINUATIONS: u32 = 3;

/// The `custom_type` of the entries recording hook runs.
pub const HOOK_RUN_ENTRY: &str = "hook_run";

/// The hooks of a session in `cwd`: the daemon's, then (when the project is trusted) the
/// project's `.rein/config.toml`, then its Claude Code settings when the configuration turns
/// them on.
pub(crate) fn session_hook_runner(
    env: &super::CodingEnvironment,
    cwd: &Path,
    trusted: bool,
) -> HookRunner {
    let mut configs = vec![env.defaults.hooks.clone()];
    if trusted {
        match read_project_extensions(cwd) {
            Ok(project) => configs.push(project.hooks),
            Err(error) => tracing::warn!(%error, "the project's hooks are not used"),
        }
        if env.defaults.hooks_from_claude_settings {
            for file in CLAUDE_SETTINGS_FILES {
                match read_claude_settings(&cwd.join(file)) {
                    Ok(hooks) => configs.push(hooks),
                    Err(error) => tracing::warn!(%error, "Claude Code hooks are not used"),
                }
            }
        }
    }
    HookRunner::new(&configs, cwd, env.defaults.bash.hidden_env.clone())
}

/// The approval policy in Claude Code's words.
fn permission_mode(policy: ApprovalPolicy) -> &'static str {
    match policy {
        ApprovalPolicy::Ask => "default",
        ApprovalPolicy::AutoEdit => "acceptEdits",
        ApprovalPolicy::Yolo => "bypassPermissions",
    }
}

/// A tool moment: the tool's rein name and its Claude Code name are both matched.
fn tool_moment(event: HookEvent, call: &ToolCallContext, arguments: &Value) -> HookMoment {
    let mut moment = HookMoment::new(event)
        .subject(call.tool_name.clone())
        .field("tool_name", call.tool_name.clone())
        .field("tool_input", arguments.clone())
        .field("tool_use_id", call.call_id.clone());
    if let Some(alias) = claude_tool_alias(&call.tool_name) {
        moment = moment.subject(alias);
    }
    moment.tool_call_id = Some(call.call_id.clone());
    moment
}

/// The text of a result's text blocks.
fn result_text(result: &ToolResultMessage) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What a tool hook's answer means for the call.
pub(crate) enum PreToolAnswer {
    /// Go on with the policy (and these arguments, when a hook rewrote them).
    Policy(Option<Value>),
    /// Run it without asking.
    Allow(Option<Value>),
    /// Ask the user whatever the policy says, with this reason.
    Ask(Option<Value>, String),
    /// Do not run it; the model sees the reason.
    Block(String),
}

impl CodingSession {
    /// The hooks in force.
    fn hook_runner(&self) -> Arc<HookRunner> {
        self.live().command_hooks.clone()
    }

    /// Builds the hooks again (the project's trust changed).
    pub(crate) fn reload_hooks(&self, trusted: bool) {
        let runner = session_hook_runner(&self.env(), Path::new(&self.cwd), trusted);
        self.live().command_hooks = Arc::new(runner);
    }

    /// Fires `moment`'s hooks, announcing each, then records every run in the session file.
    pub(crate) async fn fire_hooks(
        &self,
        moment: HookMoment,
        cancel: &CancellationToken,
    ) -> Option<HookOutcome> {
        let runner = self.hook_runner();
        if !runner.has(moment.event) {
            return None;
        }
        // Hook events follow the events of what led to them.
        self.pump.catch_up().await;
        let session = HookSession {
            session_id: self.id.clone(),
            transcript_path: self
                .journal
                .read(|file| file.path().display().to_string())
                .unwrap_or_default(),
            permission_mode: permission_mode(self.approval_policy()),
        };
        let emit = |event| self.emit(event);
        let outcome = runner.fire(&session, moment, &emit, cancel).await;
        let entries: Vec<EntryKind> = outcome
            .runs
            .iter()
            .map(|run| EntryKind::Custom {
                custom_type: HOOK_RUN_ENTRY.to_string(),
                data: json!({
                    "hook_id": run.hook_id,
                    "hook_event": run.event.name(),
                    "command": run.command,
                    "decision": run.verdict.decision,
                    "exit_code": run.verdict.exit_code,
                    "duration_ms": u64::try_from(run.duration.as_millis()).unwrap_or(u64::MAX),
                    "message": run.verdict.message(),
                }),
            })
            .collect();
        if !entries.is_empty()
            && let Err(error) = self.journal.append(entries).await
        {
            tracing::warn!(session = %self.id, %error, "could not record hook runs");
        }
        Some(outcome)
    }

    /// `PreToolUse`: what the hooks say about a validated call before the policy is asked.
    pub(crate) async fn pre_tool_hooks(&self, call: &ToolCallContext) -> PreToolAnswer {
        let moment = tool_moment(HookEvent::PreToolUse, call, &call.arguments);
        let Some(outcome) = self.fire_hooks(moment, &call.cancel).await else {
            return PreToolAnswer::Policy(None);
        };
        let input = outcome.updated_input.clone();
        match outcome.decision {
            HookDecision::Stop => {
                self.harness.cancel();
                PreToolAnswer::Block(outcome.stop_reason.unwrap_or_default())
            }
            HookDecision::Block => PreToolAnswer::Block(outcome.reason()),
            HookDecision::Allow => PreToolAnswer::Allow(input),
            HookDecision::Ask => {
                let reason = match outcome.reason() {
                    reason if reason.is_empty() => "a PreToolUse hook asks to confirm".into(),
                    reason => format!("a PreToolUse hook asks to confirm: {reason}"),
                };
                PreToolAnswer::Ask(input, reason)
            }
            HookDecision::None | HookDecision::Error => PreToolAnswer::Policy(input),
        }
    }

    /// `PermissionRequest`: whether hooks answer an approval before a person is asked.
    /// `Some(Ok(arguments))` allows, `Some(Err(reason))` denies, `None` asks.
    pub(crate) async fn permission_hooks(
        &self,
        call: &ToolCallContext,
        arguments: &Value,
    ) -> Option<Result<Option<Value>, String>> {
        let moment = tool_moment(HookEvent::PermissionRequest, call, arguments)
            .field("permission_suggestions", Value::Array(Vec::new()));
        let outcome = self.fire_hooks(moment, &call.cancel).await?;
        match outcome.decision {
            HookDecision::Allow => Some(Ok(outcome.updated_input)),
            HookDecision::Block => Some(Err(outcome.reason())),
            HookDecision::Stop => {
                self.harness.cancel();
                Some(Err(outcome.stop_reason.unwrap_or_default()))
            }
            _ => None,
        }
    }

    /// `Notification` for an approval that waits; does not hold up the approval.
    pub(crate) fn notify_hooks(&self, notification_type: &'static str, message: String) {
        if !self.hook_runner().has(HookEvent::Notification) {
            return;
        }
        let me = self.me.clone();
        tokio::spawn(async move {
            let Some(session) = me.upgrade() else { return };
            let moment = HookMoment::new(HookEvent::Notification)
                .subject(notification_type)
                .field("notification_type", notification_type)
                .field("title", "rein")
                .field("message", message);
            session.fire_hooks(moment, &CancellationToken::new()).await;
        });
    }

    /// `PostToolUse` / `PostToolUseFailure` for a call that ran: what the hooks add to its
    /// result.
    pub(crate) async fn post_tool_hooks(
        &self,
        call: &ToolCallContext,
        arguments: &Value,
        mut result: ToolResultMessage,
    ) -> ToolResultMessage {
        let moment = if result.is_error {
            tool_moment(HookEvent::PostToolUseFailure, call, arguments)
                .field("error", result_text(&result))
                .field("is_interrupt", false)
        } else {
            tool_moment(HookEvent::PostToolUse, call, arguments).field(
                "tool_response",
                json!({"content": result_text(&result), "details": result.details}),
            )
        };
        let Some(outcome) = self.fire_hooks(moment, &call.cancel).await else {
            return result;
        };
        if outcome.decision == HookDecision::Block {
            result
                .content
                .push(ContentBlock::text(format!("\n\nHook feedback: {}", outcome.reason())));
        }
        if let Some(context) = outcome.context() {
            result.content.push(ContentBlock::text(format!("\n\nHook context: {context}")));
        }
        if outcome.decision == HookDecision::Stop {
            self.harness.cancel();
        }
        result
    }

    /// `Stop`: the message that continues a run about to complete, if a hook blocks it.
    /// `continuations` counts how often this run was already continued when the model stopped
    /// (by a hook or a failed check); past [`MAX_STOP_HOOK_CONTINUATIONS`] hooks no longer run.
    pub(crate) async fn stop_hooks(
        &self,
        continuations: u32,
        cancel: &CancellationToken,
    ) -> Option<String> {
        if continuations >= MAX_STOP_HOOK_CONTINUATIONS {
            return None;
        }
        let moment = HookMoment::new(HookEvent::Stop).field("stop_hook_active", continuations > 0);
        let outcome = self.fire_hooks(moment, cancel).await?;
        (outcome.decision == HookDecision::Block).then(|| outcome.reason())
    }

    /// `UserPromptSubmit`: refuses the prompt (`Err` with the reason) or gives the context to
    /// add to it.
    pub(crate) async fn prompt_hooks(&self, prompt: &str) -> Result<Option<String>, String> {
        let moment = HookMoment::new(HookEvent::UserPromptSubmit).field("prompt", prompt);
        let Some(outcome) = self.fire_hooks(moment, &CancellationToken::new()).await else {
            return Ok(None);
        };
        match outcome.decision {
            HookDecision::Block => Err(outcome.reason()),
            HookDecision::Stop => Err(outcome.stop_reason.unwrap_or_default()),
            _ => Ok(outcome.context()),
        }
    }

    /// `SessionStart`: its context is kept for the next prompt.
    pub(crate) async fn session_start_hooks(&self, source: &'static str) {
        let model = self.live().model.reference.to_string();
        let moment = HookMoment::new(HookEvent::SessionStart)
            .subject(source)
            .field("source", source)
            .field("model", model);
        if let Some(context) = self
            .fire_hooks(moment, &CancellationToken::new())
            .await
            .and_then(|outcome| outcome.context())
        {
            self.live().hook_context.push(context);
        }
    }

    /// `SessionEnd`.
    pub(crate) async fn session_end_hooks(&self) {
        let moment =
            HookMoment::new(HookEvent::SessionEnd).subject("other").field("reason", "other");
        self.fire_hooks(moment, &CancellationToken::new()).await;
    }

    /// `PreCompact` (`manual` or `auto`).
    pub(crate) async fn pre_compact_hooks(&self, manual: bool, instructions: Option<&str>) {
        let trigger = if manual { "manual" } else { "auto" };
        let moment = HookMoment::new(HookEvent::PreCompact)
            .subject(trigger)
            .field("trigger", trigger)
            .field("custom_instructions", instructions.unwrap_or_default());
        self.fire_hooks(moment, &CancellationToken::new()).await;
    }

    /// `PostCompact`, with the summary.
    pub(crate) async fn post_compact_hooks(&self, manual: bool, summary: &str) {
        let trigger = if manual { "manual" } else { "auto" };
        let moment = HookMoment::new(HookEvent::PostCompact)
            .subject(trigger)
            .field("trigger", trigger)
            .field("compact_summary", summary);
        self.fire_hooks(moment, &CancellationToken::new()).await;
    }

    /// Context hooks gave for the next prompt (`SessionStart`), taken once.
    pub(crate) fn take_hook_context(&self) -> Vec<String> {
        std::mem::take(&mut self.live().hook_context)
    }
}
