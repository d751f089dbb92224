//! Keeping the tail of a command's output in bounded memory, with the whole of it in a file
//! once it grows past what a tool result holds.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::spill::{FREE_SPACE_CHECK_BYTES, SpillLimits, SpillOutcome, room_for};
use super::{MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES};

/// Output collected so far. Memory stays around twice the byte cap whatever the command prints;
/// as soon as the output exceeds a cap, it (from the first byte on) also goes to a spill file
/// in the output directory, within the [`SpillLimits`].
pub(crate) struct OutputCapture {
    tail: Vec<u8>,
    total_bytes: u64,
    newlines: u64,
    dir: PathBuf,
    limits: SpillLimits,
    spill: Option<SpillFile>,
    /// Set once spilling stopped for good (the file was cut or never written).
    spill_end: Option<SpillOutcome>,
    max_bytes: usize,
    max_lines: usize,
}

/// The spill file being written.
struct SpillFile {
    path: PathBuf,
    file: BufWriter<File>,
    written: u64,
    /// Free space is checked again once `written` passes this.
    next_check: u64,
}

/// What a command printed, cut to fit a tool result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CapturedOutput {
    /// The last lines, within the caps.
    pub text: String,
    /// True when `text` is not the whole output.
    pub truncated: bool,
    /// Lines in `text`.
    pub shown_lines: usize,
    /// Bytes the command printed.
    pub total_bytes: u64,
    /// Lines the command printed.
    pub total_lines: u64,
    /// Where the full output went, when it was cut.
    pub spill: SpillOutcome,
}

impl OutputCapture {
    /// A capture that spills into `dir` (created when first needed) within `limits`.
    pub(crate) fn new(dir: &Path, limits: SpillLimits) -> Self {
        Self::with_limits(dir, limits, MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES)
    }

    fn with_limits(dir: &Path, limits: SpillLimits, max_bytes: usize, max_lines: usize) -> Self {
        Self {
            tail: Vec::new(),
            total_bytes: 0,
            newlines: 0,
            dir: dir.to_path_buf(),
            limits,
            spill: None,
            spill_end: None,
            max_bytes,
            max_lines,
        }
    }

    /// Adds a chunk of output.
    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.tail.extend_from_slice(chunk);
        self.total_bytes += chunk.len() as u64;
        self.newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        if self.spill.is_some() {
            self.write_spill(chunk);
        } else if self.spill_end.is_none() && self.over_caps() {
            self.start_spill();
        }
        // Nothing is dropped before the spill file exists: it starts once the output passes
        // the byte cap, and trimming waits for twice that.
        if self.tail.len() > 2 * self.max_bytes {
            let cut = self.tail.len() - self.max_bytes;
            self.tail.drain(..cut);
        }
    }

    fn over_caps(&self) -> bool {
        self.total_bytes > self.max_bytes as u64 || self.newlines >= self.max_lines as u64
    }

    /// Creates the spill file when there is room and writes everything so far into it.
    fn start_spill(&mut self) {
        if let Err(reason) = room_for(&self.dir, FREE_SPACE_CHECK_BYTES, self.limits) {
            tracing::warn!(dir = %self.dir.display(), %reason, "no full output file");
            self.spill_end = Some(SpillOutcome::NotWritten { reason });
            return;
        }
        // The spill directory lives under REIN_HOME: owner only (the files are 0600 already).
        let private_dir = {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)
        };
        let created = private_dir.and_then(|()| {
            tempfile::Builder::new()
                .prefix("bash-")
                .suffix(".log")
                .tempfile_in(&self.dir)?
                .keep()
                .map_err(|err| err.error)
        });
        match created {
            Ok((file, path)) => {
                self.spill = Some(SpillFile {
                    path,
                    file: BufWriter::new(file),
                    written: 0,
                    next_check: FREE_SPACE_CHECK_BYTES,
                });
                let so_far = std::mem::take(&mut self.tail);
                self.write_spill(&so_far);
                self.tail = so_far;
            }
            Err(err) => {
                tracing::warn!(dir = %self.dir.display(), error = %err,
                    "cannot create a full output file");
                let reason = format!("cannot create a file in {}: {err}", self.dir.display());
                self.spill_end = Some(SpillOutcome::NotWritten { reason });
            }
        }
    }

    /// Appends to the spill file within its cap, checking free space every
    /// [`FREE_SPACE_CHECK_BYTES`]; stops spilling for good at the cap, on low space or on a
    /// write error.
    fn write_spill(&mut self, chunk: &[u8]) {
        let Some(spill) = self.spill.as_mut() else { return };
        let room = self.limits.max_bytes.saturating_sub(spill.written);
        let take = chunk.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let mut stop: Option<String> = None;
        if spill.written + take as u64 > spill.next_check {
            match room_for(&self.dir, FREE_SPACE_CHECK_BYTES, self.limits) {
                Ok(()) => spill.next_check = spill.written + take as u64 + FREE_SPACE_CHECK_BYTES,
                Err(reason) => stop = Some(reason),
            }
        }
        if stop.is_none() {
            match spill.file.write_all(&chunk[..take]) {
                Ok(()) => spill.written += take as u64,
                Err(err) => stop = Some(format!("writing it failed: {err}")),
            }
        }
        if stop.is_none() && take < chunk.len() {
            stop =
                Some(format!("the cap of {} bytes, tools.spill_max_bytes", self.limits.max_bytes));
        }
        if let Some(reason) = stop
            && let Some(mut spill) = self.spill.take()
        {
            if let Err(err) = spill.file.flush() {
                tracing::warn!(path = %spill.path.display(), error = %err, "full output file failed");
            }
            tracing::warn!(path = %spill.path.display(), %reason, "full output file cut short");
            self.spill_end =
                Some(SpillOutcome::Cut { path: spill.path, kept: spill.written, reason });
        }
    }

    /// Ends the capture: the tail within the caps, and what became of the spill file when the
    /// output was cut.
    pub(crate) fn finish(mut self) -> CapturedOutput {
        let kept = last_lines(&self.tail, self.max_bytes, self.max_lines);
        let truncated = (kept.len() as u64) < self.total_bytes;
        let mut outcome = match self.spill.take() {
            Some(mut spill) => match spill.file.flush() {
                Ok(()) => SpillOutcome::Complete { path: spill.path, limit: self.limits.max_bytes },
                Err(err) => SpillOutcome::Cut {
                    path: spill.path,
                    kept: 0,
                    reason: format!("writing it failed: {err}"),
                },
            },
            None => self.spill_end.take().unwrap_or(SpillOutcome::None),
        };
        if !truncated {
            if let Some(path) = outcome.path()
                && let Err(err) = std::fs::remove_file(path)
            {
                tracing::debug!(path = %path.display(), error = %err, "unneeded output file");
            }
            outcome = SpillOutcome::None;
        }
        let text = String::from_utf8_lossy(kept).into_owned();
        let shown_lines = count_lines(kept);
        CapturedOutput {
            text,
            truncated,
            shown_lines,
            total_bytes: self.total_bytes,
            total_lines: self.newlines
                + u64::from(!self.tail.is_empty() && !self.tail.ends_with(b"\n")),
            spill: outcome,
        }
    }
}

