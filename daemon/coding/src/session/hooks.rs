//! The session's hooks into the agent loop: the system prompt refresh, automatic compaction
//! and tool-history repair before each request, compaction after a context overflow, and
//! approvals before tool calls.

use std::path::Path;
use std::sync::{Arc, Weak};

use futures::FutureExt;
use futures::future::BoxFuture;
use rein_agent::{
    AgentHooks, RequestEdit, RequestView, StopDecision, StopView, ToolCallContext,
    ToolCallDecision, TurnTools,
};
use rein_ai::Provider;
use rein_protocol::event::{ApprovalDecision, CompactionReason, SessionEvent};
use rein_protocol::message::{Message, ToolResultMessage};
use rein_protocol::method::ApprovalPolicy;
use rein_protocol::model::ModelInfo;
use rein_protocol::verify::RunOutcome;
use rein_session::repair::repair_messages;
use rein_session::{Compacted, Session};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::command_hooks::PreToolAnswer;
use super::error::CodingError;
use super::{CodingSession, DAEMON_RESOLVER};
use crate::approval::approval_reason_in;

/// What the model is told when a call needed approval and no client could give it.
pub const NO_APPROVER_REASON: &str = "no client attached that can approve this call, so it \
     was not run; the user can attach a client that answers approvals or change the approval \
     policy (session/set_approval_policy)";

/// What the model is told when every client that could approve a waiting call left and none
/// came back within the grace period (`approvals.grace_secs`).
pub const NO_APPROVER_LEFT_REASON: &str = "every client that could approve this call left and \
     none came back within the grace period, so it was not run; the user can attach a client \
     that answers approvals or change the approval policy (session/set_approval_policy)";

/// What the model is told when the run stopped while a call waited for approval.
pub const APPROVAL_CANCELLED_REASON: &str = "the run was cancelled before the call was approved";

/// The hooks the session's harness runs with. They hold the session weakly, so the harness
/// (owned by the session) does not keep it alive.
pub(crate) struct SessionHooks {
    session: Weak<CodingSession>,
}

impl SessionHooks {
    pub(crate) fn new(session: Weak<CodingSession>) -> Self {
        Self { session }
    }
}

impl AgentHooks for SessionHooks {
    fn before_request<'a>(&'a self, request: RequestView<'a>) -> BoxFuture<'a, RequestEdit> {
        async move {
            match self.session.upgrade() {
                Some(session) => session.before_request(request.messages).await,
                None => RequestEdit::default(),
            }
        }
        .boxed()
    }

    fn before_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
    ) -> BoxFuture<'a, ToolCallDecision> {
        async move {
            match self.session.upgrade() {
                Some(session) => session.approve(call).await,
                None => ToolCallDecision::Block { reason: "the session was closed".into() },
            }
        }
        .boxed()
    }

    fn after_tool_call<'a>(
        &'a self,
        call: &'a ToolCallContext,
        result: ToolResultMessage,
    ) -> BoxFuture<'a, ToolResultMessage> {
        async move {
            match self.session.upgrade() {
                Some(session) => session.after_tool_call(call, result).await,
                None => result,
            }
        }
        .boxed()
    }

    fn before_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        async move {
            if let Some(session) = self.session.upgrade() {
                let tools: Vec<&str> = turn.calls.iter().map(|call| call.name.as_str()).collect();
                session.checkpoint_before(turn.run_id, turn.turn, &tools).await;
            }
        }
        .boxed()
    }

    fn after_tools<'a>(&'a self, turn: TurnTools<'a>) -> BoxFuture<'a, ()> {
        async move {
            if let Some(session) = self.session.upgrade() {
                session.checkpoint_after(turn.run_id, turn.turn).await;
            }
        }
        .boxed()
    }

    fn on_stop<'a>(&'a self, stop: StopView<'a>) -> BoxFuture<'a, StopDecision> {
        async move {
            match self.session.upgrade() {
                Some(session) => session.on_stop(stop).await,
                None => StopDecision::Finish(RunOutcome::Unverified),
            }
        }
        .boxed()
    }

    fn on_context_overflow<'a>(
        &'a self,
        messages: &'a [Arc<Message>],
    ) -> BoxFuture<'a, Option<Vec<Arc<Message>>>> {
        let _ = messages;
        async move {
            match self.session.upgrade() {
                Some(session) => session.recover_from_overflow().await,
                None => None,
            }
        }
        .boxed()
    }
}

