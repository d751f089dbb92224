//! `read`: a text file with line numbers, a window of it, or an image.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use base64::Engine;
use rein_agent::ToolOutput;
use rein_protocol::message::ContentBlock;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::{
    BlockingTool, Limit, LineNumber, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES, ToolContext, ToolSpec,
    clip_line,
};
use crate::file_tracker::FileStamp;
use crate::paths;

/// Characters of one line shown at most; longer lines (minified code, data) are cut.
const MAX_LINE_CHARS: usize = 2_000;
/// Bytes looked at to tell text, images and binary apart.
const SNIFF_BYTES: u64 = 8 * 1024;
/// Largest image returned to the model.
const MAX_IMAGE_BYTES: u64 = 20 * 1024 * 1024;

/// The `read` tool.
pub struct ReadTool;

const DESCRIPTION: &str = "Read a file. Text comes back with line numbers (`number<TAB>line`); \
use offset (1-based line) and limit to read part of a large file. Output stops at 2000 lines \
or 50 KB, whichever comes first, and then says which offset continues. Images (PNG, JPEG, GIF, \
WebP) come back as images when the model can view them. Binary files are refused.";

const GUIDANCE: &str = "Read a file before editing it; the line numbers are for orientation \
only and are not part of the file's text. For big files, read the part you need with \
offset/limit rather than everything. Prefer read over `cat`, `head` or `sed -n` in bash.";

impl BlockingTool for ReadTool {
    type Args = ReadArgs;
    const SPEC: ToolSpec = ToolSpec::parallel("read", DESCRIPTION, GUIDANCE);

    fn run_blocking(ctx: &ToolContext, args: ReadArgs, _cancel: &CancellationToken) -> ToolOutput {
        let path = paths::resolve(&ctx.cwd, &args.path);
        let shown = paths::display(&ctx.cwd, &path);
        if ctx.is_hidden(&path) {
            return super::hidden_file_error(&shown);
        }
        match read_path(ctx, &path, &shown, &args) {
            Ok(output) => output,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                ToolOutput::error(format!("File not found: {shown}"))
            }
            Err(err) => ToolOutput::error(format!("Cannot read {shown}: {err}")),
        }
    }
}

/// The arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadArgs {
    /// File to read, relative to the working directory or absolute (~ expands to home).
    path: String,
    /// 1-based line to start at (default 1).
    offset: Option<LineNumber>,
    /// Most lines to return (default and maximum 2000).
    limit: Option<Limit>,
}

fn read_path(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    args: &ReadArgs,
) -> std::io::Result<ToolOutput> {
    let metadata = ctx.env.stat(path)?;
    if metadata.is_dir() {
        return Ok(ToolOutput::error(format!("{shown} is a directory; use ls to list it")));
    }
    if !metadata.is_file() {
        return Ok(ToolOutput::error(format!(
            "{shown} is not a regular file (a device, socket or pipe); read only reads files"
        )));
    }
    let mut file = ctx.env.open(path)?;
    let mut head = Vec::new();
    (&mut file).take(SNIFF_BYTES).read_to_end(&mut head)?;

    if let Some(mime_type) = image_type(&head) {
        return read_image(ctx, path, shown, mime_type, metadata.len());
    }
    if looks_binary(&head) {
        return Ok(ToolOutput::error(format!(
            "{shown} is a binary file ({} bytes); read only shows text. Use bash (for example \
             `file` or `xxd | head`) if you need to inspect it.",
            metadata.len()
        )));
    }
    let reader = BufReader::new(std::io::Cursor::new(head).chain(file));
    let window =
        read_lines(reader, args.offset.map_or(1, LineNumber::get), args.limit.map(Limit::get))?;
    ctx.files.record(path, FileStamp::with_hash(path, window.size, window.hash));
    Ok(window.into_output(shown))
}

fn read_image(
    ctx: &ToolContext,
    path: &Path,
    shown: &str,
    mime_type: &str,
    size: u64,
) -> std::io::Result<ToolOutput> {
    let details = json!({ "path": shown, "mimeType": mime_type, "bytes": size });
    if !ctx.images_allowed {
        return Ok(ToolOutput::text(format!(
            "{shown} is an image ({mime_type}, {size} bytes). The current model cannot view \
             images, so its content is not shown."
        ))
        .with_details(details));
    }
    if size > MAX_IMAGE_BYTES {
        return Ok(ToolOutput::error(format!(
            "{shown} is an image of {size} bytes, larger than the {MAX_IMAGE_BYTES}-byte limit"
        )));
    }
    let bytes = ctx.env.read(path)?;
    ctx.files.record(path, FileStamp::of(path, &bytes));
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(ToolOutput {
        content: vec![
            ContentBlock::text(format!("Image {shown} ({mime_type}, {} bytes)", bytes.len())),
            ContentBlock::Image { data, mime_type: mime_type.to_string() },
        ],
        details: Some(details),
        is_error: false,
    })
}

