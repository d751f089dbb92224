//! What a line typed at the interactive prompt means: a prompt, a message for the running
//! run, an approval answer, a shell command or a slash command.

use rein_protocol::event::ApprovalDecision;
use rein_protocol::method::{ApprovalPolicy, ExportFormat};
use rein_protocol::model::ThinkingLevel;
use std::path::PathBuf;

/// What plain text typed while a run is active does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BusyMode {
    /// Steer the run: delivered after the current tool batch.
    #[default]
    Steer,
    /// Queue a follow-up: a new run after the current one.
    FollowUp,
}

impl BusyMode {
    /// The name shown and typed (`steer`, `follow-up`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Steer => "steer",
            Self::FollowUp => "follow-up",
        }
    }
}

/// A typed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Nothing (blank).
    Empty,
    /// Text for the model; `follow_up` when it started with `>>`.
    Text {
        /// The text.
        text: String,
        /// Queue it as a follow-up even when the mode is steer.
        follow_up: bool,
    },
    /// `!COMMAND`: a shell command run in the session's directory.
    Shell(String),
    /// A slash command.
    Slash(Slash),
}

/// Slash commands.
#[derive(Debug, Clone, PartialEq)]
pub enum Slash {
    /// `/help`
    Help,
    /// `/quit` or `/exit`
    Quit,
    /// `/model [PROVIDER/MODEL]`: list models, or switch.
    Model(Option<String>),
    /// `/thinking LEVEL`
    Thinking(ThinkingLevel),
    /// `/compact [INSTRUCTIONS]`
    Compact(Option<String>),
    /// `/branch ENTRY [--summarize]`
    Branch {
        /// The entry that becomes the leaf.
        entry: String,
        /// Summarize the abandoned path.
        summarize: bool,
    },
    /// `/tree`
    Tree,
    /// `/label ENTRY TEXT`
    Label {
        /// The entry.
        entry: String,
        /// The label.
        text: String,
    },
    /// `/export [md|jsonl] [FILE]`
    Export {
        /// The format.
        format: ExportFormat,
        /// Where to write it (printed when absent).
        file: Option<PathBuf>,
    },
    /// `/sessions`
    Sessions,
    /// `/trust [--revoke]`
    Trust {
        /// Revoke instead of trusting.
        revoke: bool,
    },
    /// `/mode [steer|follow-up]`: show or set what text typed during a run does.
    Mode(Option<BusyMode>),
    /// `/last`: the last tool call's full output.
    Last,
    /// `/expand N`: the full output of the N-th tool call of this attach (1-based).
    Expand(usize),
    /// `/cancel`: cancel the run.
    Cancel,
    /// `/undo [TURN] [--force]`: restore the files to before a checkpointed turn.
    Undo {
        /// The turn (default: the latest not undone yet).
        turn: Option<u32>,
        /// Overwrite files changed outside rein.
        force: bool,
    },
    /// `/diff [TURN]`: the changes of a turn, or of the latest run.
    Diff(Option<u32>),
    /// `/new`: a new session in the same directory.
    New,
    /// `/resume [N|SESSION]`: pick an earlier session of the directory (the full-screen
    /// client opens a picker, line mode lists them), or open the N-th listed or the one named.
    Resume(Option<String>),
    /// `/fork`: continue in a copy of the session.
    Fork,
    /// `/rename NAME`: name the session.
    Rename(String),
    /// `/approve [ask|auto-edit|yolo]`: show or change the approval policy.
    Approve(Option<ApprovalPolicy>),
    /// `/clear`: clear the screen (the session keeps everything).
    Clear,
    /// `/status`: the session's model, context, tokens, cost, policy and queue.
    Status,
}