/// Reports the end of a compaction exactly once, also when the compaction is abandoned (its
/// run was cancelled and the hook dropped).
struct CompactionReport<'a> {
    session: &'a CodingSession,
    reason: CompactionReason,
    tokens_before: u64,
    done: bool,
}

impl CompactionReport<'_> {
    fn finish(mut self, entry_id: Option<String>, error: Option<String>) {
        self.done = true;
        self.session.emit(SessionEvent::CompactionEnd {
            reason: self.reason,
            entry_id,
            tokens_before: self.tokens_before,
            error,
        });
    }
}

impl Drop for CompactionReport<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.session.emit(SessionEvent::CompactionEnd {
                reason: self.reason,
                entry_id: None,
                tokens_before: self.tokens_before,
                error: Some("cancelled".into()),
            });
        }
    }
}

/// Withdraws an approval request nobody answered when the wait ends (cancelled run), and
/// reports it as denied by the daemon.
struct PendingApproval<'a> {
    session: &'a CodingSession,
    request_id: String,
}

impl Drop for PendingApproval<'_> {
    fn drop(&mut self) {
        if self.session.approvals.withdraw(&self.request_id) {
            self.session.emit(SessionEvent::ApprovalResolved {
                request_id: self.request_id.clone(),
                decision: ApprovalDecision::Deny,
                reason: Some(APPROVAL_CANCELLED_REASON.into()),
                resolved_by: DAEMON_RESOLVER.into(),
            });
        }
    }
}

impl CodingSession {
    /// Before each request: a fresh system prompt when the project context changed, a
    /// compaction when the context passed the threshold, and a valid tool history.
    async fn before_request(&self, messages: &[Arc<Message>]) -> RequestEdit {
        let system_prompt = self.live().prompt.refresh();
        if system_prompt.is_some() {
            tracing::debug!(session = %self.id, "project context changed; system prompt rebuilt");
        }
        self.pump.catch_up().await;
        // After a failed write the history in memory ran ahead of the file: go on from the
        // file.
        let resynced = if self.journal.unsaved().take_resync() {
            tracing::info!(session = %self.id, "continuing from the session file after a failed write");
            self.journal.read(Session::request_messages).ok()
        } else {
            None
        };
        let compacted = self.compact_at_threshold().await.or(resynced);
        let current = compacted.as_deref().unwrap_or(messages);
        let messages = if self.tool_history.is_valid(current) {
            compacted
        } else {
            tracing::warn!(session = %self.id, "repairing the tool history before a request");
            let owned = current.iter().map(|message| message.as_ref().clone()).collect();
            let repaired = repair_messages(owned, rein_protocol::clock::now_ms());
            Some(repaired.into_iter().map(Arc::new).collect())
        };
        RequestEdit { system_prompt, messages }
    }

