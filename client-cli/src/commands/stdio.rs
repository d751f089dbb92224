//! `rein stdio`: bridges stdin/stdout to the daemon socket line by line, so an editor can spawn
//! a process instead of opening a socket.
//!
//! Lines go through untouched in both directions. When stdin closes, the bridge keeps
//! forwarding until every request it forwarded has been answered, then exits; notifications
//! alone do not keep it open.

use crate::client::{ClientError, connect_or_start_stream};
use futures::StreamExt;
use rein_protocol::codec::{Frame, LineCodec};
use serde_json::Value;
use std::path::Path;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio_util::codec::FramedRead;

use crate::commands::exit;

/// Runs the bridge until stdin closes and every forwarded request has its answer, or the
/// daemon hangs up.
pub async fn run(socket: &Path) -> Result<u8, ClientError> {
    let stream = connect_or_start_stream(socket).await?;
    let (recv, mut send) = tokio::io::split(stream);
    let mut from_daemon = FramedRead::new(recv, LineCodec::default());
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = tokio::io::stdout();
    let mut outstanding: i64 = 0;
    let mut stdin_open = true;
    loop {
        if !stdin_open && outstanding <= 0 {
            return Ok(exit::OK);
        }
        tokio::select! {
            line = stdin.next_line(), if stdin_open => match line? {
                Some(line) => {
                    if is_request(&line) {
                        outstanding += 1;
                    }
                    let mut bytes = line.into_bytes();
                    bytes.push(b'\n');
                    send.write_all(&bytes).await?;
                }
                None => stdin_open = false,
            },
            frame = from_daemon.next() => match frame {
                None => return Ok(if stdin_open { exit::FAILURE } else { exit::OK }),
                Some(Err(error)) => return Err(error.into()),
                Some(Ok(Frame::Line(line))) => {
                    if is_response(&line) {
                        outstanding -= 1;
                    }
                    stdout.write_all(line.as_bytes()).await?;
                    stdout.write_all(b"\n").await?;
                    stdout.flush().await?;
                }
                Some(Ok(other)) => {
                    return Err(ClientError::InvalidMessage(format!("{other:?}")));
                }
            },
        }
    }
}

/// A line the daemon will answer: anything with an `id` that is not itself a response. Lines
/// that are not JSON get an error response too.
fn is_request(line: &str) -> bool {
    match serde_json::from_str::<Value>(line) {
        Ok(value) => value.get("id").is_some() || !value.is_object(),
        Err(_) => !line.trim().is_empty(),
    }
}

/// A response (has `id`, no `method`).
fn is_response(line: &str) -> bool {
    serde_json::from_str::<Value>(line)
        .map(|value| value.get("id").is_some() && value.get("method").is_none())
        .unwrap_or(false)
}