/// The help text for the interactive prompt.
pub const HELP: &str = "\
Type a prompt and press Enter. While a run is active, text steers it (see /mode);
start a line with >> to queue it as a follow-up instead. !COMMAND runs a shell command.
Approval requests are answered with y (allow once), a (allow for the session) or n [reason].
Ctrl-C cancels the run; on an idle prompt press it twice (or Ctrl-D) to leave.

  /model [PROVIDER/MODEL]     list the models, or switch to one
  /thinking LEVEL             off, minimal, low, medium, high or xhigh
  /compact [INSTRUCTIONS]     summarize older context
  /branch ENTRY [--summarize] continue from an earlier entry
  /tree                       the session's entries (ids for /branch and /label)
  /label ENTRY TEXT           label an entry
  /export [md|jsonl] [FILE]   export the conversation
  /sessions                   sessions of this directory
  /trust [--revoke]           trust this project directory (or revoke it)
  /mode [steer|follow-up]     what text typed during a run does
  /last, /expand N            full output of the last (or N-th) tool call
  /cancel                     cancel the run
  /undo [TURN] [--force]      put the files back as they were before the last (or a) turn
  /diff [TURN]                the file changes of the latest run (or of one turn)
  /new                        start a new session in this directory
  /resume [N|SESSION]         pick an earlier session of this directory (or open it)
  /fork                       continue in a copy of this session
  /rename NAME                name this session
  /approve [ask|auto-edit|yolo]  show or change the approval policy
  /status                     model, context use, tokens, cost, policy and queue
  /clear                      clear the screen (the session keeps everything)
  /quit                       leave (the session stays in the daemon)";

/// Reads a typed line; `Err` carries a usage message for a malformed slash command.
pub fn parse_line(line: &str) -> Result<Line, String> {
    let trimmed = line.trim();
    if trimmed.is_empty() {
        return Ok(Line::Empty);
    }
    if let Some(rest) = trimmed.strip_prefix(">>") {
        let text = rest.trim();
        if text.is_empty() {
            return Ok(Line::Empty);
        }
        return Ok(Line::Text { text: text.to_string(), follow_up: true });
    }
    if let Some(command) = trimmed.strip_prefix('!') {
        let command = command.trim();
        if command.is_empty() {
            return Err("usage: !COMMAND".into());
        }
        return Ok(Line::Shell(command.to_string()));
    }
    if let Some(command) = trimmed.strip_prefix('/') {
        return parse_slash(command).map(Line::Slash);
    }
    Ok(Line::Text { text: trimmed.to_string(), follow_up: false })
}

