//! The session file on disk: locking, parsing with damage tolerance, synced appends and atomic
//! rewrites. Nothing above this module touches the file system for a session's content.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{BufRead, BufReader, Seek, Write};
use std::num::NonZeroUsize;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rein_protocol::SessionEntry;
use serde::Serialize;

use crate::error::SessionError;
use crate::header::{FORMAT_VERSION, SessionHeader};
use crate::ordered_lines;
use crate::paths;
use crate::tree::SessionTree;
use crate::writer::{AppendTicket, FileWriter};

/// A line of the session file that could not be read as an entry.
#[derive(Debug, Clone, PartialEq)]
pub struct DamagedLine {
    /// 1-based line number in the file (the header is line 1).
    pub line: u64,
    /// The raw bytes of the line (without its newline).
    pub bytes: Vec<u8>,
}

/// A session file's content, read tolerantly.
#[derive(Debug, Clone)]
pub struct ParsedFile {
    /// The header line.
    pub header: SessionHeader,
    /// Every entry that parsed, in file order, indexed (an entry repeating an earlier id is a
    /// damaged line, not part of it).
    pub tree: SessionTree,
    /// Lines that did not parse (a torn last line included).
    pub damaged: Vec<DamagedLine>,
    /// When the file must be rewritten before appending (a damaged line, or a last line
    /// without its newline): the file's bytes without the damaged lines. Good lines are kept
    /// byte for byte, so entry kinds this version does not know survive the rewrite.
    pub repaired_bytes: Option<Vec<u8>>,
    /// True when the file must be rewritten before appending (`repaired_bytes` is set).
    pub needs_rewrite: bool,
}

/// Parses the bytes of a session file. Only a missing or unreadable header is an error; every
/// other bad line is reported in [`ParsedFile::damaged`].
pub fn parse_file(path: &Path, bytes: &[u8]) -> Result<ParsedFile, SessionError> {
    let lines = count_lines(bytes).map_err(SessionError::io("read", path))?;
    let (mut parsed, _) = read_entries(path, bytes, lines)?;
    if parsed.needs_rewrite {
        parsed.repaired_bytes = Some(without_damaged_lines(bytes, &parsed.damaged));
    }
    Ok(parsed)
}

/// Reads a session file line by line from `reader` (the file is never held whole in memory:
/// a 100,000-entry file is about 50 MB). Returns what [`parse_file`] does, except that
/// `repaired_bytes` is left unset for the caller to fill in when `needs_rewrite` says so,
/// and the number of bytes read. A file of [`PARALLEL_FROM_LINES`] lines or more is parsed
/// on every core (see [`ordered_lines`]); the result is the same either way.
fn read_entries(
    path: &Path,
    reader: impl BufRead,
    lines: usize,
) -> Result<(ParsedFile, u64), SessionError> {
    let parsers = std::thread::available_parallelism().map_or(1, NonZeroUsize::get).min(4);
    let parsers = NonZeroUsize::new(parsers).filter(|_| lines >= PARALLEL_FROM_LINES);
    read_entries_with(path, reader, lines, parsers)
}

/// [`read_entries`] with the number of parser threads chosen by the caller: `None` parses on
/// the calling thread.
fn read_entries_with(
    path: &Path,
    mut reader: impl BufRead,
    lines: usize,
    parsers: Option<NonZeroUsize>,
) -> Result<(ParsedFile, u64), SessionError> {
    let bad_header = |reason: String| SessionError::BadHeader { path: path.to_path_buf(), reason };
    let mut line = Vec::with_capacity(4096);
    let header_length =
        reader.read_until(b'\n', &mut line).map_err(SessionError::io("read", path))?;
    let header: SessionHeader =
        serde_json::from_slice(strip_newline(&line)).map_err(|e| bad_header(e.to_string()))?;
    if header.version > FORMAT_VERSION {
        return Err(SessionError::UnsupportedVersion {
            path: path.to_path_buf(),
            version: header.version,
            supported: FORMAT_VERSION,
        });
    }
    let mut entries = EntryLines {
        tree: SessionTree::with_capacity(lines.saturating_sub(1)),
        damaged: Vec::new(),
        line_no: 1,
        torn: header_length > 0 && !line.ends_with(b"\n"),
    };
    let body_length = match parsers {
        Some(parsers) => ordered_lines::parse_in_order(
            reader,
            parsers,
            PARSE_BATCH_BYTES,
            parse_line,
            |line, entry| entries.take(line, entry),
        )
        .map_err(SessionError::io("read", path))?,
        None => {
            let mut length = 0;
            loop {
                line.clear();
                let read =
                    reader.read_until(b'\n', &mut line).map_err(SessionError::io("read", path))?;
                if read == 0 {
                    break;
                }
                length += read as u64;
                entries.take(&line, parse_line(&line));
            }
            length
        }
    };
    let EntryLines { mut tree, damaged, torn, .. } = entries;
    tree.shrink_to_fit();
    let needs_rewrite = torn || !damaged.is_empty();
    let parsed = ParsedFile { header, tree, damaged, repaired_bytes: None, needs_rewrite };
    Ok((parsed, header_length as u64 + body_length))
}

