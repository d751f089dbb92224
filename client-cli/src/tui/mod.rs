//! The full-screen terminal client of `rein` and `rein attach`, on `ratatui` and `crossterm`.
//!
//! Still a thin client of the documented protocol: it subscribes to the session and draws
//! its events ([`app::App::apply`]); keys become protocol calls ([`app::Action`]). The
//! session's events are followed with the [`Follower`] `rein run` uses too. When the daemon
//! goes away (a restart, a crash) the client connects again, resubscribes from the last seq
//! it saw (the daemon says when that numbering is gone, and the gap is filled from the
//! session's entries) and says what happened.
//!
//! Without a terminal on both stdin and stdout, `rein` falls back to the line-mode client
//! ([`crate::interactive`]).

pub mod app;
pub mod diff;
pub mod editor;
pub mod highlight;
pub mod history;
pub mod keys;
pub mod markdown;
mod slash;
pub mod theme;
pub mod transcript;
pub mod view;
pub mod wrap;

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::follow::{Followed, Follower};
use crate::session::{self, SessionRequest};
use app::{Action, App, Connection};
use crossterm::event::{Event, EventStream};
use futures::StreamExt;
use rein_protocol::error::ErrorKind;
use rein_protocol::message::Message;
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, ClearQueueParams, DaemonInfo, Empty, HistoryPageParams,
    PromptParams, QueueMessageParams, QueueSelector, RunLimits, SessionRef, SessionState,
    ShellParams, SubscribeParams,
};
use rein_protocol::requests::{self as rq, Method};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use theme::{Role, Theme};

/// How often the screen is redrawn while something runs (for the elapsed times).
const TICK: Duration = Duration::from_millis(100);
/// How long to wait between attempts to reach a daemon that went away.
const RECONNECT_EVERY: Duration = Duration::from_millis(500);
/// How long one attempt to reach the daemon again may take (connect, handshake, resubscribe).
const RECONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How long leaving waits for the daemon to remove an unanswered session.
const LEAVE_TIMEOUT: Duration = Duration::from_secs(2);
/// How many earlier messages are shown on attach.
const RECENT_MESSAGES: u32 = 20;

/// Attaches to the requested session until the user leaves: full screen on a terminal, line
/// mode otherwise.
pub async fn run(socket: &Path, request: SessionRequest) -> Result<u8, ClientError> {
    if !(std::io::stdin().is_terminal() && std::io::stdout().is_terminal()) {
        return crate::interactive::run(socket, request).await;
    }
    let keys = match keys::KeyMap::file().map(|path| keys::KeyMap::load(&path)) {
        Some(Ok(keys)) => keys,
        None => keys::KeyMap::default(),
        Some(Err(error)) => {
            eprintln!("rein: {error}");
            return Ok(exit::USAGE);
        }
    };
    let mut client = Client::connect_or_start(socket).await?;
    if let Err(error) = client.initialize(true).await {
        let hint = crate::commands::daemon::version_hint(&error);
        eprintln!("rein: {}", hint.unwrap_or_else(|| error.to_string()));
        return Ok(exit::FAILURE);
    }
    let (state, created) = session::prepare(&mut client, &request).await?;
    let mut terminal = ratatui::try_init()?;
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::EnableBracketedPaste);
    let theme = Theme::detect();
    let now = Instant::now();
    let mut app = App::new(&state, theme, history::load(), now);
    app.set_keys(keys);
    let mut runtime = Runtime {
        socket: socket.to_path_buf(),
        follower: crate::interactive::slash::follower(&state),
        subscription: String::new(),
        stream: state.stream.clone(),
        created: created.then(|| state.session_id.clone()),
        client,
        app,
        quit: false,
        last_attempt: None,
    };
    let result = runtime.start(&state, created).await;
    // `rein attach` without a session: the most recent one is open, and the picker offers the
    // others of the directory.
    if result.is_ok() && request.target == session::Target::Latest && !created {
        runtime.offer_sessions().await;
    }
    let result = match result {
        Ok(()) => runtime.event_loop(&mut terminal).await,
        Err(error) => Err(error),
    };
    let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableBracketedPaste);
    ratatui::restore();
    history::save(runtime.app.editor.history());
    if let Some(id) = runtime.created.take() {
        let discard = session::discard_if_unanswered(&mut runtime.client, &id);
        let _ = tokio::time::timeout(LEAVE_TIMEOUT, discard).await;
    }
    result.map(|()| exit::OK)
}

