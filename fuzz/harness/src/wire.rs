//! Line framing and request parsing, the first code every byte from a client meets.
//!
//! Input layout: byte 0 picks the line limit (below 128: 1 to 128 bytes, so the too-long path
//! is reached often; from 128 on: 64 KiB), byte 1 the size of the reads the stream is cut
//! into, the rest is the byte stream. Checked:
//!
//! - the frames do not depend on how the stream is cut into reads, and equal those of a
//!   plain reference splitter (split on `\n`, drop one `\r` before it, classify by length and
//!   UTF-8);
//! - every line re-encodes to itself;
//! - each line (and each request's `params`) given to `parse_params` for every params type
//!   either parses, and then re-serializes into params that parse again, or is refused with
//!   an `invalid_params` error whose `field`, when named, is not empty;
//! - each line that parses as a protocol type (message, entry, event, result) serializes
//!   into JSON that parses again as the same type.

use bytes::BytesMut;
use rein_daemon::rpc_error::parse_params;
use rein_protocol::codec::{Frame, LineCodec};
use rein_protocol::error::ErrorKind;
use rein_protocol::method::{
    ApprovalRespondParams, BranchParams, ClearQueueParams, CompactParams, CreateSessionParams,
    Empty, ExportParams, ForkParams, HistoryPageParams, InitializeParams, InitializeResult,
    LabelParams, ListSessionsParams, PromptParams, PromptResult, QueueMessageParams, RenameParams,
    SessionRef, SessionState, SetApprovalPolicyParams, SetModelParams, SetThinkingParams,
    ShellParams, SubscribeParams, TrustParams, UnsubscribeParams,
};
use rein_protocol::{
    ContentBlock, DaemonEvent, EventEnvelope, Message, SessionEntry, SubscriptionItem,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::codec::{Decoder, Encoder};

/// The line limit of inputs whose byte 0 is 128 or more.
pub const LONG_LIMIT: usize = 64 * 1024;

/// A frame with the too-long length left out (the decoder only promises "at least the limit").
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Line(String),
    TooLong,
    InvalidUtf8,
}

/// Runs the wire checks on one input.
pub fn check(data: &[u8]) {
    let (Some(&limit), Some(&read)) = (data.first(), data.get(1)) else { return };
    let max_line = if limit < 128 { usize::from(limit) + 1 } else { LONG_LIMIT };
    let read_size = usize::from(read) + 1;
    let stream = &data[2..];

    let expected = reference_frames(stream, max_line);
    let whole = decode(stream, stream.len().max(1), max_line);
    assert_eq!(whole, expected, "frames of the whole stream differ from the reference");
    let pieces = decode(stream, read_size, max_line);
    assert_eq!(pieces, expected, "frames depend on how the stream is cut ({read_size}-byte reads)");

    for frame in &expected {
        if let Seen::Line(line) = frame {
            check_reencode(line, max_line);
            check_line(line);
        }
    }
}

/// Lines by the book: split on `\n`, one `\r` before it dropped, a last line without `\n`
/// still counts.
fn reference_frames(stream: &[u8], max_line: usize) -> Vec<Seen> {
    let mut frames = Vec::new();
    let mut parts: Vec<&[u8]> = stream.split(|b| *b == b'\n').collect();
    // The piece after the last newline is a line only when it is not empty.
    if parts.last().is_some_and(|last| last.is_empty()) {
        parts.pop();
    }
    for part in parts {
        let content = part.strip_suffix(b"\r").unwrap_or(part);
        frames.push(if content.len() > max_line {
            Seen::TooLong
        } else {
            match std::str::from_utf8(content) {
                Ok(text) => Seen::Line(text.to_owned()),
                Err(_) => Seen::InvalidUtf8,
            }
        });
    }
    frames
}

/// Feeds `stream` to a `LineCodec` in reads of `read_size` bytes, as `FramedRead` does.
fn decode(stream: &[u8], read_size: usize, max_line: usize) -> Vec<Seen> {
    let mut codec = LineCodec::new(max_line);
    let mut buffer = BytesMut::new();
    let mut frames = Vec::new();
    for read in stream.chunks(read_size) {
        buffer.extend_from_slice(read);
        while let Some(frame) = decode_step(&mut codec, &mut buffer, false, max_line) {
            frames.push(frame);
        }
    }
    while let Some(frame) = decode_step(&mut codec, &mut buffer, true, max_line) {
        frames.push(frame);
    }
    frames
}

