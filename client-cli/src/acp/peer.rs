//! The editor's side of the ACP connection: JSON-RPC lines on stdout, and the answers to the
//! requests we send it (`session/request_permission`).

use crate::client::ClientError;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

/// A JSON-RPC error to answer the editor with.
#[derive(Debug, Clone, PartialEq)]
pub struct AcpError {
    /// The JSON-RPC code.
    pub code: i64,
    /// Text for people.
    pub message: String,
    /// Extra data (the daemon's `data`, when the error came from it).
    pub data: Option<Value>,
}

impl AcpError {
    /// `-32602`: the params do not fit.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self { code: -32602, message: message.into(), data: None }
    }

    /// `-32601`: no such method.
    pub fn method_not_found(method: &str) -> Self {
        Self { code: -32601, message: format!("method not found: {method}"), data: None }
    }

    /// `-32603`: something failed inside the adapter or the daemon.
    pub fn internal(message: impl Into<String>) -> Self {
        Self { code: -32603, message: message.into(), data: None }
    }

    /// The JSON-RPC error object.
    pub fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

impl From<ClientError> for AcpError {
    fn from(error: ClientError) -> Self {
        match error {
            ClientError::Rpc(failure) => {
                Self { code: failure.code, message: failure.message, data: Some(failure.data) }
            }
            other => Self::internal(other.to_string()),
        }
    }
}

/// What the writer of stdout receives.
#[derive(Debug, Clone, PartialEq)]
pub enum Outgoing {
    /// One JSON-RPC message, without its newline.
    Line(String),
    /// Everything has been sent; the writer flushes and stops.
    End,
}

/// The answer to a request sent to the editor.
#[derive(Debug)]
pub struct PendingAnswer(oneshot::Receiver<Result<Value, AcpError>>);

impl PendingAnswer {
    /// Waits for the answer.
    pub async fn wait(self) -> Result<Value, AcpError> {
        self.0.await.map_err(|_| AcpError::internal("the editor went away"))?
    }
}

/// Writes to the editor and matches its answers to our requests. Every line goes through one
/// channel, so updates sent before a response reach the editor before it.
#[derive(Debug)]
pub struct Peer {
    out: mpsc::UnboundedSender<Outgoing>,
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, AcpError>>>>,
}

impl Peer {
    /// A peer writing its lines into `out`.
    pub fn new(out: mpsc::UnboundedSender<Outgoing>) -> Self {
        Self { out, next_id: AtomicU64::new(1), pending: Mutex::new(HashMap::new()) }
    }

    fn send(&self, message: Value) {
        if self.out.send(Outgoing::Line(message.to_string())).is_err() {
            tracing::debug!("the editor's output is closed");
        }
    }

    /// Tells the writer that nothing more comes after what was sent so far.
    pub fn finish(&self) {
        let _ = self.out.send(Outgoing::End);
    }

    /// Sends a notification.
    pub fn notify(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends one `session/update` notification about session `session_id`.
    pub fn session_update(&self, session_id: &str, update: Value) {
        self.notify("session/update", json!({"sessionId": session_id, "update": update}));
    }

    /// Answers the editor's request `id`.
    pub fn respond(&self, id: Value, result: Result<Value, AcpError>) {
        match result {
            Ok(result) => self.send(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            Err(error) => self.send(json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()})),
        }
    }

    /// Sends a request to the editor; returns its id and the answer to come.
    pub fn start_request(&self, method: &str, params: Value) -> (u64, PendingAnswer) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending_lock().insert(id, tx);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        (id, PendingAnswer(rx))
    }

    /// Sends a request to the editor and waits for its answer.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, AcpError> {
        self.start_request(method, params).1.wait().await
    }

    /// Tells the editor that the answer to request `id` is no longer needed (ACP's
    /// `$/cancel_request`); the editor still answers it, normally with an error.
    pub fn cancel_request(&self, id: u64) {
        self.notify("$/cancel_request", json!({"requestId": id}));
    }

    /// Hands a response from the editor to the request waiting for it.
    pub fn resolve(&self, mut message: Value) {
        let Some(id) = message.get("id").and_then(Value::as_u64) else {
            tracing::debug!("response without a numeric id: {message}");
            return;
        };
        let Some(waiter) = self.pending_lock().remove(&id) else {
            tracing::debug!("response to an unknown request {id}");
            return;
        };
        let outcome = match message.get_mut("error").map(Value::take) {
            Some(error) => Err(AcpError {
                code: error.get("code").and_then(Value::as_i64).unwrap_or(-32603),
                message: error.get("message").and_then(Value::as_str).unwrap_or("").to_string(),
                data: error.get("data").cloned(),
            }),
            None => Ok(message.get_mut("result").map(Value::take).unwrap_or(Value::Null)),
        };
        let _ = waiter.send(outcome);
    }

    fn pending_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, AcpError>>>> {
        self.pending.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(outgoing: Outgoing) -> Value {
        match outgoing {
            Outgoing::Line(text) => serde_json::from_str(&text).unwrap(),
            Outgoing::End => panic!("unexpected end"),
        }
    }

    #[tokio::test]
    async fn requests_are_matched_to_their_responses() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = std::sync::Arc::new(Peer::new(tx));
        let asking = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("session/request_permission", json!({"a": 1})).await }
        });
        let sent: Value = line(rx.recv().await.unwrap());
        assert_eq!(sent["method"], "session/request_permission");
        peer.resolve(json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": 1}}));
        assert_eq!(asking.await.unwrap().unwrap(), json!({"ok": 1}));

        let failing = tokio::spawn({
            let peer = peer.clone();
            async move { peer.request("x", json!({})).await }
        });
        let sent: Value = line(rx.recv().await.unwrap());
        peer.resolve(json!({"id": sent["id"], "error": {"code": -1, "message": "no"}}));
        assert_eq!(failing.await.unwrap().unwrap_err().message, "no");
    }

    #[tokio::test]
    async fn a_cancelled_request_is_announced_and_still_answered() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        let (id, answer) = peer.start_request("session/request_permission", json!({}));
        rx.try_recv().unwrap();
        peer.cancel_request(id);
        let cancel: Value = line(rx.try_recv().unwrap());
        assert_eq!(cancel["method"], "$/cancel_request");
        assert_eq!(cancel["params"]["requestId"], id);
        peer.resolve(json!({"id": id, "error": {"code": -32800, "message": "cancelled"}}));
        assert_eq!(answer.wait().await.unwrap_err().code, -32800);
    }

    #[test]
    fn responses_carry_results_or_errors() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let peer = Peer::new(tx);
        peer.respond(json!(3), Ok(json!({})));
        peer.respond(json!("a"), Err(AcpError::invalid_params("bad cwd")));
        let ok: Value = line(rx.try_recv().unwrap());
        let err: Value = line(rx.try_recv().unwrap());
        assert_eq!(ok["id"], 3);
        assert_eq!(err["error"]["code"], -32602);
        assert_eq!(err["error"]["message"], "bad cwd");
        peer.finish();
        assert_eq!(rx.try_recv().unwrap(), Outgoing::End);
    }
}
