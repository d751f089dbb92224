//! Turns one line into one method call and sends its response.
//!
//! Each request runs on a task of its own, so a slow method never holds up the next line of
//! the same connection; responses are written as they complete. Lines that are not valid
//! JSON-RPC get a standard error response (`id: null` when no id could be read) and the
//! connection carries on.

use crate::daemon::Daemon;
use crate::rpc_error::RpcError;
use futures::FutureExt;
use jsonrpsee::core::traits::IdProvider;
use jsonrpsee::{
    BoundedSubscriptions, ConnectionId, Extensions, MethodCallback, MethodResponse, MethodSink,
    Methods, SubscriptionState,
};
use jsonrpsee_types::{Id, Params, Request, SubscriptionId};
use rein_protocol::codec::Frame;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::ClientCapabilities;
use rein_protocol::method::names;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

/// Largest response a method may produce.
const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// What one client said about itself in `initialize`.
#[derive(Debug, Clone, Default)]
pub struct ClientInfo {
    /// The client's name.
    pub name: String,
    /// The client's version.
    pub version: String,
    /// The client's capabilities.
    pub capabilities: ClientCapabilities,
}

/// Per-connection state, handed to methods through their `Extensions`.
#[derive(Debug)]
pub struct ConnectionContext {
    /// The connection's number, for logs.
    pub id: usize,
    /// The daemon.
    pub daemon: Arc<Daemon>,
    /// Set by `initialize`.
    pub client: Mutex<ClientInfo>,
    methods: Methods,
    sink: MethodSink,
    subscriptions: BoundedSubscriptions,
    subscription_ids: SequentialIds,
    active: Mutex<HashMap<String, ActiveSubscription>>,
}

/// A subscription this connection holds: which unsubscribe method ends it, and how.
#[derive(Debug)]
struct ActiveSubscription {
    unsubscribe_method: &'static str,
    cancel: CancellationToken,
}

/// Keeps a subscription listed while its handler runs; unlists it when dropped.
#[derive(Debug)]
pub struct SubscriptionGuard {
    context: Arc<ConnectionContext>,
    id: String,
    cancel: CancellationToken,
}

impl SubscriptionGuard {
    /// Fires when the client unsubscribes.
    pub fn cancelled(&self) -> tokio_util::sync::WaitForCancellationFuture<'_> {
        self.cancel.cancelled()
    }
}

impl Drop for SubscriptionGuard {
    fn drop(&mut self) {
        if let Ok(mut active) = self.context.active.lock() {
            active.remove(&self.id);
        }
    }
}

impl ConnectionContext {
    /// Context for a new connection writing to `sink`.
    pub fn new(
        id: usize,
        daemon: Arc<Daemon>,
        methods: Methods,
        sink: MethodSink,
        subscriptions: BoundedSubscriptions,
    ) -> Self {
        Self {
            id,
            daemon,
            client: Mutex::new(ClientInfo::default()),
            methods,
            sink,
            subscriptions,
            subscription_ids: SequentialIds::default(),
            active: Mutex::new(HashMap::new()),
        }
    }

    /// Lists a subscription before it is accepted, so an unsubscribe sent right after the
    /// subscribe's answer always finds it. `unsubscribe_method` is the method that may end it.
    pub fn track_subscription(
        self: &Arc<Self>,
        id: &SubscriptionId<'_>,
        unsubscribe_method: &'static str,
    ) -> SubscriptionGuard {
        let id = subscription_key(id);
        let cancel = CancellationToken::new();
        if let Ok(mut active) = self.active.lock() {
            active.insert(
                id.clone(),
                ActiveSubscription { unsubscribe_method, cancel: cancel.clone() },
            );
        }
        SubscriptionGuard { context: self.clone(), id, cancel }
    }

    /// Ends a subscription of this connection; false when there is no such subscription for
    /// this unsubscribe method.
    fn unsubscribe(&self, id: &str, method: &str) -> bool {
        let Ok(mut active) = self.active.lock() else { return false };
        match active.get(id) {
            Some(subscription) if subscription.unsubscribe_method == method => {
                subscription.cancel.cancel();
                active.remove(id);
                true
            }
            _ => false,
        }
    }

    /// The client's name, or `anonymous` before `initialize`.
    pub fn client_name(&self) -> String {
        let client = self.client.lock().map(|c| c.name.clone()).unwrap_or_default();
        if client.is_empty() { "anonymous".to_string() } else { client }
    }
}

/// Subscription ids `sub-1`, `sub-2`, ... per connection.
#[derive(Debug, Default)]
struct SequentialIds(AtomicU64);

impl IdProvider for SequentialIds {
    fn next_id(&self) -> SubscriptionId<'static> {
        let n = self.0.fetch_add(1, Ordering::Relaxed) + 1;
        SubscriptionId::Str(format!("sub-{n}").into())
    }
}

