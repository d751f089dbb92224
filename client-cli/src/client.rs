//! A JSON-RPC client for the daemon socket: calls, and the notifications that arrive between
//! responses.

use crate::launcher::{self, LaunchError};
use futures::StreamExt;
use interprocess::local_socket::tokio::Stream;
use interprocess::local_socket::traits::tokio::Stream as _;
use interprocess::local_socket::{GenericFilePath, ToFsName};
use interprocess::os::unix::uds_local_socket::tokio as uds;
use rein_protocol::codec::{CodecError, Frame, LineCodec};
use rein_protocol::error::ErrorKind;
use rein_protocol::event::SubscriptionItem;
use rein_protocol::method::{
    ClientCapabilities, InitializeParams, InitializeResult, SubscribeParams, names,
};
use rein_protocol::requests::{self as rq, Method};
use rein_protocol::version::PROTOCOL_VERSION;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::borrow::Borrow;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use tokio::io::{AsyncWriteExt, ReadHalf, WriteHalf};
use tokio_util::codec::FramedRead;

/// A JSON-RPC error returned by the daemon.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcFailure {
    /// The numeric code.
    pub code: i64,
    /// The message.
    pub message: String,
    /// `data.kind`, when present.
    pub kind: ErrorKind,
    /// The whole `data` member.
    pub data: Value,
}

impl std::fmt::Display for RpcFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({} {})", self.message, self.kind, self.code)
    }
}

