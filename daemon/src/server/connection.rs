//! One task per client connection: read lines, dispatch them, write responses and
//! notifications back in the order they are produced.

use crate::daemon::Daemon;
use crate::server::dispatch::{self, ConnectionContext};
use futures::StreamExt;
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::StreamCommon as _;
use jsonrpsee::{BoundedSubscriptions, MethodSink, Methods};
use rein_protocol::codec::LineCodec;
use serde_json::value::RawValue;
use std::sync::Arc;
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

/// Outgoing messages buffered per connection before writers wait.
const OUTGOING_BUFFER: usize = 1024;
/// Subscriptions one connection may hold.
const MAX_SUBSCRIPTIONS: u32 = 1024;

/// Serves one connection until the client hangs up or the daemon shuts down.
pub async fn serve(stream: Stream, daemon: Arc<Daemon>, methods: Methods, id: usize) {
    if !peer_is_same_user(&stream) {
        return;
    }
    if !daemon.connection_opened() {
        tracing::warn!(connection = id, "connection limit reached; closing the new connection");
        return;
    }
    tracing::debug!(connection = id, "connected");
    // The connection closes once both halves are dropped.
    let (recv, mut send) = tokio::io::split(stream);
    let (tx, mut rx) = mpsc::channel::<Box<RawValue>>(OUTGOING_BUFFER);
    let writer = tokio::spawn(async move {
        while let Some(message) = rx.recv().await {
            let mut line = compact_line(&message);
            line.push('\n');
            if send.write_all(line.as_bytes()).await.is_err() {
                break;
            }
        }
    });

    let context = Arc::new(ConnectionContext::new(
        id,
        daemon.clone(),
        methods,
        MethodSink::new(tx),
        BoundedSubscriptions::new(MAX_SUBSCRIPTIONS),
    ));
    let mut frames = FramedRead::new(recv, LineCodec::new(daemon.options.max_line_bytes));
    loop {
        tokio::select! {
            () = daemon.shutdown.cancelled() => break,
            frame = frames.next() => match frame {
                Some(Ok(frame)) => dispatch::handle_frame(frame, &context),
                Some(Err(error)) => {
                    tracing::debug!(connection = id, %error, "read failed");
                    break;
                }
                None => break,
            },
        }
    }
    // Dropping the context drops this connection's sink; subscriptions and in-flight requests
    // hold their own clones and end on their own, after which the writer finishes.
    drop(context);
    drop(frames);
    let _ = writer.await;
    daemon.connection_closed();
    tracing::debug!(connection = id, "disconnected");
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

/// The message as one line: compact JSON with no raw newline.
fn compact_line(message: &RawValue) -> String {
    let text = message.get();
    if !text.contains('\n') {
        return text.to_string();
    }
    match serde_json::from_str::<serde_json::Value>(text) {
        Ok(value) => value.to_string(),
        Err(_) => text.replace('\n', " "),
    }
}
