//! The one socket client of the tests: a blocking JSON-RPC connection to the daemon for
//! protocol-level tests, stress tests and benchmarks.
//!
//! It reads only when asked (so a test can play a client that stops reading), and every wait
//! has a timeout (so a test notices a stuck or dead daemon). Calls come in three
//! strengths: raw lines ([`RawConnection::send_line`]), untyped calls by method name
//! ([`RawConnection::call`]) for requests a test builds by hand, and typed calls from the
//! protocol's method table ([`RawConnection::request`]).

use rein_protocol::method::{
    ClientCapabilities, CreateSessionParams, InitializeParams, SubscribeParams,
};
use rein_protocol::requests::{self as rq, Method};
use rein_protocol::version::PROTOCOL_VERSION;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// How long a test waits for any single answer before it calls the daemon stuck.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// How long the blocking reads ([`RawConnection::read_json`] and what builds on it) wait.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// A raw line-oriented JSON-RPC connection to the daemon socket.
#[derive(Debug)]
pub struct RawConnection {
    writer: UnixStream,
    reader: BufReader<UnixStream>,
    /// The bytes of a line whose end has not arrived yet.
    partial: Vec<u8>,
    next_id: u64,
    /// Notifications read while waiting for something else, oldest first.
    pending: VecDeque<Value>,
}

