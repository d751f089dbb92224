//! The full-screen client's key bindings: which key does which [`KeyAction`], with defaults
//! that `$REIN_HOME/tui.toml` may change in its `[keys]` table:
//!
//! ```toml
//! [keys]
//! submit = "enter"
//! newline = ["alt-enter", "ctrl-j"]
//! cancel = "esc"
//! history-prev = ["up", "ctrl-p"]
//! ```
//!
//! Each action named there gets exactly the keys given (an empty list unbinds it); the others
//! keep their defaults. An unknown action, a key that cannot be read, a plain character (it
//! could no longer be typed) or one key bound to two actions is an error that names it.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// Something a key can do in the full-screen client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyAction {
    /// Send what was typed (steers a running run).
    Submit,
    /// A new line in the input.
    Newline,
    /// Cancel the running run; close a picker or question.
    Cancel,
    /// Cancel the run and drop the queue (asks first), clear the input, or leave when idle.
    Interrupt,
    /// Leave when the input is empty.
    Leave,
    /// The line above in a multi-line input, else the previous history entry.
    HistoryPrev,
    /// The line below in a multi-line input, else the next history entry.
    HistoryNext,
    /// Complete a `/command` or an `@path`.
    Complete,
    /// Show every tool cell's whole output, or fold them again.
    ExpandTools,
    /// Show the model's reasoning whole, or fold it again.
    ShowThinking,
    /// Scroll the transcript up.
    ScrollUp,
    /// Scroll the transcript down.
    ScrollDown,
    /// Empty the input.
    ClearInput,
    /// Delete the word before the cursor.
    DeleteWord,
    /// Move to the start of the line.
    LineStart,
    /// Move to the end of the line.
    LineEnd,
}

impl KeyAction {
    /// Every action, in the order the help lists them.
    pub const ALL: [Self; 16] = [
        Self::Submit,
        Self::Newline,
        Self::Cancel,
        Self::Interrupt,
        Self::Leave,
        Self::HistoryPrev,
        Self::HistoryNext,
        Self::Complete,
        Self::ExpandTools,
        Self::ShowThinking,
        Self::ScrollUp,
        Self::ScrollDown,
        Self::ClearInput,
        Self::DeleteWord,
        Self::LineStart,
        Self::LineEnd,
    ];

    /// The name `tui.toml` uses.
    pub fn name(self) -> &'static str {
        match self {
            Self::Submit => "submit",
            Self::Newline => "newline",
            Self::Cancel => "cancel",
            Self::Interrupt => "interrupt",
            Self::Leave => "leave",
            Self::HistoryPrev => "history-prev",
            Self::HistoryNext => "history-next",
            Self::Complete => "complete",
            Self::ExpandTools => "expand-tools",
            Self::ShowThinking => "show-thinking",
            Self::ScrollUp => "scroll-up",
            Self::ScrollDown => "scroll-down",
            Self::ClearInput => "clear-input",
            Self::DeleteWord => "delete-word",
            Self::LineStart => "line-start",
            Self::LineEnd => "line-end",
        }
    }

    /// The action named `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|action| action.name() == name)
    }

    fn defaults(self) -> &'static [&'static str] {
        match self {
            Self::Submit => &["enter"],
            Self::Newline => &["alt-enter", "shift-enter", "ctrl-j"],
            Self::Cancel => &["esc"],
            Self::Interrupt => &["ctrl-c"],
            Self::Leave => &["ctrl-d"],
            Self::HistoryPrev => &["up"],
            Self::HistoryNext => &["down"],
            Self::Complete => &["tab"],
            Self::ExpandTools => &["ctrl-o"],
            Self::ShowThinking => &["ctrl-t"],
            Self::ScrollUp => &["pageup"],
            Self::ScrollDown => &["pagedown"],
            Self::ClearInput => &["ctrl-u"],
            Self::DeleteWord => &["ctrl-w", "ctrl-backspace", "alt-backspace"],
            Self::LineStart => &["home", "ctrl-a"],
            Self::LineEnd => &["end", "ctrl-e"],
        }
    }
}

/// One key with its modifiers, as written in `tui.toml` (`ctrl-j`, `alt-enter`, `f2`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key {
    code: KeyCode,
    modifiers: KeyModifiers,
}

/// Named keys and how they are written.
const NAMED: &[(&str, KeyCode)] = &[
    ("enter", KeyCode::Enter),
    ("return", KeyCode::Enter),
    ("esc", KeyCode::Esc),
    ("escape", KeyCode::Esc),
    ("tab", KeyCode::Tab),
    ("backtab", KeyCode::BackTab),
    ("backspace", KeyCode::Backspace),
    ("delete", KeyCode::Delete),
    ("del", KeyCode::Delete),
    ("insert", KeyCode::Insert),
    ("up", KeyCode::Up),
    ("down", KeyCode::Down),
    ("left", KeyCode::Left),
    ("right", KeyCode::Right),
    ("home", KeyCode::Home),
    ("end", KeyCode::End),
    ("pageup", KeyCode::PageUp),
    ("pagedown", KeyCode::PageDown),
    ("space", KeyCode::Char(' ')),
];

