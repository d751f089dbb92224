//! The terminal client's state: the transcript, the status line, pending approvals, the input
//! box and the overlays, changed by session events ([`App::apply`]) and keys ([`App::key`]).
//!
//! The app never talks to the daemon: keys become [`Action`]s that the runtime carries out,
//! so everything here is testable without a terminal or a daemon.

use super::editor::Editor;
use super::keys::{KeyAction, KeyMap};
use super::theme::{Role, Theme};
use super::transcript::{Ended, Transcript, ViewOptions};
use crate::interactive::input::{self, BusyMode, Line as Typed, Slash};
use crate::render::{
    RenderOptions, Renderer, approval_text, client_text, summarize_arguments, user_text,
};
use crate::style::Style as AnsiStyle;
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use rein_protocol::event::{ApprovalDecision, EndReason, EventEnvelope, SessionEvent};
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, SessionState, SessionSummary};
use serde_json::Value;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// How long after an approval was answered a bare `y`, `a` or `n` is held back instead of
/// being sent as a prompt (it was most likely meant for the dialog that just closed).
pub const ANSWER_GUARD: Duration = Duration::from_secs(5);

/// What the session is doing, for the status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Activity {
    /// Nothing runs.
    Idle,
    /// A request to the model is out; nothing streamed yet.
    WaitingForModel,
    /// The model is reasoning.
    Thinking,
    /// The model is writing its answer.
    Writing,
    /// A tool runs.
    RunningTool(String),
    /// A tool call waits for a person's answer.
    WaitingForApproval,
    /// The context is being summarized.
    Compacting,
}

impl Activity {
    fn label(&self) -> String {
        match self {
            Self::Idle => "ready".into(),
            Self::WaitingForModel => "waiting for model".into(),
            Self::Thinking => "thinking".into(),
            Self::Writing => "writing".into(),
            Self::RunningTool(name) => format!("running `{name}`"),
            Self::WaitingForApproval => "waiting for approval".into(),
            Self::Compacting => "compacting".into(),
        }
    }
}

/// The figures of the status line.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// What the session does now, and since when.
    pub activity: Activity,
    /// When the activity started.
    pub since: Instant,
    /// When the current run started.
    pub run_started: Option<Instant>,
    /// Tokens the session used.
    pub tokens: u64,
    /// What the session cost, in US dollars.
    pub cost: f64,
    /// Tokens of the context the next request sends.
    pub context_tokens: u64,
    /// The model's context window.
    pub context_window: u64,
    /// Queued steering and follow-up messages.
    pub queue: (usize, usize),
}

/// A tool call waiting for an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Approval {
    /// The request id.
    pub request_id: String,
    /// The tool.
    pub tool_name: String,
    /// Its arguments.
    pub arguments: Value,
    /// Why it asks.
    pub reason: String,
    /// The change, for `edit` and `write`.
    pub diff: Option<String>,
    /// The tool call it is about.
    pub tool_call_id: String,
}

/// The session picker of `/resume`.
#[derive(Debug, Clone, PartialEq)]
pub struct Picker {
    /// Sessions with a prompt, most recent first.
    pub sessions: Vec<SessionSummary>,
    /// The highlighted one.
    pub selected: usize,
}

/// What the session is, for the status line and commands.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionView {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// Its project directory.
    pub cwd: PathBuf,
    /// `provider/model`.
    pub model: String,
    /// The approval policy.
    pub policy: ApprovalPolicy,
    /// The active leaf (where `/fork` forks).
    pub leaf_id: Option<String>,
}

/// The link to the daemon.
#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    /// Connected and subscribed.
    Up,
    /// Lost; trying again since then.
    Lost(Instant),
}

/// A question the next Ctrl-C answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirm {
    /// Cancel the run and drop the queued messages.
    CancelAndClear,
    /// Leave.
    Quit,
}

/// What the runtime should do.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Send a prompt (a steer or follow-up while running).
    Send {
        /// The text.
        text: String,
        /// Images its `@path` mentions attach.
        images: Vec<rein_protocol::message::ContentBlock>,
        /// Queue it as a follow-up.
        follow_up: bool,
    },
    /// Run a shell command in the session's directory.
    Shell(String),
    /// A slash command.
    Slash(Slash),
    /// Answer an approval.
    Answer {
        /// The request.
        request_id: String,
        /// The answer.
        decision: ApprovalDecision,
        /// Why, for a denial.
        reason: Option<String>,
    },
    /// Cancel the run (queued messages go on).
    Cancel,
    /// Drop the queued messages, then cancel the run.
    CancelAndClear,
    /// Switch to another session.
    Open(String),
    /// Leave.
    Quit,
}

