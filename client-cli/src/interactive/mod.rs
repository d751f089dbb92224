//! The interactive attach: `rein` (a new session) and `rein attach [SESSION]`.
//!
//! The line editor (rustyline, for history and editing keys) runs on its own blocking thread
//! and hands each line, Ctrl-C or Ctrl-D to the async side, then waits to be told whether to
//! read another line, so the terminal is never left in raw mode when `rein` leaves. The async
//! side reads the daemon's events and prints them above the prompt through rustyline's
//! external printer. Everything typed goes through the protocol: prompts, steering,
//! follow-ups, approval answers and the slash commands (which reuse the session commands).

pub mod input;
mod output;

use crate::client::{Client, ClientError, SessionNotice};
use crate::commands::session::{self as session_cmd, Report};
use crate::commands::{checkpoints, exit};
use crate::follow::{Followed, Follower};
use crate::gap::StreamCursor;
use crate::render::{RenderOptions, Renderer, ToolOutcome, summarize_arguments};
use crate::session::{self, SessionRequest};
use crate::style::Style;
use input::{BusyMode, HELP, Line, Slash};
use output::Output;
use rein_protocol::event::SessionEvent;
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, HistoryPageParams, PromptParams, QueueMessageParams,
    RenameParams, RunLimits, SessionRef, SessionState, SetApprovalPolicyParams, SetModelParams,
    SetThinkingParams, ShellParams,
};
use rein_protocol::requests::{self as rq, Method};
use rustyline::error::ReadlineError;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use tokio::sync::mpsc;

/// What the editor thread reports.
#[derive(Debug)]
enum Input {
    Line(String),
    Interrupt,
    Eof,
}

/// What the async side tells the editor thread after each input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Next {
    ReadAnother,
    Stop,
}

/// Attaches to the requested session until the user leaves.
pub async fn run(socket: &Path, request: SessionRequest) -> Result<u8, ClientError> {
    let mut client = Client::connect_or_start(socket).await?;
    client.initialize(true).await?;
    crate::commands::daemon::warn(&mut client).await;
    let (state, created) = session::prepare(&mut client, &request).await?;
    if created
        && request.model.is_none()
        && let Some(note) = session::local_server_note(&mut client, &state).await
    {
        eprintln!("{note}");
    }
    client.subscribe(&state.session_id, state.last_seq).await?;

    let mut editor = match rustyline::DefaultEditor::new() {
        Ok(editor) => editor,
        Err(error) => return Err(ClientError::Io(std::io::Error::other(error))),
    };
    let history = history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let style = Style::for_stdout();
    let mut output = Output::new(&mut editor);
    let verb = if created { "new session" } else { "attached to" };
    output.print(&format!(
        "rein: {verb} {} ({}, {}); /help for commands\n",
        state.session_id, state.model, state.cwd
    ));
    if !created {
        show_recent(&mut client, &state.session_id, &mut output).await;
    }
    if state.running {
        output.print("a run is active; typing steers it\n");
    }

    let (input_tx, input_rx) = mpsc::unbounded_channel();
    let (next_tx, next_rx) = std::sync::mpsc::channel();
    let editor_thread = std::thread::spawn(move || edit_lines(editor, history, input_tx, next_rx));
    let mut attach = Attach {
        client,
        session_id: state.session_id.clone(),
        cwd: PathBuf::from(&state.cwd),
        running: state.running,
        approvals: VecDeque::new(),
        mode: BusyMode::default(),
        idle_interrupt: false,
        renderer: Renderer::new(RenderOptions { style, interactive: true }),
        output,
        follower: Follower::new(StreamCursor::new(
            &state.session_id,
            state.last_seq,
            state.leaf_id.clone(),
        )),
    };
    let code = attach.event_loop(input_rx, &next_tx).await;
    let _ = next_tx.send(Next::Stop);
    drop(next_tx);
    let _ = editor_thread.join();
    if created {
        session::discard_if_unanswered(&mut attach.client, &attach.session_id).await;
    }
    code
}

/// How many messages of the conversation so far are shown on attach.
const RECENT_MESSAGES: usize = 6;

