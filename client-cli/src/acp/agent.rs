//! The ACP agent: answers the editor's requests with daemon calls, and follows each session's
//! events to stream `session/update` notifications back.
//!
//! One control connection carries the calls. Each session the editor opens gets a connection
//! of its own that only subscribes, so a long stream of events never waits behind a call. A
//! prompt is answered when the daemon reports the end of the run it started.

use crate::acp::commands::{self, SlashCall};
use crate::acp::modes;
use crate::acp::peer::{AcpError, Peer};
use crate::acp::permission;
use crate::acp::prompt::prompt_input;
use crate::acp::translate::{Translated, Translator, replay_message, usage_update, user_text};
use crate::client::{Client, ClientError};
use crate::follow::{Followed as FollowedItem, Follower};
use crate::gap::{Gap, StreamCursor};
use rein_protocol::entry::EntryKind;
use rein_protocol::message::Message;
use rein_protocol::method::{
    ApprovalRespondParams, BusyBehavior, ClientCapabilities, CreateSessionParams, Empty,
    HistoryPageParams, InitializeParams, ListSessionsParams, PromptParams, RunLimits, SessionRef,
    SessionState, SetApprovalPolicyParams, SetModelParams, SetThinkingParams,
};
use rein_protocol::requests::{self as rq, Method};
use rein_protocol::version::PROTOCOL_VERSION;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, PoisonError, Weak};
use tokio::sync::{Mutex, oneshot};
use tokio::task::JoinHandle;

/// The ACP protocol version this adapter speaks.
pub const ACP_PROTOCOL_VERSION: u64 = 1;

/// The client name the adapter gives the daemon (shown in `resolved_by`).
pub const CLIENT_NAME: &str = "rein-acp";

/// How a prompt's run ended: an ACP stop reason, or an error for the editor.
type RunOutcome = Result<&'static str, AcpError>;

/// Run ends seen before anyone waited for them are kept up to this many.
const MAX_UNCLAIMED_ENDS: usize = 64;

/// Runs of one session that prompts are waiting for.
#[derive(Debug, Default)]
struct RunBook {
    ended: HashMap<String, RunOutcome>,
    waiters: HashMap<String, oneshot::Sender<RunOutcome>>,
}

impl RunBook {
    fn finish(&mut self, run_id: String, outcome: RunOutcome) {
        match self.waiters.remove(&run_id) {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => {
                if self.ended.len() >= MAX_UNCLAIMED_ENDS {
                    self.ended.clear();
                }
                self.ended.insert(run_id, outcome);
            }
        }
    }

    fn wait(&mut self, run_id: &str) -> oneshot::Receiver<RunOutcome> {
        let (tx, rx) = oneshot::channel();
        match self.ended.remove(run_id) {
            Some(outcome) => {
                let _ = tx.send(outcome);
            }
            None => {
                self.waiters.insert(run_id.to_string(), tx);
            }
        }
        rx
    }

    /// Ends every waiting prompt, when the events that would have ended them are lost.
    fn finish_all(&mut self, outcome: &RunOutcome) {
        for (_, waiter) in self.waiters.drain() {
            let _ = waiter.send(outcome.clone());
        }
    }
}

type SharedRuns = Arc<std::sync::Mutex<RunBook>>;

fn lock_runs(runs: &SharedRuns) -> std::sync::MutexGuard<'_, RunBook> {
    runs.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Prompt texts this editor sent that the session has not shown yet, so the editor is not
/// shown its own prompt again while prompts from other clients are.
#[derive(Debug, Default)]
struct OwnPrompts(Vec<String>);

impl OwnPrompts {
    /// Records a prompt about to be sent.
    fn sent(&mut self, text: &str) {
        self.0.push(text.to_string());
    }

    /// Whether a user message with `text` is one of ours (and forgets it if so).
    fn claim(&mut self, text: &str) -> bool {
        match self.0.iter().position(|sent| sent == text) {
            Some(index) => {
                self.0.remove(index);
                true
            }
            None => false,
        }
    }
}

type SharedPrompts = Arc<std::sync::Mutex<OwnPrompts>>;

fn lock_prompts(prompts: &SharedPrompts) -> std::sync::MutexGuard<'_, OwnPrompts> {
    prompts.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a prompt needs of a watched session: its run book and the editor's own prompts.
