//! A scripted fake model provider: a real HTTP server on 127.0.0.1 that replays a script of
//! replies in whichever wire format each request asks for.
//!
//! The path decides the format: `…/chat/completions` answers as OpenAI Chat Completions,
//! `…/responses` as the OpenAI Responses API, `…/messages` as the Anthropic Messages API. Each
//! request consumes the next reply of the script. Every request is recorded (method, path,
//! headers, JSON body) so tests can check what was sent. When the script runs out the server
//! answers HTTP 500 with a text saying so, so a test that asks more than it scripted fails
//! loudly. In loop mode the script starts over instead.
//!
//! # Script format (JSON)
//!
//! A script is an array of replies:
//!
//! ```json
//! [
//!   {"text": "hello"},
//!   {"tool_calls": [{"name": "bash", "arguments": {"command": "ls"}}]},
//!   {"fault": "rate_limit", "retry_after": 0},
//!   {"thinking": "let me see", "text": "done", "usage": {"input": 100, "output": 20}}
//! ]
//! ```
//!
//! Reply fields (all optional):
//!
//! - `thinking`, `thinking_signature`, `text`, `tool_calls`: content, streamed in that order.
//!   A tool call is `{"name", "arguments", "id"?, "raw_arguments"?}`; `raw_arguments` is sent
//!   verbatim (use it for malformed JSON). Ids default to `call_N` (`toolu_N` for Anthropic),
//!   N counting every call this server has sent.
//! - `blocks`: more blocks in any order, each `{"type": "text", "text"}`,
//!   `{"type": "thinking", "thinking", "signature"?, "redacted"?}` or
//!   `{"type": "tool_call", "name", "arguments", …}`; streamed after the fields above.
//! - `usage`: `{"input", "output", "cache_read", "cache_write"}` (default 10 in, 5 out).
//! - `stop`: `"stop"`, `"length"` or `"tool_use"` (default: `tool_use` with tool calls).
//! - `fault`: `"rate_limit"` (429; `retry_after` seconds and `retry_after_ms` set the headers),
//!   `"server_error"` (500), `"bad_gateway"` (502 with an HTML body), `"context_overflow"`
//!   (400 in the API's own words), `"drop"` (the connection drops mid-stream after
//!   `after_events` events, default 0), `"disconnect"` (closed without an answer),
//!   `"truncate"` (the stream ends cleanly but without its terminal event, or after
//!   `after_events` events).
//! - `chunk_size` (bytes per network write), `delay_ms` (pause before each write),
//!   `delta_size` (characters per streamed fragment, default 8), `crlf` (CRLF line endings).
//!
//! Every stream begins with an SSE comment (`: keep-alive`); Responses and Anthropic streams
//! carry `event:` lines. The body is sent with chunked transfer encoding, so a dropped
//! connection is an error for the client, never a clean end.
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use rein_testkit::fake_provider::{FakeProvider, Reply};
//! let fake = FakeProvider::start(vec![Reply::text("hi")]).await?;
//! let base_url = fake.base_url(); // http://127.0.0.1:PORT/v1
//! // ... point a provider at base_url and send one request ...
//! assert_eq!(fake.requests().len(), 0);
//! # Ok(()) }
//! ```

pub mod encode;
pub mod script;
mod server;

pub use encode::WireFormat;
pub use script::{Fault, Reply, ScriptBlock, ScriptStop, ScriptToolCall, ScriptUsage};

use serde_json::Value;
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// Delivery settings for the whole server (a reply's own fields override them).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FakeOptions {
    /// Bytes per network write; `None` writes each SSE event at once.
    pub chunk_size: Option<usize>,
    /// Pause before each write, in milliseconds.
    pub delay_ms: u64,
    /// Start the script over when it runs out (for demos and benchmarks).
    pub loop_script: bool,
    /// The port to listen on; 0 picks a free one.
    pub port: u16,
}

/// One request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `POST`, usually.
    pub method: String,
    /// The path, e.g. `/v1/messages`.
    pub path: String,
    /// Headers, names in lower case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON (`Null` when it was not JSON).
    pub body: Value,
}

impl RecordedRequest {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Reply>,
    script: Vec<Reply>,
    requests: Vec<RecordedRequest>,
    next_call_id: usize,
}

/// A running fake provider. Stops when dropped.
#[derive(Debug)]
pub struct FakeProvider {
    address: SocketAddr,
    state: Arc<Mutex<State>>,
    task: JoinHandle<()>,
}

impl FakeProvider {
    /// Starts a server on a free port of 127.0.0.1 replaying `script`.
    pub async fn start(script: Vec<Reply>) -> std::io::Result<Self> {
        Self::start_with(script, FakeOptions::default()).await
    }

    /// Starts a server with delivery `options`.
    pub async fn start_with(script: Vec<Reply>, options: FakeOptions) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", options.port)).await?;
        let address = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            queue: script.iter().cloned().collect(),
            script,
            ..State::default()
        }));
        let task = tokio::spawn(server::serve(listener, Arc::clone(&state), options));
        Ok(Self { address, state, task })
    }

    /// Parses a JSON script (see the module docs).
    pub fn parse_script(json: &str) -> serde_json::Result<Vec<Reply>> {
        serde_json::from_str(json)
    }

    /// The base URL to configure a provider with: `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.address)
    }

    /// The socket address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Every request received so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.lock().requests.clone()
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        let mut state = self.lock();
        state.queue.push_back(reply.clone());
        state.script.push(reply);
    }

    /// Replies not yet served.
    pub fn remaining(&self) -> usize {
        self.lock().queue.len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for FakeProvider {
    fn drop(&mut self) {
        self.task.abort();
    }
}