/// Prints the end of the conversation so far, one line per message. Only the messages shown
/// are fetched.
async fn show_recent(client: &mut Client, session_id: &str, output: &mut Output) {
    let params = HistoryPageParams {
        session_id: session_id.to_string(),
        limit: Some(RECENT_MESSAGES as u32),
        cursor: None,
    };
    match client.request::<rq::SessionMessages>(params).await {
        Ok(result) if !result.messages.is_empty() => {
            let shown = result.messages.len() as u64;
            let skip = result.total.saturating_sub(shown);
            if skip > 0 {
                output.print(&format!("… {skip} earlier messages (/tree shows them all)\n"));
            }
            for message in &result.messages {
                output.print(&format!("  {}\n", session_cmd::describe_message(message)));
            }
        }
        Ok(_) => {}
        Err(error) => output.print(&format!("rein: cannot read the conversation: {error}\n")),
    }
}

/// `$REIN_HOME/history`, the line editor's history.
fn history_file() -> Option<PathBuf> {
    rein_protocol::paths::rein_home().ok().map(|home| home.join("history"))
}

/// The editor thread: one line at a time, each acknowledged before the next.
fn edit_lines(
    mut editor: rustyline::DefaultEditor,
    history: Option<PathBuf>,
    input: mpsc::UnboundedSender<Input>,
    next: std::sync::mpsc::Receiver<Next>,
) {
    loop {
        let event = match editor.readline("> ") {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                Input::Line(line)
            }
            Err(ReadlineError::Interrupted) => Input::Interrupt,
            Err(ReadlineError::Eof) => Input::Eof,
            Err(error) => {
                tracing::warn!("line editor failed: {error}");
                Input::Eof
            }
        };
        if input.send(event).is_err() {
            break;
        }
        match next.recv() {
            Ok(Next::ReadAnother) => continue,
            Ok(Next::Stop) | Err(_) => break,
        }
    }
    if let Some(path) = history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(&path);
    }
}

/// The state of one attach.
struct Attach {
    client: Client,
    session_id: String,
    cwd: PathBuf,
    running: bool,
    approvals: VecDeque<String>,
    mode: BusyMode,
    idle_interrupt: bool,
    renderer: Renderer,
    output: Output,
    /// Follows the session's events, filling gaps.
    follower: Follower,
}

impl Attach {
    async fn event_loop(
        &mut self,
        mut input: mpsc::UnboundedReceiver<Input>,
        next: &std::sync::mpsc::Sender<Next>,
    ) -> Result<u8, ClientError> {
        loop {
            tokio::select! {
                event = input.recv() => {
                    let Some(event) = event else { return Ok(exit::OK) };
                    let decision = self.handle_input(event).await;
                    let stop = decision == Next::Stop;
                    if next.send(decision).is_err() || stop {
                        self.output.flush();
                        return Ok(exit::OK);
                    }
                }
                notice = self.client.next_session_item() => match notice {
                    Ok(notice) => self.handle_item(notice).await,
                    Err(error) => {
                        self.output.print(&format!("rein: {error}; press Enter to leave\n"));
                        let _ = input.recv().await;
                        return Ok(exit::FAILURE);
                    }
                },
            }
        }
    }

    async fn handle_item(&mut self, notice: SessionNotice) {
        let envelope = match self.follower.accept(&mut self.client, notice).await {
            Ok(Some(Followed::Event { envelope, .. })) => envelope,
            Ok(Some(Followed::Gap(gap))) => {
                // What the session recorded in the hole; requests still waiting are sent
                // again on the new subscription.
                self.output.chunks(self.renderer.finish());
                self.approvals.clear();
                self.running = gap.running.is_some();
                self.output.print(&gap.text());
                return;
            }
            Ok(None) => return,
            Err(error) => {
                self.output.print(&format!("rein: cannot follow the session: {error}\n"));
                return;
            }
        };
        let chunks = self.renderer.render_envelope(&envelope);
        self.output.chunks(chunks);
        match envelope.event {
            SessionEvent::AgentStart { .. } => self.running = true,
            SessionEvent::Settled => self.running = false,
            SessionEvent::ApprovalRequested { request_id, .. } => {
                self.approvals.push_back(request_id)
            }
            SessionEvent::ApprovalResolved { request_id, .. } => {
                self.approvals.retain(|pending| *pending != request_id)
            }
            _ => {}
        }
    }

