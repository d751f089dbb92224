//! How command hooks are configured: the `[hooks]` table of `config.toml` (and of a trusted
//! project's `.rein/config.toml`), and the `hooks` section of a project's
//! `.claude/settings.json`. Both use Claude Code's nesting: event name, then a list of matcher
//! groups, each with a list of commands.

use std::collections::BTreeMap;
use std::path::Path;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

/// Seconds a hook may run when its `timeout` does not say.
pub const DEFAULT_HOOK_TIMEOUT_SECS: u64 = 60;

/// The moments a hook can be attached to, named as Claude Code names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize)]
pub enum HookEvent {
    /// A session was created or loaded.
    SessionStart,
    /// A session is closing (closed, unloaded, daemon shutting down).
    SessionEnd,
    /// The user sent a prompt, before the run starts.
    UserPromptSubmit,
    /// A tool call is about to run (before approval).
    PreToolUse,
    /// A tool call succeeded.
    PostToolUse,
    /// A tool call failed.
    PostToolUseFailure,
    /// A tool call needs the user's approval.
    PermissionRequest,
    /// The run is about to complete.
    Stop,
    /// A compaction is about to start.
    PreCompact,
    /// A compaction finished.
    PostCompact,
    /// rein needs the user's attention (an approval waits).
    Notification,
}

impl HookEvent {
    /// Every event.
    pub const ALL: [HookEvent; 11] = [
        Self::SessionStart,
        Self::SessionEnd,
        Self::UserPromptSubmit,
        Self::PreToolUse,
        Self::PostToolUse,
        Self::PostToolUseFailure,
        Self::PermissionRequest,
        Self::Stop,
        Self::PreCompact,
        Self::PostCompact,
        Self::Notification,
    ];

    /// Its name in configuration and in `hook_event_name`.
    pub fn name(self) -> &'static str {
        match self {
            Self::SessionStart => "SessionStart",
            Self::SessionEnd => "SessionEnd",
            Self::UserPromptSubmit => "UserPromptSubmit",
            Self::PreToolUse => "PreToolUse",
            Self::PostToolUse => "PostToolUse",
            Self::PostToolUseFailure => "PostToolUseFailure",
            Self::PermissionRequest => "PermissionRequest",
            Self::Stop => "Stop",
            Self::PreCompact => "PreCompact",
            Self::PostCompact => "PostCompact",
            Self::Notification => "Notification",
        }
    }

    /// The event with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|event| event.name() == name)
    }

    /// Whether a hook of this event can block what it is about (exit code 2 or a blocking
    /// decision); for the others, blocking output is only shown to the user.
    pub fn can_block(self) -> bool {
        matches!(
            self,
            Self::UserPromptSubmit
                | Self::PreToolUse
                | Self::PostToolUse
                | Self::PostToolUseFailure
                | Self::PermissionRequest
                | Self::Stop
        )
    }
}

/// `[hooks]`: for each event, the matcher groups whose commands run when it fires.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(transparent)]
pub struct HooksConfig {
    /// Matcher groups per event.
    pub events: BTreeMap<HookEvent, Vec<HookMatcher>>,
}

impl HooksConfig {
    /// True when no hook is configured.
    pub fn is_empty(&self) -> bool {
        self.events.values().all(|groups| groups.iter().all(|group| group.hooks.is_empty()))
    }
}

/// `[[hooks.EVENT]]`: the commands that run when the event's subject matches.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HookMatcher {
    /// A regular expression matched against the whole subject (the tool name for tool events,
    /// the source, trigger, reason or notification type for the others). Absent, empty or
    /// `*` matches everything.
    #[serde(default)]
    pub matcher: Option<String>,
    /// The commands.
    #[serde(default)]
    pub hooks: Vec<HookCommand>,
}

/// `[[hooks.EVENT.hooks]]`: one command.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct HookCommand {
    /// Always `command` (the only kind rein runs).
    #[serde(rename = "type")]
    pub kind: HookKind,
    /// The command line, run with `bash -c` (or `sh -c`) in the project directory.
    pub command: String,
    /// Seconds before it is killed; 60 when absent.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// What a failure (exit code other than 0 and 2, timeout, could not start) means.
    #[serde(default)]
    pub on_error: OnError,
}

/// The kinds of hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookKind {
    /// A shell command that gets the event as JSON on stdin.
    Command,
}

/// What a hook that fails means.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// The failure is reported to the user and things go on (Claude Code's behaviour).
    #[default]
    Warn,
    /// The failure blocks, as exit code 2 would.
    Block,
}

/// A matcher compiled once.
#[derive(Debug, Clone)]
pub(crate) struct CompiledMatcher(Option<Regex>);

impl CompiledMatcher {
    /// Compiles a matcher; the pattern must match the whole subject.
    pub(crate) fn new(pattern: Option<&str>) -> Result<Self, regex::Error> {
        match pattern.map(str::trim) {
            None | Some("") | Some("*") => Ok(Self(None)),
            Some(pattern) => Regex::new(&format!("^(?:{pattern})$")).map(|regex| Self(Some(regex))),
        }
    }