/// The whole client state.
#[derive(Debug)]
pub struct App {
    /// Colours and symbols.
    pub theme: Theme,
    /// The session.
    pub session: SessionView,
    /// What happened.
    pub transcript: Transcript,
    /// The status line.
    pub status: Status,
    /// Approvals waiting, oldest first.
    pub approvals: Vec<Approval>,
    /// The input box.
    pub editor: Editor,
    /// Expanded tool output and reasoning.
    pub view: ViewOptions,
    /// Lines scrolled up from the end of the transcript.
    pub scroll: usize,
    /// What text typed during a run does.
    pub mode: BusyMode,
    /// A pending yes/no question for Ctrl-C.
    pub confirm: Option<Confirm>,
    /// The `/resume` picker when open.
    pub picker: Option<Picker>,
    /// A one-line hint under the input (completions, how to leave).
    pub hint: Option<String>,
    /// The link to the daemon.
    pub connection: Connection,
    /// A run is active.
    pub running: bool,
    /// The approval a typed reason will deny.
    pub reason_for: Option<String>,
    /// When an approval was last answered (anywhere).
    answered_at: Option<Instant>,
    /// A held-back answer-like text was shown once; Enter again sends it.
    held_back: Option<String>,
    /// Renders the events the transcript shows as plain notices.
    notices: Renderer,
    /// Which key does what.
    pub keys: KeyMap,
}

impl App {
    /// The app for `state`, drawn with `theme`.
    pub fn new(state: &SessionState, theme: Theme, history: Vec<String>, now: Instant) -> Self {
        let cwd = PathBuf::from(&state.cwd);
        let mut app = Self {
            theme,
            session: SessionView {
                id: state.session_id.clone(),
                name: state.name.clone(),
                cwd: cwd.clone(),
                model: state.model.to_string(),
                policy: state.approval_policy,
                leaf_id: state.leaf_id.clone(),
            },
            transcript: Transcript::new(&cwd),
            status: Status {
                activity: Activity::Idle,
                since: now,
                run_started: None,
                tokens: 0,
                cost: 0.0,
                context_tokens: 0,
                context_window: 0,
                queue: (0, 0),
            },
            approvals: Vec::new(),
            editor: Editor::with_history(history),
            view: ViewOptions::default(),
            scroll: 0,
            mode: BusyMode::default(),
            confirm: None,
            picker: None,
            hint: None,
            connection: Connection::Up,
            running: false,
            reason_for: None,
            answered_at: None,
            held_back: None,
            notices: Renderer::new(RenderOptions { style: AnsiStyle::plain(), interactive: true }),
            keys: KeyMap::default(),
        };
        app.refresh(state, now);
        app
    }

    /// Binds `keys`; the hints on screen name them.
    pub fn set_keys(&mut self, keys: KeyMap) {
        self.transcript.set_key_names(super::transcript::KeyNames {
            expand_tools: keys.first(KeyAction::ExpandTools),
            show_thinking: keys.first(KeyAction::ShowThinking),
        });
        self.keys = keys;
    }

    /// Takes in a fresh `session/state`.
    pub fn refresh(&mut self, state: &SessionState, now: Instant) {
        self.session.id = state.session_id.clone();
        self.session.name = state.name.clone();
        self.session.model = state.model.to_string();
        self.session.policy = state.approval_policy;
        self.session.leaf_id = state.leaf_id.clone();
        self.status.tokens = state.usage.total_tokens;
        self.status.cost = state.usage.cost.total;
        self.status.context_tokens = state.context_tokens;
        self.status.context_window = state.context_window;
        self.status.queue = (state.queues.steering.len(), state.queues.follow_up.len());
        if state.running && !self.running {
            self.running = true;
            self.status.run_started = Some(now);
            self.set_activity(Activity::WaitingForModel, now);
        } else if !state.running && self.running {
            self.running = false;
            self.set_activity(Activity::Idle, now);
        }
    }

    fn set_activity(&mut self, activity: Activity, now: Instant) {
        if self.status.activity != activity {
            self.status.activity = activity;
            self.status.since = now;
        }
    }

