//! One task per client connection: read lines, dispatch them, write responses and
//! notifications back in the order they are produced.
//!
//! What a connection holds is bounded ([`limits`](crate::server::limits)): at most
//! `max_in_flight` requests are handled at once, and the socket is not read while they are
//! all taken, so a client that writes without reading answers stops being read instead of
//! growing the daemon; lines in progress have deadlines and share one daemon-wide input
//! budget; a limit broken gets one JSON-RPC error line before the connection closes.
//!
//! When the client hangs up (end of input), its subscriptions end at once, the requests it
//! already sent are answered (for up to [`HANGUP_DRAIN`]), and the connection closes: nothing
//! of it stays behind in the daemon.
//!
//! Over `max_connections`, a connection is served in a restricted mode: it may call
//! `initialize`, `daemon/info` and `daemon/shutdown` (so `rein daemon status` and `rein
//! daemon stop` always work); anything else, or silence for [`RESTRICTED_WAIT`], gets one
//! `overloaded` error line and the connection closes.

use crate::daemon::Daemon;
use crate::rpc_error::RpcError;
use crate::server::dispatch::{self, ConnectionContext};
use crate::server::reader::{LimitBroken, LineReader, ReadEvent};
use crate::server::request_id::{self, IdKind, LooseRequest, RawIds};
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::StreamCommon as _;
use jsonrpsee::{BoundedSubscriptions, MethodResponse, MethodSink, Methods};
use jsonrpsee_types::Id;
use rein_protocol::codec::Frame;
use rein_protocol::error::ErrorKind;
use rein_protocol::method::names;
use serde_json::value::RawValue;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::{Semaphore, mpsc};

/// Outgoing messages buffered per connection before writers wait.
const OUTGOING_BUFFER: usize = 256;
/// Subscriptions one connection may hold.
const MAX_SUBSCRIPTIONS: u32 = 1024;
/// How long a client that hung up may take to receive the answers to what it sent.
pub const HANGUP_DRAIN: Duration = Duration::from_secs(30);
/// How long a restricted (over the limit) connection may stay silent.
pub const RESTRICTED_WAIT: Duration = Duration::from_secs(2);
/// The longest line a restricted connection may send.
const RESTRICTED_MAX_LINE: usize = 64 * 1024;
/// What a restricted connection may call.
const RESTRICTED_METHODS: &[&str] =
    &[names::INITIALIZE, names::DAEMON_INFO, names::DAEMON_SHUTDOWN];
/// How long the final error line may wait for a client that does not read.
const FINAL_LINE_WAIT: Duration = Duration::from_secs(1);

/// Serves one connection until the client hangs up or the daemon shuts down.
pub async fn serve(stream: Stream, daemon: Arc<Daemon>, methods: Methods, id: usize) {
    if !peer_is_same_user(&stream) {
        let refused = RpcError::new(
            ErrorKind::InvalidRequest,
            "this daemon serves only the user who started it; connections from another user \
             are refused",
        );
        send_final_line(stream, &refused).await;
        return;
    }
    if daemon.connection_opened() {
        tracing::debug!(connection = id, "connected");
        run(stream, &daemon, methods, id, false).await;
        daemon.connection_closed();
        tracing::debug!(connection = id, "disconnected");
    } else if daemon.overflow_opened() {
        tracing::warn!(connection = id, "connection limit reached; serving daemon calls only");
        run(stream, &daemon, methods, id, true).await;
        daemon.overflow_closed();
    } else {
        tracing::warn!(connection = id, "connection limit reached; refusing the connection");
        send_final_line(stream, &over_limit(&daemon)).await;
    }
}