#[derive(Debug, Clone, Default)]
struct Watch {
    runs: SharedRuns,
    own_prompts: SharedPrompts,
}

/// One watched session and the task forwarding its events.
#[derive(Debug)]
struct Forwarder {
    watch: Watch,
    task: JoinHandle<()>,
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Opens a daemon connection (starting the daemon when needed) and introduces the adapter as
/// a client that answers approvals.
pub async fn daemon_connection(socket: &Path) -> Result<Client, ClientError> {
    let mut client = Client::connect_or_start(socket).await?;
    let params = InitializeParams {
        client_name: CLIENT_NAME.into(),
        client_version: env!("CARGO_PKG_VERSION").into(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: ClientCapabilities { approvals: true },
        pid: None,
        tty: None,
    };
    client.request::<rq::Initialize>(params).await?;
    Ok(client)
}

/// The agent behind one ACP connection.
#[derive(Debug)]
pub struct Agent {
    peer: Arc<Peer>,
    socket: PathBuf,
    control: Mutex<Client>,
    sessions: std::sync::Mutex<HashMap<String, Forwarder>>,
    /// Permission requests waiting for the editor: daemon approval id -> ACP request id.
    asking: std::sync::Mutex<HashMap<String, u64>>,
}

fn str_param<'a>(params: &'a Value, name: &str) -> Result<&'a str, AcpError> {
    params
        .get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| AcpError::invalid_params(format!("missing string param `{name}`")))
}

/// The session named by a request's `session_id`.
fn session_ref(session_id: &str) -> SessionRef {
    SessionRef { session_id: session_id.to_string() }
}

impl Agent {
    /// Connects the control connection to the daemon at `socket`.
    pub async fn connect(socket: &Path, peer: Arc<Peer>) -> Result<Self, ClientError> {
        let control = daemon_connection(socket).await?;
        Ok(Self {
            peer,
            socket: socket.to_path_buf(),
            control: Mutex::new(control),
            sessions: std::sync::Mutex::new(HashMap::new()),
            asking: std::sync::Mutex::new(HashMap::new()),
        })
    }

    /// Calls method `M` on the control connection.
    async fn request<M: Method>(&self, params: M::Params) -> Result<M::Result, AcpError> {
        Ok(self.control.lock().await.request::<M>(params).await?)
    }

    /// Answers one request from the editor.
    pub async fn handle_request(
        self: &Arc<Self>,
        method: &str,
        params: Value,
    ) -> Result<Value, AcpError> {
        match method {
            "initialize" => Ok(initialize_result()),
            "authenticate" => Ok(json!({})),
            "session/new" => self.new_session(&params).await,
            "session/load" => self.load_session(&params).await,
            "session/list" => self.list_sessions(&params).await,
            "session/prompt" => self.prompt(&params).await,
            "session/set_mode" => self.set_mode(&params).await,
            "session/set_config_option" => self.set_config_option(&params).await,
            other => Err(AcpError::method_not_found(other)),
        }
    }

    /// Acts on one notification from the editor.
    pub async fn handle_notification(self: &Arc<Self>, method: &str, params: Value) {
        if method == "session/cancel" {
            let Some(session_id) = params.get("sessionId").and_then(Value::as_str) else {
                return;
            };
            if let Err(error) = self.request::<rq::SessionCancel>(session_ref(session_id)).await {
                tracing::warn!("cancel of {session_id} failed: {}", error.message);
            }
        }
    }

    /// The modes and config options of a session, as `session/new` and `session/load` return
    /// them.
    async fn session_setup(&self, state: &SessionState) -> Result<Value, AcpError> {
        let models = self.request::<rq::ModelsList>(Empty {}).await?;
        Ok(json!({
            "modes": modes::mode_state(state.approval_policy),
            "configOptions": modes::config_options(state, &models.models),
        }))
    }

    async fn state(&self, session_id: &str) -> Result<SessionState, AcpError> {
        self.request::<rq::SessionState>(session_ref(session_id)).await
    }