impl RawConnection {
    /// Connects to `socket`.
    pub fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", socket.display()));
        let reader = stream.try_clone().unwrap_or_else(|e| panic!("cannot clone a socket: {e}"));
        Self {
            writer: stream,
            reader: BufReader::new(reader),
            partial: Vec::new(),
            next_id: 1,
            pending: VecDeque::new(),
        }
    }

    /// Connects and introduces itself as `name` with `initialize` (no approvals).
    pub fn connect_as(socket: &Path, name: &str) -> Self {
        Self::connect_with(socket, client_params(name, false))
    }

    /// Connects and introduces itself with `params` (see [`client_params`]).
    pub fn connect_with(socket: &Path, params: InitializeParams) -> Self {
        let mut connection = Self::connect(socket);
        connection.initialize(params);
        connection
    }

    /// Creates a session working in `cwd` (`session/create`, everything else by default);
    /// returns its id.
    pub fn create_session(&mut self, cwd: &Path) -> String {
        let params = CreateSessionParams { cwd: cwd.display().to_string(), ..Default::default() };
        self.request::<rq::SessionCreate>(&params).session_id
    }

    /// Sends `initialize` with `params`, panicking when it is refused.
    pub fn initialize(&mut self, params: InitializeParams) {
        self.request::<rq::Initialize>(&params);
    }

    /// Writes raw bytes (a newline is not added).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap_or_else(|e| panic!("write failed: {e}"));
    }

    /// Writes one line (a newline is added).
    pub fn send_line(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// The next line from the daemon as JSON, waiting at most `timeout`; `Disconnected` once
    /// the daemon has closed the connection and every line it sent was taken. Panics on a line
    /// that is not JSON.
    fn receive(&mut self, timeout: Duration) -> Result<Value, RecvTimeoutError> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(RecvTimeoutError::Timeout);
            }
            self.reader
                .get_ref()
                .set_read_timeout(Some(left))
                .unwrap_or_else(|e| panic!("cannot set a read timeout: {e}"));
            // Bytes read before a timeout stay in `partial`; the next read goes on from them.
            match self.reader.read_until(b'\n', &mut self.partial) {
                Ok(_) if self.partial.ends_with(b"\n") => {
                    let line = std::mem::take(&mut self.partial);
                    let text = String::from_utf8_lossy(&line);
                    if text.trim().is_empty() {
                        continue;
                    }
                    return Ok(serde_json::from_str(&text).unwrap_or_else(|e| {
                        panic!("the daemon sent a line that is not JSON ({e}): {text}")
                    }));
                }
                // End of file (an unterminated last line is dropped with it).
                Ok(_) => return Err(RecvTimeoutError::Disconnected),
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return Err(RecvTimeoutError::Disconnected),
            }
        }
    }

    /// Reads the next line the daemon sends and parses it as JSON (notifications kept by
    /// earlier calls are left for [`RawConnection::next_notification`]).
    pub fn read_json(&mut self) -> Value {
        match self.receive(READ_TIMEOUT) {
            Ok(message) => message,
            Err(RecvTimeoutError::Disconnected) => panic!("the daemon closed the connection"),
            Err(RecvTimeoutError::Timeout) => panic!("read failed: nothing in {READ_TIMEOUT:?}"),
        }
    }

    /// Sends a request with `id` and returns the message answering it. Notifications that
    /// arrive first are kept for [`RawConnection::next_notification`].
    pub fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send_with_id(id, method, params);
        self.wait_response(id, method)
    }

    /// Like [`RawConnection::call`], returning `result` and panicking on an error response.
    pub fn call_ok(&mut self, id: u64, method: &str, params: Value) -> Value {
        let response = self.call(id, method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// Sends a request with the next free id without waiting; returns the id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.send_with_id(id, method, params);
        id
    }

    fn send_with_id(&mut self, id: u64, method: &str, params: Value) {
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.writer
            .write_all(format!("{request}\n").as_bytes())
            .unwrap_or_else(|e| panic!("cannot send {method}: {e}"));
    }

    /// Like [`RawConnection::call`] with the next free id.
    pub fn call_next(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.wait_response(id, method)
    }

    /// Like [`RawConnection::call_ok`] with the next free id.
    pub fn call_next_ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call_next(method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// Calls method `M` with its typed params and decodes its result; an error response is
    /// returned whole as `Err`.
    pub fn try_request<M: Method>(&mut self, params: &M::Params) -> Result<M::Result, Value> {
        let params = serde_json::to_value(params)
            .unwrap_or_else(|e| panic!("cannot serialize {} params: {e}", M::NAME));
        let response = self.call_next(M::NAME, params);
        match response.get("result") {
            Some(result) => Ok(serde_json::from_value(result.clone())
                .unwrap_or_else(|e| panic!("unexpected {} result {result}: {e}", M::NAME))),
            None => Err(response),
        }
    }

    /// Calls method `M` with its typed params and decodes its result, panicking on an error.
    pub fn request<M: Method>(&mut self, params: &M::Params) -> M::Result {
        self.try_request::<M>(params).unwrap_or_else(|error| panic!("{} failed: {error}", M::NAME))
    }

    /// Waits (up to [`ANSWER_TIMEOUT`]) for the response to request `id`, keeping the
    /// notifications that arrive first.
    pub fn wait_response(&mut self, id: u64, method: &str) -> Value {
        if let Some(at) = self.pending.iter().position(|message| is_response_to(message, id)) {
            return self.pending.remove(at).unwrap_or_default();
        }
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receive(left) {
                Ok(message) if message.get("method").is_some() => self.pending.push_back(message),
                Ok(message) if is_response_to(&message, id) => return message,
                Ok(_) => {}
                Err(error) => panic!("no answer to {method} (id {id}): {error:?}"),
            }
        }
    }

    /// The next notification (kept ones first), panicking when none comes in time.
    pub fn next_notification(&mut self) -> Value {
        self.next_notification_within(READ_TIMEOUT)
            .unwrap_or_else(|error| panic!("no notification: {error:?}"))
    }

    /// The next notification, waiting at most `timeout`; `Disconnected` once the daemon has
    /// closed the connection and everything it sent was taken.
    pub fn next_notification_within(
        &mut self,
        timeout: Duration,
    ) -> Result<Value, RecvTimeoutError> {
        if let Some(at) = self.pending.iter().position(|message| message.get("method").is_some()) {
            return Ok(self.pending.remove(at).unwrap_or_default());
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.receive(left)?;
            if message.get("method").is_some() {
                return Ok(message);
            }
        }
    }

    /// The next message of any kind (responses included), waiting at most `timeout`.
    pub fn next_message(&mut self, timeout: Duration) -> Result<Value, RecvTimeoutError> {
        if let Some(message) = self.pending.pop_front() {
            return Ok(message);
        }
        self.receive(timeout)
    }

    /// Subscribes to `session`'s events (from now on, or after `after_seq`); returns the
    /// subscription id.
    pub fn subscribe(&mut self, session: &str, after_seq: Option<u64>) -> String {
        let params = SubscribeParams { session_id: session.to_string(), after_seq, stream: None };
        self.request::<rq::SessionSubscribe>(&params)
    }

    /// The next item of a session subscription (`params.result` of a `session/event`);
    /// `keepalive` items, which carry nothing, are skipped.
    pub fn next_session_item(&mut self) -> Value {
        loop {
            let message = self.next_notification();
            if message["method"] == "session/event"
                && message["params"]["result"]["type"] != "keepalive"
            {
                return message["params"]["result"].clone();
            }
        }
    }

    /// Session events (envelopes) up to and including the first whose kind is `kind`.
    pub fn events_until(&mut self, kind: &str) -> Vec<Value> {
        let mut events = Vec::new();
        loop {
            let item = self.next_session_item();
            assert_eq!(item["type"], "event", "subscription ended: {item}");
            let done = item["event"]["kind"] == kind;
            events.push(item);
            if done {
                return events;
            }
        }
    }
}

/// The `initialize` params of a test client named `name` (no version, pid or tty);
/// `approvals` says whether it answers approval requests.
pub fn client_params(name: &str, approvals: bool) -> InitializeParams {
    InitializeParams {
        client_name: name.to_string(),
        client_version: String::new(),
        protocol_version: PROTOCOL_VERSION,
        capabilities: ClientCapabilities { approvals },
        pid: None,
        tty: None,
    }
}

/// True when `message` is the response to request `id`.
fn is_response_to(message: &Value, id: u64) -> bool {
    message.get("method").is_none() && message.get("id") == Some(&json!(id))
}

/// The session event envelope carried by a `session/event` notification, if it is one.
pub fn event_envelope(message: &Value) -> Option<&Value> {
    let item = &message["params"]["result"];
    (message["method"] == "session/event" && item["type"] == "event").then_some(item)
}
