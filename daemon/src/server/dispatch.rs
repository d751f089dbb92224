//! Turns one line into one method call and sends its response.
//!
//! Each request runs on a task of its own, so a slow method never holds up the next line of
//! the same connection; responses are written as they complete. Requests that change a session
//! are the exception: they take their place in the session's lane as they are read and run
//! one after another in arrival order ([`lanes`](crate::server::lanes)). Lines that are not
//! valid JSON-RPC get a standard error response (`id: null` when no id could be read) and the
//! connection carries on. Every request holds one of the connection's in-flight permits until
//! it is answered, which is what stops the connection's reader when a client does not read.

use crate::daemon::Daemon;
use crate::rpc_error::RpcError;
use crate::server::lanes::{Lane, Lanes};
use crate::server::request_id::{self, IdKind, LooseRequest, RawIds};
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
use rein_protocol::requests::{MethodId, Scope};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedSemaphorePermit;
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
    /// Cancelled when the client hangs up: every subscription of the connection ends.
    closing: CancellationToken,
    lanes: Lanes,
    raw_ids: Arc<RawIds>,
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
    /// Fires when the client unsubscribes or hangs up.
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
    /// Context for a new connection writing to `sink`; `raw_ids` restores the request ids
    /// jsonrpsee cannot carry (the connection's writer shares it).
    pub fn new(
        id: usize,
        daemon: Arc<Daemon>,
        methods: Methods,
        sink: MethodSink,
        subscriptions: BoundedSubscriptions,
        raw_ids: Arc<RawIds>,
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
            closing: CancellationToken::new(),
            lanes: Lanes::default(),
            raw_ids,
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
        let cancel = self.closing.child_token();
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

    /// Where this connection's answers and notifications go.
    pub fn sink(&self) -> &MethodSink {
        &self.sink
    }

    /// The client hung up: ends every subscription, now and any accepted later.
    pub fn hang_up(&self) {
        self.closing.cancel();
    }

    /// Subscriptions open on this connection.
    pub fn subscription_count(&self) -> usize {
        self.active.lock().map(|active| active.len()).unwrap_or_default()
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

/// A line read as a call, or why it is not one.
enum Parsed {
    /// A request (`notification`: no answer is sent).
    Call { request: Request<'static>, notification: bool },
    /// Not a valid request; answered with this error.
    Invalid { id: Id<'static>, error: RpcError },
}

/// Handles one decoded line; `permit` is held until it is answered.
pub fn handle_frame(frame: Frame, context: &Arc<ConnectionContext>, permit: OwnedSemaphorePermit) {
    let line = match frame {
        Frame::Line(line) => line,
        Frame::TooLong { length } => {
            let limit = context.daemon.options.max_line_bytes;
            let error = RpcError::new(
                ErrorKind::InvalidRequest,
                format!("line of {length} bytes exceeds the limit of {limit} bytes"),
            );
            send_error(context, Id::Null, &error, permit);
            return;
        }
        Frame::InvalidUtf8 => {
            let error = RpcError::new(ErrorKind::ParseError, "line is not valid UTF-8");
            send_error(context, Id::Null, &error, permit);
            return;
        }
    };
    if line.trim().is_empty() {
        return;
    }
    let (request, notification) = match parse(&line, &context.raw_ids) {
        Parsed::Call { request, notification } => (request, notification),
        Parsed::Invalid { id, error } => {
            send_error(context, id, &error, permit);
            return;
        }
    };
    drop(line);
    // The place in line is taken now, before the next line is read: that is the order.
    let mut place = context.lanes.join(lanes_for(&request));
    let context = context.clone();
    tokio::spawn(async move {
        let _permit = permit;
        place.ready().await;
        let id = request.id.clone();
        let call = std::panic::AssertUnwindSafe(execute(request, notification, &context));
        if let Err(panic) = call.catch_unwind().await {
            let message = panic_message(&panic);
            tracing::error!(connection = context.id, %message, "a method panicked");
            if !notification {
                let error =
                    RpcError::new(ErrorKind::Internal, format!("internal error: {message}"));
                let response = MethodResponse::error(id, error.to_object());
                let _ = context.sink.send(response.into_json()).await;
            }
        }
        drop(place);
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

/// The lanes a request joins, from its method's [`Scope`] in the protocol's method table:
/// `initialize`, subscribe and unsubscribe keep their order among themselves; every request
/// naming a `session_id` whose method is not [`Scope::Unordered`] (reads and control calls that
/// must overtake) joins that session's lane. Unknown methods are ordered like commands.
fn lanes_for(request: &Request<'_>) -> Vec<Lane> {
    #[derive(Deserialize)]
    struct Target {
        session_id: Option<String>,
    }
    let scope =
        MethodId::from_name(request.method.as_ref()).map_or(Scope::Session, MethodId::scope);
    let mut lanes = Vec::new();
    match scope {
        Scope::Unordered => return lanes,
        Scope::Subscriptions => lanes.push(Lane::Subscriptions),
        Scope::Session => {}
    }
    let session = request
        .params
        .as_ref()
        .and_then(|params| serde_json::from_str::<Target>(params.get()).ok())
        .and_then(|target| target.session_id);
    if let Some(session) = session {
        lanes.push(Lane::Session(session));
    }
    lanes
}

/// Reads a line as a request. Ids jsonrpsee cannot carry (negative, fractional, large
/// numbers) get a stand-in that the writer replaces with the client's own.
fn parse(line: &str, raw_ids: &RawIds) -> Parsed {
    if let Ok(request) = serde_json::from_str::<Request<'_>>(line) {
        let Request { id, method, params, .. } = request;
        let params = params.map(|raw| raw.into_owned());
        return Parsed::Call {
            request: Request::owned(method.into_owned(), params, id.into_owned()),
            notification: false,
        };
    }
    let invalid = |id, message: &str| Parsed::Invalid {
        id,
        error: RpcError::new(ErrorKind::InvalidRequest, message),
    };
    if line.trim_start().starts_with('[') && serde_json::from_str::<&RawValue>(line).is_ok() {
        return invalid(Id::Null, "batch requests are not supported; send one request per line");
    }
    let loose = match serde_json::from_str::<LooseRequest<'_>>(line) {
        Ok(loose) => loose,
        Err(error) => {
            if serde_json::from_str::<&RawValue>(line).is_ok() {
                return invalid(Id::Null, "a request must be a JSON object");
            }
            return Parsed::Invalid {
                id: Id::Null,
                error: RpcError::new(ErrorKind::ParseError, format!("invalid JSON: {error}")),
            };
        }
    };
    let id = match request_id::classify(loose.id) {
        IdKind::Absent => None,
        IdKind::Plain(id) => Some(id),
        IdKind::Number(raw) => Some(raw_ids.stand_in(raw)),
        IdKind::Invalid => {
            return invalid(Id::Null, "the id must be a string, a number or null");
        }
    };
    let method = loose.method_name();
    let (Some(method), true) = (method, loose.is_version_2()) else {
        return invalid(
            id.unwrap_or(Id::Null),
            "not a JSON-RPC 2.0 request: need \"jsonrpc\":\"2.0\", a string \"method\" and an \"id\"",
        );
    };
    let params = loose.params.map(|raw| raw.to_owned());
    match id {
        // Notifications get no response, not even an error.
        None => {
            Parsed::Call { request: Request::owned(method, params, Id::Null), notification: true }
        }
        Some(id) => {
            Parsed::Call { request: Request::owned(method, params, id), notification: false }
        }
    }
}

/// Runs one request and sends its response (none for a notification).
async fn execute(request: Request<'static>, notification: bool, context: &Arc<ConnectionContext>) {
    let response = run_method(request, context).await;
    if let (Some(response), false) = (response, notification) {
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
    let value = params.and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok());
    let subscription = match &value {
        Some(serde_json::Value::Object(object)) => object.get("subscription"),
        Some(serde_json::Value::Array(items)) => items.first(),
        _ => None,
    };
    let key = match subscription {
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Number(number)) => number.to_string(),
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

/// Sends an error response, holding `permit` until it is queued for writing.
fn send_error(
    context: &ConnectionContext,
    id: Id<'_>,
    error: &RpcError,
    permit: OwnedSemaphorePermit,
) {
    let response = MethodResponse::error(id, error.to_object());
    let sink = context.sink.clone();
    let json = response.into_json();
    tokio::spawn(async move {
        let _permit = permit;
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
    use serde_json::Value;
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
            limits: crate::server::limits::ConnectionLimits::default(),
        };
        Arc::new(Daemon::new(options, config, registry, hub, events))
    }

    fn permit() -> OwnedSemaphorePermit {
        Arc::new(tokio::sync::Semaphore::new(1)).try_acquire_owned().unwrap()
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
            Arc::new(RawIds::default()),
        ));
        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":5,"method":"test/boom"}"#.into()),
            &context,
            permit(),
        );
        let answer = response(&mut rx).await;
        assert_eq!(answer["id"], 5);
        assert_eq!(answer["error"]["code"], -32603);
        assert_eq!(answer["error"]["data"]["kind"], "internal");
        assert!(answer["error"]["message"].as_str().unwrap().contains("kaboom"));

        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":6,"method":"test/ok"}"#.into()),
            &context,
            permit(),
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
            Arc::new(RawIds::default()),
        ));
        handle_frame(Frame::TooLong { length: 5000 }, &context, permit());
        let answer = response(&mut rx).await;
        assert_eq!(answer["error"]["data"]["kind"], "invalid_request");
        assert_eq!(answer["id"], Value::Null);
        handle_frame(Frame::InvalidUtf8, &context, permit());
        let answer = response(&mut rx).await;
        assert_eq!(answer["error"]["data"]["kind"], "parse_error");
        // A notification (no id) gets no answer at all, not even for an unknown method.
        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","method":"no/such"}"#.into()),
            &context,
            permit(),
        );
        handle_frame(
            Frame::Line(r#"{"jsonrpc":"2.0","id":1,"method":"no/such"}"#.into()),
            &context,
            permit(),
        );
        let answer = response(&mut rx).await;
        assert_eq!(answer["id"], 1);
        assert_eq!(answer["error"]["data"]["kind"], "method_not_found");
    }
}
