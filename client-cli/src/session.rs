//! Getting the session a run or an attach works on: a new one, a named one, or the most
//! recent one of a directory, with the model and approval policy the command line asked for.

use crate::client::{Client, ClientError};
use crate::resolve;
use clap::ValueEnum;
use rein_protocol::message::{Message, StopReason};
use rein_protocol::method::{
    ApprovalPolicy, CreateSessionParams, DaemonInfo, ExportFormat, ExportParams, ExportResult,
    HistoryPageParams, MessagesResult, SessionRef, SessionState, SetApprovalPolicyParams,
    SetModelParams,
};
use rein_protocol::requests as rq;
use std::path::PathBuf;

/// Which session to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A new session.
    New,
    /// This session (an id or a unique id prefix).
    Named(String),
    /// The most recent session of the directory; a new one when it has none.
    Latest,
}

/// The approval policy as given on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ApproveArg {
    /// Every write, edit and bash call asks.
    Ask,
    /// Writes and edits inside the project pass; bash and anything outside ask.
    AutoEdit,
    /// Nothing asks.
    Yolo,
}

impl From<ApproveArg> for ApprovalPolicy {
    fn from(arg: ApproveArg) -> Self {
        match arg {
            ApproveArg::Ask => Self::Ask,
            ApproveArg::AutoEdit => Self::AutoEdit,
            ApproveArg::Yolo => Self::Yolo,
        }
    }
}

/// What the command line says about the session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRequest {
    /// Which session.
    pub target: Target,
    /// Its project directory (absolute).
    pub cwd: PathBuf,
    /// `provider/model` to use.
    pub model: Option<String>,
    /// The approval policy to use.
    pub approval: Option<ApprovalPolicy>,
    /// Where a new session's tools run.
    pub sandbox: Option<rein_protocol::method::SandboxMode>,
}

/// Parses `--sandbox MODE` by the protocol's names (`read-only`, `workspace-write`, `off`).
pub fn parse_sandbox(text: &str) -> Result<rein_protocol::method::SandboxMode, String> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).map_err(|_| {
        format!("`{text}` is not a sandbox mode: read-only, workspace-write, container or off")
    })
}

/// Creates or opens the requested session and applies the requested model and policy.
/// Returns its state and whether it was newly created.
pub async fn prepare(
    client: &mut Client,
    request: &SessionRequest,
) -> Result<(SessionState, bool), ClientError> {
    let existing = match &request.target {
        Target::New => None,
        Target::Named(text) => Some(resolve::session_id(client, text).await?),
        Target::Latest => {
            let latest = resolve::latest_session(client, &request.cwd).await?;
            latest.map(|summary| summary.session_id)
        }
    };
    let Some(session_id) = existing else {
        let params = CreateSessionParams {
            cwd: request.cwd.display().to_string(),
            model: request.model.clone(),
            approval_policy: request.approval,
            sandbox: request.sandbox,
            ..CreateSessionParams::default()
        };
        let state = client.request::<rq::SessionCreate>(params).await?;
        return Ok((state, true));
    };
    let id = SessionRef { session_id: session_id.clone() };
    let mut state: SessionState = client.request::<rq::SessionOpen>(id).await?;
    if let Some(model) = &request.model {
        let params = SetModelParams { session_id: session_id.clone(), model: model.clone() };
        client.request::<rq::SessionSetModel>(params).await?;
    }
    if let Some(policy) = request.approval.filter(|policy| *policy != state.approval_policy) {
        let params = SetApprovalPolicyParams { session_id: session_id.clone(), policy };
        client.request::<rq::SessionSetApprovalPolicy>(params).await?;
    }
    if request.model.is_some() || request.approval.is_some() {
        state = client.request::<rq::SessionState>(SessionRef { session_id }).await?;
    }
    Ok((state, false))
}

/// When a new session got the local model server the daemon found (because no model and no
/// key were set up), the line that says so; `None` otherwise. `info` is the daemon's info as
/// the client already asked for it (see [`crate::commands::daemon::warn`]): the local server
/// is found once, when the daemon starts, so it cannot have changed since.
pub fn local_server_note(info: &DaemonInfo, state: &SessionState) -> Option<String> {
    let local = info.local_server.as_ref()?;
    (local.provider == state.model.provider).then(|| {
        format!(
            "rein: no model configured and no API key set: using {} at {} (model {})",
            local.server, local.base_url, state.model
        )
    })
}

/// Whether `messages` hold nothing worth keeping: no answer from the model (an assistant
/// message that did not fail) and no tool result. A session whose first prompt failed (a bad
/// model, a provider error) holds at most the prompt and the failed reply.
pub fn nothing_answered(messages: &[Message]) -> bool {
    !messages.iter().any(|message| match message {
        Message::Assistant(reply) => {
            !matches!(reply.stop_reason, StopReason::Error | StopReason::Aborted)
        }
        Message::ToolResult(_) => true,
        _ => false,
    })
}

/// A session's whole export, fetched page by page (a very large session comes in pages).
pub async fn export_all(
    client: &mut Client,
    session_id: &str,
    format: ExportFormat,
) -> Result<ExportResult, ClientError> {
    let params =
        |cursor| ExportParams { session_id: session_id.to_string(), format, limit: None, cursor };
    let mut result: ExportResult = client.request::<rq::SessionExport>(params(None)).await?;
    while let Some(cursor) = result.next_cursor.take() {
        let page = client.request::<rq::SessionExport>(params(Some(cursor))).await?;
        result.content.push_str(&page.content);
        result.next_cursor = page.next_cursor;
    }
    Ok(result)
}