/// The client's connection, subscription and app.
struct Runtime {
    socket: PathBuf,
    client: Client,
    app: App,
    follower: Follower,
    /// The session subscription; items of other (older) subscriptions are ignored.
    subscription: String,
    /// The event numbering of the session's load (changes when the daemon restarts).
    stream: String,
    /// A session this client created, removed on leaving when nothing was answered in it.
    created: Option<String>,
    quit: bool,
    last_attempt: Option<Instant>,
}

impl Runtime {
    /// Shows the session's start and subscribes.
    async fn start(&mut self, state: &SessionState, created: bool) -> Result<(), ClientError> {
        let verb = if created { "new session" } else { "attached to" };
        let text = format!(
            "rein: {verb} {} ({}, {}); /help for commands",
            state.session_id, state.model, state.cwd
        );
        self.app.transcript.notice(text, Role::Dim);
        let info = self.warnings().await;
        if !created {
            self.show_recent(&state.session_id).await;
        }
        if created
            && let Some(note) = info.and_then(|info| session::local_server_note(&info, state))
        {
            self.app.transcript.notice(note, Role::Notice);
        }
        self.subscribe(&state.session_id, state.last_seq, None).await
    }

    /// Shows the daemon's warnings and answers its info (`None` when it did not answer).
    async fn warnings(&mut self) -> Option<DaemonInfo> {
        let info = self.client.request::<rq::DaemonInfo>(Empty {}).await.ok()?;
        for warning in crate::commands::daemon::warnings(&info) {
            self.app.transcript.notice(format!("rein: {warning}"), Role::Notice);
        }
        Some(info)
    }

    async fn subscribe(
        &mut self,
        session_id: &str,
        after_seq: u64,
        stream: Option<String>,
    ) -> Result<(), ClientError> {
        let params = SubscribeParams {
            session_id: session_id.to_string(),
            after_seq: Some(after_seq),
            stream,
        };
        self.subscription = self.client.request::<rq::SessionSubscribe>(params).await?;
        Ok(())
    }

    /// The end of the conversation so far, as cells.
    async fn show_recent(&mut self, session_id: &str) {
        let params = HistoryPageParams {
            session_id: session_id.to_string(),
            limit: Some(RECENT_MESSAGES),
            cursor: None,
        };
        match self.client.request::<rq::SessionMessages>(params).await {
            Ok(result) => {
                let skipped = result.total.saturating_sub(result.messages.len() as u64);
                if skipped > 0 {
                    self.app.transcript.notice(
                        format!("… {skipped} earlier messages (/tree shows them all)"),
                        Role::Dim,
                    );
                }
                for message in &result.messages {
                    match message {
                        Message::User(user) => {
                            self.app.transcript.user(&crate::render::user_text(&user.content))
                        }
                        Message::Assistant(reply) => {
                            let text: String = reply
                                .content
                                .iter()
                                .filter_map(|block| match block {
                                    rein_protocol::message::ContentBlock::Text { text } => {
                                        Some(text.as_str())
                                    }
                                    _ => None,
                                })
                                .collect::<Vec<_>>()
                                .join("\n");
                            if !text.trim().is_empty() {
                                self.app.transcript.answer_delta(&text);
                                self.app.transcript.close();
                            }
                            for call in reply.tool_calls() {
                                self.app.transcript.past_tool(
                                    &call.id,
                                    &call.name,
                                    &call.arguments,
                                    Instant::now(),
                                );
                            }
                        }
                        Message::ToolResult(result) => {
                            let output = result.text();
                            let ended = transcript::Ended {
                                id: &result.tool_call_id,
                                name: &result.tool_name,
                                output: &output,
                                is_error: result.is_error,
                                details: result.details.as_ref(),
                            };
                            self.app.transcript.tool_end(ended, Instant::now());
                        }
                    }
                }
            }
            Err(error) => self
                .app
                .transcript
                .notice(format!("rein: cannot read the conversation: {error}"), Role::Bad),
        }
    }