fn parse_slash(command: &str) -> Result<Slash, String> {
    let (name, rest) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    let words: Vec<&str> = rest.split_whitespace().collect();
    let optional = |text: &str| (!text.is_empty()).then(|| text.to_string());
    match name {
        "help" | "?" => Ok(Slash::Help),
        "quit" | "exit" | "q" => Ok(Slash::Quit),
        "model" => Ok(Slash::Model(optional(rest))),
        "thinking" => ThinkingLevel::parse(rest)
            .map(Slash::Thinking)
            .ok_or_else(|| "usage: /thinking off|minimal|low|medium|high|xhigh".to_string()),
        "compact" => Ok(Slash::Compact(optional(rest))),
        "branch" => {
            let summarize = words.contains(&"--summarize");
            let entries: Vec<&str> =
                words.iter().copied().filter(|w| *w != "--summarize").collect();
            match entries.as_slice() {
                [entry] => Ok(Slash::Branch { entry: entry.to_string(), summarize }),
                _ => Err("usage: /branch ENTRY [--summarize]".into()),
            }
        }
        "tree" => Ok(Slash::Tree),
        "label" => match rest.split_once(char::is_whitespace) {
            Some((entry, text)) if !text.trim().is_empty() => {
                Ok(Slash::Label { entry: entry.to_string(), text: text.trim().to_string() })
            }
            _ => Err("usage: /label ENTRY TEXT".into()),
        },
        "export" => {
            let mut format = ExportFormat::Markdown;
            let mut file = None;
            for word in &words {
                match *word {
                    "md" | "markdown" => format = ExportFormat::Markdown,
                    "jsonl" => format = ExportFormat::Jsonl,
                    path if file.is_none() => file = Some(PathBuf::from(path)),
                    _ => return Err("usage: /export [md|jsonl] [FILE]".into()),
                }
            }
            Ok(Slash::Export { format, file })
        }
        "sessions" => Ok(Slash::Sessions),
        "trust" => match words.as_slice() {
            [] => Ok(Slash::Trust { revoke: false }),
            ["--revoke"] => Ok(Slash::Trust { revoke: true }),
            _ => Err("usage: /trust [--revoke]".into()),
        },
        "mode" => match words.as_slice() {
            [] => Ok(Slash::Mode(None)),
            ["steer"] => Ok(Slash::Mode(Some(BusyMode::Steer))),
            ["follow-up" | "followup" | "queue"] => Ok(Slash::Mode(Some(BusyMode::FollowUp))),
            _ => Err("usage: /mode [steer|follow-up]".into()),
        },
        "last" => Ok(Slash::Last),
        "expand" => match words.as_slice() {
            [] => Ok(Slash::Last),
            [n] => n
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .map(Slash::Expand)
                .ok_or_else(|| "usage: /expand N (1 is the first tool call)".into()),
            _ => Err("usage: /expand N".into()),
        },
        "cancel" => Ok(Slash::Cancel),
        "undo" => {
            let force = words.contains(&"--force");
            let numbers: Vec<&&str> = words.iter().filter(|w| **w != "--force").collect();
            match numbers.as_slice() {
                [] => Ok(Slash::Undo { turn: None, force }),
                [n] => n
                    .parse::<u32>()
                    .map(|turn| Slash::Undo { turn: Some(turn), force })
                    .map_err(|_| "usage: /undo [TURN] [--force]".into()),
                _ => Err("usage: /undo [TURN] [--force]".into()),
            }
        }
        "diff" => match words.as_slice() {
            [] => Ok(Slash::Diff(None)),
            [n] => n
                .parse::<u32>()
                .map(|t| Slash::Diff(Some(t)))
                .map_err(|_| "usage: /diff [TURN]".into()),
            _ => Err("usage: /diff [TURN]".into()),
        },
        "new" => Ok(Slash::New),
        "resume" => match words.as_slice() {
            [] => Ok(Slash::Resume(None)),
            [which] => Ok(Slash::Resume(Some(which.to_string()))),
            _ => Err("usage: /resume [N|SESSION]".into()),
        },
        "fork" => Ok(Slash::Fork),
        "rename" if !rest.is_empty() => Ok(Slash::Rename(rest.to_string())),
        "rename" => Err("usage: /rename NAME".into()),
        "approve" => match words.as_slice() {
            [] => Ok(Slash::Approve(None)),
            ["ask"] => Ok(Slash::Approve(Some(ApprovalPolicy::Ask))),
            ["auto-edit" | "auto_edit" | "autoedit"] => {
                Ok(Slash::Approve(Some(ApprovalPolicy::AutoEdit)))
            }
            ["yolo"] => Ok(Slash::Approve(Some(ApprovalPolicy::Yolo))),
            _ => Err("usage: /approve [ask|auto-edit|yolo]".into()),
        },
        "clear" => Ok(Slash::Clear),
        "status" => Ok(Slash::Status),
        other => Err(format!("unknown command /{other}; /help lists them")),
    }
}