/// Deletes a session this client created when nothing was answered in it, so a failed first
/// prompt leaves no session behind for `rein attach` or `rein run -c` to pick. True when it
/// was deleted. A session that is running (another client prompted it) is kept.
pub async fn discard_if_unanswered(client: &mut Client, session_id: &str) -> bool {
    let reference = SessionRef { session_id: session_id.to_string() };
    let state: Result<SessionState, _> =
        client.request::<rq::SessionState>(reference.clone()).await;
    if !matches!(state, Ok(ref state) if !state.running) {
        return false;
    }
    let params =
        HistoryPageParams { session_id: session_id.to_string(), limit: None, cursor: None };
    let messages: Result<MessagesResult, _> = client.request::<rq::SessionMessages>(params).await;
    match messages {
        Ok(result) if nothing_answered(&result.messages) => {
            client.request::<rq::SessionDelete>(reference).await.is_ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::{AssistantMessage, UserMessage};
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    const WHOLE_ID: &str = "01a2338c-23c3-728f-a6c6-f7e3df6ad764";

    #[test]
    fn the_local_server_note_names_the_server_only_when_the_session_uses_it() {
        let state: SessionState = serde_json::from_value(state_json(WHOLE_ID)).unwrap();
        let info = |provider: Option<&str>| -> DaemonInfo {
            let local = provider.map(|provider| {
                json!({"server": "Ollama", "provider": provider,
                    "base_url": "http://127.0.0.1:11434/v1", "model": "x", "models": ["x"]})
            });
            serde_json::from_value(json!({
                "version": "0", "protocol_version": "1.0", "pid": 1, "uptime_ms": 0,
                "socket_path": "/s", "rein_home": "/h", "sessions_loaded": 0, "connections": 1,
                "local_server": local
            }))
            .unwrap()
        };
        let note = local_server_note(&info(Some("local")), &state).unwrap();
        assert_eq!(
            note,
            "rein: no model configured and no API key set: using Ollama at \
             http://127.0.0.1:11434/v1 (model local/test-model)"
        );
        assert_eq!(local_server_note(&info(Some("ollama")), &state), None);
        assert_eq!(local_server_note(&info(None), &state), None);
    }

    fn state_json(id: &str) -> Value {
        json!({"session_id": id, "cwd": "/p",
            "model": {"provider": "local", "model": "test-model"}, "thinking_level": "medium",
            "approval_policy": "yolo", "running": false,
            "queues": {"steering": [], "follow_up": []}, "usage": {}, "context_tokens": 0,
            "context_window": 1000, "trusted": false, "last_seq": 0})
    }

    /// Serves one connection like a daemon holding the single session `WHOLE_ID` would,
    /// and returns the methods it was asked for, in order.
    async fn methods_asked_to_prepare(target: Target) -> Vec<String> {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("reind.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let daemon = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            let (read, mut write) = stream.into_split();
            let mut lines = BufReader::new(read).lines();
            let mut methods = Vec::new();
            while let Ok(Some(line)) = lines.next_line().await {
                let request: Value = serde_json::from_str(&line).unwrap();
                let method = request["method"].as_str().unwrap().to_string();
                let answer = match method.as_str() {
                    "session/open" if request["params"]["session_id"] == WHOLE_ID => {
                        json!({"result": state_json(WHOLE_ID)})
                    }
                    "session/open" => json!({"error": {"code": -32001,
                        "message": "no such session", "data": {"kind": "session_not_found"}}}),
                    "session/list" => json!({"result": {"sessions": [{"session_id": WHOLE_ID,
                        "cwd": "/p", "entry_count": 1, "size_bytes": 1, "created": "",
                        "updated": "", "path": "/p/s.jsonl"}]}}),
                    other => panic!("unexpected {other}"),
                };
                methods.push(method);
                let mut answer = answer;
                answer["jsonrpc"] = json!("2.0");
                answer["id"] = request["id"].clone();
                let mut bytes = serde_json::to_vec(&answer).unwrap();
                bytes.push(b'\n');
                write.write_all(&bytes).await.unwrap();
            }
            methods
        });
        let mut client = Client::connect(&socket).await.unwrap();
        let request = SessionRequest {
            target,
            cwd: PathBuf::from("/p"),
            model: None,
            approval: None,
            sandbox: None,
        };
        let (state, created) = prepare(&mut client, &request).await.unwrap();
        assert_eq!((state.session_id.as_str(), created), (WHOLE_ID, false));
        drop(client);
        daemon.await.unwrap()
    }

    #[tokio::test]
    async fn a_whole_id_is_opened_without_listing_every_session() {
        let methods = methods_asked_to_prepare(Target::Named(WHOLE_ID.into())).await;
        assert_eq!(methods, ["session/open"]);
    }

    #[tokio::test]
    async fn a_prefix_is_resolved_through_the_listing() {
        let methods = methods_asked_to_prepare(Target::Named("01a2338c".into())).await;
        assert_eq!(methods, ["session/list", "session/open"]);
    }

    fn reply(stop_reason: StopReason) -> Message {
        Message::Assistant(AssistantMessage {
            content: Vec::new(),
            api: "openai-chat".into(),
            provider: "fake".into(),
            model: "m".into(),
            usage: Default::default(),
            stop_reason,
            error_message: None,
            timestamp: 0,
        })
    }

    #[test]
    fn only_sessions_without_a_real_answer_count_as_unanswered() {
        let prompt = Message::User(UserMessage::text("hi", 0));
        assert!(nothing_answered(&[]));
        assert!(nothing_answered(&[prompt.clone(), reply(StopReason::Error)]));
        assert!(nothing_answered(&[prompt.clone(), reply(StopReason::Aborted)]));
        assert!(!nothing_answered(&[prompt, reply(StopReason::Stop)]));
    }
}
