//! Reading one connection's lines within its limits.
//!
//! Bytes are read into a buffer charged to the daemon-wide [`InputBudget`] and split into
//! lines by the protocol's [`LineCodec`]. A line in progress has a deadline for its newline
//! and a limit on silence in the middle of it; an empty buffer is given back at once, so an
//! idle connection holds no input memory.

use crate::server::limits::{BudgetShare, ConnectionLimits};
use bytes::BytesMut;
use rein_protocol::codec::{Frame, LineCodec};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

/// Bytes asked of the socket per read.
const READ_CHUNK: usize = 64 * 1024;

/// What reading produced next.
#[derive(Debug)]
pub enum ReadEvent {
    /// A line (or a line-level problem the codec reports).
    Frame(Frame),
    /// The client closed its side.
    Eof,
    /// Reading failed.
    Failed(std::io::Error),
    /// A limit was broken; the connection is answered with this and closed.
    Refused(LimitBroken),
}

/// Which limit a connection broke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitBroken {
    /// The line was not finished within `line_deadline`.
    LineDeadline,
    /// Nothing arrived for `partial_line_idle` in the middle of a line.
    PartialLineIdle,
    /// The daemon's budget for unfinished input is used up.
    InputBudget,
}

/// Reads lines from `R` within the connection limits.
#[derive(Debug)]
pub struct LineReader<R> {
    source: R,
    codec: LineCodec,
    buffer: BytesMut,
    share: BudgetShare,
    /// When the line in progress got its first byte; `None` between lines.
    line_started: Option<Instant>,
    /// When the last bytes arrived.
    last_bytes: Instant,
    eof: bool,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// A reader of lines up to `max_line` bytes, its buffer charged to `share`.
    pub fn new(source: R, max_line: usize, share: BudgetShare) -> Self {
        Self {
            source,
            codec: LineCodec::new(max_line),
            buffer: BytesMut::new(),
            share,
            line_started: None,
            last_bytes: Instant::now(),
            eof: false,
        }
    }

    /// True while a line has started and not ended.
    pub fn mid_line(&self) -> bool {
        self.line_started.is_some()
    }