fn decode_step(
    codec: &mut LineCodec,
    buffer: &mut BytesMut,
    eof: bool,
    max_line: usize,
) -> Option<Seen> {
    let result = if eof { codec.decode_eof(buffer) } else { codec.decode(buffer) };
    match result {
        Ok(frame) => frame.map(|frame| match frame {
            Frame::Line(line) => Seen::Line(line),
            Frame::TooLong { length } => {
                assert!(length >= max_line, "too-long line of {length} bytes under the limit");
                Seen::TooLong
            }
            Frame::InvalidUtf8 => Seen::InvalidUtf8,
        }),
        Err(error) => panic!("decoding from memory failed: {error}"),
    }
}

/// A decoded line encodes back to itself plus `\n`, and decodes again to itself.
fn check_reencode(line: &str, max_line: usize) {
    let mut codec = LineCodec::new(max_line);
    let mut out = BytesMut::new();
    if let Err(error) = codec.encode(line, &mut out) {
        panic!("a decoded line does not encode: {error}");
    }
    assert_eq!(&out[..], format!("{line}\n").as_bytes());
    if !line.ends_with('\r') {
        let again = decode(&out, out.len(), max_line);
        assert_eq!(
            again,
            vec![Seen::Line(line.to_owned())],
            "a line does not survive a round trip"
        );
    }
}

/// Parses one line as a request, as params and as each protocol type.
fn check_line(line: &str) {
    if let Ok(request) = serde_json::from_str::<jsonrpsee_types::Request<'_>>(line) {
        let params = request.params.as_ref().map(|raw| raw.get());
        check_all_params(params);
    }
    check_all_params(Some(line));
    round_trip::<Message>(line);
    round_trip::<ContentBlock>(line);
    round_trip::<SessionEntry>(line);
    round_trip::<EventEnvelope>(line);
    round_trip::<SubscriptionItem>(line);
    round_trip::<DaemonEvent>(line);
    round_trip::<SessionState>(line);
    round_trip::<InitializeResult>(line);
    round_trip::<PromptResult>(line);
}

/// `raw` through `parse_params` for every params type the daemon's methods take.
pub fn check_all_params(raw: Option<&str>) {
    check_params::<Empty>(raw);
    check_params::<InitializeParams>(raw);
    check_params::<SessionRef>(raw);
    check_params::<HistoryPageParams>(raw);
    check_params::<CreateSessionParams>(raw);
    check_params::<ListSessionsParams>(raw);
    check_params::<ForkParams>(raw);
    check_params::<LabelParams>(raw);
    check_params::<RenameParams>(raw);
    check_params::<PromptParams>(raw);
    check_params::<QueueMessageParams>(raw);
    check_params::<ClearQueueParams>(raw);
    check_params::<SetModelParams>(raw);
    check_params::<SetThinkingParams>(raw);
    check_params::<SetApprovalPolicyParams>(raw);
    check_params::<BranchParams>(raw);
    check_params::<CompactParams>(raw);
    check_params::<ExportParams>(raw);
    check_params::<ShellParams>(raw);
    check_params::<SubscribeParams>(raw);
    check_params::<ApprovalRespondParams>(raw);
    check_params::<TrustParams>(raw);
    check_params::<UnsubscribeParams>(raw);
}

fn check_params<T: DeserializeOwned + Serialize>(raw: Option<&str>) {
    match parse_params::<T>(raw) {
        Ok(value) => {
            let text = match serde_json::to_string(&value) {
                Ok(text) => text,
                Err(error) => panic!("parsed params do not serialize: {error}"),
            };
            if let Err(error) = parse_params::<T>(Some(&text)) {
                panic!("re-serialized params are refused: {error} ({text})");
            }
        }
        Err(error) => {
            assert_eq!(error.kind, ErrorKind::InvalidParams, "{error}");
            if let Some(field) = &error.field {
                assert!(!field.is_empty(), "an empty field name in {error}");
            }
            assert_eq!(error.to_object().code(), ErrorKind::InvalidParams.code());
        }
    }
}

fn round_trip<T: DeserializeOwned + Serialize>(line: &str) {
    let Ok(value) = serde_json::from_str::<T>(line) else { return };
    let text = match serde_json::to_string(&value) {
        Ok(text) => text,
        Err(error) => panic!("a parsed {} does not serialize: {error}", std::any::type_name::<T>()),
    };
    assert!(!text.contains('\n'), "serialized JSON breaks the line framing: {text}");
    if let Err(error) = serde_json::from_str::<T>(&text) {
        panic!(
            "a serialized {} does not parse again: {error} ({text})",
            std::any::type_name::<T>()
        );
    }
}
