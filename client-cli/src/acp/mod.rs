//! `rein acp`: an [Agent Client Protocol](https://agentclientprotocol.com) adapter.
//!
//! Editors that host ACP agents (Zed, JetBrains IDEs, Neovim and Emacs plugins) spawn
//! `rein acp` and speak JSON-RPC to it over stdin and stdout. The adapter maps that onto the
//! daemon's protocol: ACP sessions are ordinary daemon sessions (so `rein attach` or another
//! editor can follow the same session), prompts become `session/prompt` runs whose events
//! stream back as `session/update` notifications, approval requests become
//! `session/request_permission` calls to the editor, and ACP modes are rein's approval
//! policies.
//!
//! - [`agent`]: the request handlers and the per-session event forwarding.
//! - [`translate`]: daemon events and history as ACP updates.
//! - [`prompt`]: ACP prompt blocks as rein prompt text and images.
//! - [`modes`]: modes and config options (approval policy, model, thinking level).
//! - [`permission`]: the options of a permission request and the decisions they stand for.
//! - [`commands`]: the slash commands offered to the editor and the daemon calls they make.
//! - [`peer`]: the editor's side of the connection.

pub mod agent;
pub mod commands;
pub mod modes;
pub mod peer;
pub mod permission;
pub mod prompt;
pub mod translate;

use crate::client::ClientError;
use crate::commands::exit;
use agent::Agent;
use peer::{AcpError, Outgoing, Peer};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

/// What one line from the editor is.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request to answer: id, method, params.
    Request(Value, String, Value),
    /// A notification: method, params.
    Notification(String, Value),
    /// A response to a request the adapter sent.
    Response(Value),
    /// Not JSON-RPC; answered with this error.
    Invalid(AcpError),
}

/// Classifies one line from the editor.
pub fn classify(line: &str) -> Incoming {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(error) => {
            return Incoming::Invalid(AcpError {
                code: -32700,
                message: format!("parse error: {error}"),
                data: None,
            });
        }
    };
    let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
    match (message.get("method").and_then(Value::as_str), message.get("id")) {
        (Some(method), Some(id)) => Incoming::Request(id.clone(), method.to_string(), params),
        (Some(method), None) => Incoming::Notification(method.to_string(), params),
        (None, Some(_)) => Incoming::Response(message),
        (None, None) => Incoming::Invalid(AcpError {
            code: -32600,
            message: "not a JSON-RPC message".into(),
            data: None,
        }),
    }
}

/// Serves ACP on stdin and stdout until the editor closes stdin; then answers the requests
/// still in flight and exits.
pub async fn run(socket: &Path) -> Result<u8, ClientError> {
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<Outgoing>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(Outgoing::Line(line)) = out_rx.recv().await {
            let written = async {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await
            };
            if let Err(error) = written.await {
                tracing::warn!("cannot write to the editor: {error}");
                return;
            }
        }
    });
    let peer = Arc::new(Peer::new(out_tx));
    let agent = Arc::new(Agent::connect(socket, Arc::clone(&peer)).await?);
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut requests = JoinSet::new();
    while let Some(line) = lines.next_line().await? {
        while requests.try_join_next().is_some() {}
        if line.trim().is_empty() {
            continue;
        }
        match classify(&line) {
            Incoming::Request(id, method, params) => {
                let agent = Arc::clone(&agent);
                let peer = Arc::clone(&peer);
                requests.spawn(async move {
                    let result = agent.handle_request(&method, params.clone()).await;
                    let opened = commands::opened_session(&method, &params, result.as_ref().ok());
                    peer.respond(id, result);
                    // After the answer, so the editor knows the session the update names.
                    if let Some(session_id) = opened {
                        peer.session_update(&session_id, commands::available_commands_update());
                    }
                });
            }
            Incoming::Notification(method, params) => {
                let agent = Arc::clone(&agent);
                tokio::spawn(async move { agent.handle_notification(&method, params).await });
            }
            Incoming::Response(message) => peer.resolve(message),
            Incoming::Invalid(error) => peer.respond(Value::Null, Err(error)),
        }
    }
    while requests.join_next().await.is_some() {}
    peer.finish();
    if let Err(error) = writer.await {
        tracing::warn!("the output writer failed: {error}");
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_told_apart() {
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"a":1}}"#),
            Incoming::Request(json!(1), "initialize".into(), json!({"a":1}))
        );
        assert_eq!(
            classify(r#"{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s"}}"#),
            Incoming::Notification("session/cancel".into(), json!({"sessionId":"s"}))
        );
        assert!(matches!(
            classify(r#"{"jsonrpc":"2.0","id":4,"result":{}}"#),
            Incoming::Response(_)
        ));
        assert!(matches!(classify("{oops"), Incoming::Invalid(AcpError { code: -32700, .. })));
        assert!(matches!(classify("{}"), Incoming::Invalid(AcpError { code: -32600, .. })));
    }
}
