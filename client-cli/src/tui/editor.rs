//! The input box: multi-line editing, history, and Tab completion of slash commands and
//! `@file` mentions. Pure state; the key bindings live in the app.

use rein_protocol::message::ContentBlock;
use std::path::{Path, PathBuf};
use unicode_width::UnicodeWidthStr;

/// The slash commands Tab completes, with a one-line summary (also `/help`'s list).
pub const COMMANDS: &[(&str, &str)] = &[
    ("/help", "the keys and commands"),
    ("/new", "start a new session in this directory"),
    ("/resume", "pick an earlier session of this directory"),
    ("/fork", "continue in a copy of this session"),
    ("/rename", "NAME: name this session"),
    ("/approve", "ask|auto-edit|yolo: the approval policy"),
    ("/status", "model, context, tokens, cost, policy, queue"),
    ("/clear", "clear the screen (the session keeps everything)"),
    ("/model", "[PROVIDER/MODEL]: list the models, or switch"),
    ("/thinking", "LEVEL: off, minimal, low, medium, high, xhigh"),
    ("/compact", "[INSTRUCTIONS]: summarize older context"),
    ("/branch", "ENTRY [--summarize]: continue from an earlier entry"),
    ("/tree", "the session's entries"),
    ("/label", "ENTRY TEXT: label an entry"),
    ("/export", "[md|jsonl] [FILE]: export the conversation"),
    ("/sessions", "sessions of this directory"),
    ("/trust", "[--revoke]: trust this project directory"),
    ("/mode", "[steer|follow-up]: what text typed during a run does"),
    ("/last", "the last tool call's full output"),
    ("/expand", "N: the N-th tool call's full output"),
    ("/cancel", "cancel the run"),
    ("/undo", "[TURN] [--force]: put the files back"),
    ("/diff", "[TURN]: the file changes of the latest run"),
    ("/quit", "leave (the session stays in the daemon)"),
];

/// The most history entries kept.
const HISTORY_LIMIT: usize = 1000;

/// The text being typed, its cursor and the history.
#[derive(Debug, Clone, Default)]
pub struct Editor {
    text: String,
    /// Byte offset of the cursor in `text`.
    cursor: usize,
    history: Vec<String>,
    /// Where Up/Down is in the history; `None` when editing new text.
    browsing: Option<usize>,
    /// What was typed before browsing started.
    draft: String,
}

impl Editor {
    /// An empty editor with `history` (oldest first).
    pub fn with_history(history: Vec<String>) -> Self {
        Self { history, ..Self::default() }
    }

    /// The text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether nothing is typed.
    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    /// The history, oldest first.
    pub fn history(&self) -> &[String] {
        &self.history
    }

    /// Inserts text at the cursor (a typed character or a paste).
    pub fn insert(&mut self, text: &str) {
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        self.text.insert_str(self.cursor, &text);
        self.cursor += text.len();
        self.browsing = None;
    }