    /// The status line's text, at most `width` columns: the least important figures (run
    /// time, tokens, model) are left out when it does not fit.
    pub fn status_text(&self, now: Instant, width: usize) -> String {
        use super::transcript::seconds;
        let sep = self.theme.symbol(super::theme::Symbol::Separator);
        // (priority: lower is dropped first, text)
        let mut parts: Vec<(u8, String)> = Vec::new();
        let state = match &self.connection {
            Connection::Lost(since) => {
                format!(
                    "reconnecting to the daemon {}",
                    seconds(now.saturating_duration_since(*since))
                )
            }
            Connection::Up if self.status.activity == Activity::Idle => {
                self.status.activity.label()
            }
            Connection::Up => format!(
                "{} {}",
                self.status.activity.label(),
                seconds(now.saturating_duration_since(self.status.since))
            ),
        };
        parts.push((9, state));
        if let Some(started) = self.status.run_started.filter(|_| self.running) {
            parts.push((1, format!("run {}", seconds(now.saturating_duration_since(started)))));
        }
        parts.push((2, format!("{} tokens", compact_count(self.status.tokens))));
        if let Some(percent) =
            self.status.context_tokens.saturating_mul(100).checked_div(self.status.context_window)
        {
            parts.push((6, format!("context {percent}%")));
        }
        parts.push((5, format!("${:.4}", self.status.cost)));
        parts.push((3, self.session.model.clone()));
        parts.push((7, format!("approve {}", self.session.policy.as_str())));
        let (steering, follow_up) = self.status.queue;
        if steering + follow_up > 0 {
            parts.push((8, format!("queue {steering} steer, {follow_up} follow-up")));
        }
        loop {
            let text = parts.iter().map(|(_, text)| text.as_str()).collect::<Vec<_>>().join(sep);
            let fits = unicode_width::UnicodeWidthStr::width(text.as_str()) < width;
            let lowest = parts.iter().enumerate().min_by_key(|(_, (priority, _))| *priority);
            match lowest {
                Some((at, (priority, _))) if !fits && *priority < 9 => {
                    parts.remove(at);
                }
                _ => return text,
            }
        }
    }

