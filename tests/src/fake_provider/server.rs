//! The HTTP/1.1 responder behind the fake provider.
//!
//! Written on raw tokio sockets rather than an HTTP server library because the faults need
//! exact control over the bytes: tiny writes, pauses between them, and a connection dropped
//! in the middle of a chunked body.

use super::encode::{self, WireFormat};
use super::script::{Fault, Reply, ScriptBlock};
use super::validate;
use super::{FakeOptions, RecordedRequest, State};
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const MAX_HEAD: usize = 64 * 1024;

/// Accepts connections until the task is aborted.
pub(super) async fn serve(listener: TcpListener, state: Arc<Mutex<State>>, options: FakeOptions) {
    loop {
        let Ok((socket, _)) = listener.accept().await else { continue };
        state.lock().unwrap_or_else(PoisonError::into_inner).connections += 1;
        let state = Arc::clone(&state);
        let options = options.clone();
        tokio::spawn(async move {
            let _ = handle(socket, state, options).await;
        });
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

async fn read_request(socket: &mut TcpStream) -> std::io::Result<Option<Request>> {
    let mut buffer = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let head_end = loop {
        if let Some(pos) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break pos;
        }
        if buffer.len() > MAX_HEAD {
            return Ok(None);
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Ok(None);
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next().unwrap_or_default().split_whitespace();
    let method = first.next().unwrap_or_default().to_string();
    let path = first.next().unwrap_or_default().to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_string()))
        .collect();
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .and_then(|(_, value)| value.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = buffer[head_end + 4..].to_vec();
    // One allocation for the announced length (bounded: a test double, not a fortress).
    body.reserve(length.saturating_sub(body.len()).min(1 << 30));
    while body.len() < length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok(Some(Request { method, path, headers, body }))
}

/// The next reply and the first tool-call number it may use, or (when the script is
/// exhausted) the number of the request that found it so.
type Next = Result<(Reply, usize), usize>;

/// Keeps `request` (its body parsed as `body`) in the list tests read.
fn record(state: &mut State, request: Request, body: Value) {
    state.requests.push(RecordedRequest {
        method: request.method,
        path: request.path,
        headers: request.headers,
        body,
    });
}

fn next_reply(
    state: &Mutex<State>,
    request: Request,
    body: Value,
    problems: &[String],
    loop_script: bool,
) -> Next {
    let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
    record(&mut state, request, body);
    let served = state.requests.len();
    if !problems.is_empty() {
        // Rejected like a real server would: the script is not consumed.
        for problem in problems {
            state.violations.push(format!("request {served}: {problem}"));
        }
        return Err(served);
    }
    if state.queue.is_empty() && !state.script.is_empty() && loop_script {
        let script = state.script.clone();
        state.queue.extend(script);
    }
    match state.queue.pop_front() {
        Some(reply) => {
            let first_id = state.next_call_id;
            let calls =
                reply.all_blocks().iter().filter(|b| matches!(b, ScriptBlock::ToolCall(_))).count();
            state.next_call_id += calls;
            Ok((reply, first_id))
        }
        None => Err(served),
    }
}

async fn handle(
    mut socket: TcpStream,
    state: Arc<Mutex<State>>,
    options: FakeOptions,
) -> std::io::Result<()> {
    socket.set_nodelay(true)?;
    let Some(request) = read_request(&mut socket).await? else { return Ok(()) };
    if super::models::is_models_request(&request.method, &request.path) {
        let body = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        record(&mut state.lock().unwrap_or_else(PoisonError::into_inner), request, body);
        return respond(&mut socket, 200, "application/json", &[], &super::models::body()).await;
    }
    let format = WireFormat::from_path(&request.path);
    let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let problems = match format {
        Some(format) if !options.skip_validation => validate::validate(format, &body),
        _ => Vec::new(),
    };
    // Taken before the body moves into the record: a deep copy of a large body (megabytes
    // with a long history) would count against the client in the benchmarks.
    let model = body.get("model").and_then(Value::as_str).unwrap_or("fake-model").to_string();
    let next = next_reply(&state, request, body, &problems, options.loop_script);
    let Some(format) = format else {
        return respond(&mut socket, 404, "text/plain", &[], b"fake provider: unknown path").await;
    };
    if !problems.is_empty() {
        let text = format!("fake provider: invalid request: {}", problems.join("; "));
        let error = encode::error_body(format, "invalid_request_error", None, &text);
        let bytes = error.to_string().into_bytes();
        return respond(&mut socket, 400, "application/json", &[], &bytes).await;
    }
    let (reply, first_id) = match next {
        Ok(found) => found,
        Err(served) => {
            let text = format!(
                "fake provider: the script is exhausted (request {served} has no scripted reply)"
            );
            return respond(&mut socket, 500, "text/plain", &[], text.as_bytes()).await;
        }
    };
    let json = |value: Value| value.to_string().into_bytes();
    match reply.fault {
        Some(Fault::RateLimit) => {
            let mut headers = Vec::new();
            if let Some(seconds) = reply.retry_after {
                headers.push(("retry-after", seconds.to_string()));
            }
            if let Some(ms) = reply.retry_after_ms {
                headers.push(("retry-after-ms", ms.to_string()));
            }
            let kind =
                if format == WireFormat::Anthropic { "rate_limit_error" } else { "requests" };
            let body = encode::error_body(
                format,
                kind,
                Some("rate_limit_exceeded"),
                "Rate limit reached, please slow down",
            );
            return respond(&mut socket, 429, "application/json", &headers, &json(body)).await;
        }
        Some(Fault::ServerError) => {
            let kind = if format == WireFormat::Anthropic { "api_error" } else { "server_error" };
            let body = encode::error_body(
                format,
                kind,
                None,
                "The server had an error while processing your request",
            );
            return respond(&mut socket, 500, "application/json", &[], &json(body)).await;
        }
        Some(Fault::BadGateway) => {
            let body = b"<html><head><title>502 Bad Gateway</title></head><body>502 Bad Gateway</body></html>";
            return respond(&mut socket, 502, "text/html", &[], body).await;
        }
        Some(Fault::ContextOverflow) => {
            let body = encode::context_overflow_body(format);
            return respond(&mut socket, 400, "application/json", &[], &json(body)).await;
        }
        Some(Fault::Disconnect) => return Ok(()),
        _ => {}
    }
    if let Some(raw) = &reply.raw {
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: {}\r\ntransfer-encoding: chunked\r\n\
             connection: close\r\n\r\n",
            raw.content_type
        );
        socket.write_all(head.as_bytes()).await?;
        for chunk in raw.chunks.iter().filter(|c| !c.is_empty()) {
            write_chunk(&mut socket, chunk).await?;
        }
        socket.write_all(b"0\r\n\r\n").await?;
        socket.flush().await?;
        let _ = socket.shutdown().await;
        return Ok(());
    }
    let mut next_id = first_id;
    let mut ids = move || {
        next_id += 1;
        next_id
    };
    let mut events = encode::stream(format, &reply, &model, &mut ids);
    let drop_connection = match reply.fault {
        Some(Fault::Drop) => {
            events.truncate(reply.after_events.unwrap_or(0));
            true
        }
        Some(Fault::Truncate) => {
            let keep = reply.after_events.unwrap_or(events.len().saturating_sub(1));
            events.truncate(keep);
            false
        }
        _ => false,
    };
    let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\
                transfer-encoding: chunked\r\nconnection: close\r\n\r\n";
    socket.write_all(head.as_bytes()).await?;
    socket.flush().await?;
    let chunk_size = reply.chunk_size.or(options.chunk_size);
    let delay = Duration::from_millis(reply.delay_ms.unwrap_or(options.delay_ms));
    for event in &events {
        let pieces: Vec<&[u8]> = match chunk_size {
            Some(size) => event.chunks(size.max(1)).collect(),
            None => vec![event.as_slice()],
        };
        for piece in pieces {
            if !delay.is_zero() {
                tokio::time::sleep(delay).await;
            }
            write_chunk(&mut socket, piece).await?;
        }
    }
    if drop_connection {
        // No terminating chunk: the client sees the body break.
        return Ok(());
    }
    socket.write_all(b"0\r\n\r\n").await?;
    socket.flush().await?;
    let _ = socket.shutdown().await;
    Ok(())
}

async fn write_chunk(socket: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
    let mut frame = format!("{:x}\r\n", data.len()).into_bytes();
    frame.extend_from_slice(data);
    frame.extend_from_slice(b"\r\n");
    socket.write_all(&frame).await?;
    socket.flush().await
}

async fn respond(
    socket: &mut TcpStream,
    status: u16,
    content_type: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let reason = match status {
        400 => "Bad Request",
        404 => "Not Found",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\
         connection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await?;
    let _ = socket.shutdown().await;
    Ok(())
}