/// Failures of a client call.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// No daemon answers on the socket.
    #[error("cannot connect to the daemon at {socket}: {source}")]
    Connect {
        /// The socket.
        socket: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Starting the daemon failed.
    #[error(transparent)]
    Launch(#[from] LaunchError),
    /// Reading or writing the socket failed.
    #[error("connection error: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon closed the connection.
    #[error("the daemon closed the connection")]
    Closed,
    /// The daemon sent something that is not JSON-RPC.
    #[error("invalid message from the daemon: {0}")]
    InvalidMessage(String),
    /// The daemon answered with an error.
    #[error("{0}")]
    Rpc(RpcFailure),
}

impl From<CodecError> for ClientError {
    fn from(error: CodecError) -> Self {
        match error {
            CodecError::Io(error) => Self::Io(error),
            CodecError::EmbeddedNewline => Self::InvalidMessage(error.to_string()),
        }
    }
}

/// One connection to the daemon.
#[derive(Debug)]
pub struct Client {
    reader: FramedRead<ReadHalf<Stream>, LineCodec>,
    writer: WriteHalf<Stream>,
    next_id: u64,
    notifications: VecDeque<Value>,
    /// The socket to start a new daemon on when this connection is cut before its first
    /// answer (set by [`Client::connect_or_start`], used once).
    restart_on: Option<PathBuf>,
    /// True once the daemon answered anything on this connection.
    answered: bool,
    /// The daemon this client started on this connection, until its ready line comes (set by
    /// [`Client::connect_or_start`]).
    starting: Option<Starting>,
}

/// A daemon started with this client's connection as its first (see
/// [`launcher::spawn_daemon_connected`]) that has not said yet that it listens.
#[derive(Debug)]
struct Starting {
    /// The daemon's process, asked how it ended if the connection ends first.
    daemon: rein_launch::ConnectedStart,
    /// The socket it was started on.
    socket: PathBuf,
}

/// Opens a raw connection to the socket.
pub async fn connect_stream(socket: &Path) -> Result<Stream, ClientError> {
    let name = socket
        .to_fs_name::<GenericFilePath>()
        .map_err(|source| ClientError::Connect { socket: socket.to_path_buf(), source })?;
    Stream::connect(name)
        .await
        .map_err(|source| ClientError::Connect { socket: socket.to_path_buf(), source })
}

/// Opens a raw connection, starting the daemon first when nothing answers.
pub async fn connect_or_start_stream(socket: &Path) -> Result<Stream, ClientError> {
    match connect_stream(socket).await {
        Ok(stream) => Ok(stream),
        Err(ClientError::Connect { source, .. }) if nobody_listens(&source) => {
            // Waited for by this runtime's event loop: no thread is made for it, and the
            // connect follows the daemon's byte without a hand-over between threads.
            let starting = launcher::spawn_daemon(socket)?;
            launcher::daemon_listening(starting, socket).await?;
            connect_stream(socket).await
        }
        Err(other) => Err(other),
    }
}

/// A connection made outside the runtime (a socket pair's end), registered with it.
fn runtime_stream(connection: std::os::unix::net::UnixStream) -> Result<Stream, ClientError> {
    connection.set_nonblocking(true)?;
    let stream = uds::Stream::try_from(std::os::fd::OwnedFd::from(connection))?;
    Ok(Stream::from(stream))
}

/// Whether a failed connect means no daemon is there (no socket, or a stale one), so one may
/// be started. Anything else (a socket this user may not reach, say) is reported as it is:
/// starting a daemon would not help.
pub(crate) fn nobody_listens(error: &std::io::Error) -> bool {
    matches!(error.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused)
}

/// True for the failures that mean the daemon went away (a reset, a broken pipe, end of
/// file).
fn is_cut_off(error: &ClientError) -> bool {
    use std::io::ErrorKind as Kind;
    match error {
        ClientError::Closed => true,
        ClientError::Io(error) => matches!(
            error.kind(),
            Kind::ConnectionReset
                | Kind::BrokenPipe
                | Kind::UnexpectedEof
                | Kind::ConnectionAborted
        ),
        _ => false,
    }
}

impl Client {
    /// Wraps an open stream.
    pub fn new(stream: Stream) -> Self {
        // The connection closes once both halves are dropped.
        let (recv, send) = tokio::io::split(stream);
        Self {
            reader: FramedRead::new(recv, LineCodec::default()),
            writer: send,
            next_id: 1,
            notifications: VecDeque::new(),
            restart_on: None,
            answered: false,
            starting: None,
        }
    }

    /// Connects to a running daemon.
    pub async fn connect(socket: &Path) -> Result<Self, ClientError> {
        Ok(Self::new(connect_stream(socket).await?))
    }

    /// Connects, starting the daemon when nothing answers. A daemon started here is handed
    /// this connection as its first ([`launcher::spawn_daemon_connected`]), so the first call
    /// is written at once and read as soon as the daemon serves; a daemon that exits first is
    /// reported as a start that failed, or, when it lost the race to another client's, the
    /// call goes to the winner. A daemon that accepted the connection but was dying (the
    /// connection is reset or closed before the first answer) is treated like no daemon: the
    /// first call waits for it to exit, starts a new one and is sent again.
    pub async fn connect_or_start(socket: &Path) -> Result<Self, ClientError> {
        let mut client = match connect_stream(socket).await {
            Ok(stream) => Self::new(stream),
            Err(ClientError::Connect { source, .. }) if nobody_listens(&source) => {
                let (daemon, connection) = launcher::spawn_daemon_connected(socket)?;
                return Self::opened(connection, Some(daemon), socket);
            }
            Err(other) => return Err(other),
        };
        client.restart_on = Some(socket.to_path_buf());
        Ok(client)
    }

    /// A client on a connection to `socket` made outside the runtime (a socket pair's end
    /// given to a daemon started with `daemon`, or a plain connect), behaving from here on as
    /// one made by [`Client::connect_or_start`]. Needs the runtime entered, which takes the
    /// connection over.
    pub fn opened(
        connection: std::os::unix::net::UnixStream,
        daemon: Option<rein_launch::ConnectedStart>,
        socket: &Path,
    ) -> Result<Self, ClientError> {
        let mut client = Self::new(runtime_stream(connection)?);
        client.starting = daemon.map(|daemon| Starting { daemon, socket: socket.to_path_buf() });
        client.restart_on = Some(socket.to_path_buf());
        Ok(client)
    }

    /// After the connection was cut before any answer: waits for the old daemon to exit,
    /// starts a new one and connects to it. False when this client may not restart, or when
    /// the daemon did not exit (it is alive and closed the connection on purpose).
    async fn reconnect_to_new_daemon(&mut self) -> Result<bool, ClientError> {
        if let Some(Starting { daemon, socket }) = self.starting.take() {
            // The daemon started here exited before it listened: a failed start is the error;
            // a lost race sends the call to the winner.
            launcher::daemon_exited(daemon, &socket).await?;
            self.replace_stream(connect_stream(&socket).await?);
            return Ok(true);
        }
        let Some(socket) = self.restart_on.take().filter(|_| !self.answered) else {
            return Ok(false);
        };
        let owned = socket.clone();
        let exited = tokio::task::spawn_blocking(move || {
            launcher::wait_for_exit(&owned, launcher::EXIT_WAIT)
        })
        .await
        .map_err(|error| ClientError::Io(std::io::Error::other(error)))?;
        if !exited {
            tracing::debug!(socket = %socket.display(), "the daemon closed the connection but keeps running");
            return Ok(false);
        }
        tracing::info!(socket = %socket.display(), "the daemon went away before answering; starting a new one");
        let owned = socket.clone();
        tokio::task::spawn_blocking(move || launcher::start_daemon(&owned))
            .await
            .map_err(|error| ClientError::Io(std::io::Error::other(error)))??;
        self.replace_stream(connect_stream(&socket).await?);
        Ok(true)
    }

    /// Goes on over `stream`, a new connection, instead of the one that was cut.
    fn replace_stream(&mut self, stream: Stream) {
        let (recv, send) = tokio::io::split(stream);
        self.reader = FramedRead::new(recv, LineCodec::default());
        self.writer = send;
        self.notifications.clear();
    }

    /// Sends one line as is (no validation), for raw tools.
    pub async fn send_line(&mut self, line: &str) -> Result<(), ClientError> {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
        self.writer.write_all(&bytes).await?;
        Ok(())
    }

    /// Reads the next message from the daemon.
    pub async fn read_message(&mut self) -> Result<Value, ClientError> {
        loop {
            let next = match &self.starting {
                // A daemon started here may take as long to listen as a start may take.
                Some(starting) => {
                    tokio::time::timeout(rein_launch::READY_TIMEOUT, self.reader.next())
                        .await
                        .map_err(|_| {
                            let socket = starting.socket.clone();
                            LaunchError::from(rein_launch::StartError::TimedOut { socket })
                        })?
                }
                None => self.reader.next().await,
            };
            match next {
                None => return Err(ClientError::Closed),
                Some(Err(error)) => return Err(error.into()),
                // The ready line of a daemon started here, or a line a client may skip.
                Some(Ok(Frame::Line(line))) if line.trim().is_empty() => {
                    self.starting = None;
                    continue;
                }
                Some(Ok(Frame::Line(line))) => {
                    return serde_json::from_str(&line)
                        .map_err(|error| ClientError::InvalidMessage(error.to_string()));
                }
                Some(Ok(other)) => return Err(ClientError::InvalidMessage(format!("{other:?}"))),
            }
        }
    }

    /// Calls `method` with `params` and waits for its result. Notifications that arrive in the
    /// meantime are kept for [`Client::next_notification`].
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value, ClientError> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let line = request.to_string();
        let mut sent = self.send_line(&line).await;
        loop {
            let received = match std::mem::replace(&mut sent, Ok(())) {
                Ok(()) => self.read_message().await,
                // A daemon that refused the connection may have said why before closing it.
                Err(error) if is_cut_off(&error) => match self.read_message().await {
                    Ok(message) => Ok(message),
                    Err(_) => Err(error),
                },
                Err(error) => Err(error),
            };
            let message = match received {
                Ok(message) => message,
                Err(error) if is_cut_off(&error) && self.reconnect_to_new_daemon().await? => {
                    sent = self.send_line(&line).await;
                    continue;
                }
                Err(error) => return Err(error),
            };
            self.answered = true;
            if message.get("method").is_some() {
                self.notifications.push_back(message);
                continue;
            }
            // An error with a null id is about the connection itself (refused, over a
            // limit): the daemon closes it next, so it answers this call.
            let connection_error =
                message.get("error").is_some() && message.get("id").is_none_or(Value::is_null);
            if !connection_error && message.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            return response_result(message);
        }
    }

    /// Calls `method` with typed `params` and decodes the result as `T`. Prefer
    /// [`Client::request`], which takes the method's types from the method table.
    pub async fn call_as<T: DeserializeOwned>(
        &mut self,
        method: &str,
        params: impl Serialize,
    ) -> Result<T, ClientError> {
        let params = serde_json::to_value(params)
            .map_err(|error| ClientError::InvalidMessage(error.to_string()))?;
        let result = self.call(method, params).await?;
        serde_json::from_value(result).map_err(|error| {
            ClientError::InvalidMessage(format!("unexpected {method} result: {error}"))
        })
    }

    /// Calls method `M` of the protocol's method table with its params (owned or borrowed)
    /// and decodes its result: `client.request::<SessionPrompt>(params)`.
    pub async fn request<M: Method>(
        &mut self,
        params: impl Borrow<M::Params>,
    ) -> Result<M::Result, ClientError> {
        self.call_as(M::NAME, params.borrow()).await
    }

    /// Introduces this client as `rein`; `approvals` says whether a person answers approval
    /// requests here.
    pub async fn initialize(&mut self, approvals: bool) -> Result<InitializeResult, ClientError> {
        let params = InitializeParams {
            client_name: "rein".into(),
            client_version: env!("CARGO_PKG_VERSION").into(),
            protocol_version: PROTOCOL_VERSION,
            capabilities: ClientCapabilities { approvals },
            pid: Some(std::process::id()),
            tty: terminal_name(),
        };
        self.request::<rq::Initialize>(params).await
    }

    /// Subscribes to a session's events after `after_seq`; returns the subscription id.
    pub async fn subscribe(
        &mut self,
        session_id: &str,
        after_seq: u64,
    ) -> Result<String, ClientError> {
        let params = SubscribeParams {
            session_id: session_id.into(),
            after_seq: Some(after_seq),
            stream: None,
        };
        self.request::<rq::SessionSubscribe>(params).await
    }

    /// The next item of a session subscription: the raw JSON the daemon sent (kept whole so
    /// `--json` loses no field) and its typed form. Other notifications are skipped.
    pub async fn next_session_item(&mut self) -> Result<SessionNotice, ClientError> {
        loop {
            let message = self.next_notification().await?;
            if let Some(notice) = SessionNotice::from_notification(message) {
                return Ok(notice);
            }
        }
    }

    /// The next notification, in arrival order.
    pub async fn next_notification(&mut self) -> Result<Value, ClientError> {
        if let Some(message) = self.notifications.pop_front() {
            return Ok(message);
        }
        loop {
            let message = self.read_message().await?;
            if message.get("method").is_some() {
                return Ok(message);
            }
        }
    }
}