    /// Takes in one event of the session.
    pub fn apply(&mut self, envelope: &EventEnvelope, now: Instant) {
        let event = &envelope.event;
        match event {
            SessionEvent::AgentStart { .. } => {
                self.running = true;
                self.status.run_started = Some(now);
                self.set_activity(Activity::WaitingForModel, now);
            }
            SessionEvent::TurnStart { .. } => self.set_activity(Activity::WaitingForModel, now),
            SessionEvent::MessageStart { message: Message::User(user) } => {
                self.transcript.user(&user_text(&user.content));
            }
            SessionEvent::MessageUpdate { delta } => match delta {
                rein_protocol::event::AssistantDelta::TextDelta { delta, .. } => {
                    self.set_activity(Activity::Writing, now);
                    self.transcript.answer_delta(delta);
                }
                rein_protocol::event::AssistantDelta::ThinkingDelta { delta, .. } => {
                    self.set_activity(Activity::Thinking, now);
                    self.transcript.thinking_delta(delta);
                }
                _ => {}
            },
            SessionEvent::MessageEnd { message } => {
                self.transcript.close();
                if let Message::Assistant(reply) = message.as_ref() {
                    self.status.tokens += reply.usage.total_tokens;
                    self.status.cost += reply.usage.cost.total;
                    let usage = &reply.usage;
                    let context = usage.input + usage.cache_read + usage.cache_write + usage.output;
                    if context > 0 {
                        self.status.context_tokens = context;
                    }
                    if let Some(error) = reply.error_message.as_deref().filter(|e| !e.is_empty()) {
                        self.transcript.notice(format!("model error: {error}"), Role::Bad);
                    }
                }
            }
            SessionEvent::ToolExecutionStart { tool_call_id, tool_name, arguments } => {
                self.set_activity(Activity::RunningTool(tool_name.clone()), now);
                self.transcript.tool_start(tool_call_id, tool_name, arguments, now);
            }
            SessionEvent::ToolExecutionUpdate { tool_call_id, content, .. } => {
                self.transcript.tool_output(tool_call_id, content);
            }
            SessionEvent::ToolExecutionEnd { tool_call_id, tool_name, result } => {
                let output = result.text();
                let ended = Ended {
                    id: tool_call_id,
                    name: tool_name,
                    output: &output,
                    is_error: result.is_error,
                    details: result.details.as_ref(),
                };
                self.transcript.tool_end(ended, now);
                self.set_activity(Activity::WaitingForModel, now);
            }
            SessionEvent::ShellStart { shell_id, command } => {
                let arguments = serde_json::json!({ "command": command });
                self.transcript.tool_start(shell_id, "!", &arguments, now);
            }
            SessionEvent::ShellOutput { shell_id, chunk } => {
                self.transcript.tool_text(shell_id, chunk)
            }
            SessionEvent::ShellEnd { shell_id, exit_code, cancelled } => {
                let output = self
                    .transcript
                    .tools()
                    .find(|tool| tool.id == *shell_id)
                    .map(|tool| tool.output.clone())
                    .unwrap_or_default();
                let output = if *cancelled { format!("{output}\n(cancelled)") } else { output };
                let details = serde_json::json!({ "exitCode": exit_code });
                let failed = *cancelled || *exit_code != Some(0);
                let ended = Ended {
                    id: shell_id,
                    name: "!",
                    output: &output,
                    is_error: failed,
                    details: Some(&details),
                };
                self.transcript.tool_end(ended, now);
            }
            SessionEvent::ApprovalRequested {
                request_id,
                tool_call_id,
                tool_name,
                arguments,
                reason,
            } => {
                if !self.approvals.iter().any(|a| a.request_id == *request_id) {
                    self.transcript.set_asking(tool_call_id, true);
                    let diff = super::diff::proposed(tool_name, arguments, &self.session.cwd);
                    self.approvals.push(Approval {
                        request_id: request_id.clone(),
                        tool_name: tool_name.clone(),
                        arguments: arguments.clone(),
                        reason: reason.clone(),
                        diff,
                        tool_call_id: tool_call_id.clone(),
                    });
                    let summary = summarize_arguments(tool_name, arguments);
                    self.transcript.notice(
                        format!("approval needed: {tool_name} {summary} ({reason})"),
                        Role::Notice,
                    );
                }
                self.set_activity(Activity::WaitingForApproval, now);
            }
            SessionEvent::ApprovalResolved { request_id, decision, reason, resolved_by } => {
                let before = self.approvals.len();
                if let Some(approval) = self.approvals.iter().find(|a| a.request_id == *request_id)
                {
                    let tool_call_id = approval.tool_call_id.clone();
                    self.transcript.set_asking(&tool_call_id, false);
                }
                self.approvals.retain(|a| a.request_id != *request_id);
                if self.approvals.len() < before {
                    self.answered_at = Some(now);
                }
                if self.reason_for.as_deref() == Some(request_id.as_str()) {
                    // The reason being typed was for this dialog: it must not go out as a
                    // prompt when Enter comes.
                    self.reason_for = None;
                    if !self.editor.is_empty() {
                        self.editor.clear();
                        self.hint = None;
                        self.transcript.notice(
                            "the approval was answered elsewhere; the reason you were typing was dropped",
                            Role::Notice,
                        );
                    }
                }
                let by = envelope
                    .client
                    .as_ref()
                    .map(client_text)
                    .unwrap_or_else(|| resolved_by.clone());
                let role =
                    if *decision == ApprovalDecision::Deny { Role::Bad } else { Role::Notice };
                self.transcript.notice(approval_text(*decision, reason.as_deref(), &by), role);
                if self.approvals.is_empty() && self.running {
                    self.set_activity(Activity::WaitingForModel, now);
                }
            }
            SessionEvent::QueueChanged { queues } => {
                self.status.queue = (queues.steering.len(), queues.follow_up.len());
            }
            SessionEvent::ModelChanged { model } => {
                self.session.model = model.to_string();
                self.transcript.notice(format!("model: {model}"), Role::Notice);
            }
            SessionEvent::ApprovalPolicyChanged { policy } => {
                self.session.policy = *policy;
                self.transcript
                    .notice(format!("approval policy: {}", policy.as_str()), Role::Notice);
            }
            SessionEvent::LeafChanged { leaf_id } => self.session.leaf_id = leaf_id.clone(),
            SessionEvent::CompactionStart { .. } => {
                self.set_activity(Activity::Compacting, now);
                self.plain_notice(event);
            }
            SessionEvent::CompactionEnd { .. } => {
                let next = if self.running { Activity::WaitingForModel } else { Activity::Idle };
                self.set_activity(next, now);
                self.plain_notice(event);
            }
            SessionEvent::AgentEnd { reason, .. } => {
                self.running = false;
                self.set_activity(Activity::Idle, now);
                self.transcript.close();
                let role = if *reason == EndReason::Error { Role::Bad } else { Role::Dim };
                self.notice_from_renderer(envelope, role);
            }
            SessionEvent::Settled => {
                self.running = false;
                self.set_activity(Activity::Idle, now);
            }
            SessionEvent::Error { .. } => self.notice_from_renderer(envelope, Role::Bad),
            _ => self.plain_notice(event),
        }
    }

    /// The plain-text renderer's lines for events the transcript has no cell of its own for.
    fn plain_notice(&mut self, event: &SessionEvent) {
        let text: String = self.notices.render(event).into_iter().map(|chunk| chunk.text).collect();
        let text = text.trim_end();
        if !text.is_empty() {
            self.transcript.notice(text.to_string(), Role::Notice);
        }
    }