impl Key {
    /// Reads `ctrl-j`, `Alt+Enter`, `shift-tab`, `f5`, `pageup`: modifiers (`ctrl`, `alt`,
    /// `shift`) joined by `-` or `+`, then a key name or one character.
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let mut parts: Vec<&str> = trimmed.split(['-', '+']).collect();
        // `ctrl--` and `ctrl-+`: the last separator is the key itself.
        if trimmed.len() > 1 && (trimmed.ends_with("--") || trimmed.ends_with("-+")) {
            parts.pop();
            parts.pop();
            parts.push(&trimmed[trimmed.len() - 1..]);
        }
        let Some((name, modifier_names)) = parts.split_last() else {
            return Err(format!("`{text}` is not a key"));
        };
        let mut modifiers = KeyModifiers::NONE;
        for modifier in modifier_names {
            modifiers |= match modifier.to_ascii_lowercase().as_str() {
                "ctrl" | "control" | "c" => KeyModifiers::CONTROL,
                "alt" | "meta" | "m" | "option" => KeyModifiers::ALT,
                "shift" | "s" => KeyModifiers::SHIFT,
                other => {
                    return Err(format!(
                        "`{text}`: `{other}` is not a modifier (ctrl, alt, shift)"
                    ));
                }
            };
        }
        let lower = name.to_ascii_lowercase();
        let code = if let Some((_, code)) = NAMED.iter().find(|(known, _)| *known == lower) {
            *code
        } else if let Some(number) = lower.strip_prefix('f').and_then(|n| n.parse::<u8>().ok())
            && (1..=24).contains(&number)
        {
            KeyCode::F(number)
        } else {
            let mut chars = name.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => KeyCode::Char(c),
                _ => {
                    return Err(format!(
                        "`{text}` is not a key (a character, f1-f24, or one of: {})",
                        NAMED.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
                    ));
                }
            }
        };
        Ok(Self::normalized(code, modifiers))
    }

    /// The key a terminal reported.
    pub fn from_event(event: &KeyEvent) -> Self {
        Self::normalized(event.code, event.modifiers)
    }

    /// One form for the ways terminals report the same key: shift is part of a character
    /// (`A`), control and alt combinations use the lower-case letter, Shift-Tab is BackTab.
    fn normalized(code: KeyCode, modifiers: KeyModifiers) -> Self {
        let modifiers =
            modifiers & (KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SHIFT);
        match code {
            KeyCode::Char(c) => {
                let modifiers = modifiers - KeyModifiers::SHIFT;
                let c = if modifiers.is_empty() { c } else { c.to_ascii_lowercase() };
                Self { code: KeyCode::Char(c), modifiers }
            }
            KeyCode::Tab if modifiers.contains(KeyModifiers::SHIFT) => {
                Self { code: KeyCode::BackTab, modifiers: modifiers - KeyModifiers::SHIFT }
            }
            KeyCode::BackTab => Self { code, modifiers: modifiers - KeyModifiers::SHIFT },
            _ => Self { code, modifiers },
        }
    }

    /// A character typed without control or alt: binding it would make it untypeable.
    fn is_plain_character(self) -> bool {
        matches!(self.code, KeyCode::Char(_))
            && !self.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    }
}

impl fmt::Display for Key {
    /// As people read it: `Ctrl-J`, `Alt-Enter`, `PageUp`, `Shift-Tab`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (modifier, name) in [
            (KeyModifiers::CONTROL, "Ctrl-"),
            (KeyModifiers::ALT, "Alt-"),
            (KeyModifiers::SHIFT, "Shift-"),
        ] {
            if self.modifiers.contains(modifier) {
                f.write_str(name)?;
            }
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) if self.modifiers.is_empty() => write!(f, "{c}"),
            KeyCode::Char(c) => write!(f, "{}", c.to_ascii_uppercase()),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Delete"),
            KeyCode::Insert => f.write_str("Insert"),
            KeyCode::Up => f.write_str("Up"),
            KeyCode::Down => f.write_str("Down"),
            KeyCode::Left => f.write_str("Left"),
            KeyCode::Right => f.write_str("Right"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::PageUp => f.write_str("PageUp"),
            KeyCode::PageDown => f.write_str("PageDown"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// Why the key bindings could not be read.
#[derive(Debug, thiserror::Error)]
pub enum KeysError {
    /// The file exists but cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid TOML of the expected shape.
    #[error("{path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong, from the TOML reader.
        message: String,
    },
    /// A binding is wrong.
    #[error("{path}: [keys] {message}")]
    Binding {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// The shape of `tui.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TuiFile {
    #[serde(default)]
    keys: BTreeMap<String, KeyList>,
}

/// One key or a list of them.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum KeyList {
    One(String),
    Many(Vec<String>),
}

/// Which key does which action.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMap {
    bindings: Vec<(Key, KeyAction)>,
}