/// Writes one JSON-RPC error line (id `null`) to a connection that is refused, waiting at most
/// [`FINAL_LINE_WAIT`] for a client that does not read, and closes it.
async fn send_final_line(stream: Stream, error: &RpcError) {
    let (_, mut send) = tokio::io::split(stream);
    let line = error_line(Id::Null, error);
    let _ = tokio::time::timeout(FINAL_LINE_WAIT, async {
        let _ = send.write_all(line.get().as_bytes()).await;
        let _ = send.write_all(b"\n").await;
        let _ = send.flush().await;
    })
    .await;
}

fn over_limit(daemon: &Daemon) -> RpcError {
    RpcError::new(
        ErrorKind::Overloaded,
        format!(
            "the daemon serves at most {} connections; only initialize, daemon/info and \
             daemon/shutdown are answered over the limit",
            daemon.options.max_connections
        ),
    )
}

fn limit_error(broken: LimitBroken, daemon: &Daemon) -> RpcError {
    let limits = &daemon.options.limits;
    match broken {
        LimitBroken::LineDeadline => RpcError::new(
            ErrorKind::InvalidRequest,
            format!("a line was not finished within {} s; closing", limits.line_deadline.as_secs()),
        ),
        LimitBroken::PartialLineIdle => RpcError::new(
            ErrorKind::InvalidRequest,
            format!(
                "nothing arrived for {} s in the middle of a line; closing",
                limits.partial_line_idle.as_secs()
            ),
        ),
        LimitBroken::InputBudget => RpcError::new(
            ErrorKind::Overloaded,
            format!(
                "the daemon holds its limit of {} bytes of unfinished input; closing",
                limits.max_buffered_input
            ),
        ),
    }
}

fn error_line(id: Id<'_>, error: &RpcError) -> Box<RawValue> {
    MethodResponse::error(id, error.to_object()).into_json()
}

/// Reads, dispatches and, at the end, winds the connection down.
async fn run(stream: Stream, daemon: &Arc<Daemon>, methods: Methods, id: usize, restricted: bool) {
    let limits = daemon.options.limits.clone();
    // The connection closes once both halves are dropped.
    let (recv, send) = tokio::io::split(stream);
    let (tx, rx) = mpsc::channel::<Box<RawValue>>(OUTGOING_BUFFER);
    let raw_ids = Arc::new(RawIds::default());
    let mut writer = tokio::spawn(write_messages(send, rx, raw_ids.clone()));
    let context = Arc::new(ConnectionContext::new(
        id,
        daemon.clone(),
        methods,
        MethodSink::new(tx),
        BoundedSubscriptions::new(MAX_SUBSCRIPTIONS),
        raw_ids,
    ));
    let max_line = if restricted { RESTRICTED_MAX_LINE } else { daemon.options.max_line_bytes };
    let mut reader = LineReader::new(recv, max_line, daemon.input_budget.share());
    let in_flight = Arc::new(Semaphore::new(limits.max_in_flight));
    // Set when the daemon, not the client, ends the connection: subscriptions then run on
    // until shutdown closes their sessions, so clients see their runs end.
    let mut shutting_down = false;
    loop {
        let next = async {
            if restricted {
                tokio::time::timeout(RESTRICTED_WAIT, reader.next(&limits))
                    .await
                    .unwrap_or(ReadEvent::Refused(LimitBroken::PartialLineIdle))
            } else {
                reader.next(&limits).await
            }
        };
        let event = tokio::select! {
            () = daemon.shutdown.cancelled() => {
                shutting_down = true;
                break;
            }
            event = next => event,
        };
        let frame = match event {
            ReadEvent::Frame(frame) => frame,
            ReadEvent::Eof => break,
            ReadEvent::Failed(error) => {
                tracing::debug!(connection = id, %error, "read failed");
                break;
            }
            ReadEvent::Refused(broken) => {
                tracing::info!(connection = id, ?broken, "closing a connection over its limits");
                let error =
                    if restricted { over_limit(daemon) } else { limit_error(broken, daemon) };
                send_final(&context, Id::Null, &error).await;
                break;
            }
        };
        if restricted && let Some(id) = refused_in_restricted_mode(&frame) {
            send_final(&context, id, &over_limit(daemon)).await;
            break;
        }
        // Backpressure: with every permit taken, stop reading until an answer goes out.
        let permit = tokio::select! {
            () = daemon.shutdown.cancelled() => {
                shutting_down = true;
                break;
            }
            permit = in_flight.clone().acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
        };
        dispatch::handle_frame(frame, &context, permit);
    }
    drop(reader);
    // Hung up: no subscription outlives the client; what it asked is still answered.
    if !shutting_down {
        context.hang_up();
    }
    let all = u32::try_from(limits.max_in_flight).unwrap_or(u32::MAX);
    let answered = tokio::time::timeout(HANGUP_DRAIN, in_flight.acquire_many(all)).await;
    if answered.is_err() {
        tracing::debug!(connection = id, "answers not taken in time; closing anyway");
        writer.abort();
    }
    // Subscriptions and requests hold their own clones of the sink; once they are gone the
    // writer finishes.
    drop(context);
    if tokio::time::timeout(HANGUP_DRAIN, &mut writer).await.is_err() {
        writer.abort();
    }
}