    /// The next line or event. Cancel-safe: nothing read is lost when the future is dropped.
    pub async fn next(&mut self, limits: &ConnectionLimits) -> ReadEvent {
        loop {
            match self.codec.decode(&mut self.buffer) {
                Ok(Some(frame)) => return ReadEvent::Frame(frame),
                Ok(None) => {}
                Err(error) => return ReadEvent::Failed(std::io::Error::other(error.to_string())),
            }
            if self.buffer.is_empty() && self.buffer.capacity() > 0 && !self.mid_line() {
                // Give idle memory back: a connection between lines holds no buffer.
                self.buffer = BytesMut::new();
                self.share.resize(0);
            }
            if self.eof {
                return match self.codec.decode_eof(&mut self.buffer) {
                    Ok(Some(frame)) => {
                        self.line_started = None;
                        ReadEvent::Frame(frame)
                    }
                    Ok(None) => ReadEvent::Eof,
                    Err(error) => ReadEvent::Failed(std::io::Error::other(error.to_string())),
                };
            }
            if self.buffer.capacity() - self.buffer.len() < READ_CHUNK {
                self.buffer.reserve(READ_CHUNK);
                if !self.share.resize(self.buffer.capacity()) {
                    return ReadEvent::Refused(LimitBroken::InputBudget);
                }
            }
            let deadline = self.line_started.map(|started| {
                let by_line = started + limits.line_deadline;
                let by_idle = self.last_bytes + limits.partial_line_idle;
                (
                    by_line.min(by_idle),
                    if by_line <= by_idle {
                        LimitBroken::LineDeadline
                    } else {
                        LimitBroken::PartialLineIdle
                    },
                )
            });
            let read = match deadline {
                Some((at, broken)) => tokio::select! {
                    read = self.source.read_buf(&mut self.buffer) => read,
                    () = tokio::time::sleep_until(at) => return ReadEvent::Refused(broken),
                },
                None => self.source.read_buf(&mut self.buffer).await,
            };
            match read {
                Ok(0) => self.eof = true,
                Ok(_) => {
                    let now = Instant::now();
                    self.last_bytes = now;
                    // Everything up to the last newline will be decoded as whole lines, so a
                    // line is in progress exactly when the bytes did not end with one.
                    let ends_line = self.buffer.last() == Some(&b'\n');
                    if ends_line {
                        self.line_started = None;
                    } else if self.line_started.is_none() {
                        // The line began somewhere in these bytes.
                        self.line_started = Some(now);
                    }
                }
                Err(error) => return ReadEvent::Failed(error),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::limits::InputBudget;
    use std::time::Duration;
    use tokio::io::AsyncWriteExt;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            line_deadline: Duration::from_secs(5),
            partial_line_idle: Duration::from_secs(2),
            ..ConnectionLimits::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_half_sent_line_is_refused_after_the_idle_limit() {
        let (client, server) = tokio::io::duplex(1024);
        let budget = InputBudget::new(1 << 20);
        let mut reader = LineReader::new(server, 1000, budget.share());
        let mut client = client;
        client.write_all(b"{\"a\":1}\n{\"half").await.unwrap();
        assert!(matches!(reader.next(&limits()).await, ReadEvent::Frame(Frame::Line(_))));
        assert!(matches!(
            reader.next(&limits()).await,
            ReadEvent::Refused(LimitBroken::PartialLineIdle)
        ));
        drop(client);
    }

    #[tokio::test(start_paused = true)]
    async fn a_trickled_line_is_refused_at_the_line_deadline() {
        let (mut client, server) = tokio::io::duplex(1024);
        let budget = InputBudget::new(1 << 20);
        let mut reader = LineReader::new(server, 100_000, budget.share());
        let trickle = tokio::spawn(async move {
            loop {
                if client.write_all(b"x").await.is_err() {
                    break;
                }
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        assert!(matches!(
            reader.next(&limits()).await,
            ReadEvent::Refused(LimitBroken::LineDeadline)
        ));
        drop(reader);
        trickle.await.unwrap();
    }

    #[tokio::test]
    async fn the_budget_refuses_what_it_cannot_hold_and_idle_readers_hold_nothing() {
        let budget = InputBudget::new(READ_CHUNK * 3);
        let (mut first_client, first) = tokio::io::duplex(1 << 20);
        let mut first = LineReader::new(first, 1 << 20, budget.share());
        first_client.write_all(&vec![b'x'; READ_CHUNK * 4]).await.unwrap();
        // Reads until the share cannot grow any more.
        let event = first.next(&limits()).await;
        assert!(matches!(event, ReadEvent::Refused(LimitBroken::InputBudget)), "{event:?}");
        drop(first);
        assert_eq!(budget.used(), 0);

        let (mut client, server) = tokio::io::duplex(1024);
        let mut reader = LineReader::new(server, 1000, budget.share());
        client.write_all(b"{}\n").await.unwrap();
        assert!(matches!(reader.next(&limits()).await, ReadEvent::Frame(Frame::Line(_))));
        drop(client);
        assert!(matches!(reader.next(&limits()).await, ReadEvent::Eof));
        assert_eq!(budget.used(), 0);
    }

    #[tokio::test]
    async fn the_last_line_without_a_newline_still_counts() {
        let (mut client, server) = tokio::io::duplex(1024);
        let budget = InputBudget::new(1 << 20);
        let mut reader = LineReader::new(server, 1000, budget.share());
        client.write_all(b"{}").await.unwrap();
        drop(client);
        assert!(matches!(reader.next(&limits()).await, ReadEvent::Frame(Frame::Line(_))));
        assert!(matches!(reader.next(&limits()).await, ReadEvent::Eof));
    }
}