impl Default for KeyMap {
    fn default() -> Self {
        let mut bindings = Vec::new();
        for action in KeyAction::ALL {
            for key in action.defaults() {
                if let Ok(key) = Key::parse(key) {
                    bindings.push((key, action));
                }
            }
        }
        Self { bindings }
    }
}

impl KeyMap {
    /// `$REIN_HOME/tui.toml`, where the bindings are changed.
    pub fn file() -> Option<PathBuf> {
        rein_protocol::paths::rein_home().ok().map(|home| home.join("tui.toml"))
    }

    /// The bindings of `path`: the defaults when it does not exist.
    pub fn load(path: &Path) -> Result<Self, KeysError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Self::from_toml(&text, path),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(source) => Err(KeysError::Read { path: path.to_path_buf(), source }),
        }
    }

    /// The bindings `text` (the contents of `path`) sets over the defaults.
    pub fn from_toml(text: &str, path: &Path) -> Result<Self, KeysError> {
        let file: TuiFile = toml::from_str(text).map_err(|error| KeysError::Parse {
            path: path.to_path_buf(),
            message: error.message().to_string(),
        })?;
        let binding_error =
            |message: String| KeysError::Binding { path: path.to_path_buf(), message };
        let mut changed: BTreeMap<KeyAction, Vec<Key>> = BTreeMap::new();
        for (name, keys) in file.keys {
            let Some(action) = KeyAction::from_name(&name) else {
                let known: Vec<_> = KeyAction::ALL.iter().map(|a| a.name()).collect();
                return Err(binding_error(format!(
                    "unknown action `{name}` (the actions are: {})",
                    known.join(", ")
                )));
            };
            let texts = match keys {
                KeyList::One(key) => vec![key],
                KeyList::Many(keys) => keys,
            };
            let mut parsed = Vec::new();
            for text in texts {
                let key = Key::parse(&text).map_err(|e| binding_error(format!("{name}: {e}")))?;
                if key.is_plain_character() {
                    return Err(binding_error(format!(
                        "{name}: `{text}` is a plain character and could no longer be typed; add ctrl- or alt-"
                    )));
                }
                parsed.push(key);
            }
            changed.insert(action, parsed);
        }
        let mut bindings: Vec<(Key, KeyAction)> = Vec::new();
        for action in KeyAction::ALL {
            let keys = match changed.remove(&action) {
                Some(keys) => keys,
                None => action.defaults().iter().filter_map(|key| Key::parse(key).ok()).collect(),
            };
            for key in keys {
                if let Some((_, other)) = bindings.iter().find(|(bound, _)| *bound == key) {
                    if *other == action {
                        continue;
                    }
                    return Err(binding_error(format!(
                        "{key} is bound to both `{}` and `{}`; give one of them other keys",
                        other.name(),
                        action.name()
                    )));
                }
                bindings.push((key, action));
            }
        }
        Ok(Self { bindings })
    }

    /// The action a key press does, if any.
    pub fn action(&self, event: &KeyEvent) -> Option<KeyAction> {
        let key = Key::from_event(event);
        self.bindings.iter().find(|(bound, _)| *bound == key).map(|(_, action)| *action)
    }

    /// The keys of `action`, as people read them (`Alt-Enter, Ctrl-J`); `unbound` when none.
    pub fn label(&self, action: KeyAction) -> String {
        let keys: Vec<String> = self
            .bindings
            .iter()
            .filter(|(_, bound)| *bound == action)
            .map(|(key, _)| key.to_string())
            .collect();
        if keys.is_empty() { "unbound".to_string() } else { keys.join(", ") }
    }

    /// The first key of `action`, for short hints.
    pub fn first(&self, action: KeyAction) -> String {
        self.bindings
            .iter()
            .find(|(_, bound)| *bound == action)
            .map_or_else(|| "unbound".to_string(), |(key, _)| key.to_string())
    }
}