    /// Deletes the character before the cursor.
    pub fn backspace(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the character under the cursor.
    pub fn delete(&mut self) {
        if self.cursor < self.text.len() {
            self.text.remove(self.cursor);
        }
    }

    /// Deletes the word before the cursor.
    pub fn delete_word(&mut self) {
        let before = &self.text[..self.cursor];
        let trimmed = before.trim_end_matches(' ');
        let start = trimmed.rfind([' ', '\n']).map_or(0, |at| at + 1);
        self.text.replace_range(start..self.cursor, "");
        self.cursor = start;
    }

    /// Moves the cursor one character left.
    pub fn left(&mut self) {
        if let Some(c) = self.text[..self.cursor].chars().next_back() {
            self.cursor -= c.len_utf8();
        }
    }

    /// Moves the cursor one character right.
    pub fn right(&mut self) {
        if let Some(c) = self.text[self.cursor..].chars().next() {
            self.cursor += c.len_utf8();
        }
    }

    /// Moves to the start of the line.
    pub fn home(&mut self) {
        self.cursor = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
    }

    /// Moves to the end of the line.
    pub fn end(&mut self) {
        self.cursor += self.text[self.cursor..].find('\n').unwrap_or(self.text.len() - self.cursor);
    }

    /// Up: the line above, or the previous history entry on the first line.
    pub fn up(&mut self) {
        if self.text[..self.cursor].contains('\n') {
            self.vertical(-1);
            return;
        }
        let next = match self.browsing {
            None if self.history.is_empty() => return,
            None => {
                self.draft = self.text.clone();
                self.history.len() - 1
            }
            Some(0) => return,
            Some(at) => at - 1,
        };
        self.browsing = Some(next);
        self.text = self.history[next].clone();
        self.cursor = self.text.len();
    }

    /// Down: the line below, or the next history entry (then the draft) on the last line.
    pub fn down(&mut self) {
        if self.text[self.cursor..].contains('\n') {
            self.vertical(1);
            return;
        }
        let Some(at) = self.browsing else { return };
        if at + 1 < self.history.len() {
            self.browsing = Some(at + 1);
            self.text = self.history[at + 1].clone();
        } else {
            self.browsing = None;
            self.text = std::mem::take(&mut self.draft);
        }
        self.cursor = self.text.len();
    }

    fn vertical(&mut self, step: isize) {
        let line_start = self.text[..self.cursor].rfind('\n').map_or(0, |at| at + 1);
        let column = self.text[line_start..self.cursor].chars().count();
        let target_start = if step < 0 {
            let before = line_start.saturating_sub(1);
            self.text[..before].rfind('\n').map_or(0, |at| at + 1)
        } else {
            match self.text[self.cursor..].find('\n') {
                Some(at) => self.cursor + at + 1,
                None => return,
            }
        };
        let line_end =
            self.text[target_start..].find('\n').map_or(self.text.len(), |at| target_start + at);
        let offset: usize =
            self.text[target_start..line_end].chars().take(column).map(char::len_utf8).sum();
        self.cursor = target_start + offset;
    }

    /// Clears the text.
    pub fn clear(&mut self) {
        self.text.clear();
        self.cursor = 0;
        self.browsing = None;
    }

    /// Takes the text out (to send it) and remembers it in the history.
    pub fn take(&mut self) -> String {
        let text = std::mem::take(&mut self.text);
        self.cursor = 0;
        self.browsing = None;
        if !text.trim().is_empty() && self.history.last() != Some(&text) {
            self.history.push(text.clone());
            if self.history.len() > HISTORY_LIMIT {
                self.history.remove(0);
            }
        }
        text
    }

    /// Tab: completes a slash command at the start, or an `@path` mention under the cursor
    /// against the files of `cwd`. Returns the candidates when there is more than one.
    pub fn complete(&mut self, cwd: &Path) -> Vec<String> {
        let before = &self.text[..self.cursor];
        let word_start = before.rfind([' ', '\n']).map_or(0, |at| at + 1);
        let word = before[word_start..].to_string();
        let candidates: Vec<String> = if word_start == 0 && word.starts_with('/') {
            COMMANDS
                .iter()
                .map(|(name, _)| name.to_string())
                .filter(|name| name.starts_with(&word))
                .collect()
        } else if let Some(partial) = word.strip_prefix('@') {
            paths(cwd, partial).into_iter().map(|path| format!("@{path}")).collect()
        } else {
            return Vec::new();
        };
        let Some(common) = common_prefix(&candidates) else { return Vec::new() };
        let mut replacement = common.clone();
        if candidates.len() == 1 && !replacement.ends_with('/') {
            replacement.push(' ');
        }
        if replacement.len() > word.len() {
            self.text.replace_range(word_start..self.cursor, &replacement);
            self.cursor = word_start + replacement.len();
        }
        if candidates.len() > 1 { candidates } else { Vec::new() }
    }

    /// The text as lines with the cursor's line and column (in display columns).
    pub fn cursor_position(&self) -> (usize, usize) {
        let before = &self.text[..self.cursor];
        let line = before.matches('\n').count();
        let column = before.rsplit('\n').next().unwrap_or_default().width();
        (line, column)
    }
}

/// Paths under `cwd` that complete `partial` (a file or directory name, relative), with `/`
/// after directories.
fn paths(cwd: &Path, partial: &str) -> Vec<String> {
    let (dir, prefix) = match partial.rfind('/') {
        Some(at) => (&partial[..=at], &partial[at + 1..]),
        None => ("", partial),
    };
    let Ok(entries) = std::fs::read_dir(cwd.join(dir)) else { return Vec::new() };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().to_str()?.to_string();
            if !name.starts_with(prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                return None;
            }
            let slash = if entry.path().is_dir() { "/" } else { "" };
            Some(format!("{dir}{name}{slash}"))
        })
        .collect();
    found.sort();
    found
}

fn common_prefix(candidates: &[String]) -> Option<String> {
    let first = candidates.first()?;
    let mut end = first.len();
    for other in &candidates[1..] {
        end = end.min(
            first
                .char_indices()
                .zip(other.chars())
                .take_while(|((_, a), b)| a == b)
                .last()
                .map_or(0, |((at, c), _)| at + c.len_utf8()),
        );
    }
    Some(first[..end].to_string())
}

/// The largest image an `@path` mention attaches.
const IMAGE_LIMIT: u64 = 5 * 1024 * 1024;

/// The image type a path's extension names, if it is one models take.
fn image_type(path: &Path) -> Option<&'static str> {
    let extension = path.extension()?.to_str()?.to_ascii_lowercase();
    match extension.as_str() {
        "png" => Some("image/png"),
        "jpg" | "jpeg" => Some("image/jpeg"),
        "gif" => Some("image/gif"),
        "webp" => Some("image/webp"),
        _ => None,
    }
}

/// A message with what its `@path` mentions attach.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    /// The text, with the mentioned text files (up to 100 KB each) appended as fenced blocks.
    pub text: String,
    /// The mentioned images (PNG, JPEG, GIF, WebP up to 5 MB), as image content blocks.
    pub images: Vec<ContentBlock>,
}