/// A file of this many lines or more is parsed on several threads: below it, starting them
/// costs more than it saves.
const PARALLEL_FROM_LINES: usize = 2_000;

/// About how many bytes of lines a parser thread is given at a time.
const PARSE_BATCH_BYTES: usize = 64 * 1024;

/// An entry line (newline included) read as an entry; `None` for a blank line or one that
/// does not parse.
fn parse_line(line: &[u8]) -> Option<SessionEntry> {
    let text = strip_newline(line);
    if text.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    crate::entry_line::parse_entry(text).ok()
}

/// The entry lines read so far, taken one at a time in file order.
struct EntryLines {
    tree: SessionTree,
    damaged: Vec<DamagedLine>,
    /// The number of the last line taken (the header is line 1).
    line_no: u64,
    /// Whether the last line taken lacks its newline.
    torn: bool,
}

impl EntryLines {
    /// Takes the next line (newline included) with what [`parse_line`] made of it: a blank
    /// line is skipped, a line that did not parse or repeats an earlier id is damaged.
    fn take(&mut self, line: &[u8], entry: Option<SessionEntry>) {
        self.line_no += 1;
        self.torn = !line.ends_with(b"\n");
        let text = strip_newline(line);
        let added = match entry {
            Some(entry) => self.tree.push_new(entry),
            None if text.iter().all(u8::is_ascii_whitespace) => return,
            None => false,
        };
        if !added {
            self.damaged.push(DamagedLine { line: self.line_no, bytes: text.to_vec() });
        }
    }
}

/// The number of lines `reader` holds (a last line without its newline counted).
fn count_lines(mut reader: impl BufRead) -> std::io::Result<usize> {
    let mut lines = 0;
    let mut ends_line = true;
    loop {
        let chunk = reader.fill_buf()?;
        let Some(&last) = chunk.last() else { break };
        lines += chunk.iter().filter(|&&byte| byte == b'\n').count();
        ends_line = last == b'\n';
        let read = chunk.len();
        reader.consume(read);
    }
    Ok(lines + usize::from(!ends_line))
}

/// A line as read, without its newline.
fn strip_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}

/// The text of a session file without its damaged lines and blank lines, every line ended by
/// a newline: what is written back when [`ParsedFile::needs_rewrite`] is set.
fn without_damaged_lines(bytes: &[u8], damaged: &[DamagedLine]) -> Vec<u8> {
    let mut clean = Vec::with_capacity(bytes.len());
    let mut damaged = damaged.iter().map(|d| d.line).peekable();
    for (index, line) in bytes.split(|b| *b == b'\n').enumerate() {
        let line_no = index as u64 + 1;
        if damaged.next_if_eq(&line_no).is_some() {
            continue;
        }
        if line_no > 1 && line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        clean.extend_from_slice(line);
        clean.push(b'\n');
    }
    clean
}

/// Serializes one JSONL line (compact JSON plus newline) onto `out`.
pub fn push_line(out: &mut Vec<u8>, value: &impl Serialize) -> Result<(), SessionError> {
    serde_json::to_writer(&mut *out, value)?;
    out.push(b'\n');
    Ok(())
}

/// The whole text of a session file with this header and these entries.
pub fn encode_file(
    header: &SessionHeader,
    entries: &[SessionEntry],
) -> Result<Vec<u8>, SessionError> {
    let mut out = Vec::with_capacity(256 * (entries.len() + 1));
    push_line(&mut out, header)?;
    for entry in entries {
        push_line(&mut out, entry)?;
    }
    Ok(out)
}

/// How much of a session file is read at a time when it is opened.
const READ_BUFFER_BYTES: usize = 256 * 1024;

