//! A scripted fake model provider: a real HTTP server on 127.0.0.1 that replays a script of
//! replies in whichever wire format each request asks for.
//!
//! The path decides the format: `…/chat/completions` answers as OpenAI Chat Completions,
//! `…/responses` as the OpenAI Responses API, `…/messages` as the Anthropic Messages API. Each
//! request consumes the next reply of the script. Every request is recorded (method, path,
//! headers, JSON body) so tests can check what was sent. When the script runs out the server
//! answers HTTP 500 with a text saying so, so a test that asks more than it scripted fails
//! loudly. In loop mode the script starts over instead. `GET …/models` is answered with a
//! fixed model list ([`models`]) without consuming a reply.
//!
//! Every request is also checked against its API's documented rules ([`validate`]): one that
//! breaks them is answered HTTP 400 like a real server would, recorded in
//! [`FakeProvider::violations`], and fails the test when the server is dropped. Tests that
//! post deliberately malformed bodies set [`FakeOptions::skip_validation`].
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
pub mod models;
pub mod script;
mod server;
pub mod validate;

pub use encode::WireFormat;
pub use script::{Fault, RawReply, Reply, ScriptBlock, ScriptStop, ScriptToolCall, ScriptUsage};

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
    /// Accept requests that break their API's rules (see [`validate`]); by default they are
    /// answered with HTTP 400 and recorded as violations.
    pub skip_validation: bool,
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
    violations: Vec<String>,
    next_call_id: usize,
    /// Connections accepted so far.
    connections: usize,
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

    /// How many connections the server has accepted so far: a client that keeps its
    /// connection open makes one for many requests.
    pub fn connections(&self) -> usize {
        self.lock().connections
    }

    /// Every rule the received requests broke, as `request N: what` (empty when all were
    /// valid).
    pub fn violations(&self) -> Vec<String> {
        self.lock().violations.clone()
    }

    /// Like [`FakeProvider::violations`], but forgets them: for tests that report violations
    /// themselves instead of failing when the server is dropped.
    pub fn take_violations(&self) -> Vec<String> {
        std::mem::take(&mut self.lock().violations)
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
    /// Stops the server, and fails the test when any request it received broke its API's
    /// rules (unless the test is already failing).
    fn drop(&mut self) {
        self.task.abort();
        let violations = self.violations();
        if !violations.is_empty() && !std::thread::panicking() {
            panic!(
                "the fake provider received requests a real server would reject:\n{}",
                violations.join("\n")
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn unchecked() -> FakeOptions {
        FakeOptions { skip_validation: true, ..FakeOptions::default() }
    }

    #[tokio::test]
    async fn requests_breaking_their_api_rules_are_refused_and_recorded() {
        let fake = FakeProvider::start(vec![Reply::text("hi")]).await.unwrap();
        let body =
            r#"{"model":"m","max_tokens":10,"messages":[{"role":"assistant","content":"x"}]}"#;
        let response = post(&fake, "/v1/messages", body).await;
        assert!(response.starts_with("HTTP/1.1 400"), "{response}");
        assert!(response.contains("first message must use the `user` role"), "{response}");
        assert_eq!(fake.remaining(), 1, "a refused request consumes no reply");
        assert_eq!(fake.violations().len(), 1);
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(fake)));
        assert!(dropped.is_err(), "dropping a fake that saw invalid requests fails the test");
    }

    /// Posts `body` to `path` with a bare HTTP/1.1 client and returns the whole response.
    async fn post(fake: &FakeProvider, path: &str, body: &str) -> String {
        let mut socket = tokio::net::TcpStream::connect(fake.address()).await.unwrap();
        let request = format!(
            "POST {path} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             x-test: yes\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        socket.write_all(request.as_bytes()).await.unwrap();
        let mut response = Vec::new();
        socket.read_to_end(&mut response).await.unwrap();
        String::from_utf8(response).unwrap()
    }

    #[tokio::test]
    async fn replies_follow_the_script_then_fail_loudly() {
        let fake = FakeProvider::start_with(vec![Reply::text("hi")], unchecked()).await.unwrap();
        let first = post(&fake, "/v1/chat/completions", r#"{"model":"m"}"#).await;
        assert!(first.starts_with("HTTP/1.1 200 OK"));
        assert!(first.contains("\"content\":\"hi\"") && first.contains("data: [DONE]"));
        let second = post(&fake, "/v1/chat/completions", "{}").await;
        assert!(second.starts_with("HTTP/1.1 500"));
        assert!(second.contains("the script is exhausted (request 2"));
        fake.push(Reply::fault(Fault::ContextOverflow));
        let third = post(&fake, "/v1/messages", "{}").await;
        assert!(third.starts_with("HTTP/1.1 400") && third.contains("prompt is too long"));
        let requests = fake.requests();
        assert_eq!(requests.len(), 3);
        assert_eq!(requests[0].body, serde_json::json!({"model": "m"}));
        assert_eq!(requests[0].header("X-Test"), Some("yes"));
        assert_eq!(requests[2].path, "/v1/messages");
        assert_eq!(fake.remaining(), 0);
    }

    #[tokio::test]
    async fn loop_mode_starts_over_and_unknown_paths_are_refused() {
        let options = FakeOptions { loop_script: true, ..unchecked() };
        let fake = FakeProvider::start_with(vec![Reply::text("a"), Reply::text("b")], options)
            .await
            .unwrap();
        let mut texts = Vec::new();
        for _ in 0..3 {
            let response = post(&fake, "/v1/messages", "{}").await;
            texts.push(response.contains("\"text\":\"a\""));
        }
        assert_eq!(texts, vec![true, false, true]);
        assert!(post(&fake, "/v1/embeddings", "{}").await.starts_with("HTTP/1.1 404"));
    }

    #[tokio::test]
    async fn rate_limits_carry_their_headers() {
        let reply = Reply {
            retry_after: Some(2),
            retry_after_ms: Some(1500),
            ..Reply::fault(Fault::RateLimit)
        };
        let fake = FakeProvider::start_with(vec![reply], unchecked()).await.unwrap();
        let response = post(&fake, "/v1/responses", "{}").await;
        assert!(response.starts_with("HTTP/1.1 429"));
        assert!(
            response.contains("retry-after: 2\r\n")
                && response.contains("retry-after-ms: 1500\r\n")
        );
    }
}