/// Handles one decoded line.
pub fn handle_frame(frame: Frame, context: &Arc<ConnectionContext>) {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::TooLong { length } => {
            let limit = context.daemon.options.max_line_bytes;
            let error = RpcError::new(
                ErrorKind::InvalidRequest,
                format!("line of {length} bytes exceeds the limit of {limit} bytes"),
            );
            send_error(context, Id::Null, &error);
            return;
        }
        Frame::InvalidUtf8 => {
            send_error(
                context,
                Id::Null,
                &RpcError::new(ErrorKind::ParseError, "line is not valid UTF-8"),
            );
            return;
        }
    };
    if line.trim().is_empty() {
        return;
    }
    let context = context.clone();
    tokio::spawn(async move {
        let call = std::panic::AssertUnwindSafe(handle_line(&line, &context));
        if let Err(panic) = call.catch_unwind().await {
            let message = panic_message(&panic);
            tracing::error!(connection = context.id, %message, "a method panicked");
            let id = request_id(&line).unwrap_or(Id::Null);
            send_error(
                &context,
                id,
                &RpcError::new(ErrorKind::Internal, format!("internal error: {message}")),
            );
        }
    });
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_string()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Reads the `id` of a line that may not be a valid request.
fn request_id(line: &str) -> Option<Id<'static>> {
    let value: Value = serde_json::from_str(line).ok()?;
    match value.get("id")? {
        Value::Number(n) => n.as_u64().map(Id::Number),
        Value::String(s) => Some(Id::Str(s.clone().into())),
        _ => Some(Id::Null),
    }
}

async fn handle_line(line: &str, context: &Arc<ConnectionContext>) {
    match serde_json::from_str::<Request<'_>>(line) {
        Ok(request) => call(request, context).await,
        Err(_) => handle_non_request(line, context).await,
    }
}

/// Classifies a line that did not parse as a request: bad JSON, a notification, or an invalid
/// request.
async fn handle_non_request(line: &str, context: &Arc<ConnectionContext>) {
    let value = match serde_json::from_str::<Value>(line) {
        Ok(value) => value,
        Err(error) => {
            send_error(
                context,
                Id::Null,
                &RpcError::new(ErrorKind::ParseError, format!("invalid JSON: {error}")),
            );
            return;
        }
    };
    if value.is_array() {
        let error = RpcError::new(
            ErrorKind::InvalidRequest,
            "batch requests are not supported; send one request per line",
        );
        send_error(context, Id::Null, &error);
        return;
    }
    let is_notification = value.get("id").is_none()
        && value.get("jsonrpc").and_then(Value::as_str) == Some("2.0")
        && value.get("method").is_some_and(Value::is_string);
    if is_notification {
        // Notifications get no response, not even an error.
        let mut with_id = value;
        with_id["id"] = Value::Null;
        let text = with_id.to_string();
        if let Ok(request) = serde_json::from_str::<Request<'_>>(&text) {
            let _ = run_method(request, context).await;
        }
        return;
    }
    let id = request_id(line).unwrap_or(Id::Null);
    let error = RpcError::new(
        ErrorKind::InvalidRequest,
        "not a JSON-RPC 2.0 request: need \"jsonrpc\":\"2.0\", a string \"method\" and an \"id\"",
    );
    send_error(context, id, &error);
}

async fn call(request: Request<'_>, context: &Arc<ConnectionContext>) {
    if let Some(response) = run_method(request, context).await {
        let _ = context.sink.send(response.into_json()).await;
    }
}

/// Runs the method; returns the response to send, or `None` when the method already sent it
/// (subscriptions answer through the sink themselves).
async fn run_method(
    request: Request<'_>,
    context: &Arc<ConnectionContext>,
) -> Option<MethodResponse> {
    let Request { id, method, params, .. } = request;
    let params = Params::new(params.as_ref().map(|raw| raw.get()));
    let mut extensions = Extensions::new();
    extensions.insert(context.clone());
    let connection = ConnectionId(context.id);
    if method == names::DAEMON_UNSUBSCRIBE || method == names::SESSION_UNSUBSCRIBE {
        return Some(unsubscribe(id, params.as_str(), &method, context));
    }
    match context.methods.method(&method) {
        None => {
            let error =
                RpcError::new(ErrorKind::MethodNotFound, format!("method not found: {method}"));
            Some(MethodResponse::error(id, error.to_object()))
        }
        Some(MethodCallback::Sync(callback)) => {
            Some((callback)(id, params, MAX_RESPONSE_BYTES, extensions))
        }
        Some(MethodCallback::Async(callback)) => {
            let future = (callback)(
                id.into_owned(),
                params.into_owned(),
                connection,
                MAX_RESPONSE_BYTES,
                extensions,
            );
            Some(future.await)
        }
        Some(MethodCallback::Subscription(callback)) => {
            let Some(permit) = context.subscriptions.acquire() else {
                let error = RpcError::new(
                    ErrorKind::InvalidRequest,
                    "too many subscriptions on this connection",
                );
                return Some(MethodResponse::error(id, error.to_object()));
            };
            let state = SubscriptionState {
                conn_id: connection,
                id_provider: &context.subscription_ids,
                subscription_permit: permit,
            };
            let _ = (callback)(id, params, context.sink.clone(), state, extensions).await;
            None
        }
        Some(MethodCallback::Unsubscription(callback)) => {
            Some((callback)(id, params, connection, MAX_RESPONSE_BYTES, extensions))
        }
    }
}