    async fn handle_input(&mut self, input: Input) -> Next {
        let line = match input {
            Input::Eof => return Next::Stop,
            Input::Interrupt => return self.interrupt().await,
            Input::Line(line) => line,
        };
        self.idle_interrupt = false;
        if let Some(request_id) = self.approvals.front().cloned()
            && let Some((decision, reason)) = input::parse_approval(&line)
        {
            let params = ApprovalRespondParams {
                session_id: self.session_id.clone(),
                request_id,
                decision,
                reason,
            };
            self.call_quietly::<rq::ApprovalRespond>(params).await;
            return Next::ReadAnother;
        }
        match input::parse_line(&line) {
            Ok(Line::Empty) => Next::ReadAnother,
            Ok(Line::Text { text, follow_up }) => {
                self.send_text(text, follow_up).await;
                Next::ReadAnother
            }
            Ok(Line::Shell(command)) => {
                let params = ShellParams {
                    session_id: self.session_id.clone(),
                    command,
                    add_to_context: true,
                };
                self.call_quietly::<rq::SessionShell>(params).await;
                Next::ReadAnother
            }
            Ok(Line::Slash(slash)) => self.slash(slash).await,
            Err(usage) => {
                self.output.print(&format!("{usage}\n"));
                Next::ReadAnother
            }
        }
    }

    async fn interrupt(&mut self) -> Next {
        if self.running {
            self.output.print("cancelling the run…\n");
            let params = SessionRef { session_id: self.session_id.clone() };
            self.call_quietly::<rq::SessionCancel>(params).await;
            return Next::ReadAnother;
        }
        if self.idle_interrupt {
            return Next::Stop;
        }
        self.idle_interrupt = true;
        self.output.print("(press Ctrl-C again or Ctrl-D to leave)\n");
        Next::ReadAnother
    }

    /// A prompt when idle; steering or a follow-up while a run is active.
    async fn send_text(&mut self, text: String, follow_up: bool) {
        let follow_up = follow_up || self.mode == BusyMode::FollowUp;
        if self.running {
            let params = QueueMessageParams {
                session_id: self.session_id.clone(),
                text,
                images: Vec::new(),
            };
            if follow_up {
                self.call_quietly::<rq::SessionFollowUp>(params).await;
            } else {
                self.call_quietly::<rq::SessionSteer>(params).await;
            }
            return;
        }
        let params = PromptParams {
            session_id: self.session_id.clone(),
            text,
            images: Vec::new(),
            when_busy: Some(if follow_up { BusyBehavior::FollowUp } else { BusyBehavior::Steer }),
            limits: RunLimits::default(),
            verify: None,
        };
        if self.call_quietly::<rq::SessionPrompt>(params).await {
            self.running = true;
        }
    }

    /// Makes a call whose result needs no printing; prints its error. True when it worked.
    async fn call_quietly<M: Method>(&mut self, params: M::Params) -> bool {
        match self.client.request::<M>(params).await {
            Ok(_) => true,
            Err(error) => {
                self.output.print(&format!("error: {error}\n"));
                false
            }
        }
    }

    fn show(&mut self, report: Result<Report, ClientError>) {
        match report {
            Ok(report) => self.output.print(&report.text),
            Err(error) => self.output.print(&format!("error: {error}\n")),
        }
    }

