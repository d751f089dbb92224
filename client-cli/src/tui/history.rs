//! The prompt history file, `$REIN_HOME/history`, shared with the line-mode client: the
//! format of its line editor (rustyline), so either client reads what the other wrote. The
//! file starts with `#V2`; each entry is one line with backslashes written `\\` and newlines
//! `\n`. A file without the `#V2` line holds one entry per line, as is.

use std::path::PathBuf;

/// The first line of a file whose entries are escaped.
const VERSION_2: &str = "#V2";

/// `$REIN_HOME/history`.
pub fn file() -> Option<PathBuf> {
    rein_protocol::paths::rein_home().ok().map(|home| home.join("history"))
}

/// The entries in the history file, oldest first; none when there is no file.
pub fn load() -> Vec<String> {
    file().and_then(|path| std::fs::read_to_string(path).ok()).map_or_else(Vec::new, |t| decode(&t))
}

/// Writes `entries` to the history file (failing quietly: history is a convenience).
pub fn save(entries: &[String]) {
    let Some(path) = file() else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, encode(entries));
}

/// The entries of a history file's text.
pub fn decode(text: &str) -> Vec<String> {
    let mut lines = text.lines();
    match lines.next() {
        Some(VERSION_2) => lines.filter(|line| !line.is_empty()).map(unescape).collect(),
        Some(first) => std::iter::once(first).chain(lines).map(str::to_string).collect(),
        None => Vec::new(),
    }
}

/// The history file's text for `entries`.
pub fn encode(entries: &[String]) -> String {
    let mut text = format!("{VERSION_2}\n");
    for entry in entries {
        text.push_str(&entry.replace('\\', "\\\\").replace('\n', "\\n"));
        text.push('\n');
    }
    text
}

/// One escaped line back to its entry: `\n` is a newline, `\\` a backslash.
fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustyline::history::{DefaultHistory, History};

    fn entries() -> Vec<String> {
        vec![
            "plain".to_string(),
            "two\nlines".to_string(),
            r#"print("a\nb")"#.to_string(),
            r"C:\temp\ ends in a backslash \".to_string(),
        ]
    }

    #[test]
    fn the_line_editor_reads_what_the_full_screen_client_wrote() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("history");
        std::fs::write(&path, encode(&entries())).unwrap_or_else(|e| panic!("{e}"));
        let mut editor = DefaultHistory::new();
        editor.load(&path).unwrap_or_else(|e| panic!("{e}"));
        let read: Vec<String> = editor.iter().cloned().collect();
        assert_eq!(read, entries());
    }

    #[test]
    fn the_full_screen_client_reads_what_the_line_editor_wrote() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("history");
        let mut editor = DefaultHistory::new();
        for entry in entries() {
            editor.add(&entry).unwrap_or_else(|e| panic!("{e}"));
        }
        editor.save(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decode(&text), entries());
        // An old file without the version line: one entry per line, as is.
        assert_eq!(decode("first\nsecond\\n\n"), ["first", "second\\n"]);
        assert!(decode("").is_empty());
    }
}