    fn notice_from_renderer(&mut self, envelope: &EventEnvelope, role: Role) {
        let text: String =
            self.notices.render_envelope(envelope).into_iter().map(|chunk| chunk.text).collect();
        let text = text.trim_end();
        if !text.is_empty() {
            self.transcript.notice(text.to_string(), role);
        }
    }

    /// Takes in a key press: the key map says what a bound key does; other keys edit the
    /// input (or answer an open approval dialog).
    pub fn key(&mut self, key: KeyEvent, now: Instant) -> Vec<Action> {
        if key.kind == KeyEventKind::Release {
            return Vec::new();
        }
        let bound = self.keys.action(&key);
        if bound == Some(KeyAction::Interrupt) {
            return self.interrupt();
        }
        if self.confirm.is_some() && bound == Some(KeyAction::Cancel) {
            self.confirm = None;
            self.hint = None;
            return Vec::new();
        }
        if self.confirm == Some(Confirm::Quit) {
            self.confirm = None;
            self.hint = None;
        }
        match bound {
            Some(KeyAction::ScrollUp) => {
                self.scroll = self.scroll.saturating_add(10);
                return Vec::new();
            }
            Some(KeyAction::ScrollDown) => {
                self.scroll = self.scroll.saturating_sub(10);
                return Vec::new();
            }
            Some(KeyAction::ExpandTools) => {
                self.view.expand_tools = !self.view.expand_tools;
                return Vec::new();
            }
            Some(KeyAction::ShowThinking) => {
                self.view.show_thinking = !self.view.show_thinking;
                return Vec::new();
            }
            _ => {}
        }
        if let Some(picker) = self.picker.as_mut() {
            match (bound, key.code) {
                (Some(KeyAction::HistoryPrev), _) | (_, KeyCode::Up) => {
                    picker.selected = picker.selected.saturating_sub(1)
                }
                (Some(KeyAction::HistoryNext), _) | (_, KeyCode::Down) => {
                    picker.selected =
                        (picker.selected + 1).min(picker.sessions.len().saturating_sub(1))
                }
                (Some(KeyAction::Submit), _) => {
                    let chosen = picker.sessions.get(picker.selected).map(|s| s.session_id.clone());
                    self.picker = None;
                    return chosen.map(Action::Open).into_iter().collect();
                }
                (Some(KeyAction::Cancel), _) => self.picker = None,
                _ => {}
            }
            return Vec::new();
        }
        // An open approval dialog takes the keys: nothing typed can become a prompt.
        if self.reason_for.is_none()
            && let Some(approval) = self.approvals.first()
        {
            let request_id = approval.request_id.clone();
            let answer = |decision| {
                vec![Action::Answer { request_id: request_id.clone(), decision, reason: None }]
            };
            return match (bound, key.code) {
                (_, KeyCode::Char('y') | KeyCode::Char('Y')) => answer(ApprovalDecision::AllowOnce),
                (_, KeyCode::Char('a') | KeyCode::Char('A')) => {
                    answer(ApprovalDecision::AllowSession)
                }
                (_, KeyCode::Char('n') | KeyCode::Char('N')) => answer(ApprovalDecision::Deny),
                (_, KeyCode::Char('r') | KeyCode::Char('R')) => {
                    self.reason_for = Some(request_id);
                    let back = self.keys.first(KeyAction::Cancel);
                    self.hint = Some(format!(
                        "type why it is denied, then {} ({back}: back to the dialog)",
                        self.keys.first(KeyAction::Submit)
                    ));
                    Vec::new()
                }
                (Some(KeyAction::Cancel), _) if self.running => vec![Action::Cancel],
                _ => Vec::new(),
            };
        }
        if let Some(action) = bound {
            return self.bound_key(action, now);
        }
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Backspace => self.editor.backspace(),
            KeyCode::Delete => self.editor.delete(),
            KeyCode::Left => self.editor.left(),
            KeyCode::Right => self.editor.right(),
            KeyCode::Char(c) if !ctrl => {
                self.editor.insert(c.encode_utf8(&mut [0; 4]));
                self.hint = None;
            }
            _ => {}
        }
        Vec::new()
    }

    /// What a bound key does in the input box.
    fn bound_key(&mut self, action: KeyAction, now: Instant) -> Vec<Action> {
        match action {
            KeyAction::Cancel => {
                if self.reason_for.take().is_some() {
                    self.editor.clear();
                    self.hint = None;
                    return Vec::new();
                }
                if self.running {
                    return vec![Action::Cancel];
                }
                self.hint = None;
            }
            KeyAction::Leave if self.editor.is_empty() => return vec![Action::Quit],
            KeyAction::Leave => self.editor.delete(),
            KeyAction::Newline => self.editor.insert("\n"),
            KeyAction::Submit => return self.submit(now),
            KeyAction::Complete => {
                let cwd = self.session.cwd.clone();
                let candidates = self.editor.complete(&cwd);
                self.hint = (!candidates.is_empty()).then(|| candidates.join("  "));
            }
            KeyAction::DeleteWord => self.editor.delete_word(),
            KeyAction::ClearInput => self.editor.clear(),
            KeyAction::LineStart => self.editor.home(),
            KeyAction::LineEnd => self.editor.end(),
            KeyAction::HistoryPrev => self.editor.up(),
            KeyAction::HistoryNext => self.editor.down(),
            // Handled before the input box sees the key.
            KeyAction::Interrupt
            | KeyAction::ExpandTools
            | KeyAction::ShowThinking
            | KeyAction::ScrollUp
            | KeyAction::ScrollDown => {}
        }
        Vec::new()
    }

    /// Pasted text goes into the input box as is (newlines included).
    pub fn paste(&mut self, text: &str) {
        if self.approvals.is_empty() || self.reason_for.is_some() {
            match super::editor::pasted_image_mention(text, &self.session.cwd) {
                Some(mention) => self.editor.insert(&mention),
                None => self.editor.insert(text),
            }
        }
    }

    /// Ctrl-C: cancels the run (asking once before dropping queued messages), clears typed
    /// text, or asks before leaving.
    fn interrupt(&mut self) -> Vec<Action> {
        if self.running {
            let (steering, follow_up) = self.status.queue;
            if steering + follow_up == 0 {
                self.confirm = None;
                return vec![Action::CancelAndClear];
            }
            if self.confirm == Some(Confirm::CancelAndClear) {
                self.confirm = None;
                self.hint = None;
                return vec![Action::CancelAndClear];
            }
            self.confirm = Some(Confirm::CancelAndClear);
            self.hint = Some(format!(
                "{} again cancels the run and drops {} queued message(s); {} keeps them",
                self.keys.first(KeyAction::Interrupt),
                steering + follow_up,
                self.keys.first(KeyAction::Cancel)
            ));
            return Vec::new();
        }
        if !self.editor.is_empty() {
            self.editor.clear();
            self.reason_for = None;
            return Vec::new();
        }
        if self.confirm == Some(Confirm::Quit) {
            return vec![Action::Quit];
        }
        self.confirm = Some(Confirm::Quit);
        self.hint = Some(format!(
            "press {} again or {} to leave",
            self.keys.first(KeyAction::Interrupt),
            self.keys.first(KeyAction::Leave)
        ));
        Vec::new()
    }

    /// Enter: sends what was typed.
    fn submit(&mut self, now: Instant) -> Vec<Action> {
        if self.editor.text().ends_with('\\') {
            // A trailing backslash continues on a new line.
            self.editor.backspace();
            self.editor.insert("\n");
            return Vec::new();
        }
        if let Some(request_id) = self.reason_for.take() {
            let reason = self.editor.take().trim().to_string();
            self.hint = None;
            return vec![Action::Answer {
                request_id,
                decision: ApprovalDecision::Deny,
                reason: (!reason.is_empty()).then_some(reason),
            }];
        }
        let text = self.editor.text().to_string();
        let recently_answered =
            self.answered_at.is_some_and(|at| now.saturating_duration_since(at) < ANSWER_GUARD);
        if recently_answered
            && input::parse_approval(&text).is_some()
            && self.held_back.as_deref() != Some(text.as_str())
        {
            self.held_back = Some(text);
            self.hint = Some(
                "that approval was already answered; Enter again sends this as a message".into(),
            );
            return Vec::new();
        }
        self.held_back = None;
        let text = self.editor.take();
        self.hint = None;
        self.scroll = 0;
        match input::parse_line(&text) {
            Ok(Typed::Empty) => Vec::new(),
            Ok(Typed::Text { text, follow_up }) => {
                let composed = super::editor::compose(&text, &self.session.cwd);
                let follow_up = follow_up || self.mode == BusyMode::FollowUp;
                vec![Action::Send { text: composed.text, images: composed.images, follow_up }]
            }
            Ok(Typed::Shell(command)) => vec![Action::Shell(command)],
            Ok(Typed::Slash(Slash::Quit)) => vec![Action::Quit],
            Ok(Typed::Slash(slash)) => vec![Action::Slash(slash)],
            Err(usage) => {
                self.transcript.notice(usage, Role::Bad);
                Vec::new()
            }
        }
    }
}