    async fn new_session(self: &Arc<Self>, params: &Value) -> Result<Value, AcpError> {
        let cwd = str_param(params, "cwd")?;
        let mcp_servers = serde_json::from_value(Value::Object(mcp_servers(params)))
            .map_err(|error| AcpError::invalid_params(format!("invalid mcpServers: {error}")))?;
        let create =
            CreateSessionParams { cwd: cwd.to_string(), mcp_servers, ..Default::default() };
        let state = self.request::<rq::SessionCreate>(create).await?;
        self.follow(&state.session_id, state.last_seq, state.leaf_id.clone()).await?;
        let mut result = self.session_setup(&state).await?;
        result["sessionId"] = json!(state.session_id);
        Ok(result)
    }

    async fn load_session(self: &Arc<Self>, params: &Value) -> Result<Value, AcpError> {
        let session_id = str_param(params, "sessionId")?;
        let state = self.request::<rq::SessionOpen>(session_ref(session_id)).await?;
        // Messages come in pages, newest first; the editor is shown all of them in order.
        let page =
            |cursor| HistoryPageParams { session_id: session_id.to_string(), limit: None, cursor };
        let mut history = self.request::<rq::SessionMessages>(page(None)).await?;
        // The first page tells where the replayed history ends: events and entries after it
        // are new to the editor.
        let (last_seq, leaf_id) = (history.last_seq, history.leaf_id.clone());
        while let Some(cursor) = history.next_cursor.take() {
            let older = self.request::<rq::SessionMessages>(page(Some(cursor))).await?;
            let newer = std::mem::replace(&mut history.messages, older.messages);
            history.messages.extend(newer);
            history.next_cursor = older.next_cursor;
        }
        for update in history.messages.iter().flat_map(replay_message) {
            self.peer.session_update(session_id, update);
        }
        self.follow(session_id, last_seq, leaf_id).await?;
        self.session_setup(&state).await
    }

    async fn list_sessions(&self, params: &Value) -> Result<Value, AcpError> {
        let cwd = params.get("cwd").and_then(Value::as_str);
        let params = ListSessionsParams { cwd: cwd.map(str::to_string), ..Default::default() };
        let listed = self.request::<rq::SessionList>(params).await?;
        let sessions: Vec<Value> = listed
            .sessions
            .into_iter()
            .map(|session| {
                json!({"sessionId": session.session_id, "cwd": session.cwd,
                    "title": session.name.or(session.first_prompt),
                    "updatedAt": session.updated})
            })
            .collect();
        Ok(json!({"sessions": sessions}))
    }

    async fn prompt(self: &Arc<Self>, params: &Value) -> Result<Value, AcpError> {
        let session_id = str_param(params, "sessionId")?;
        let blocks = params.get("prompt").and_then(Value::as_array).cloned().unwrap_or_default();
        let input = prompt_input(&blocks);
        match commands::parse(&input.text) {
            Ok(Some(call)) => return self.run_slash(session_id, call).await,
            Err(usage) => return Err(AcpError::invalid_params(usage)),
            Ok(None) => {}
        }
        let watch = match self.watch(session_id) {
            Some(watch) => watch,
            None => {
                let state = self.state(session_id).await?;
                self.follow(session_id, state.last_seq, state.leaf_id).await?
            }
        };
        lock_prompts(&watch.own_prompts).sent(&input.text);
        let images = serde_json::from_value(Value::Array(input.images))
            .map_err(|error| AcpError::invalid_params(format!("invalid image: {error}")))?;
        let params = PromptParams {
            session_id: session_id.to_string(),
            text: input.text.clone(),
            images,
            when_busy: Some(BusyBehavior::FollowUp),
            limits: RunLimits::default(),
            verify: None,
        };
        let started = self.request::<rq::SessionPrompt>(params).await.inspect_err(|_| {
            // It never reached the session, so it will not come back to be claimed.
            lock_prompts(&watch.own_prompts).claim(&input.text);
        })?;
        let ended = lock_runs(&watch.runs).wait(&started.run_id);
        let stop_reason =
            ended.await.map_err(|_| AcpError::internal("lost the session's event stream"))??;
        Ok(json!({"stopReason": stop_reason}))
    }