/// Mode of the files rein writes (owner read and write only).
pub const PRIVATE_FILE_MODE: u32 = 0o600;
/// Mode of the directories rein creates (owner only).
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// Writes `bytes` to `path` atomically: a temp file in the same directory, fsync, rename over
/// the target, fsync the directory. A crash leaves either the old file or the new one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), SessionError> {
    let temp = paths::temp_file(path);
    // Session files are the user's alone (0600), like everything under REIN_HOME.
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(PRIVATE_FILE_MODE)
        .open(&temp)
        .map_err(SessionError::io("create", &temp))?;
    file.write_all(bytes).map_err(SessionError::io("write", &temp))?;
    file.sync_all().map_err(SessionError::io("sync", &temp))?;
    drop(file);
    std::fs::rename(&temp, path).map_err(SessionError::io("rename onto", path))?;
    sync_parent_dir(path)
}

/// Fsyncs the directory holding `path`, so a create or rename in it is durable.
pub fn sync_parent_dir(path: &Path) -> Result<(), SessionError> {
    let Some(dir) = path.parent() else { return Ok(()) };
    let handle = File::open(dir).map_err(SessionError::io("open directory", dir))?;
    handle.sync_all().map_err(SessionError::io("sync directory", dir))
}

/// How long [`SessionLock::acquire`] tries a held lock again before answering `Locked`.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_millis(100);

/// The pause between two tries of a held lock.
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(5);

/// An advisory lock on one session, held while this value lives.
#[derive(Debug)]
pub struct SessionLock {
    _file: File,
}

impl SessionLock {
    /// Takes the lock of the session file at `session_file`; `Locked` when any other handle
    /// (in this process or another) holds it for longer than [`LOCK_PATIENCE`].
    ///
    /// A lock just released can still be held for a moment by a process this one is starting
    /// (a tool command): between its fork and its exec the child holds a copy of every open
    /// descriptor, the lock's too. So a held lock is tried again a few times before it counts.
    pub fn acquire(session_file: &Path) -> Result<Self, SessionError> {
        let path = paths::lock_file(session_file);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .mode(PRIVATE_FILE_MODE)
            .open(&path)
            .map_err(SessionError::io("open lock file", &path))?;
        let deadline = std::time::Instant::now() + LOCK_PATIENCE;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Self { _file: file }),
                Err(TryLockError::WouldBlock) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(LOCK_RETRY);
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(SessionError::Locked { path: session_file.to_path_buf() });
                }
                Err(TryLockError::Error(source)) => {
                    return Err(SessionError::Io { action: "lock", path, source });
                }
            }
        }
    }
}

/// What the session's path names, compared with the file a [`SessionFile`] appends to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// The path names the open file: what was appended is what the path holds.
    Same,
    /// Nothing is at the path any more (the file was deleted).
    Missing,
    /// Another file is at the path (the file was replaced, by a rename or a copy).
    Replaced,
}

impl PathState {
    /// A word for the repair entry and logs: `missing` or `replaced` (`same` otherwise).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Same => "same",
            Self::Missing => "missing",
            Self::Replaced => "replaced",
        }
    }
}

/// An open, locked session file that entries are appended to. Its appends are written and
/// fsync'd by its own writer thread (see [`crate::writer`]).
#[derive(Debug)]
pub struct SessionFile {
    path: PathBuf,
    /// The file appended to, for comparing it with what the path names.
    file: File,
    /// Declared before the lock: dropping it waits for the thread, so nothing is written
    /// once the lock is released.
    writer: FileWriter,
    lock: SessionLock,
}