/// `12345` as `12.3k`.
pub fn compact_count(count: u64) -> String {
    match count {
        0..=999 => count.to_string(),
        1_000..=999_999 => format!("{:.1}k", count as f64 / 1_000.0),
        _ => format!("{:.1}M", count as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn app() -> App {
        let state = json!({
            "session_id": "s", "cwd": "/tmp", "model": {"provider": "fake", "model": "m"},
            "thinking_level": "medium", "approval_policy": "ask", "running": true,
            "queues": {"steering": [{"id": "q-1", "content": [{"type": "text", "text": "later"}]}], "follow_up": []},
            "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0,
                "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0}},
            "context_tokens": 0, "context_window": 1000, "trusted": false, "last_seq": 3, "stream": "x"
        });
        let state: SessionState = serde_json::from_value(state).unwrap_or_else(|e| panic!("{e}"));
        App::new(&state, Theme::default(), Vec::new(), Instant::now())
    }

    fn press(app: &mut App, code: KeyCode, modifiers: KeyModifiers) -> Vec<Action> {
        app.key(KeyEvent::new(code, modifiers), Instant::now())
    }

    #[test]
    fn ctrl_c_asks_once_before_dropping_the_queue_and_esc_only_cancels() {
        let mut app = app();
        assert!(app.running);
        assert_eq!(press(&mut app, KeyCode::Esc, KeyModifiers::NONE), [Action::Cancel]);
        assert!(press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL).is_empty());
        assert!(app.hint.as_deref().is_some_and(|hint| hint.contains("1 queued")));
        assert_eq!(
            press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL),
            [Action::CancelAndClear]
        );
        // Idle: twice to leave.
        app.running = false;
        assert!(press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL).is_empty());
        assert_eq!(press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL), [Action::Quit]);
    }

    #[test]
    fn multi_line_input_and_steering_while_running() {
        let mut app = app();
        for c in "first".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        press(&mut app, KeyCode::Enter, KeyModifiers::ALT);
        for c in "second".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert_eq!(
            press(&mut app, KeyCode::Enter, KeyModifiers::NONE),
            [Action::Send { text: "first\nsecond".into(), images: Vec::new(), follow_up: false }]
        );
        app.paste(">> queued\nafter");
        assert_eq!(
            press(&mut app, KeyCode::Enter, KeyModifiers::NONE),
            [Action::Send { text: "queued\nafter".into(), images: Vec::new(), follow_up: true }]
        );
        assert_eq!(app.editor.history().len(), 2);
    }

    fn at(seq: u64, event: SessionEvent) -> EventEnvelope {
        EventEnvelope { session_id: "s".into(), seq, timestamp: 0, event, client: None }
    }

    #[test]
    fn the_status_line_says_what_runs_and_fits_the_width() {
        let mut app = app();
        let now = Instant::now();
        let later = |ms: u64| now + Duration::from_millis(ms);
        app.apply(&at(4, SessionEvent::AgentStart { run_id: "r".into() }), now);
        assert_eq!(
            app.status_text(later(2100), 200),
            "waiting for model 2.1 s · run 2.1 s · 0 tokens · context 0% · $0.0000 · fake/m · \
             approve ask · queue 1 steer, 0 follow-up"
        );
        // A reply's usage moves the tokens, the cost and how full the context is.
        let reply: Message = serde_json::from_value(json!({
            "role": "assistant", "content": [], "api": "openai-chat", "provider": "fake",
            "model": "m", "stop_reason": "tool_use",
            "usage": {"input": 300, "output": 50, "cache_read": 100, "cache_write": 0,
                "total_tokens": 1450, "cost": {"total": 0.0125}}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let end = SessionEvent::MessageEnd { message: std::sync::Arc::new(reply) };
        app.apply(&at(5, end), later(2500));
        let start = SessionEvent::ToolExecutionStart {
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "sleep 5"}),
        };
        app.apply(&at(6, start), later(3000));
        assert_eq!(
            app.status_text(later(6200), 200),
            "running `bash` 3.2 s · run 6.2 s · 1.4k tokens · context 45% · $0.0125 · fake/m · \
             approve ask · queue 1 steer, 0 follow-up"
        );
        let ask = SessionEvent::ApprovalRequested {
            request_id: "ap".into(),
            tool_call_id: "c2".into(),
            tool_name: "write".into(),
            arguments: json!({"path": "x", "content": ""}),
            reason: "ask".into(),
        };
        app.apply(&at(7, ask), later(7000));
        let text = app.status_text(later(8000), 200);
        assert!(text.starts_with("waiting for approval 1.0 s · run 8.0 s"), "{text}");
        // Narrow: the least important figures go first; the state and the queue stay.
        let narrow = app.status_text(later(8000), 60);
        assert!(unicode_width::UnicodeWidthStr::width(narrow.as_str()) < 60, "{narrow}");
        assert!(narrow.starts_with("waiting for approval 1.0 s · "), "{narrow}");
        assert!(narrow.contains("queue 1 steer"), "{narrow}");
        assert!(!narrow.contains("run 8.0 s"), "{narrow}");
        // The run ends: ready, no clock.
        let ended = SessionEvent::Settled;
        app.apply(&at(8, ended), later(9000));
        assert!(app.status_text(later(9500), 200).starts_with("ready · 1.4k tokens"));
    }

    #[test]
    fn a_reason_being_typed_when_another_client_answers_is_never_sent_as_a_prompt() {
        let mut app = app();
        let ask = SessionEvent::ApprovalRequested {
            request_id: "ap".into(),
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "rm -rf build"}),
            reason: "bash asks".into(),
        };
        app.apply(&at(4, ask), Instant::now());
        assert!(press(&mut app, KeyCode::Char('r'), KeyModifiers::NONE).is_empty());
        for c in "too risky".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        let resolved = SessionEvent::ApprovalResolved {
            request_id: "ap".into(),
            decision: ApprovalDecision::AllowOnce,
            reason: None,
            resolved_by: "other".into(),
        };
        app.apply(&at(5, resolved), Instant::now());
        assert!(app.reason_for.is_none() && app.editor.is_empty());
        assert!(press(&mut app, KeyCode::Enter, KeyModifiers::NONE).is_empty());
        let said = app.transcript.cells.iter().any(|cell| {
            matches!(cell, super::super::transcript::Cell::Notice(text, _) if text.contains("reason you were typing was dropped"))
        });
        assert!(said);
    }

    #[test]
    fn a_pasted_image_path_is_sent_as_an_attached_image() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let image = dir.path().join("shot.png");
        std::fs::write(&image, [0x89, b'P', b'N', b'G']).unwrap_or_else(|e| panic!("{e}"));
        let mut app = app();
        app.running = false;
        app.session.cwd = dir.path().to_path_buf();
        // What dropping a file on a terminal pastes: its quoted path.
        app.paste(&format!("'{}'", image.display()));
        for c in "what is wrong here?".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        let sent = press(&mut app, KeyCode::Enter, KeyModifiers::NONE);
        let expected_text = format!("@{} what is wrong here?", image.display());
        assert_eq!(
            sent,
            [Action::Send {
                text: expected_text,
                images: vec![rein_protocol::message::ContentBlock::Image {
                    data: "iVBORw==".into(),
                    mime_type: "image/png".into()
                }],
                follow_up: false
            }]
        );
    }

    #[test]
    fn ctrl_t_and_ctrl_o_unfold_reasoning_and_tool_output() {
        let mut app = app();
        assert!(!app.view.show_thinking && !app.view.expand_tools);
        press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
        press(&mut app, KeyCode::Char('o'), KeyModifiers::CONTROL);
        assert!(app.view.show_thinking && app.view.expand_tools);
        press(&mut app, KeyCode::Char('t'), KeyModifiers::CONTROL);
        assert!(!app.view.show_thinking);
        assert!(app.editor.is_empty());
    }

    #[test]
    fn configured_keys_change_what_a_key_does() {
        let mut app = app();
        app.running = false;
        let toml = "[keys]\nsubmit = \"ctrl-s\"\nnewline = \"enter\"\ncancel = \"ctrl-g\"\n";
        app.keys = KeyMap::from_toml(toml, std::path::Path::new("tui.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        for c in "one".chars() {
            press(&mut app, KeyCode::Char(c), KeyModifiers::NONE);
        }
        assert!(press(&mut app, KeyCode::Enter, KeyModifiers::NONE).is_empty());
        press(&mut app, KeyCode::Char('2'), KeyModifiers::NONE);
        assert_eq!(
            press(&mut app, KeyCode::Char('s'), KeyModifiers::CONTROL),
            [Action::Send { text: "one\n2".into(), images: Vec::new(), follow_up: false }]
        );
        // Esc no longer cancels; the configured key does.
        app.running = true;
        assert!(press(&mut app, KeyCode::Esc, KeyModifiers::NONE).is_empty());
        assert_eq!(press(&mut app, KeyCode::Char('g'), KeyModifiers::CONTROL), [Action::Cancel]);
        // The hints name the keys in effect.
        press(&mut app, KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(
            app.hint.as_deref(),
            Some("Ctrl-C again cancels the run and drops 1 queued message(s); Ctrl-G keeps them")
        );
    }
}