    async fn event_loop(
        &mut self,
        terminal: &mut ratatui::DefaultTerminal,
    ) -> Result<(), ClientError> {
        let mut keys = EventStream::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut dirty = true;
        let mut last_draw = Instant::now() - TICK;
        while !self.quit {
            let now = Instant::now();
            if dirty && now.saturating_duration_since(last_draw) >= Duration::from_millis(16) {
                terminal.draw(|frame| view::draw(frame, &self.app, now))?;
                last_draw = now;
                dirty = false;
            }
            let connected = self.app.connection == Connection::Up;
            tokio::select! {
                key = keys.next() => match key {
                    Some(Ok(Event::Key(key))) => {
                        let actions = self.app.key(key, Instant::now());
                        for action in actions {
                            self.act(action).await;
                        }
                        dirty = true;
                    }
                    Some(Ok(Event::Paste(text))) => {
                        self.app.paste(&text);
                        dirty = true;
                    }
                    Some(Ok(_)) => dirty = true,
                    Some(Err(error)) => return Err(ClientError::Io(error)),
                    None => return Ok(()),
                },
                notice = self.client.next_session_item(), if connected => {
                    match notice {
                        Ok(notice) if notice.subscription == self.subscription => {
                            let accepted = self.follower.accept(&mut self.client, notice).await;
                            // A repaired stream goes on under a new subscription.
                            if let Some(subscription) = self.follower.take_resubscribed() {
                                self.subscription = subscription;
                            }
                            match accepted {
                                Ok(Some(followed)) => self.followed(followed),
                                Ok(None) => {}
                                Err(error) => self.lost(&error),
                            }
                        }
                        Ok(_) => {}
                        Err(error) => self.lost(&error),
                    }
                    dirty = true;
                }
                _ = tick.tick() => {
                    if let Connection::Lost(_) = self.app.connection {
                        // What happened is on screen before an attempt that may take a while.
                        if dirty {
                            let now = Instant::now();
                            terminal.draw(|frame| view::draw(frame, &self.app, now))?;
                            last_draw = now;
                        }
                        self.try_reconnect().await;
                        dirty = true;
                    }
                    if last_draw.elapsed() >= TICK && (self.app.running || !connected || dirty) {
                        dirty = true;
                    }
                }
            }
        }
        Ok(())
    }

    fn followed(&mut self, followed: Followed) {
        let now = Instant::now();
        match followed {
            Followed::Event { envelope, .. } => self.app.apply(&envelope, now),
            Followed::Gap(gap) => {
                self.app.transcript.interrupt_running();
                // Requests still waiting are sent again on the new subscription.
                self.app.approvals.clear();
                self.app.transcript.notice(gap.text().trim_end().to_string(), Role::Notice);
                self.app.running = gap.running.is_some();
            }
        }
    }

    /// The connection broke: say so and start reconnecting.
    fn lost(&mut self, error: &ClientError) {
        if self.app.connection != Connection::Up {
            return;
        }
        self.app.connection = Connection::Lost(Instant::now());
        self.app.transcript.notice(format!("lost the daemon ({error}); reconnecting…"), Role::Bad);
    }

    async fn try_reconnect(&mut self) {
        if self.last_attempt.is_some_and(|at| at.elapsed() < RECONNECT_EVERY) {
            return;
        }
        self.last_attempt = Some(Instant::now());
        // A daemon that accepts but does not answer must not freeze the screen.
        let attempt = tokio::time::timeout(RECONNECT_TIMEOUT, self.reconnect()).await;
        match attempt.unwrap_or(Err(None)) {
            Ok(text) => {
                self.app.connection = Connection::Up;
                self.app.transcript.notice(text, Role::Notice);
            }
            Err(Some(text)) => {
                // Not a passing failure (an incompatible daemon): say it once, keep trying.
                if !self
                    .app
                    .transcript
                    .cells
                    .iter()
                    .rev()
                    .take(1)
                    .any(|cell| matches!(cell, transcript::Cell::Notice(t, _) if *t == text))
                {
                    self.app.transcript.notice(text, Role::Bad);
                }
            }
            Err(None) => {}
        }
    }