/// One `session/event` notification.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionNotice {
    /// The subscription it belongs to.
    pub subscription: String,
    /// The item as the daemon sent it.
    pub raw: Value,
    /// The item, typed.
    pub item: SubscriptionItem,
}

impl SessionNotice {
    /// Reads a notification; `None` when it is not a well-formed `session/event`.
    pub fn from_notification(mut message: Value) -> Option<Self> {
        if message.get("method").and_then(Value::as_str) != Some(names::SESSION_EVENT) {
            return None;
        }
        let mut params = message.get_mut("params").map(Value::take)?;
        let subscription = params.get("subscription")?.as_str()?.to_string();
        let raw = params.get_mut("result").map(Value::take)?;
        let item = serde_json::from_value(raw.clone()).ok()?;
        Some(Self { subscription, raw, item })
    }
}

/// Splits a response into its result or its error.
pub fn response_result(mut message: Value) -> Result<Value, ClientError> {
    if let Some(error) = message.get_mut("error").map(Value::take) {
        let data = error.get("data").cloned().unwrap_or(Value::Null);
        let kind = data
            .get("kind")
            .and_then(|kind| serde_json::from_value(kind.clone()).ok())
            .unwrap_or(ErrorKind::Unknown);
        return Err(ClientError::Rpc(RpcFailure {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error.get("message").and_then(Value::as_str).unwrap_or_default().to_string(),
            kind,
            data,
        }));
    }
    match message.get_mut("result").map(Value::take) {
        Some(result) => Ok(result),
        None => Err(ClientError::InvalidMessage("response has neither result nor error".into())),
    }
}