/// Reads the `@path` mentions of `text` (relative to `cwd`, or absolute): text files are
/// appended as fenced blocks so the model sees them without a tool call; images are attached.
pub fn compose(text: &str, cwd: &Path) -> Composed {
    const LIMIT: u64 = 100 * 1024;
    let mut attached: Vec<(String, String)> = Vec::new();
    let mut images = Vec::new();
    let mut seen = Vec::new();
    for word in text.split_whitespace() {
        let Some(path) = word.strip_prefix('@') else { continue };
        let path = path.trim_end_matches([',', '.', ':', ';', ')', '?', '!']);
        if path.is_empty() || seen.iter().any(|p| p == path) {
            continue;
        }
        seen.push(path.to_string());
        let full: PathBuf = cwd.join(path);
        let Ok(meta) = std::fs::metadata(&full) else { continue };
        if !meta.is_file() {
            continue;
        }
        if let Some(mime_type) = image_type(&full) {
            if meta.len() <= IMAGE_LIMIT
                && let Ok(bytes) = std::fs::read(&full)
            {
                use base64::Engine;
                let data = base64::engine::general_purpose::STANDARD.encode(bytes);
                images.push(ContentBlock::Image { data, mime_type: mime_type.to_string() });
            }
            continue;
        }
        if meta.len() <= LIMIT
            && let Ok(content) = std::fs::read_to_string(&full)
        {
            attached.push((path.to_string(), content));
        }
    }
    let mut out = text.to_string();
    for (path, content) in attached {
        out.push_str(&format!("\n\n{path}:\n```\n{}\n```", content.trim_end()));
    }
    Composed { text: out, images }
}

/// A paste that is only the path of an image file (what dropping a file on a terminal
/// types) becomes an `@path` mention, so the image is attached when the message is sent.
pub fn pasted_image_mention(pasted: &str, cwd: &Path) -> Option<String> {
    let trimmed = pasted.trim().trim_matches(['\'', '"']);
    let path = trimmed.strip_prefix("file://").unwrap_or(trimmed);
    if path.contains('\n') || path.contains(' ') || image_type(Path::new(path)).is_none() {
        return None;
    }
    cwd.join(path).is_file().then(|| format!("@{path} "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_editing_and_multiple_lines() {
        let mut editor = Editor::default();
        editor.insert("hello wrld");
        editor.left();
        editor.left();
        editor.left();
        editor.insert("o");
        assert_eq!(editor.text(), "hello world");
        editor.end();
        editor.insert("\nsecond");
        assert_eq!(editor.cursor_position(), (1, 6));
        editor.up();
        assert_eq!(editor.cursor_position(), (0, 6));
        editor.delete_word();
        assert_eq!(editor.text(), "world\nsecond");
        editor.end();
        editor.backspace();
        assert_eq!(editor.text(), "worl\nsecond");
    }

    #[test]
    fn history_goes_back_and_returns_to_the_draft() {
        let mut editor = Editor::with_history(vec!["first".into(), "second".into()]);
        editor.insert("draft");
        editor.up();
        assert_eq!(editor.text(), "second");
        editor.up();
        assert_eq!(editor.text(), "first");
        editor.down();
        editor.down();
        assert_eq!(editor.text(), "draft");
        assert_eq!(editor.take(), "draft");
        assert_eq!(editor.history().last().map(String::as_str), Some("draft"));
    }

    #[test]
    fn tab_completes_commands_and_paths() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir(dir.path().join("src")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("src/main.rs"), "fn main() {}\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let mut editor = Editor::default();
        editor.insert("/ren");
        assert!(editor.complete(dir.path()).is_empty());
        assert_eq!(editor.text(), "/rename ");
        let mut editor = Editor::default();
        editor.insert("/t");
        assert_eq!(editor.complete(dir.path()), ["/thinking", "/tree", "/trust"]);
        let mut editor = Editor::default();
        editor.insert("look at @s");
        editor.complete(dir.path());
        assert_eq!(editor.text(), "look at @src/");
        editor.complete(dir.path());
        assert_eq!(editor.text(), "look at @src/main.rs ");
        let composed = compose("explain @src/main.rs.", dir.path());
        assert!(composed.text.ends_with("src/main.rs:\n```\nfn main() {}\n```"), "{composed:?}");
        assert!(composed.images.is_empty());
    }

    #[test]
    fn image_mentions_and_pasted_image_paths_attach_the_image() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("shot.png"), [0x89, b'P', b'N', b'G'])
            .unwrap_or_else(|e| panic!("{e}"));
        let composed = compose("what is wrong in @shot.png?", dir.path());
        assert_eq!(composed.text, "what is wrong in @shot.png?");
        assert_eq!(
            composed.images,
            [ContentBlock::Image { data: "iVBORw==".into(), mime_type: "image/png".into() }]
        );
        let dropped = dir.path().join("shot.png").display().to_string();
        assert_eq!(
            pasted_image_mention(&format!("'{dropped}'"), dir.path()),
            Some(format!("@{dropped} "))
        );
        assert_eq!(pasted_image_mention("just text", dir.path()), None);
    }
}
