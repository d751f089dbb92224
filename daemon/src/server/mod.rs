//! The socket side of the daemon: binding, connections and dispatch.

pub mod connection;
pub mod dispatch;
pub mod lanes;
pub mod limits;
pub mod listener;
pub mod reader;
pub mod request_id;

use crate::daemon::Daemon;
use jsonrpsee::Methods;
use listener::{AcceptingSocket, SocketLock};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinSet;

/// How long shutdown waits for connections to flush their last responses.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(3);

/// Accepts connections until the daemon shuts down, then closes them and removes the socket.
/// Returns the socket's lock, for the caller to release once nothing of the daemon is left.
pub async fn serve(
    daemon: Arc<Daemon>,
    mut socket: AcceptingSocket,
    methods: Methods,
) -> SocketLock {
    let mut connections = JoinSet::new();
    let mut next_id = 0usize;
    loop {
        tokio::select! {
            () = daemon.shutdown.cancelled() => break,
            accepted = socket.accept() => match accepted {
                Ok(stream) => {
                    next_id += 1;
                    let task = connection::serve(stream, daemon.clone(), methods.clone(), next_id);
                    connections.spawn(task);
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    tracing::info!(sessions = daemon.hub.loaded_count(), "shutting down: closing sessions");
    daemon.hub.shutdown().await;
    tracing::info!(open = connections.len(), "shutting down: closing connections");
    let drained = tokio::time::timeout(DRAIN_TIMEOUT, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections did not close in time; aborting them");
        connections.abort_all();
    }
    socket.remove()
}
