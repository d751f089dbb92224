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
pub(crate) mod slash;

use crate::client::{Client, ClientError, SessionNotice};
use crate::commands::exit;
use crate::commands::session as session_cmd;
use crate::follow::{Followed, Follower};
use crate::render::{RenderOptions, Renderer, ToolOutcome};
use crate::session::{self, SessionRequest};
use crate::style::Style;
use input::{BusyMode, Line};
use output::Output;
use rein_protocol::event::SessionEvent;
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, ClearQueueParams, HistoryPageParams, PromptParams,
    QueueMessageParams, QueueSelector, RunLimits, SessionRef, SessionState, SessionSummary,
    ShellParams,
};
use rein_protocol::requests::{self as rq, Method};
use rustyline::error::ReadlineError;
use slash::{Screen, Tone};
use std::collections::VecDeque;
use std::io::IsTerminal;
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
    let daemon_info = crate::commands::daemon::warn(&mut client).await;
    let (state, created) = session::prepare(&mut client, &request).await?;
    if created
        && request.model.is_none()
        && let Some(note) =
            daemon_info.as_ref().and_then(|info| session::local_server_note(info, &state))
    {
        eprintln!("{note}");
    }
    let subscription = client.subscribe(&state.session_id, state.last_seq).await?;

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
        confirm_clear: false,
        answered_at: None,
        held_back: None,
        style,
        renderer: Renderer::new(RenderOptions { style, interactive: true }),
        output,
        follower: slash::follower(&state),
        subscription,
        created: created.then(|| state.session_id.clone()),
        quit: false,
    };
    let code = attach.event_loop(input_rx, &next_tx).await;
    let _ = next_tx.send(Next::Stop);
    drop(next_tx);
    let _ = editor_thread.join();
    if let Some(id) = attach.created.take() {
        session::discard_if_unanswered(&mut attach.client, &id).await;
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
    crate::tui::history::file()
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
    /// Ctrl-C asked whether to drop the queued messages; the next one does.
    confirm_clear: bool,
    /// When an approval was last answered (by any client).
    answered_at: Option<std::time::Instant>,
    /// An answer-like line held back once because its approval was already answered.
    held_back: Option<String>,
    style: Style,
    renderer: Renderer,
    output: Output,
    /// Follows the session's events, filling gaps.
    follower: Follower,
    /// The session subscription; items of an earlier one (before `/new`...) are ignored.
    subscription: String,
    /// A session this client created, removed on leaving when nothing was answered in it.
    created: Option<String>,
    /// `/quit` was typed.
    quit: bool,
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
                    Ok(notice) if notice.subscription == self.subscription => {
                        self.handle_item(notice).await
                    }
                    Ok(_) => {}
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
        let accepted = self.follower.accept(&mut self.client, notice).await;
        // A repaired stream goes on under a new subscription.
        if let Some(subscription) = self.follower.take_resubscribed() {
            self.subscription = subscription;
        }
        let envelope = match accepted {
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
                self.approvals.retain(|pending| *pending != request_id);
                self.answered_at = Some(std::time::Instant::now());
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
        self.confirm_clear = false;
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
        // A `y` meant for a request another client has just answered is not a prompt.
        let recently_answered =
            self.answered_at.is_some_and(|at| at.elapsed() < crate::tui::app::ANSWER_GUARD);
        if recently_answered
            && input::parse_approval(&line).is_some()
            && self.held_back.as_deref() != Some(line.as_str())
        {
            self.output.print(
                "that approval was already answered; type it again to send it as a message\n",
            );
            self.held_back = Some(line);
            return Next::ReadAnother;
        }
        self.held_back = None;
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
            Ok(Line::Slash(slash)) => {
                slash::run(self, slash).await;
                if self.quit { Next::Stop } else { Next::ReadAnother }
            }
            Err(usage) => {
                self.output.print(&format!("{usage}\n"));
                Next::ReadAnother
            }
        }
    }

    /// Ctrl-C: cancels a run and drops the queued messages (asking once when there are
    /// some, so they do not start a new run at once); when idle, asks before leaving.
    async fn interrupt(&mut self) -> Next {
        if self.running {
            let session = SessionRef { session_id: self.session_id.clone() };
            let queued = match self.client.request::<rq::SessionState>(&session).await {
                Ok(state) => state.queues.steering.len() + state.queues.follow_up.len(),
                Err(_) => 0,
            };
            if queued > 0 && !self.confirm_clear {
                self.confirm_clear = true;
                self.output.print(&format!(
                    "Ctrl-C again cancels the run and drops {queued} queued message(s)\n"
                ));
                return Next::ReadAnother;
            }
            self.confirm_clear = false;
            if queued > 0 {
                self.output.print(&format!(
                    "cancelling the run and dropping {queued} queued message(s)…\n"
                ));
                let params = ClearQueueParams {
                    session_id: self.session_id.clone(),
                    queue: QueueSelector::All,
                };
                self.call_quietly::<rq::SessionClearQueue>(params).await;
            } else {
                self.output.print("cancelling the run…\n");
            }
            self.call_quietly::<rq::SessionCancel>(session).await;
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
        // `@path` mentions attach the file, as in the full-screen client.
        let crate::tui::editor::Composed { text, images } =
            crate::tui::editor::compose(&text, &self.cwd);
        if self.running {
            let params = QueueMessageParams { session_id: self.session_id.clone(), text, images };
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
            images,
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
        slash::call::<Self, M>(self, params).await
    }
}

impl Screen for Attach {
    fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    fn session_id(&self) -> String {
        self.session_id.clone()
    }

    fn cwd(&self) -> PathBuf {
        self.cwd.clone()
    }

    fn say(&mut self, text: &str, _tone: Tone) {
        self.output.print(&format!("{text}\n"));
    }

    fn mode(&mut self) -> &mut BusyMode {
        &mut self.mode
    }

    fn tool_outcomes(&self) -> Vec<ToolOutcome> {
        self.renderer.tool_outcomes().to_vec()
    }

    fn quit(&mut self) {
        self.quit = true;
    }

    fn clear(&mut self) {
        if std::io::stdout().is_terminal() {
            // Erase the screen and the scrollback, cursor home.
            self.output.print("\u{1b}[H\u{1b}[2J\u{1b}[3J");
        } else {
            self.say("(standard output is not a terminal: nothing to clear)", Tone::Notice);
        }
    }

    async fn switch(&mut self, state: SessionState, created: bool) {
        let old = std::mem::take(&mut self.subscription);
        slash::hand_over(&mut self.client, old, &mut self.created, &state, created).await;
        self.output.chunks(self.renderer.finish());
        self.session_id = state.session_id.clone();
        self.cwd = PathBuf::from(&state.cwd);
        self.running = state.running;
        self.approvals.clear();
        self.renderer = Renderer::new(RenderOptions { style: self.style, interactive: true });
        self.follower = slash::follower(&state);
        let verb = if created { "new session" } else { "switched to" };
        let text = format!("rein: {verb} {} ({}, {})", state.session_id, state.model, state.cwd);
        self.say(&text, Tone::Notice);
        if !created {
            show_recent(&mut self.client, &state.session_id, &mut self.output).await;
        }
        match self.client.subscribe(&state.session_id, state.last_seq).await {
            Ok(subscription) => self.subscription = subscription,
            Err(error) => self.say(&format!("error: {error}"), Tone::Bad),
        }
    }

    async fn choose(&mut self, sessions: Vec<SessionSummary>) {
        self.say(&slash::session_list(&sessions), Tone::Plain);
    }
}