    async fn slash(&mut self, slash: Slash) -> Next {
        let session = self.session_id.clone();
        if matches!(slash, Slash::Compact(_)) {
            self.output.print("compacting…\n");
        }
        let cwd = self.cwd.clone();
        if let Some(report) =
            session_cmd::slash_report(&mut self.client, &session, &cwd, &slash).await
        {
            self.show(report);
            return Next::ReadAnother;
        }
        match slash {
            // Answered by `slash_report` above.
            Slash::Model(None)
            | Slash::Compact(_)
            | Slash::Branch { .. }
            | Slash::Tree
            | Slash::Label { .. }
            | Slash::Sessions
            | Slash::Trust { .. } => {}
            Slash::Help => self.output.print(&format!("{HELP}\n")),
            Slash::Quit => return Next::Stop,
            Slash::Model(Some(model)) => {
                let params = SetModelParams { session_id: session, model };
                self.call_quietly::<rq::SessionSetModel>(params).await;
            }
            Slash::Thinking(level) => {
                let params = SetThinkingParams { session_id: session, level };
                self.call_quietly::<rq::SessionSetThinking>(params).await;
            }
            Slash::Export { format, file } => {
                let report = session_cmd::export(&mut self.client, &session, format).await;
                match (report, file) {
                    (Ok(report), Some(file)) => match std::fs::write(&file, &report.text) {
                        Ok(()) => self.output.print(&format!("exported to {}\n", file.display())),
                        Err(error) => self
                            .output
                            .print(&format!("error: cannot write {}: {error}\n", file.display())),
                    },
                    (report, None) => self.show(report),
                    (Err(error), Some(_)) => self.output.print(&format!("error: {error}\n")),
                }
            }
            Slash::Mode(Some(mode)) => {
                self.mode = mode;
                self.output.print(&format!("text typed during a run: {}\n", mode.as_str()));
            }
            Slash::Mode(None) => {
                let text = format!("text typed during a run: {}\n", self.mode.as_str());
                self.output.print(&text);
            }
            Slash::Last => {
                let text = expand(self.renderer.tool_outcomes(), None);
                self.output.print(&text);
            }
            Slash::Expand(n) => {
                let text = expand(self.renderer.tool_outcomes(), Some(n));
                self.output.print(&text);
            }
            Slash::Cancel => {
                let report = session_cmd::cancel(&mut self.client, &session).await;
                self.show(report);
            }
            Slash::Undo { turn, force } => {
                let cwd = self.cwd.clone();
                let client = &mut self.client;
                let report = checkpoints::undo(client, Some(&session), &cwd, turn, force).await;
                self.show(report);
            }
            Slash::Rename(name) => {
                let params = RenameParams { session_id: session, name };
                self.call_quietly::<rq::SessionRename>(params).await;
            }
            Slash::Approve(Some(policy)) => {
                let params = SetApprovalPolicyParams { session_id: session, policy };
                self.call_quietly::<rq::SessionSetApprovalPolicy>(params).await;
            }
            Slash::Approve(None) | Slash::Status => {
                let session = SessionRef { session_id: session };
                match self.client.request::<rq::SessionState>(session).await {
                    Ok(state) => self.output.print(&format!("{}\n", status_text(&state))),
                    Err(error) => self.output.print(&format!("error: {error}\n")),
                }
            }
            Slash::New | Slash::Resume | Slash::Fork | Slash::Clear => {
                self.output.print("that command needs the full-screen client (a terminal)\n");
            }
            Slash::Diff(turn) => {
                let cwd = self.cwd.clone();
                let report =
                    checkpoints::diff(&mut self.client, Some(&session), &cwd, turn, None).await;
                self.show(report);
            }
        }
        Next::ReadAnother
    }
}

/// What `/status` says about a session: where it is, its model and policy, how full its
/// context is, what it used and cost, and what is queued.
pub fn status_text(state: &SessionState) -> String {
    let percent = match state.context_window {
        0 => 0,
        window => state.context_tokens.saturating_mul(100) / window,
    };
    let mut text = format!(
        "session {}{}\n  directory {}\n  model {} (thinking {})\n  approval policy {}\n  context {} of {} tokens ({percent}%)\n  used {} tokens, ${:.4}\n  queue {} steering, {} follow-up\n  {}",
        state.session_id,
        state.name.as_deref().map(|name| format!(" \"{name}\"")).unwrap_or_default(),
        state.cwd,
        state.model,
        state.thinking_level.as_str(),
        state.approval_policy.as_str(),
        state.context_tokens,
        state.context_window,
        state.usage.total_tokens,
        state.usage.cost.total,
        state.queues.steering.len(),
        state.queues.follow_up.len(),
        if state.running { "a run is active" } else { "idle" },
    );
    if !state.trusted {
        text.push_str("\n  project not trusted (/trust reads its AGENTS.md and settings)");
    }
    text
}

/// The full output of the `n`-th (1-based) tool call, or of the last one.
fn expand(outcomes: &[ToolOutcome], n: Option<usize>) -> String {
    let index = match n {
        Some(n) => n.checked_sub(1),
        None => outcomes.len().checked_sub(1),
    };
    let Some(outcome) = index.and_then(|index| outcomes.get(index)) else {
        return format!("no such tool call ({} so far)\n", outcomes.len());
    };
    let status = if outcome.is_error { "failed" } else { "ok" };
    let mut text = format!(
        "{} {} ({status}):\n{}",
        outcome.tool_name,
        summarize_arguments(&outcome.tool_name, &outcome.arguments),
        outcome.output
    );
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn expand_shows_the_full_output_of_a_tool_call() {
        let outcomes = vec![
            ToolOutcome {
                tool_name: "bash".into(),
                arguments: json!({"command": "ls"}),
                output: "a\nb".into(),
                is_error: false,
            },
            ToolOutcome {
                tool_name: "read".into(),
                arguments: json!({"path": "x"}),
                output: "nope\n".into(),
                is_error: true,
            },
        ];
        assert_eq!(expand(&outcomes, Some(1)), "bash ls (ok):\na\nb\n");
        assert_eq!(expand(&outcomes, None), "read x (failed):\nnope\n");
        assert!(expand(&outcomes, Some(3)).starts_with("no such tool call (2 so far)"));
        assert!(expand(&[], None).starts_with("no such tool call"));
    }
}
