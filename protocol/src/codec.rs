//! Newline-delimited framing for JSON-RPC messages.
//!
//! Each message is one line of compact UTF-8 JSON ending in `\n` (a `\r\n` ending is accepted).
//! A line longer than the limit, or one that is not UTF-8, does not end the stream: the decoder
//! reports it as a [`Frame`] of its own and carries on with the next line, so one bad message
//! never takes a connection (or the daemon) down.

use bytes::{Buf, BytesMut};
use tokio_util::codec::{Decoder, Encoder};

/// The default longest line, in bytes (16 MiB).
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One decoded line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, without its line ending. May be empty.
    Line(String),
    /// A line longer than the limit; its bytes were discarded.
    TooLong {
        /// Bytes seen before the decoder gave up on the line (at least the limit).
        length: usize,
    },
    /// A line that was not valid UTF-8.
    InvalidUtf8,
}

/// I/O failures of the codec.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The underlying stream failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// An outgoing message contained a newline and would break the framing.
    #[error("outgoing message contains a newline")]
    EmbeddedNewline,
}

/// Splits a byte stream into lines of at most `max_line` bytes.
#[derive(Debug, Clone)]
pub struct LineCodec {
    max_line: usize,
    /// Bytes already scanned for a newline in the current buffer.
    scanned: usize,
    /// True while discarding the rest of an oversize line; holds its length so far.
    discarding: Option<usize>,
}

impl LineCodec {
    /// A codec with the given limit (excluding the line ending).
    pub fn new(max_line: usize) -> Self {
        Self { max_line, scanned: 0, discarding: None }
    }

    /// The limit in bytes.
    pub fn max_line(&self) -> usize {
        self.max_line
    }
}

impl Default for LineCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE_BYTES)
    }
}

fn strip_line_ending(mut line: &[u8]) -> &[u8] {
    if let [rest @ .., b'\n'] = line {
        line = rest;
    }
    if let [rest @ .., b'\r'] = line {
        line = rest;
    }
    line
}

impl Decoder for LineCodec {
    type Item = Frame;
    type Error = CodecError;

    fn decode(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        loop {
            let newline = buf[self.scanned..].iter().position(|b| *b == b'\n');
            if let Some(length) = self.discarding {
                match newline {
                    Some(offset) => {
                        let end = self.scanned + offset;
                        buf.advance(end + 1);
                        self.scanned = 0;
                        self.discarding = None;
                        return Ok(Some(Frame::TooLong { length: length + end }));
                    }
                    None => {
                        let seen = buf.len();
                        buf.clear();
                        self.scanned = 0;
                        self.discarding = Some(length + seen);
                        return Ok(None);
                    }
                }
            }
            match newline {
                Some(offset) => {
                    let end = self.scanned + offset;
                    self.scanned = 0;
                    let line = buf.split_to(end + 1);
                    let content = strip_line_ending(&line);
                    if content.len() > self.max_line {
                        return Ok(Some(Frame::TooLong { length: content.len() }));
                    }
                    return Ok(Some(match std::str::from_utf8(content) {
                        Ok(text) => Frame::Line(text.to_owned()),
                        Err(_) => Frame::InvalidUtf8,
                    }));
                }
                None if buf.len() > self.max_line + 1 => {
                    // Too long already: drop what we have and skip to the next newline.
                    self.discarding = Some(0);
                    continue;
                }
                None => {
                    self.scanned = buf.len();
                    return Ok(None);
                }
            }
        }
    }

    fn decode_eof(&mut self, buf: &mut BytesMut) -> Result<Option<Frame>, CodecError> {
        if let Some(frame) = self.decode(buf)? {
            return Ok(Some(frame));
        }
        if let Some(length) = self.discarding.take() {
            return Ok(Some(Frame::TooLong { length }));
        }
        if buf.is_empty() {
            return Ok(None);
        }
        // A last line without its newline still counts.
        buf.extend_from_slice(b"\n");
        self.decode(buf)
    }
}

impl<T: AsRef<str>> Encoder<T> for LineCodec {
    type Error = CodecError;

    fn encode(&mut self, item: T, dst: &mut BytesMut) -> Result<(), CodecError> {
        let text = item.as_ref();
        if text.contains('\n') {
            return Err(CodecError::EmbeddedNewline);
        }
        dst.reserve(text.len() + 1);
        dst.extend_from_slice(text.as_bytes());
        dst.extend_from_slice(b"\n");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio_util::codec::FramedRead;

    async fn frames(input: &[u8], max: usize, chunk: usize) -> Vec<Frame> {
        let chunks: Vec<std::io::Result<bytes::Bytes>> =
            input.chunks(chunk.max(1)).map(|c| Ok(bytes::Bytes::copy_from_slice(c))).collect();
        let reader = tokio_util::io::StreamReader::new(futures::stream::iter(chunks));
        FramedRead::new(reader, LineCodec::new(max)).map(|frame| frame.unwrap()).collect().await
    }

    #[tokio::test]
    async fn splits_lines_across_any_chunking() {
        let input = b"{\"a\":1}\n{\"b\":2}\r\n\nlast";
        for chunk in [1, 2, 3, 7, 100] {
            assert_eq!(
                frames(input, 64, chunk).await,
                vec![
                    Frame::Line("{\"a\":1}".into()),
                    Frame::Line("{\"b\":2}".into()),
                    Frame::Line(String::new()),
                    Frame::Line("last".into()),
                ],
                "chunk size {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn oversize_line_is_reported_and_the_next_line_survives() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n");
        for chunk in [1, 10, 1000] {
            let got = frames(&input, 16, chunk).await;
            assert_eq!(got.len(), 2, "chunk {chunk}: {got:?}");
            assert!(matches!(got[0], Frame::TooLong { length } if length >= 16));
            assert_eq!(got[1], Frame::Line("ok".into()));
        }
    }

    #[tokio::test]
    async fn line_exactly_at_the_limit_passes() {
        let mut input = vec![b'y'; 16];
        input.extend_from_slice(b"\r\n");
        assert_eq!(frames(&input, 16, 3).await, vec![Frame::Line("y".repeat(16))]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_reported_and_the_next_line_survives() {
        let input = b"\xff\xfe\n{}\n";
        assert_eq!(frames(input, 64, 1).await, vec![Frame::InvalidUtf8, Frame::Line("{}".into())]);
    }

    #[tokio::test]
    async fn oversize_unterminated_tail_is_reported() {
        let input = vec![b'z'; 50];
        let got = frames(&input, 8, 4).await;
        assert!(matches!(got.as_slice(), [Frame::TooLong { .. }]), "{got:?}");
    }

    #[test]
    fn encoder_refuses_embedded_newlines() {
        let mut codec = LineCodec::default();
        let mut out = BytesMut::new();
        codec.encode("{\"a\":1}", &mut out).unwrap();
        assert_eq!(&out[..], b"{\"a\":1}\n");
        assert!(matches!(codec.encode("{\n}", &mut out), Err(CodecError::EmbeddedNewline)));
    }
}