    /// Whether any of the subject's names matches (a tool has its rein name and the name
    /// Claude Code gives the same tool). An event without a subject matches every matcher.
    pub(crate) fn matches(&self, subjects: &[&str]) -> bool {
        match &self.0 {
            None => true,
            Some(regex) => subjects.is_empty() || subjects.iter().any(|s| regex.is_match(s)),
        }
    }
}

/// The name Claude Code gives to the rein tool of the same job, so its matchers (`Bash`,
/// `Edit|Write`) select rein's tools too.
pub fn claude_tool_alias(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "bash" => "Bash",
        "read" => "Read",
        "write" => "Write",
        "edit" => "Edit",
        "grep" => "Grep",
        "find" => "Glob",
        "ls" => "LS",
        _ => return None,
    })
}

/// A `.claude/settings.json` file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ClaudeSettingsError {
    /// It cannot be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// It is not JSON.
    #[error("{path} is not valid JSON: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The cause.
        source: serde_json::Error,
    },
}

/// Reads the `hooks` section of a Claude Code settings file. Events and hook kinds rein does
/// not run are skipped with a log line, so a file written for Claude Code is usable as it
/// is. A missing file is no hooks.
pub fn read_claude_settings(path: &Path) -> Result<HooksConfig, ClaudeSettingsError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(HooksConfig::default());
        }
        Err(source) => return Err(ClaudeSettingsError::Read { path: shown, source }),
    };
    let settings: Value = serde_json::from_str(&text)
        .map_err(|source| ClaudeSettingsError::Parse { path: shown.clone(), source })?;
    Ok(hooks_from_claude_value(settings.get("hooks"), &shown))
}

/// The usable hooks of a Claude Code `hooks` object.
fn hooks_from_claude_value(hooks: Option<&Value>, origin: &str) -> HooksConfig {
    let mut config = HooksConfig::default();
    let Some(Value::Object(events)) = hooks else {
        return config;
    };
    for (name, groups) in events {
        let Some(event) = HookEvent::from_name(name) else {
            tracing::info!(file = origin, event = %name, "hook event not supported by rein; skipped");
            continue;
        };
        let Value::Array(groups) = groups else { continue };
        let entry = config.events.entry(event).or_default();
        for group in groups {
            let matcher = group.get("matcher").and_then(Value::as_str).map(str::to_string);
            let hooks = group
                .get("hooks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|hook| match serde_json::from_value::<HookCommand>(hook.clone()) {
                    Ok(command) => Some(command),
                    Err(error) => {
                        tracing::info!(file = origin, %error, "hook not supported by rein; skipped");
                        None
                    }
                })
                .collect();
            entry.push(HookMatcher { matcher, hooks });
        }
    }
    config
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_uses_claude_codes_nesting_and_refuses_unknown_events() {
        let config: HooksConfig = toml::from_str(
            r#"
            [[PreToolUse]]
            matcher = "bash"
            [[PreToolUse.hooks]]
            type = "command"
            command = "./guard.sh"
            timeout = 5
            on_error = "block"
            "#,
        )
        .unwrap();
        let groups = &config.events[&HookEvent::PreToolUse];
        assert_eq!(groups[0].matcher.as_deref(), Some("bash"));
        assert_eq!(groups[0].hooks[0].timeout, Some(5));
        assert_eq!(groups[0].hooks[0].on_error, OnError::Block);
        assert!(toml::from_str::<HooksConfig>("[[PreToolUs]]\nhooks = []\n").is_err());
    }

    #[test]
    fn claude_settings_keep_what_rein_can_run() {
        let settings = serde_json::json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [
                {"type": "command", "command": "a.sh", "timeout": 3, "statusMessage": "x"},
                {"type": "prompt", "prompt": "is this ok?"}
            ]}],
            "SubagentStop": [{"hooks": [{"type": "command", "command": "b.sh"}]}],
            "Stop": [{"hooks": [{"type": "command", "command": "c.sh"}]}]
        });
        let config = hooks_from_claude_value(Some(&settings), "test");
        assert_eq!(config.events.len(), 2);
        assert_eq!(config.events[&HookEvent::PreToolUse][0].hooks.len(), 1);
        assert_eq!(config.events[&HookEvent::Stop][0].hooks[0].command, "c.sh");
    }

    #[test]
    fn matchers_match_whole_names_and_claude_aliases() {
        let bash = CompiledMatcher::new(Some("Bash")).unwrap();
        assert!(bash.matches(&["bash", "Bash"]));
        assert!(!bash.matches(&["BashOutput"]));
        let either = CompiledMatcher::new(Some("Edit|Write")).unwrap();
        assert!(either.matches(&["write", "Write"]));
        assert!(!either.matches(&["read", "Read"]));
        assert!(CompiledMatcher::new(Some("*")).unwrap().matches(&["anything"]));
        assert!(CompiledMatcher::new(None).unwrap().matches(&[]));
        assert!(CompiledMatcher::new(Some("mcp__.*")).unwrap().matches(&["mcp__fs__read"]));
        assert!(CompiledMatcher::new(Some("(")).is_err());
    }
}