/// The image type of a file from its first bytes, if it is one the models accept.
pub(crate) fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// True when the first bytes of a file are not text: a NUL byte, or a byte sequence that is
/// not UTF-8 (a multi-byte character cut off at the end of the sample does not count).
pub(crate) fn looks_binary(head: &[u8]) -> bool {
    if head.contains(&0) {
        return true;
    }
    match std::str::from_utf8(head) {
        Ok(_) => false,
        Err(err) => err.error_len().is_some(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// The caller's `limit` was reached.
    Limit,
    /// The line cap was reached.
    Lines,
    /// The byte cap was reached.
    Bytes,
}

/// The lines shown from a file, with what is needed to describe the rest.
struct Window {
    text: String,
    first: u64,
    last: u64,
    total: u64,
    cut: Option<Cut>,
    size: u64,
    hash: [u8; 32],
}

/// Streams the whole file (hashing it for the tracker and counting its lines) while keeping
/// only the requested window, so memory stays bounded by the output caps.
fn read_lines(mut reader: impl BufRead, first: u64, limit: Option<u64>) -> std::io::Result<Window> {
    let cap = limit.map_or(MAX_OUTPUT_LINES as u64, |l| l.min(MAX_OUTPUT_LINES as u64));
    let limit_cut =
        if limit.is_some_and(|l| l <= MAX_OUTPUT_LINES as u64) { Cut::Limit } else { Cut::Lines };
    let mut hasher = Sha256::new();
    let mut text = String::new();
    let mut line = Vec::new();
    let (mut size, mut number, mut shown, mut cut) = (0u64, 0u64, 0u64, None);
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 {
            break;
        }
        hasher.update(&line);
        size += read as u64;
        number += 1;
        if number < first || cut.is_some() {
            continue;
        }
        if shown == cap {
            cut = Some(limit_cut);
            continue;
        }
        let content = line.strip_suffix(b"\n").unwrap_or(&line);
        let content = content.strip_suffix(b"\r").unwrap_or(content);
        let entry = format!(
            "{number:>6}\t{}\n",
            clip_line(&String::from_utf8_lossy(content), MAX_LINE_CHARS)
        );
        if text.len() + entry.len() > MAX_OUTPUT_BYTES {
            cut = Some(Cut::Bytes);
            continue;
        }
        text.push_str(&entry);
        shown += 1;
    }
    Ok(Window {
        text,
        first,
        last: first + shown.saturating_sub(1),
        total: number,
        cut,
        size,
        hash: hasher.finalize().into(),
    })
}

impl Window {
    fn into_output(self, shown: &str) -> ToolOutput {
        let details = json!({
            "path": shown,
            "startLine": self.first,
            "endLine": self.last,
            "totalLines": self.total,
            "truncated": self.cut.is_some(),
        });
        if self.total == 0 {
            return ToolOutput::text(format!("{shown} is empty.")).with_details(details);
        }
        if self.first > self.total {
            return ToolOutput::error(format!(
                "offset {} is past the end of {shown}, which has {} lines",
                self.first, self.total
            ));
        }
        let mut text = self.text;
        if text.ends_with('\n') {
            text.pop();
        }
        if let Some(cut) = self.cut {
            let why = match cut {
                Cut::Limit => String::new(),
                Cut::Lines => format!("; {MAX_OUTPUT_LINES}-line limit reached"),
                Cut::Bytes => format!("; {} KB limit reached", MAX_OUTPUT_BYTES / 1024),
            };
            text.push_str(&format!(
                "\n\n[Showing lines {}-{} of {}{why}. Use offset={} to read on.]",
                self.first,
                self.last,
                self.total,
                self.last + 1
            ));
        }
        ToolOutput::text(text).with_details(details)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn text_comes_back_numbered() {
        let f = Fixture::new();
        f.write("a.txt", "alpha\r\nbeta\ngamma");
        let out = f.call("read", json!({"path": "a.txt"})).await;
        assert!(!out.is_error);
        assert_eq!(text(&out), "     1\talpha\n     2\tbeta\n     3\tgamma");
        let details = out.details.unwrap();
        assert_eq!(details["totalLines"], 3);
        assert_eq!(details["truncated"], false);
        assert!(f.ctx.files.get(&f.path("a.txt")).is_some(), "the read is recorded");
    }

    #[tokio::test]
    async fn offset_and_limit_select_a_window_and_say_how_to_go_on() {
        let f = Fixture::new();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        f.write("ten.txt", &body);
        let out = f.call("read", json!({"path": "ten.txt", "offset": 4, "limit": 3})).await;
        let text = text(&out);
        assert!(text.starts_with("     4\tline 4\n     5\tline 5\n     6\tline 6\n"), "{text}");
        assert!(text.contains("[Showing lines 4-6 of 10. Use offset=7 to read on.]"), "{text}");

        let out = f.call("read", json!({"path": "ten.txt", "offset": 9})).await;
        assert_eq!(super::super::test_support::text(&out), "     9\tline 9\n    10\tline 10");

        let out = f.call("read", json!({"path": "ten.txt", "offset": 11})).await;
        assert!(out.is_error);
        assert!(super::super::test_support::text(&out).contains("has 10 lines"));
    }

    #[tokio::test]
    async fn long_files_stop_at_the_line_cap() {
        let f = Fixture::new();
        let body: String = (1..=2_500).map(|i| format!("{i}\n")).collect();
        f.write("long.txt", &body);
        let out = f.call("read", json!({"path": "long.txt"})).await;
        let text = text(&out);
        assert!(text.contains("  2000\t2000\n\n[Showing lines 1-2000 of 2500; 2000-line limit"));
        assert!(text.contains("Use offset=2001 to read on."));
        assert!(!text.contains("2001\t"));

        let out = f.call("read", json!({"path": "long.txt", "offset": 2001})).await;
        let text = super::super::test_support::text(&out);
        assert!(text.starts_with("  2001\t2001"));
        assert!(text.ends_with("  2500\t2500"));
    }

    #[tokio::test]
    async fn wide_files_stop_at_the_byte_cap() {
        let f = Fixture::new();
        let line = "x".repeat(1_000);
        let body: String = (0..200).map(|_| format!("{line}\n")).collect();
        f.write("wide.txt", &body);
        let out = f.call("read", json!({"path": "wide.txt"})).await;
        let text = text(&out);
        assert!(text.len() <= MAX_OUTPUT_BYTES + 200);
        assert!(
            text.contains("of 200; 50 KB limit reached. Use offset="),
            "{}",
            &text[text.len() - 200..]
        );
        let details = out.details.unwrap();
        let last = details["endLine"].as_u64().unwrap();
        assert!(last > 40 && last < 60, "{last}");
        assert!(text.ends_with(&format!("Use offset={} to read on.]", last + 1)));
    }

    #[tokio::test]
    async fn very_long_lines_are_clipped() {
        let f = Fixture::new();
        f.write("min.js", "y".repeat(5_000));
        let out = f.call("read", json!({"path": "min.js"})).await;
        assert!(text(&out).ends_with("... [3000 more characters]"));
    }

    #[tokio::test]
    async fn images_come_back_as_image_blocks_when_allowed() {
        let mut f = Fixture::new();
        let png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR rest of the image";
        f.write("pic.png", png);
        let out = f.call("read", json!({"path": "pic.png"})).await;
        assert!(!out.is_error);
        let ContentBlock::Image { data, mime_type } = &out.content[1] else { panic!("{out:?}") };
        assert_eq!(mime_type, "image/png");
        let decoded = base64::engine::general_purpose::STANDARD.decode(data).unwrap();
        assert_eq!(decoded, png);

        f.ctx.images_allowed = false;
        let out = f.call("read", json!({"path": "pic.png"})).await;
        assert_eq!(out.content.len(), 1);
        assert!(text(&out).contains("cannot view images"));
    }

    #[test]
    fn image_types_are_told_by_magic_bytes() {
        assert_eq!(image_type(b"\xFF\xD8\xFF\xE0rest"), Some("image/jpeg"));
        assert_eq!(image_type(b"GIF89a..."), Some("image/gif"));
        assert_eq!(image_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(image_type(b"RIFF\x10\0\0\0WAVEfmt "), None);
        assert_eq!(image_type(b"plain text"), None);
    }

    #[tokio::test]
    async fn binary_files_are_refused() {
        let f = Fixture::new();
        f.write("prog.bin", b"\x7fELF\x02\x01\x01\0\0\0\0");
        let out = f.call("read", json!({"path": "prog.bin"})).await;
        assert!(out.is_error);
        assert!(text(&out).contains("binary file"));
        assert!(looks_binary(b"\xC3\x28 invalid utf8"));
        // A multi-byte character cut off by the sample's end is still text.
        assert!(!looks_binary("é".as_bytes().split_at(1).0));
    }

    #[tokio::test]
    async fn missing_files_directories_and_empty_files() {
        let f = Fixture::new();
        let out = f.call("read", json!({"path": "nope.txt"})).await;
        assert!(out.is_error);
        assert_eq!(text(&out), "File not found: nope.txt");

        std::fs::create_dir(f.path("dir")).unwrap();
        let out = f.call("read", json!({"path": "dir"})).await;
        assert!(out.is_error && text(&out).contains("use ls"));

        f.write("empty.txt", "");
        let out = f.call("read", json!({"path": "empty.txt"})).await;
        assert!(!out.is_error);
        assert_eq!(text(&out), "empty.txt is empty.");

        let out = f.call("read", json!({"path": "empty.txt", "limit": 0})).await;
        assert!(out.is_error);

        let out = f.call("read", json!({"path": "/dev/null"})).await;
        assert!(out.is_error && text(&out).contains("not a regular file"), "{out:?}");
    }
}