impl SessionFile {
    /// Creates a new session file holding `header` and `entries` (fails if the file exists).
    /// The content goes through a temp file and a rename, so a crash leaves no half file.
    pub fn create(
        path: &Path,
        header: &SessionHeader,
        entries: &[SessionEntry],
    ) -> Result<Self, SessionError> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(PRIVATE_DIR_MODE)
                .create(dir)
                .map_err(SessionError::io("create directory", dir))?;
        }
        let lock = SessionLock::acquire(path)?;
        if path.exists() {
            let source = std::io::Error::from(std::io::ErrorKind::AlreadyExists);
            return Err(SessionError::Io { action: "create", path: path.to_path_buf(), source });
        }
        let bytes = encode_file(header, entries)?;
        write_atomically(path, &bytes)?;
        let file = open_append(path)?;
        let writer = FileWriter::start(path, try_clone(&file, path)?, bytes.len() as u64)?;
        Ok(Self { path: path.to_path_buf(), file, writer, lock })
    }

    /// Locks and reads an existing session file. The caller decides what to do with damage
    /// (see [`SessionFile::rewrite`]).
    pub fn open(path: &Path) -> Result<(Self, ParsedFile), SessionError> {
        if !path.exists() {
            return Err(SessionError::NotFound(path.display().to_string()));
        }
        let lock = SessionLock::acquire(path)?;
        let mut reader = BufReader::with_capacity(
            READ_BUFFER_BYTES,
            File::open(path).map_err(SessionError::io("read", path))?,
        );
        // Counted first (a fast scan of what the page cache holds), so the entries are read
        // into vectors of the right size instead of ones that double, and copy, as they go.
        let lines = count_lines(&mut reader).map_err(SessionError::io("read", path))?;
        reader.rewind().map_err(SessionError::io("read", path))?;
        let (mut parsed, length) = read_entries(path, reader, lines)?;
        if parsed.needs_rewrite {
            // Damage is rare: the file is read whole again only to write it back clean.
            let bytes = std::fs::read(path).map_err(SessionError::io("read", path))?;
            parsed.repaired_bytes = Some(without_damaged_lines(&bytes, &parsed.damaged));
        }
        let file = open_append(path)?;
        let writer = FileWriter::start(path, try_clone(&file, path)?, length)?;
        Ok((Self { path: path.to_path_buf(), file, writer, lock }, parsed))
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends entries as lines and fsyncs before returning, so every entry is durable once
    /// this returns `Ok`. A failed write is cut back off so the file stays valid JSONL. The
    /// write and the fsync run on the file's writer thread; this waits for its answer.
    pub fn append(&mut self, entries: &[SessionEntry]) -> Result<(), SessionError> {
        self.submit(entries)?.wait()
    }

    /// Queues entries to be appended as lines without waiting: the ticket resolves once they
    /// are durable (or the append failed and was cut back off). Appends queued together are
    /// written with one fsync, in the order they were queued.
    pub fn submit(&self, entries: &[SessionEntry]) -> Result<AppendTicket, SessionError> {
        let mut bytes = Vec::with_capacity(512 * entries.len());
        for entry in entries {
            push_line(&mut bytes, entry)?;
        }
        Ok(self.writer.append(bytes))
    }

    /// How many fsyncs of appends this file's writer has made since it was opened. Appends
    /// written together (several entries in one [`SessionFile::submit`], or submits queued
    /// while the writer was busy) share one.
    pub fn syncs(&self) -> u64 {
        self.writer.syncs()
    }

    /// Replaces the whole file atomically with `bytes` (a temp file, fsync, rename, directory
    /// fsync), then keeps appending to the new file. The lock (on its own file) is held
    /// throughout.
    pub fn rewrite(&mut self, bytes: &[u8]) -> Result<(), SessionError> {
        write_atomically(&self.path, bytes)?;
        let file = open_append(&self.path)?;
        self.writer.replace(try_clone(&file, &self.path)?, bytes.len() as u64).wait()?;
        self.file = file;
        Ok(())
    }

    /// Whether the session's path still names the file this handle appends to (same device
    /// and inode). An append to a file that was deleted or replaced reaches no path on disk.
    pub fn path_state(&self) -> Result<PathState, SessionError> {
        let open = self.file.metadata().map_err(SessionError::io("stat open file", &self.path))?;
        match std::fs::metadata(&self.path) {
            Ok(named) if named.dev() == open.dev() && named.ino() == open.ino() => {
                Ok(PathState::Same)
            }
            Ok(_) => Ok(PathState::Replaced),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(PathState::Missing),
            Err(source) => {
                Err(SessionError::Io { action: "stat", path: self.path.clone(), source })
            }
        }
    }

    /// Writes the whole file again at its path after it was deleted or replaced: a file found
    /// at the path is moved to `set_aside` first (never overwritten), the directory is
    /// created when it went too, and the lock is taken again when its file went. The
    /// content goes through [`SessionFile::rewrite`], so a crash leaves a whole file.
    pub fn restore(&mut self, bytes: &[u8], set_aside: Option<&Path>) -> Result<(), SessionError> {
        if let Some(aside) = set_aside {
            std::fs::rename(&self.path, aside)
                .map_err(SessionError::io("set aside", &self.path))?;
        }
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir).map_err(SessionError::io("create directory", dir))?;
        }
        if !paths::lock_file(&self.path).exists() {
            self.lock = SessionLock::acquire(&self.path)?;
        }
        self.rewrite(bytes)
    }
}

fn open_append(path: &Path) -> Result<File, SessionError> {
    OpenOptions::new().append(true).open(path).map_err(SessionError::io("open for append", path))
}