/// Reads an approval answer: `y`/`yes`, `a`/`always`, or `n`/`no` with an optional reason.
pub fn parse_approval(line: &str) -> Option<(ApprovalDecision, Option<String>)> {
    let trimmed = line.trim();
    let (word, rest) = match trimmed.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (trimmed, ""),
    };
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Some((ApprovalDecision::AllowOnce, None)),
        "a" | "always" if rest.is_empty() => Some((ApprovalDecision::AllowSession, None)),
        "n" | "no" => Some((ApprovalDecision::Deny, (!rest.is_empty()).then(|| rest.to_string()))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_follow_ups_and_shell_commands() {
        assert_eq!(parse_line("   "), Ok(Line::Empty));
        assert_eq!(
            parse_line(" fix the bug "),
            Ok(Line::Text { text: "fix the bug".into(), follow_up: false })
        );
        assert_eq!(
            parse_line(">> then add tests"),
            Ok(Line::Text { text: "then add tests".into(), follow_up: true })
        );
        assert_eq!(parse_line("!ls -la"), Ok(Line::Shell("ls -la".into())));
        assert!(parse_line("!").is_err());
    }

    #[test]
    fn slash_commands_parse_with_their_arguments() {
        let slash = |text: &str| match parse_line(text) {
            Ok(Line::Slash(slash)) => slash,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(slash("/model"), Slash::Model(None));
        assert_eq!(slash("/model local/m"), Slash::Model(Some("local/m".into())));
        assert_eq!(slash("/thinking high"), Slash::Thinking(ThinkingLevel::High));
        assert_eq!(slash("/compact keep the API"), Slash::Compact(Some("keep the API".into())));
        assert_eq!(
            slash("/branch --summarize e12"),
            Slash::Branch { entry: "e12".into(), summarize: true }
        );
        assert_eq!(
            slash("/label e1 good state"),
            Slash::Label { entry: "e1".into(), text: "good state".into() }
        );
        assert_eq!(
            slash("/export jsonl out.jsonl"),
            Slash::Export { format: ExportFormat::Jsonl, file: Some("out.jsonl".into()) }
        );
        assert_eq!(slash("/export"), Slash::Export { format: ExportFormat::Markdown, file: None });
        assert_eq!(slash("/trust --revoke"), Slash::Trust { revoke: true });
        assert_eq!(slash("/mode follow-up"), Slash::Mode(Some(BusyMode::FollowUp)));
        assert_eq!(slash("/expand 2"), Slash::Expand(2));
        assert_eq!(slash("/quit"), Slash::Quit);
        assert_eq!(slash("/undo"), Slash::Undo { turn: None, force: false });
        assert_eq!(slash("/undo 3 --force"), Slash::Undo { turn: Some(3), force: true });
        assert_eq!(slash("/diff 2"), Slash::Diff(Some(2)));
        assert_eq!(slash("/rename parser work"), Slash::Rename("parser work".into()));
        assert_eq!(slash("/approve auto-edit"), Slash::Approve(Some(ApprovalPolicy::AutoEdit)));
        assert_eq!(slash("/approve"), Slash::Approve(None));
        assert_eq!(slash("/resume"), Slash::Resume(None));
        assert_eq!(slash("/resume 2"), Slash::Resume(Some("2".into())));
        assert_eq!(slash("/fork"), Slash::Fork);
        assert_eq!(slash("/new"), Slash::New);
        assert_eq!(slash("/status"), Slash::Status);
        assert_eq!(slash("/clear"), Slash::Clear);
    }

    #[test]
    fn malformed_slash_commands_explain_their_usage() {
        assert!(parse_line("/branch").unwrap_err().contains("usage"));
        assert!(parse_line("/label e1").unwrap_err().contains("usage"));
        assert!(parse_line("/thinking lots").unwrap_err().contains("usage"));
        assert!(parse_line("/expand 0").unwrap_err().contains("usage"));
        assert!(parse_line("/frobnicate").unwrap_err().contains("unknown command"));
        assert!(parse_line("/rename").unwrap_err().contains("usage"));
        assert!(parse_line("/approve sometimes").unwrap_err().contains("usage"));
    }

    #[test]
    fn approval_answers() {
        assert_eq!(parse_approval("y\n"), Some((ApprovalDecision::AllowOnce, None)));
        assert_eq!(parse_approval("Always"), Some((ApprovalDecision::AllowSession, None)));
        assert_eq!(
            parse_approval("n use git mv instead"),
            Some((ApprovalDecision::Deny, Some("use git mv instead".into())))
        );
        assert_eq!(parse_approval("no"), Some((ApprovalDecision::Deny, None)));
        assert_eq!(parse_approval("yes please do"), None);
        assert_eq!(parse_approval("maybe"), None);
    }
}