    /// Connects again (starting a daemon when none runs), resubscribes and says what happened.
    async fn reconnect(&mut self) -> Result<String, Option<String>> {
        let mut client = Client::connect_or_start(&self.socket).await.map_err(|_| None)?;
        if let Err(error) = client.initialize(true).await {
            return Err(crate::commands::daemon::version_hint(&error));
        }
        let session = SessionRef { session_id: self.app.session.id.clone() };
        let state = client
            .request::<rq::SessionOpen>(&session)
            .await
            .map_err(|error| Some(format!("reconnected, but cannot open the session: {error}")))?;
        self.client = client;
        let now = Instant::now();
        let same_load = !self.stream.is_empty() && state.stream == self.stream;
        let text = if same_load {
            // The same daemon: the replay buffer (or a gap fill) covers what was missed.
            let after = self.follower.cursor().last_seq();
            self.subscribe(&state.session_id, after, Some(state.stream.clone()))
                .await
                .map_err(|e| Some(e.to_string()))?;
            "reconnected to the daemon; following on from where this client left off".to_string()
        } else {
            // A new daemon: the old numbering is gone; what the session recorded is on disk.
            self.app.transcript.interrupt_running();
            self.app.approvals.clear();
            self.app.running = false;
            self.stream = state.stream.clone();
            self.follower = crate::interactive::slash::follower(&state);
            self.subscribe(&state.session_id, state.last_seq, Some(state.stream.clone()))
                .await
                .map_err(|e| Some(e.to_string()))?;
            "reconnected: the daemon had restarted (a run in progress was stopped with it); the session is loaded again".to_string()
        };
        self.app.refresh(&state, now);
        Ok(text)
    }

    /// Carries out what a key asked for.
    async fn act(&mut self, action: Action) {
        let session_id = self.app.session.id.clone();
        match action {
            Action::Quit => self.quit = true,
            Action::Send { text, images, follow_up } => {
                if self.app.running {
                    let params = QueueMessageParams { session_id, text, images };
                    if follow_up {
                        self.call::<rq::SessionFollowUp>(params).await;
                    } else {
                        self.call::<rq::SessionSteer>(params).await;
                    }
                } else {
                    let params = PromptParams {
                        session_id,
                        text,
                        images,
                        when_busy: Some(if follow_up {
                            BusyBehavior::FollowUp
                        } else {
                            BusyBehavior::Steer
                        }),
                        limits: RunLimits::default(),
                        verify: None,
                    };
                    if self.call::<rq::SessionPrompt>(params).await {
                        self.app.running = true;
                        self.app.status.run_started = Some(Instant::now());
                    }
                }
            }
            Action::Shell(command) => {
                let params = ShellParams { session_id, command, add_to_context: true };
                self.call::<rq::SessionShell>(params).await;
            }
            Action::Answer { request_id, decision, reason } => {
                let params = ApprovalRespondParams {
                    session_id,
                    request_id: request_id.clone(),
                    decision,
                    reason,
                };
                match self.client.request::<rq::ApprovalRespond>(params).await {
                    Ok(_) => {}
                    Err(ClientError::Rpc(failure))
                        if failure.kind == ErrorKind::ApprovalNotFound =>
                    {
                        self.app.approvals.retain(|a| a.request_id != request_id);
                        self.app
                            .transcript
                            .notice("that approval was already answered", Role::Notice);
                    }
                    Err(error) => self.app.transcript.notice(format!("error: {error}"), Role::Bad),
                }
            }
            Action::Cancel => {
                self.app.transcript.notice("cancelling the run…", Role::Notice);
                self.call::<rq::SessionCancel>(SessionRef { session_id }).await;
            }
            Action::CancelAndClear => {
                let (steering, follow_up) = self.app.status.queue;
                if steering + follow_up > 0 {
                    let params = ClearQueueParams {
                        session_id: session_id.clone(),
                        queue: QueueSelector::All,
                    };
                    self.call::<rq::SessionClearQueue>(params).await;
                }
                let text = if steering + follow_up > 0 {
                    format!(
                        "cancelling the run and dropping {} queued message(s)…",
                        steering + follow_up
                    )
                } else {
                    "cancelling the run…".to_string()
                };
                self.app.transcript.notice(text, Role::Notice);
                self.call::<rq::SessionCancel>(SessionRef { session_id }).await;
            }
            Action::Open(id) if id == session_id => {}
            Action::Open(id) => crate::interactive::slash::open(self, &id).await,
            Action::Slash(command) => crate::interactive::slash::run(self, command).await,
        }
    }

    /// Makes a call whose result needs no showing; shows its error. True when it worked.
    async fn call<M: Method>(&mut self, params: M::Params) -> bool {
        crate::interactive::slash::call::<Self, M>(self, params).await
    }
}