/// A second handle on the same open file (the writer thread gets one).
fn try_clone(file: &File, path: &Path) -> Result<File, SessionError> {
    file.try_clone().map_err(SessionError::io("open for append", path))
}

/// One line of the `.corrupt` sidecar: a skipped line, kept so nothing is lost.
#[derive(Debug, Serialize)]
struct CorruptRecord<'a> {
    line: u64,
    skipped_at: &'a str,
    text: &'a str,
}

/// Appends damaged lines to the `.corrupt` sidecar of `session_file` (as JSON lines holding the
/// line number and its text) and fsyncs it. Returns the sidecar's path.
pub fn keep_damaged_lines(
    session_file: &Path,
    damaged: &[DamagedLine],
    now: &str,
) -> Result<PathBuf, SessionError> {
    let sidecar = paths::corrupt_file(session_file);
    let mut bytes = Vec::new();
    for line in damaged {
        let text = String::from_utf8_lossy(&line.bytes);
        push_line(&mut bytes, &CorruptRecord { line: line.line, skipped_at: now, text: &text })?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(PRIVATE_FILE_MODE)
        .open(&sidecar)
        .map_err(SessionError::io("open", &sidecar))?;
    file.write_all(&bytes).map_err(SessionError::io("write", &sidecar))?;
    file.sync_all().map_err(SessionError::io("sync", &sidecar))?;
    sync_parent_dir(&sidecar)?;
    Ok(sidecar)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::EntryKind;

    #[test]
    fn a_lock_held_for_a_moment_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let held = SessionLock::acquire(&path).unwrap();
        // As a starting tool process holds a copy of the descriptor until its exec.
        let release = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(held);
        });
        assert!(SessionLock::acquire(&path).is_ok());
        release.join().unwrap();
    }

    fn header() -> SessionHeader {
        SessionHeader {
            kind: crate::header::HeaderType::Session,
            version: FORMAT_VERSION,
            id: "s".into(),
            cwd: "/p".into(),
            created: "t".into(),
            parent_session: None,
        }
    }

    fn entry(id: &str) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: None,
            timestamp: "t".into(),
            kind: EntryKind::SessionInfo { name: Some(id.into()) },
        }
    }

    #[test]
    fn parse_reports_torn_and_corrupt_lines() {
        let mut bytes = encode_file(&header(), &[entry("a"), entry("b")]).unwrap();
        bytes.extend_from_slice(b"{not json\n");
        push_line(&mut bytes, &entry("c")).unwrap();
        bytes.extend_from_slice(br#"{"id":"d","parent_id":null,"times"#);
        let parsed = parse_file(Path::new("f"), &bytes).unwrap();
        let ids: Vec<_> = parsed.tree.entries().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c"]);
        let lines: Vec<_> = parsed.damaged.iter().map(|d| d.line).collect();
        assert_eq!(lines, [4, 6]);
        let clean = parsed.repaired_bytes.unwrap();
        assert_eq!(clean, encode_file(&header(), &[entry("a"), entry("b"), entry("c")]).unwrap());
    }

    /// Damage of every kind spread over many batches reads the same on the parser threads as
    /// on the calling thread: same entries, same damaged lines, same torn end, same length.
    #[test]
    fn parsing_on_several_threads_reads_what_one_thread_reads() {
        let mut bytes = encode_file(&header(), &[]).unwrap();
        for n in 0..3_000 {
            match n % 97 {
                5 => bytes.extend_from_slice(b"{not json\n"),
                11 => bytes.extend_from_slice(b"   \n"),
                // Repeats an earlier id: damage.
                23 => push_line(&mut bytes, &entry(&format!("e{}", n - 1))).unwrap(),
                _ => push_line(&mut bytes, &entry(&format!("e{n}"))).unwrap(),
            }
        }
        bytes.extend_from_slice(br#"{"id":"torn","parent"#);
        let lines = count_lines(bytes.as_slice()).unwrap();
        let read = |parsers: Option<usize>| {
            let parsers = parsers.and_then(NonZeroUsize::new);
            let (parsed, length) =
                read_entries_with(Path::new("f"), bytes.as_slice(), lines, parsers).unwrap();
            let ids: Vec<String> = parsed.tree.entries().iter().map(|e| e.id.clone()).collect();
            (ids, parsed.damaged, parsed.needs_rewrite, length)
        };
        let alone = read(None);
        assert_eq!(alone.3, bytes.len() as u64);
        assert!(alone.2, "the torn last line asks for a rewrite");
        assert_eq!(alone.1.len(), 2 * 31 + 1, "31 bad lines, 31 repeated ids, the torn line");
        for parsers in [1, 2, 3] {
            assert_eq!(read(Some(parsers)), alone, "{parsers} parser threads");
        }
    }

    #[test]
    fn clean_file_needs_no_rewrite_and_duplicate_ids_are_damage() {
        let bytes = encode_file(&header(), &[entry("a")]).unwrap();
        let parsed = parse_file(Path::new("f"), &bytes).unwrap();
        assert!(parsed.repaired_bytes.is_none());
        let bytes = encode_file(&header(), &[entry("a"), entry("a")]).unwrap();
        let parsed = parse_file(Path::new("f"), &bytes).unwrap();
        assert_eq!(parsed.tree.entries().len(), 1);
        assert_eq!(parsed.damaged[0].line, 3);
    }

    #[test]
    fn rewrite_keeps_unknown_entry_kinds_verbatim() {
        let future = r#"{"id":"f","parent_id":null,"timestamp":"t","type":"hologram","beam":3}"#;
        let mut bytes = encode_file(&header(), &[entry("a")]).unwrap();
        bytes.extend_from_slice(future.as_bytes());
        bytes.extend_from_slice(b"\n{torn");
        let parsed = parse_file(Path::new("f"), &bytes).unwrap();
        assert_eq!(parsed.tree.entries()[1].kind, EntryKind::Unknown);
        let clean = String::from_utf8(parsed.repaired_bytes.unwrap()).unwrap();
        assert!(clean.ends_with(&format!("{future}\n")), "{clean}");
    }

    #[test]
    fn bad_header_and_newer_version_are_errors() {
        assert!(matches!(
            parse_file(Path::new("f"), b"garbage\n"),
            Err(SessionError::BadHeader { .. })
        ));
        let mut newer = header();
        newer.version = FORMAT_VERSION + 1;
        let bytes = encode_file(&newer, &[]).unwrap();
        assert!(matches!(
            parse_file(Path::new("f"), &bytes),
            Err(SessionError::UnsupportedVersion { .. })
        ));
    }

    #[test]
    fn create_append_reopen_and_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x").join("s.jsonl");
        let mut file = SessionFile::create(&path, &header(), &[]).unwrap();
        file.append(&[entry("a"), entry("b")]).unwrap();
        assert_eq!(file.syncs(), 1, "two entries appended together, one fsync");
        assert!(matches!(SessionFile::open(&path), Err(SessionError::Locked { .. })));
        drop(file);
        let (mut file, parsed) = SessionFile::open(&path).unwrap();
        assert_eq!(parsed.tree.entries().len(), 2);
        file.rewrite(&encode_file(&header(), &parsed.tree.entries()[..1]).unwrap()).unwrap();
        file.append(&[entry("c")]).unwrap();
        assert!(matches!(SessionLock::acquire(&path), Err(SessionError::Locked { .. })));
        drop(file);
        let (_file, parsed) = SessionFile::open(&path).unwrap();
        let ids: Vec<_> = parsed.tree.entries().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
        assert!(!paths::temp_file(&path).exists());
    }

    #[test]
    fn a_failed_append_is_reported_and_leaves_the_file_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let mut file = SessionFile::create(&path, &header(), &[entry("a")]).unwrap();
        let before = std::fs::read(&path).unwrap();
        // The writer gets a handle it cannot write through, as a full disk refuses a write.
        let read_only = File::open(&path).unwrap();
        file.writer.replace(read_only, before.len() as u64).wait().unwrap();
        let error = file.append(&[entry("b")]).unwrap_err();
        assert!(matches!(error, SessionError::Io { action: "append to", .. }), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // A rewrite hands the writer a working handle again.
        file.rewrite(&before).unwrap();
        file.append(&[entry("c")]).unwrap();
        let (_, parsed) = {
            drop(file);
            SessionFile::open(&path).unwrap()
        };
        let ids: Vec<_> = parsed.tree.entries().iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["a", "c"]);
    }

    #[test]
    fn damaged_lines_go_to_the_sidecar() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let damaged = [DamagedLine { line: 3, bytes: b"{\"torn".to_vec() }];
        let sidecar = keep_damaged_lines(&path, &damaged, "now").unwrap();
        let text = std::fs::read_to_string(sidecar).unwrap();
        assert_eq!(text, "{\"line\":3,\"skipped_at\":\"now\",\"text\":\"{\\\"torn\"}\n");
    }
}