/// The terminal this client runs in (the device behind stdin, else stderr), so events it
/// causes can say which terminal it was; `None` when neither is a terminal.
fn terminal_name() -> Option<String> {
    use std::io::IsTerminal;
    let fd = if std::io::stdin().is_terminal() {
        0
    } else if std::io::stderr().is_terminal() {
        2
    } else {
        return None;
    };
    let target = std::fs::read_link(format!("/proc/self/fd/{fd}")).ok()?;
    Some(target.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_results_and_errors() {
        let ok = response_result(json!({"jsonrpc":"2.0","id":1,"result":{"a":1}})).unwrap();
        assert_eq!(ok, json!({"a":1}));
        let error = response_result(json!({"jsonrpc":"2.0","id":1,"error":{
            "code":-32001,"message":"no such session","data":{"kind":"session_not_found"}}}));
        match error {
            Err(ClientError::Rpc(failure)) => {
                assert_eq!(failure.kind, ErrorKind::SessionNotFound);
                assert_eq!(failure.code, -32001);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            response_result(json!({"jsonrpc":"2.0","id":1})),
            Err(ClientError::InvalidMessage(_))
        ));
    }

    #[test]
    fn reads_session_event_notifications() {
        let message = json!({"jsonrpc":"2.0","method":"session/event","params":{
            "subscription":"sub-7","result":{"type":"event","session_id":"s","seq":3,
            "timestamp":1,"event":{"kind":"settled"},"future":true}}});
        let notice = SessionNotice::from_notification(message).unwrap();
        assert_eq!(notice.subscription, "sub-7");
        assert_eq!(notice.raw["future"], true);
        match notice.item {
            SubscriptionItem::Event(envelope) => assert_eq!(envelope.seq, 3),
            other => panic!("unexpected {other:?}"),
        }
        let other = json!({"jsonrpc":"2.0","method":"daemon/event","params":{
            "subscription":"d","result":{"kind":"shutting_down"}}});
        assert!(SessionNotice::from_notification(other).is_none());
    }
}