    /// Compacts when the recorded context passed the model's window minus the reserve;
    /// returns the history to continue with.
    async fn compact_at_threshold(&self) -> Option<Vec<Arc<Message>>> {
        let (provider, model) = self.live().model.usable().ok()?;
        let settings = &self.env().defaults.compaction.clone();
        let needed = self.journal.read(|file| file.needs_compaction(&model, settings)).ok()?;
        if !needed {
            return None;
        }
        let keep = settings.keep_recent(model.context_window);
        let cancel = CancellationToken::new();
        match self
            .run_compaction(CompactionReason::Threshold, None, keep, provider, &model, &cancel)
            .await
        {
            Ok(_) => self.journal.read(Session::request_messages).ok(),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "automatic compaction failed");
                None
            }
        }
    }

    /// After the provider rejected a request as too long: compacts, keeping the window-scaled
    /// tail verbatim (the rule of `Session::recover_from_overflow`, done here in
    /// steps so the file is not locked during the model call), and returns the history to
    /// retry with.
    async fn recover_from_overflow(&self) -> Option<Vec<Arc<Message>>> {
        self.pump.catch_up().await;
        let (provider, model) = self.live().model.usable().ok()?;
        let keep = self.env().defaults.compaction.keep_recent(model.context_window);
        let cancel = CancellationToken::new();
        match self
            .run_compaction(CompactionReason::Overflow, None, keep, provider, &model, &cancel)
            .await
        {
            Ok(_) => self.journal.read(Session::request_messages).ok(),
            Err(error) => {
                tracing::warn!(session = %self.id, %error, "compaction after overflow failed");
                None
            }
        }
    }

    /// Prepares, summarizes and records a compaction, announcing it with `compaction_start`,
    /// the entry's `entry_appended` and `compaction_end`. Nothing is announced when there is
    /// nothing to compact or another compaction runs.
    pub(crate) async fn run_compaction(
        &self,
        reason: CompactionReason,
        instructions: Option<String>,
        keep_recent_tokens: u64,
        provider: Arc<dyn Provider>,
        model: &ModelInfo,
        cancel: &CancellationToken,
    ) -> Result<Compacted, CodingError> {
        let job_instructions = instructions.clone();
        let job = self
            .journal
            .read(|file| file.prepare_compaction(reason, instructions, keep_recent_tokens))??;
        let tokens_before = job.tokens_before();
        let manual = reason == CompactionReason::Manual;
        self.pre_compact_hooks(manual, job_instructions.as_deref()).await;
        self.emit(SessionEvent::CompactionStart { reason });
        let report = CompactionReport { session: self, reason, tokens_before, done: false };
        let settings = &self.env().defaults.compaction.clone();
        let recorded = match job.summarize(provider.as_ref(), model, settings, cancel).await {
            Ok(outcome) => self.journal.write(move |file| file.finish_compaction(outcome)).await,
            Err(error) => Err(error.into()),
        };
        match recorded {
            Ok(compacted) => {
                report.finish(Some(compacted.entry.id.clone()), None);
                if let rein_protocol::EntryKind::Compaction { summary, .. } = &compacted.entry.kind
                {
                    self.post_compact_hooks(manual, summary).await;
                }
                Ok(compacted)
            }
            Err(error) => {
                report.finish(None, Some(error.to_string()));
                Err(error)
            }
        }
    }

    /// Decides whether a validated tool call may run: `PreToolUse` hooks first, then the
    /// policy, then `PermissionRequest` hooks, then a client when the policy says so.
    async fn approve(&self, call: &ToolCallContext) -> ToolCallDecision {
        // A call runs only once the reply that made it is on disk.
        self.pump.catch_up().await;
        if self.journal.unsaved().holding() {
            return ToolCallDecision::Block { reason: super::unsaved::NOT_RUN_UNRECORDED.into() };
        }
        let (rewritten, forced) = match self.pre_tool_hooks(call).await {
            PreToolAnswer::Block(reason) => return ToolCallDecision::Block { reason },
            PreToolAnswer::Allow(rewritten) => return self.let_run(call, rewritten),
            PreToolAnswer::Ask(rewritten, reason) => (rewritten, Some(reason)),
            PreToolAnswer::Policy(rewritten) => (rewritten, None),
        };
        let arguments = rewritten.clone().unwrap_or_else(|| call.arguments.clone());
        let policy = self.approval_policy();
        let cwd = Path::new(&self.cwd);
        let read_only_mcp =
            policy != ApprovalPolicy::Ask && self.is_read_only_mcp_tool(&call.tool_name);
        let confined = self.live().tool_context.env.confines_commands();
        let policy_reason = approval_reason_in(policy, &call.tool_name, &arguments, cwd, confined)
            .filter(|_| !read_only_mcp);
        let Some(reason) = forced.clone().or(policy_reason) else {
            return self.let_run(call, rewritten);
        };
        if forced.is_none() && self.approvals.is_allowed_for_session(&call.tool_name) {
            return self.let_run(call, rewritten);
        }
        match self.permission_hooks(call, &arguments).await {
            Some(Ok(updated)) => return self.let_run(call, updated.or(rewritten)),
            Some(Err(reason)) => return ToolCallDecision::Block { reason },
            None => {}
        }
        let asked = self
            .ask_person(
                &call.call_id,
                &call.tool_name,
                &call.tool_name,
                &arguments,
                reason,
                &call.cancel,
            )
            .await;
        match asked {
            Ok(()) => self.let_run(call, rewritten),
            Err(reason) => ToolCallDecision::Block { reason },
        }
    }

    /// Asks the attached clients whether a call may go ahead: `Ok` when a person allowed it,
    /// `Err` with the reason the model is told otherwise (denied, nobody to ask, cancelled).
    /// `approval_key` is what an "allow for the session" answer allows from then on.
    pub(crate) async fn ask_person(
        &self,
        call_id: &str,
        tool_name: &str,
        approval_key: &str,
        arguments: &Value,
        reason: String,
        cancel: &CancellationToken,
    ) -> Result<(), String> {
        // The request follows the events of the reply that made the call.
        self.pump.catch_up().await;
        // Whether anyone could answer is decided before the request goes out: an approver who
        // leaves after seeing it is covered by the grace period below, not refused at once.
        let approver_present = self.gate.has_approver();
        let (request_id, answer) = self.approvals.open(approval_key);
        self.emit(SessionEvent::ApprovalRequested {
            request_id: request_id.clone(),
            tool_call_id: call_id.to_string(),
            tool_name: tool_name.to_string(),
            arguments: arguments.clone(),
            reason,
        });
        if !approver_present {
            if self.approvals.withdraw(&request_id) {
                self.emit(SessionEvent::ApprovalResolved {
                    request_id,
                    decision: ApprovalDecision::Deny,
                    reason: Some(NO_APPROVER_REASON.into()),
                    resolved_by: DAEMON_RESOLVER.into(),
                });
            }
            return Err(NO_APPROVER_REASON.into());
        }
        self.notify_hooks(
            "permission_prompt",
            format!("rein needs your permission to use {tool_name}"),
        );
        let pending = PendingApproval { session: self, request_id };
        let mut answer = answer;
        let grace = self.env().defaults.approval_grace;
        let answer = tokio::select! {
            answer = &mut answer => answer.ok(),
            () = cancel.cancelled() => None,
            () = self.gate.abandoned(grace) => {
                if self.approvals.withdraw(&pending.request_id) {
                    self.emit(SessionEvent::ApprovalResolved {
                        request_id: pending.request_id.clone(),
                        decision: ApprovalDecision::Deny,
                        reason: Some(NO_APPROVER_LEFT_REASON.into()),
                        resolved_by: DAEMON_RESOLVER.into(),
                    });
                    return Err(NO_APPROVER_LEFT_REASON.into());
                }
                // An answer came in just before the deadline: it wins.
                answer.try_recv().ok()
            }
        };
        drop(pending);
        match answer {
            Some(answer) => match answer.decision {
                ApprovalDecision::AllowOnce | ApprovalDecision::AllowSession => Ok(()),
                ApprovalDecision::Deny => {
                    Err(match answer.reason.filter(|r| !r.trim().is_empty()) {
                        Some(reason) => format!("the user denied this call: {reason}"),
                        None => "the user denied this call".to_string(),
                    })
                }
            },
            None => Err(APPROVAL_CANCELLED_REASON.into()),
        }
    }

    /// Lets a call run (with the arguments a hook rewrote, if any), remembering it for the
    /// `PostToolUse` hooks.
    fn let_run(&self, call: &ToolCallContext, rewritten: Option<Value>) -> ToolCallDecision {
        self.live().ran_calls.insert(call.call_id.clone());
        match rewritten {
            Some(arguments) => ToolCallDecision::ProceedWith { arguments },
            None => ToolCallDecision::Proceed,
        }
    }

    /// After a call: `PostToolUse` or `PostToolUseFailure` hooks for a call that ran.
    async fn after_tool_call(
        &self,
        call: &ToolCallContext,
        result: ToolResultMessage,
    ) -> ToolResultMessage {
        if !self.live().ran_calls.remove(&call.call_id) {
            return result;
        }
        self.post_tool_hooks(call, &call.arguments, result).await
    }
}