/// The keys as `/help` lists them, one action a line.
pub fn help(keys: &KeyMap) -> String {
    let mut text = String::from("Keys (changed in $REIN_HOME/tui.toml, [keys]):");
    for action in KeyAction::ALL {
        text.push_str(&format!("\n  {:<14} {}", action.name(), keys.label(action)));
    }
    text.push_str(
        "\nIn an approval dialog: y allows once, a for the session, n denies, r denies with a reason.\n\
         A line ending in \\ continues on the next; @path mentions attach the file.",
    );
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What pressing `code` with `modifiers` does under `keys`.
    fn does(keys: &KeyMap, code: KeyCode, modifiers: KeyModifiers) -> Option<KeyAction> {
        keys.action(&KeyEvent::new(code, modifiers))
    }

    fn map(text: &str) -> Result<KeyMap, String> {
        KeyMap::from_toml(text, Path::new("/home/u/.rein/tui.toml")).map_err(|e| e.to_string())
    }

    #[test]
    fn keys_are_read_as_people_write_them() {
        let parse = |text| Key::parse(text).map(|key| key.to_string());
        assert_eq!(parse("ctrl-j"), Ok("Ctrl-J".into()));
        assert_eq!(parse("Alt+Enter"), Ok("Alt-Enter".into()));
        assert_eq!(parse("shift-tab"), Ok("Shift-Tab".into()));
        assert_eq!(parse("F5"), Ok("F5".into()));
        assert_eq!(parse("pageup"), Ok("PageUp".into()));
        assert_eq!(parse("ctrl--"), Ok("Ctrl--".into()));
        assert!(parse("hyper-x").is_err_and(|e| e.contains("not a modifier")));
        assert!(parse("ctrl-enterr").is_err_and(|e| e.contains("is not a key")));
        assert!(parse("f99").is_err());
    }

    #[test]
    fn terminal_reports_match_the_bindings() {
        let keys = KeyMap::default();
        assert_eq!(
            does(&keys, KeyCode::Char('j'), KeyModifiers::CONTROL),
            Some(KeyAction::Newline)
        );
        assert_eq!(does(&keys, KeyCode::Enter, KeyModifiers::ALT), Some(KeyAction::Newline));
        assert_eq!(does(&keys, KeyCode::Enter, KeyModifiers::NONE), Some(KeyAction::Submit));
        assert_eq!(
            does(&keys, KeyCode::Char('C'), KeyModifiers::CONTROL | KeyModifiers::SHIFT),
            Some(KeyAction::Interrupt)
        );
        assert_eq!(does(&keys, KeyCode::Char('x'), KeyModifiers::NONE), None);
        assert_eq!(keys.label(KeyAction::Newline), "Alt-Enter, Shift-Enter, Ctrl-J");
    }

    #[test]
    fn tui_toml_replaces_the_keys_of_the_actions_it_names() {
        let keys = map("[keys]\nsubmit = \"ctrl-s\"\nnewline = [\"enter\"]\nhistory-prev = [\"up\", \"ctrl-p\"]\nexpand-tools = []\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(does(&keys, KeyCode::Char('s'), KeyModifiers::CONTROL), Some(KeyAction::Submit));
        assert_eq!(does(&keys, KeyCode::Enter, KeyModifiers::NONE), Some(KeyAction::Newline));
        assert_eq!(
            does(&keys, KeyCode::Char('p'), KeyModifiers::CONTROL),
            Some(KeyAction::HistoryPrev)
        );
        assert_eq!(does(&keys, KeyCode::Char('o'), KeyModifiers::CONTROL), None);
        assert_eq!(keys.label(KeyAction::ExpandTools), "unbound");
        // Untouched actions keep their defaults.
        assert_eq!(does(&keys, KeyCode::Esc, KeyModifiers::NONE), Some(KeyAction::Cancel));
        assert_eq!(map("").map(|keys| keys == KeyMap::default()), Ok(true));
    }

    #[test]
    fn mistakes_are_named() {
        let error = map("[keys]\ncancle = \"esc\"\n").err().unwrap_or_default();
        assert!(error.contains("unknown action `cancle`") && error.contains("cancel,"), "{error}");
        assert!(error.starts_with("/home/u/.rein/tui.toml: [keys]"), "{error}");
        let error = map("[keys]\nsubmit = \"ctrl-enterr\"\n").err().unwrap_or_default();
        assert!(error.contains("submit: `ctrl-enterr` is not a key"), "{error}");
        let error = map("[keys]\ncancel = \"ctrl-c\"\n").err().unwrap_or_default();
        assert!(error.contains("Ctrl-C is bound to both `cancel` and `interrupt`"), "{error}");
        let error = map("[keys]\nsubmit = \"y\"\n").err().unwrap_or_default();
        assert!(error.contains("plain character"), "{error}");
        let error = map("[key]\nsubmit = \"enter\"\n").err().unwrap_or_default();
        assert!(error.contains("unknown field `key`"), "{error}");
        let error = map("[keys]\nsubmit = 3\n").err().unwrap_or_default();
        assert!(error.starts_with("/home/u/.rein/tui.toml: "), "{error}");
    }
}