/// `daemon/unsubscribe` and `session/unsubscribe`: `{"subscription": id}` (or `[id]`) →
/// whether a subscription was ended.
fn unsubscribe(
    id: Id<'_>,
    params: Option<&str>,
    method: &str,
    context: &ConnectionContext,
) -> MethodResponse {
    let value = params.and_then(|text| serde_json::from_str::<Value>(text).ok());
    let subscription = match &value {
        Some(Value::Object(object)) => object.get("subscription"),
        Some(Value::Array(items)) => items.first(),
        _ => None,
    };
    let key = match subscription {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(number)) => number.to_string(),
        _ => {
            let error = RpcError::invalid_param("subscription", "the subscription id is required");
            return MethodResponse::error(id, error.to_object());
        }
    };
    let ended = context.unsubscribe(&key, method);
    MethodResponse::response(id, jsonrpsee::ResponsePayload::success(ended), MAX_RESPONSE_BYTES)
}

/// The text form of a subscription id.
fn subscription_key(id: &SubscriptionId<'_>) -> String {
    match id {
        SubscriptionId::Str(text) => text.to_string(),
        SubscriptionId::Num(number) => number.to_string(),
    }
}

fn send_error(context: &ConnectionContext, id: Id<'_>, error: &RpcError) {
    let response = MethodResponse::error(id, error.to_object());
    let sink = context.sink.clone();
    let json = response.into_json();
    tokio::spawn(async move {
        let _ = sink.send(json).await;
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, coding_environment};
    use crate::daemon::DaemonOptions;
    use crate::hub::Hub;
    use jsonrpsee::RpcModule;
    use rein_ai::Registry;
    use tokio::sync::mpsc;

    fn daemon(home: &std::path::Path) -> Arc<Daemon> {
        let config = Config::default();
        let registry = Arc::new(Registry::new(config.providers_config()).unwrap());
        let env = Arc::new(coding_environment(home, &config, registry.clone()).unwrap());
        let (events, _) = tokio::sync::broadcast::channel(8);
        let hub = Arc::new(Hub::new(env, config.sessions.clone(), events.clone()));
        let options = DaemonOptions {
            home: home.to_path_buf(),
            socket: home.join("s.sock"),
            max_line_bytes: 1024,
            max_connections: 8,
        };
        Arc::new(Daemon::new(options, config, registry, hub, events))
    }

    async fn response(rx: &mut mpsc::Receiver<Box<serde_json::value::RawValue>>) -> Value {
        let raw = rx.recv().await.unwrap();
        serde_json::from_str(raw.get()).unwrap()
    }

    #[tokio::test]
    async fn a_panicking_method_answers_internal_and_the_connection_keeps_serving() {
        let home = tempfile::tempdir().unwrap();
        let mut module = RpcModule::new(());
        module
            .register_method("test/boom", |_, _, _| -> Result<u8, RpcError> {
                panic!("kaboom");
            })
            .unwrap();
        module.register_method("test/ok", |_, _, _| Ok::<u8, RpcError>(7)).unwrap();
        let (tx, mut rx) = mpsc::channel(8);
        let context = Arc::new(ConnectionContext::new(
            1,
            daemon(home.path()),
            module.into(),
            MethodSink::new(tx),
            BoundedSubscriptions::new(4),
        ));
        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":5,"method":"test/boom"}"#.into()),
            &context,
        );
        let answer = response(&mut rx).await;
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], -32603);
        assert_eq!(answer["error"]["data"]["kind"], "internal");
        assert!(answer["error"]["message"].as_str().unwrap().contains("kaboom"));

        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":6,"method":"test/ok"}"#.into()),
            &context,
        );
        let answer = response(&mut rx).await;
        assert_eq!(answer["result"], 7);
    }

    #[tokio::test]
    async fn oversize_and_non_utf8_frames_get_errors_with_null_ids() {
        let home = tempfile::tempdir().unwrap();
        let (tx, mut rx) = mpsc::channel(8);
        let context = Arc::new(ConnectionContext::new(
            1,
            daemon(home.path()),
            RpcModule::new(()).into(),
            MethodSink::new(tx),
            BoundedSubscriptions::new(4),
        ));
        handle_frame(Frame::TooLong { length: 5000 }, &context);
        let answer = response(&mut rx).await;
        assert_eq!(answer["error"]["data"]["kind"], "invalid_request");
        assert_eq!(answer["id"], Value::Null);
        handle_frame(Frame::InvalidUtf8, &context);
        let answer = response(&mut rx).await;
        assert_eq!(answer["error"]["data"]["kind"], "parse_error");
        // A notification (no id) gets no answer at all, not even for an unknown method.
        handle_frame(Frame::Line(r#"{"jsonrpc":"2.0","method":"no/such"}"#.into()), &context);
        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#.into()),
            &context,
        );
        let answer = response(&mut rx).await;
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["error"]["data"]["kind"], "method_not_found");
    }
}
