//! Helpers shared by the stress tests (`stress_*.rs`): a socket client whose reader runs on a
//! thread of its own (so a test can wait with a timeout, notice the daemon dying, and drive
//! hundreds of clients at once), and a small seeded random generator.
//!
//! Each stress test uses a different subset of these helpers.
#![allow(dead_code)]

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

/// How long a test waits for any single answer before it calls the daemon stuck.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// A small deterministic generator (xorshift64*): a failing run can be replayed from its seed.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator starting from `seed` (0 is replaced, xorshift needs a set bit).
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 { 0x9e37_79b9_7f4a_7c15 } else { seed })
    }

    /// A seed from the clock, for runs that should differ each time.
    pub fn clock_seed() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }
}

/// A JSON-RPC client on the daemon socket. Every line the daemon sends is parsed by a reader
/// thread and queued; the test takes responses and notifications from that queue.
#[derive(Debug)]
pub struct Client {
    writer: UnixStream,
    inbox: Receiver<Value>,
    next_id: u64,
    /// Notifications that arrived while waiting for a response, oldest first.
    pending: VecDeque<Value>,
}

impl Client {
    /// Connects and sends `initialize` as `name`.
    pub fn connect(socket: &Path, name: &str) -> Self {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", socket.display()));
        let reader = stream.try_clone().unwrap_or_else(|e| panic!("cannot clone a socket: {e}"));
        let (sender, inbox) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(reader).lines() {
                let Ok(line) = line else { break };
                let Ok(message) = serde_json::from_str::<Value>(&line) else {
                    panic!("the daemon sent a line that is not JSON: {line}");
                };
                if sender.send(message).is_err() {
                    break;
                }
            }
        });
        let mut client = Self { writer: stream, inbox, next_id: 1, pending: VecDeque::new() };
        client.call_ok(
            "initialize",
            json!({"client_name": name, "protocol_version": "1.0",
                   "capabilities": {"approvals": false}}),
        );
        client
    }

    /// Sends a request without waiting; returns its id.
    pub fn send(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let line = format!("{request}\n");
        self.writer
            .write_all(line.as_bytes())
            .unwrap_or_else(|e| panic!("cannot send {method}: {e}"));
        id
    }

    /// Sends a request and waits for its response (the whole message). Notifications that
    /// arrive first are kept for [`Client::next_notification`].
    pub fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params);
        self.wait_response(id, method)
    }

    /// Waits for the response to request `id`.
    pub fn wait_response(&mut self, id: u64, method: &str) -> Value {
        let deadline = Instant::now() + ANSWER_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.inbox.recv_timeout(left) {
                Ok(message) if message.get("method").is_some() => self.pending.push_back(message),
                Ok(message) if message["id"] == json!(id) => return message,
                Ok(_) => {}
                Err(error) => panic!("no answer to {method} (id {id}): {error:?}"),
            }
        }
    }

    /// Like [`Client::call`], returning `result` and panicking on an error response.
    pub fn call_ok(&mut self, method: &str, params: Value) -> Value {
        let response = self.call(method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// The next notification, waiting at most `timeout`; `Disconnected` once the daemon has
    /// closed the connection and everything it sent was taken.
    pub fn next_notification(&mut self, timeout: Duration) -> Result<Value, RecvTimeoutError> {
        if let Some(message) = self.pending.pop_front() {
            return Ok(message);
        }
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.inbox.recv_timeout(left)?;
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
        self.inbox.recv_timeout(timeout)
    }

    /// Subscribes to `session`'s events (from now on, or after `after_seq`).
    pub fn subscribe(&mut self, session: &str, after_seq: Option<u64>) {
        let mut params = json!({"session_id": session});
        if let Some(after) = after_seq {
            params["after_seq"] = json!(after);
        }
        let subscription = self.call_ok("session/subscribe", params);
        assert!(subscription.is_string(), "not a subscription id: {subscription}");
    }
}

/// The session event envelope carried by a `session/event` notification, if it is one.
pub fn event_envelope(message: &Value) -> Option<&Value> {
    let item = &message["params"]["result"];
    (message["method"] == "session/event" && item["type"] == "event").then_some(item)
}

/// Asserts that every tool call on `messages` (a `session/messages` list) has exactly one
/// result with its id, and every result answers a call.
pub fn assert_calls_answered_once(messages: &[Value], context: &str) {
    let mut calls: Vec<&str> = Vec::new();
    let mut results: Vec<&str> = Vec::new();
    for message in messages {
        if message["role"] == "assistant" {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_call" {
                    calls.push(block["id"].as_str().unwrap_or_default());
                }
            }
        } else if message["role"] == "tool_result" {
            results.push(message["tool_call_id"].as_str().unwrap_or_default());
        }
    }
    for call in &calls {
        let answers = results.iter().filter(|r| *r == call).count();
        assert_eq!(answers, 1, "{context}: tool call {call} has {answers} results");
    }
    for result in &results {
        assert!(calls.contains(result), "{context}: result for unknown call {result}");
    }
}