/// The id to answer with when a restricted connection calls something it may not.
fn refused_in_restricted_mode(frame: &Frame) -> Option<Id<'static>> {
    let Frame::Line(line) = frame else { return Some(Id::Null) };
    if line.trim().is_empty() {
        return None;
    }
    let Ok(request) = serde_json::from_str::<LooseRequest<'_>>(line) else {
        return Some(Id::Null);
    };
    let method = request.method_name().unwrap_or_default();
    if RESTRICTED_METHODS.contains(&method.as_str()) {
        return None;
    }
    match request_id::classify(request.id) {
        IdKind::Plain(id) => Some(id),
        _ => Some(Id::Null),
    }
}

/// Queues the last line of a connection, waiting only briefly for a client that does not read.
async fn send_final(context: &ConnectionContext, id: Id<'_>, error: &RpcError) {
    let _ = context.sink().send_timeout(error_line(id, error), FINAL_LINE_WAIT).await;
}

/// Writes messages as lines, batching what is ready into one flush, until every sender is gone
/// or the client stops taking them.
async fn write_messages(
    send: impl AsyncWrite + Unpin,
    mut rx: mpsc::Receiver<Box<RawValue>>,
    raw_ids: Arc<RawIds>,
) {
    let mut out = BufWriter::with_capacity(64 * 1024, send);
    while let Some(first) = rx.recv().await {
        let mut next = Some(first);
        while let Some(message) = next {
            let message = raw_ids.restore(message);
            let written = match compact_line(&message) {
                Some(line) => out.write_all(line.as_bytes()).await,
                None => out.write_all(message.get().as_bytes()).await,
            };
            if written.is_err() || out.write_all(b"\n").await.is_err() {
                return;
            }
            next = rx.try_recv().ok();
        }
        if out.flush().await.is_err() {
            return;
        }
    }
}

/// Checks the peer's uid against ours; connections from another user are refused.
fn peer_is_same_user(stream: &Stream) -> bool {
    let ours = nix::unistd::geteuid().as_raw();
    match stream.peer_creds() {
        Ok(creds) => match creds.euid() {
            Some(uid) if uid == ours => true,
            Some(uid) => {
                tracing::warn!(peer_uid = uid, "refused a connection from another user");
                false
            }
            None => {
                tracing::warn!("refused a connection whose user cannot be determined");
                false
            }
        },
        Err(error) => {
            tracing::warn!(%error, "refused a connection: peer credentials unavailable");
            false
        }
    }
}

/// The message as one line when it holds a raw newline (compact JSON never does); `None`
/// when it can be written as it is.
fn compact_line(message: &RawValue) -> Option<String> {
    let text = message.get();
    if !text.contains('\n') {
        return None;
    }
    Some(match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value.to_string(),
        Err(_) => text.replace('\n', " "),
    })
}