/// The longest suffix of `bytes` with at most `max_bytes` bytes and `max_lines` lines that
/// starts at a line start (or, when a single line is longer than `max_bytes`, at a character
/// boundary inside it).
fn last_lines(bytes: &[u8], max_bytes: usize, max_lines: usize) -> &[u8] {
    let mut start = bytes.len().saturating_sub(max_bytes);
    if start > 0 && bytes[start - 1] != b'\n' {
        match bytes[start..].iter().position(|&b| b == b'\n') {
            Some(p) if start + p + 1 < bytes.len() => start += p + 1,
            _ => {
                while start < bytes.len() && (bytes[start] & 0xC0) == 0x80 {
                    start += 1;
                }
            }
        }
    }
    let kept = &bytes[start..];
    // Line starts are counted from the end; a final newline ends the last line.
    let body = kept.strip_suffix(b"\n").unwrap_or(kept);
    let mut lines = 1;
    for (i, &b) in body.iter().enumerate().rev() {
        if b == b'\n' {
            if lines == max_lines {
                return &kept[i + 1..];
            }
            lines += 1;
        }
    }
    kept
}

fn count_lines(bytes: &[u8]) -> usize {
    if bytes.is_empty() {
        return 0;
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    body.iter().filter(|&&b| b == b'\n').count() + 1
}

/// Turns a byte stream into text chunks without splitting a UTF-8 character between chunks.
#[derive(Default)]
pub(crate) struct Utf8Chunks {
    pending: Vec<u8>,
}

impl Utf8Chunks {
    /// The text of `bytes` plus whatever was held back, holding back an incomplete character
    /// at the end. Invalid bytes become U+FFFD.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut rest: &[u8] = &self.pending;
        loop {
            match std::str::from_utf8(rest) {
                Ok(text) => {
                    out.push_str(text);
                    rest = &[];
                    break;
                }
                Err(err) => {
                    let (valid, after) = rest.split_at(err.valid_up_to());
                    out.push_str(&String::from_utf8_lossy(valid));
                    match err.error_len() {
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            rest = &after[bad..];
                        }
                        None => {
                            rest = after;
                            break;
                        }
                    }
                }
            }
        }
        self.pending = rest.to_vec();
        out
    }

    /// Whatever is still held back, as text (an incomplete character becomes U+FFFD).
    pub(crate) fn finish(self) -> String {
        String::from_utf8_lossy(&self.pending).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_output_is_kept_whole() {
        let dir = tempfile::tempdir().unwrap();
        let mut capture = OutputCapture::new(dir.path(), no_floor());
        capture.push(b"hello\n");
        capture.push(b"world");
        let out = capture.finish();
        assert_eq!(out.text, "hello\nworld");
        assert!(!out.truncated);
        assert_eq!((out.total_lines, out.shown_lines), (2, 2));
        assert_eq!(out.spill, SpillOutcome::None);
        assert!(!dir.path().exists() || std::fs::read_dir(dir.path()).unwrap().count() == 0);
    }

    #[test]
    fn long_output_keeps_the_tail_and_spills_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut capture = OutputCapture::with_limits(dir.path(), no_floor(), 100, 5);
        let mut all = Vec::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.extend_from_slice(line.as_bytes());
            capture.push(line.as_bytes());
            assert!(capture.tail.len() <= 2 * 100 + line.len(), "memory stays bounded");
        }
        let out = capture.finish();
        assert!(out.truncated);
        assert_eq!(out.text, "line 995\nline 996\nline 997\nline 998\nline 999\n");
        assert_eq!(out.total_lines, 1000);
        let full = std::fs::read(out.spill.path().unwrap()).unwrap();
        assert_eq!(full, all);
        assert!(matches!(out.spill, SpillOutcome::Complete { .. }), "{:?}", out.spill);
    }

    #[test]
    fn the_spill_file_stops_at_its_cap_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SpillLimits { max_bytes: 1000, min_free_bytes: 0 };
        let mut capture = OutputCapture::with_limits(dir.path(), limits, 100, 5);
        let mut all = Vec::new();
        for i in 0..1000 {
            let line = format!("line {i}\n");
            all.extend_from_slice(line.as_bytes());
            capture.push(line.as_bytes());
        }
        let out = capture.finish();
        let SpillOutcome::Cut { path, kept, reason } = &out.spill else {
            panic!("expected a cut spill, got {:?}", out.spill)
        };
        assert_eq!(*kept, 1000);
        assert!(reason.contains("tools.spill_max_bytes"), "{reason}");
        assert_eq!(std::fs::read(path).unwrap(), all[..1000]);
        let note = super::super::spill::describe(&out.spill).unwrap();
        assert!(note.contains(&path.display().to_string()) && note.contains("1000"), "{note}");
    }

    #[test]
    fn no_spill_file_is_started_without_free_space() {
        let dir = tempfile::tempdir().unwrap();
        let limits = SpillLimits { max_bytes: 1000, min_free_bytes: u64::MAX / 2 };
        let mut capture = OutputCapture::with_limits(dir.path(), limits, 100, 5);
        for i in 0..100 {
            capture.push(format!("line {i}\n").as_bytes());
        }
        let out = capture.finish();
        assert!(out.truncated);
        let SpillOutcome::NotWritten { reason } = &out.spill else {
            panic!("expected no spill, got {:?}", out.spill)
        };
        assert!(reason.contains("storage.min_free_bytes"), "{reason}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    fn no_floor() -> SpillLimits {
        SpillLimits { min_free_bytes: 0, ..SpillLimits::default() }
    }

    #[test]
    fn byte_cap_cuts_at_a_line_start() {
        assert_eq!(last_lines(b"aaaa\nbbbb\ncc\n", 7, 100), b"cc\n");
        assert_eq!(last_lines(b"aaaa\nbbbb\ncc\n", 8, 100), b"bbbb\ncc\n");
        assert_eq!(last_lines(b"aaaa\nbbbb\ncc\n", 10, 100), b"bbbb\ncc\n");
        // One long line: cut inside it, on a character boundary.
        let text = "é".repeat(10);
        let kept = last_lines(text.as_bytes(), 5, 100);
        assert_eq!(std::str::from_utf8(kept).unwrap(), "éé");
    }

    #[test]
    fn line_cap_keeps_the_last_lines() {
        assert_eq!(last_lines(b"1\n2\n3\n4", 100, 2), b"3\n4");
        assert_eq!(last_lines(b"1\n2\n3\n4\n", 100, 2), b"3\n4\n");
        assert_eq!(last_lines(b"1\n2\n", 100, 2), b"1\n2\n");
    }

    #[test]
    fn utf8_chunks_never_split_a_character() {
        let mut chunks = Utf8Chunks::default();
        let bytes = "aé€".as_bytes();
        let mut text = String::new();
        for byte in bytes {
            text.push_str(&chunks.push(&[*byte]));
        }
        assert_eq!(text, "aé€");
        assert_eq!(chunks.push(b"\xffok"), "\u{fffd}ok");
        assert_eq!(chunks.push(b"\xe2\x82"), "");
        assert_eq!(chunks.finish(), "\u{fffd}");
    }
}