    /// Runs a slash command: its daemon call, then a one-line report as the agent's message.
    async fn run_slash(&self, session_id: &str, call: SlashCall) -> Result<Value, AcpError> {
        let text = call.run(&mut *self.control.lock().await, session_id).await?;
        let update = json!({"sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text}});
        self.peer.session_update(session_id, update);
        Ok(json!({"stopReason": "end_turn"}))
    }

    async fn set_mode(&self, params: &Value) -> Result<Value, AcpError> {
        let session_id = str_param(params, "sessionId")?;
        let mode_id = str_param(params, "modeId")?;
        let policy = modes::policy_for_mode(mode_id)
            .ok_or_else(|| AcpError::invalid_params(format!("unknown mode `{mode_id}`")))?;
        let params = SetApprovalPolicyParams { session_id: session_id.to_string(), policy };
        self.request::<rq::SessionSetApprovalPolicy>(params).await?;
        Ok(json!({}))
    }

    async fn set_config_option(&self, params: &Value) -> Result<Value, AcpError> {
        let session_id = str_param(params, "sessionId")?;
        let config_id = str_param(params, "configId")?;
        let value = str_param(params, "value")?;
        match config_id {
            modes::MODE_OPTION => {
                let policy = modes::policy_for_mode(value)
                    .ok_or_else(|| AcpError::invalid_params(format!("unknown mode `{value}`")))?;
                let params = SetApprovalPolicyParams { session_id: session_id.to_string(), policy };
                self.request::<rq::SessionSetApprovalPolicy>(params).await?;
            }
            modes::MODEL_OPTION => {
                let params =
                    SetModelParams { session_id: session_id.to_string(), model: value.to_string() };
                self.request::<rq::SessionSetModel>(params).await?;
            }
            modes::THINKING_OPTION => {
                let level = modes::level_for_value(value)
                    .ok_or_else(|| AcpError::invalid_params(format!("unknown level `{value}`")))?;
                let params = SetThinkingParams { session_id: session_id.to_string(), level };
                self.request::<rq::SessionSetThinking>(params).await?;
            }
            other => return Err(AcpError::invalid_params(format!("unknown config `{other}`"))),
        }
        let state = self.state(session_id).await?;
        let mut setup = self.session_setup(&state).await?;
        Ok(json!({"configOptions": setup["configOptions"].take()}))
    }

    fn watch(&self, session_id: &str) -> Option<Watch> {
        let sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        sessions.get(session_id).map(|forwarder| forwarder.watch.clone())
    }

    /// Follows a session's events after `after_seq` (when its leaf was `start_leaf`) on a
    /// connection of its own and forwards them to the editor; does nothing when the session
    /// is watched already.
    async fn follow(
        self: &Arc<Self>,
        session_id: &str,
        after_seq: u64,
        start_leaf: Option<String>,
    ) -> Result<Watch, AcpError> {
        if let Some(watch) = self.watch(session_id) {
            return Ok(watch);
        }
        let mut client = daemon_connection(&self.socket).await?;
        client.subscribe(session_id, after_seq).await?;
        let follower = Follower::new(StreamCursor::new(session_id, after_seq, start_leaf));
        let watch = Watch::default();
        let task = tokio::spawn(forward_events(
            Arc::downgrade(self),
            Arc::clone(&self.peer),
            client,
            follower,
            session_id.to_string(),
            watch.clone(),
        ));
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        // Another request may have followed the same session meanwhile; keep the first.
        let forwarder = sessions.entry(session_id.to_string()).or_insert(Forwarder { watch, task });
        Ok(forwarder.watch.clone())
    }

    fn asking(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.asking.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Asks the editor about one approval and passes its answer to the daemon.
    async fn ask_permission(&self, session_id: &str, request_id: &str, tool_call: Value) {
        let (acp_id, answer) = self.peer.start_request(
            "session/request_permission",
            json!({"sessionId": session_id, "toolCall": tool_call,
                "options": permission::options()}),
        );
        self.asking().insert(request_id.to_string(), acp_id);
        let answer = answer.wait().await;
        self.asking().remove(request_id);
        let decision = match answer {
            Ok(answer) => permission::decision(&answer),
            Err(error) => {
                tracing::warn!("the editor did not answer a permission request: {}", error.message);
                rein_protocol::event::ApprovalDecision::Deny
            }
        };
        let params = ApprovalRespondParams {
            session_id: session_id.to_string(),
            request_id: request_id.to_string(),
            decision,
            reason: None,
        };
        let respond = self.request::<rq::ApprovalRespond>(params).await;
        if let Err(error) = respond {
            // Another client may have answered first; that is how approvals are meant to work.
            tracing::debug!("approval {request_id} not taken: {}", error.message);
        }
    }

    /// Withdraws the editor's permission dialog for an approval that was settled elsewhere
    /// (another client answered, or the run was cancelled).
    fn approval_resolved(&self, request_id: &str) {
        let asked = self.asking().remove(request_id);
        if let Some(acp_id) = asked {
            self.peer.cancel_request(acp_id);
        }
    }
}

/// The `initialize` result: what the adapter offers the editor.
fn initialize_result() -> Value {
    json!({
        "protocolVersion": ACP_PROTOCOL_VERSION,
        "agentCapabilities": {
            "loadSession": true,
            "promptCapabilities": {"image": true, "audio": false, "embeddedContext": true},
            "mcpCapabilities": {"http": true, "sse": false},
            "sessionCapabilities": {"list": {}},
        },
        "authMethods": [],
        "agentInfo": {"name": "rein", "title": "rein", "version": env!("CARGO_PKG_VERSION")},
    })
}

/// The MCP servers an editor passes in `session/new` (`mcpServers`), as rein's
/// `mcp_servers` of `session/create`: stdio servers (`command`, `args`, `env` as name/value
/// pairs) and HTTP servers (`type: "http"`, `url`, `headers`). SSE servers are left out (rein
/// speaks streamable HTTP only); so are entries without a name.
fn mcp_servers(params: &Value) -> serde_json::Map<String, Value> {
    let pairs = |server: &Value, key: &str| -> serde_json::Map<String, Value> {
        server
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|pair| {
                Some((pair.get("name")?.as_str()?.to_string(), pair.get("value")?.clone()))
            })
            .collect()
    };
    let mut servers = serde_json::Map::new();
    for server in params.get("mcpServers").and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = server.get("name").and_then(Value::as_str) else { continue };
        let config = match server.get("type").and_then(Value::as_str) {
            Some("http") => json!({"url": server.get("url"), "headers": pairs(server, "headers")}),
            Some(_) => continue,
            None => json!({
                "command": server.get("command"),
                "args": server.get("args").cloned().unwrap_or_else(|| json!([])),
                "env": pairs(server, "env"),
            }),
        };
        servers.insert(name.to_string(), config);
    }
    servers
}

/// Forwards one session's events to the editor until the connection ends. The shared
/// [`Follower`] repairs the stream; a gap it could only fill from the session's entries is
/// replayed from those entries ([`forward_gap`]).
async fn forward_events(
    agent: Weak<Agent>,
    peer: Arc<Peer>,
    mut client: Client,
    mut follower: Follower,
    session_id: String,
    watch: Watch,
) {
    let runs = &watch.runs;
    let mut translator = Translator::new();
    loop {
        let envelope = match follower.next(&mut client).await {
            Ok(FollowedItem::Event { envelope, .. }) => envelope,
            Ok(FollowedItem::Gap(gap)) => {
                forward_gap(&peer, &session_id, &watch, &mut translator, &gap);
                continue;
            }
            Err(error) => {
                tracing::warn!("lost the event stream of {session_id}: {error}");
                let lost = Err(AcpError::internal(format!("lost the event stream: {error}")));
                lock_runs(runs).finish_all(&lost);
                return;
            }
        };
        match translator.translate(&envelope.event) {
            Translated::Updates(updates) => {
                for update in updates {
                    peer.session_update(&session_id, update);
                }
            }
            Translated::Permission { request_id, tool_call } => {
                let Some(agent) = agent.upgrade() else { return };
                let session_id = session_id.clone();
                tokio::spawn(async move {
                    agent.ask_permission(&session_id, &request_id, tool_call).await;
                });
            }
            Translated::UserMessage { text, updates } => {
                if !lock_prompts(&watch.own_prompts).claim(&text) {
                    for update in updates {
                        peer.session_update(&session_id, update);
                    }
                }
            }
            Translated::SettingsChanged => match config_options(&mut client, &session_id).await {
                Ok(options) => peer.session_update(
                    &session_id,
                    json!({"sessionUpdate": "config_option_update", "configOptions": options}),
                ),
                Err(error) => tracing::debug!("no config options to update: {error}"),
            },
            Translated::ApprovalResolved { request_id } => {
                if let Some(agent) = agent.upgrade() {
                    agent.approval_resolved(&request_id);
                }
            }
            Translated::RunEnded { run_id, stop_reason, error, closing } => {
                for update in closing {
                    peer.session_update(&session_id, update);
                }
                // Usage goes first, so the editor has it when the prompt is answered.
                match client.request::<rq::SessionState>(session_ref(&session_id)).await {
                    Ok(state) => peer.session_update(&session_id, usage_update(&state)),
                    Err(error) => tracing::debug!("no session state for usage: {error}"),
                }
                let outcome = match (stop_reason, error) {
                    (Some(reason), _) => Ok(reason),
                    (None, error) => Err(AcpError::internal(
                        error.unwrap_or_else(|| "the run failed".to_string()),
                    )),
                };
                lock_runs(runs).finish(run_id, outcome);
            }
        }
    }
}

/// Shows the editor what a gap in the event stream hid: the messages the session recorded
/// meanwhile (its own prompts excepted). When no run is going any more, every prompt still
/// waiting had its run end inside the gap and is answered `end_turn`.
fn forward_gap(
    peer: &Peer,
    session_id: &str,
    watch: &Watch,
    translator: &mut Translator,
    gap: &Gap,
) {
    for entry in &gap.entries {
        let EntryKind::Message { message } = &entry.kind else { continue };
        match message.as_ref() {
            Message::User(user) if lock_prompts(&watch.own_prompts).claim(&user_text(user)) => {
                continue;
            }
            Message::ToolResult(result) => translator.forget_tool_call(&result.tool_call_id),
            _ => {}
        }
        for update in replay_message(message) {
            peer.session_update(session_id, update);
        }
    }
    if gap.running.is_none() {
        lock_runs(&watch.runs).finish_all(&Ok("end_turn"));
    }
}

/// The session's config options as they are now, read on the event connection.
async fn config_options(client: &mut Client, session_id: &str) -> Result<Value, ClientError> {
    let state = client.request::<rq::SessionState>(session_ref(session_id)).await?;
    let models = client.request::<rq::ModelsList>(Empty {}).await?;
    Ok(modes::config_options(&state, &models.models))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::event::SessionEvent;

    #[tokio::test]
    async fn a_run_end_reaches_its_prompt_whether_it_comes_before_or_after_the_wait() {
        let mut book = RunBook::default();
        book.finish("early".into(), Ok("end_turn"));
        let early = book.wait("early");
        let late = book.wait("late");
        book.finish("late".into(), Ok("cancelled"));
        assert_eq!(early.await.unwrap(), Ok("end_turn"));
        assert_eq!(late.await.unwrap(), Ok("cancelled"));
        assert!(book.ended.is_empty() && book.waiters.is_empty());
    }

    #[tokio::test]
    async fn losing_the_stream_answers_every_waiting_prompt() {
        let mut book = RunBook::default();
        let a = book.wait("a");
        let b = book.wait("b");
        book.finish_all(&Err(AcpError::internal("gone")));
        assert_eq!(a.await.unwrap().unwrap_err().message, "gone");
        assert_eq!(b.await.unwrap().unwrap_err().message, "gone");
    }

    #[test]
    fn only_the_editors_own_prompts_are_claimed_once_each() {
        let mut own = OwnPrompts::default();
        own.sent("fix it");
        own.sent("fix it");
        assert!(own.claim("fix it"));
        assert!(!own.claim("from the terminal"));
        assert!(own.claim("fix it"));
        assert!(!own.claim("fix it"));
    }

    #[test]
    fn unclaimed_ends_stay_bounded() {
        let mut book = RunBook::default();
        for n in 0..(MAX_UNCLAIMED_ENDS * 3) {
            book.finish(format!("run-{n}"), Ok("end_turn"));
        }
        assert!(book.ended.len() <= MAX_UNCLAIMED_ENDS);
    }

    fn entry(id: &str, message: serde_json::Value) -> rein_protocol::entry::SessionEntry {
        serde_json::from_value(json!({"id": id, "parent_id": null,
            "timestamp": "2026-12-01T00:00:00Z", "type": "message", "message": message}))
        .unwrap()
    }

    #[tokio::test]
    async fn a_gap_replays_what_others_said_and_answers_prompts_whose_run_ended_in_it() {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        let watch = Watch::default();
        lock_prompts(&watch.own_prompts).sent("mine");
        let waiting = lock_runs(&watch.runs).wait("run-1");
        let mut translator = Translator::new();
        let call = SessionEvent::MessageUpdate {
            delta: serde_json::from_value(json!({"type": "tool_call_end", "index": 0,
                "call": {"id": "c1", "name": "bash", "arguments": {"command": "ls"}}}))
            .unwrap(),
        };
        translator.translate(&call);
        let gap = Gap {
            session_id: "s".into(),
            from_seq: 5,
            to_seq: 9,
            entries: vec![
                entry("a", json!({"role": "user", "content": [{"type": "text", "text": "mine"}]})),
                entry(
                    "b",
                    json!({"role": "user",
                    "content": [{"type": "text", "text": "from the terminal"}]}),
                ),
                entry(
                    "c",
                    json!({"role": "tool_result", "tool_call_id": "c1",
                    "tool_name": "bash", "content": [{"type": "text", "text": "a.txt"}],
                    "is_error": false}),
                ),
            ],
            running: None,
            last_seq_then: 12,
        };
        forward_gap(&peer, "s", &watch, &mut translator, &gap);
        let mut updates = Vec::new();
        while let Ok(crate::acp::peer::Outgoing::Line(line)) = rx.try_recv() {
            let sent: Value = serde_json::from_str(&line).unwrap();
            assert_eq!(sent["params"]["sessionId"], "s");
            updates.push(sent["params"]["update"].clone());
        }
        // The editor's own prompt is not shown again; the other client's and the result are.
        assert_eq!(updates.len(), 2, "{updates:?}");
        assert_eq!(updates[0]["content"]["text"], "from the terminal");
        assert_eq!(updates[1]["toolCallId"], "c1");
        assert_eq!(updates[1]["status"], "completed");
        // The run ended inside the gap: its prompt is answered, and the finished call is not
        // marked failed when a later run ends.
        assert_eq!(waiting.await.unwrap(), Ok("end_turn"));
        let end: SessionEvent = serde_json::from_value(json!({"kind": "agent_end",
            "run_id": "run-2", "reason": "completed", "usage": rein_protocol::message::Usage::default(),
            "turns": 1}))
        .unwrap();
        let Translated::RunEnded { closing, .. } = translator.translate(&end) else { panic!() };
        assert!(closing.is_empty(), "{closing:?}");
    }

    #[test]
    fn initialize_offers_load_images_and_context() {
        let result = initialize_result();
        assert_eq!(result["protocolVersion"], 1);
        assert_eq!(result["agentCapabilities"]["loadSession"], true);
        assert_eq!(result["agentCapabilities"]["promptCapabilities"]["embeddedContext"], true);
        assert_eq!(result["agentCapabilities"]["mcpCapabilities"]["http"], true);
    }

    #[test]
    fn editor_mcp_servers_become_session_servers() {
        let servers = mcp_servers(&json!({"cwd": "/p", "mcpServers": [
            {"name": "fs", "command": "npx", "args": ["-y", "fs"],
             "env": [{"name": "A", "value": "1"}]},
            {"type": "http", "name": "web", "url": "http://127.0.0.1:9/mcp",
             "headers": [{"name": "X-Key", "value": "k"}]},
            {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []},
        ]}));
        assert_eq!(servers.len(), 2);
        assert_eq!(
            servers["fs"],
            json!({"command": "npx", "args": ["-y", "fs"], "env": {"A": "1"}})
        );
        assert_eq!(servers["web"]["headers"], json!({"X-Key": "k"}));
        let parsed: rein_protocol::mcp::McpServerConfig =
            serde_json::from_value(servers["web"].clone()).unwrap();
        assert_eq!(parsed.url.as_deref(), Some("http://127.0.0.1:9/mcp"));
    }
}
