//! Slash commands offered to the editor (`available_commands_update`) and run when a prompt
//! starts with one of them: each maps onto one daemon method instead of going to the model.

use crate::client::{Client, ClientError};
use rein_protocol::checkpoint::{UndoParams, UndoResult};
use rein_protocol::method::{
    CompactParams, CompactResult, RenameParams, SetModelParams, SetThinkingParams,
};
use rein_protocol::model::ThinkingLevel;
use rein_protocol::requests as rq;
use serde_json::{Value, json};

/// One slash command the adapter offers.
struct Offered {
    name: &'static str,
    description: &'static str,
    /// The hint for its argument, when it takes one.
    hint: Option<&'static str>,
}

const OFFERED: [Offered; 5] = [
    Offered {
        name: "compact",
        description: "Summarize older context to free the context window",
        hint: Some("what the summary should keep (optional)"),
    },
    Offered {
        name: "undo",
        description: "Restore the files the last turn's tools changed",
        hint: None,
    },
    Offered { name: "rename", description: "Rename this session", hint: Some("new name") },
    Offered {
        name: "model",
        description: "Switch this session's model",
        hint: Some("provider/model"),
    },
    Offered {
        name: "thinking",
        description: "Set the thinking level",
        hint: Some("off, minimal, low, medium, high or xhigh"),
    },
];

/// The `available_commands_update` session update listing the slash commands.
pub fn available_commands_update() -> Value {
    let commands: Vec<Value> = OFFERED
        .iter()
        .map(|command| {
            let mut entry = json!({"name": command.name, "description": command.description});
            if let Some(hint) = command.hint {
                entry["input"] = json!({"hint": hint});
            }
            entry
        })
        .collect();
    json!({"sessionUpdate": "available_commands_update", "availableCommands": commands})
}

/// The session a successful `session/new` or `session/load` opened (whose commands the
/// editor is told right after the answer); `None` for other requests and failures.
pub fn opened_session(method: &str, params: &Value, result: Option<&Value>) -> Option<String> {
    let id = match method {
        "session/new" => result?.get("sessionId"),
        "session/load" => {
            result?;
            params.get("sessionId")
        }
        _ => None,
    };
    id.and_then(Value::as_str).map(str::to_string)
}

/// A slash command from a prompt: the daemon call that carries it out, with its argument.
#[derive(Debug, Clone, PartialEq)]
pub enum SlashCall {
    /// `session/compact`, with what the summary should keep.
    Compact {
        /// Focus for the summary; none when the command has no text.
        instructions: Option<String>,
    },
    /// `session/undo` of the latest turn not undone yet.
    Undo,
    /// `session/rename` to this name.
    Rename(String),
    /// `session/set_model` to this `provider/model`.
    Model(String),
    /// `session/set_thinking` to this level.
    Thinking(ThinkingLevel),
}

impl SlashCall {
    /// Makes the daemon call for session `session_id` and returns a one-line report of it for
    /// the editor.
    pub async fn run(self, client: &mut Client, session_id: &str) -> Result<String, ClientError> {
        let session_id = session_id.to_string();
        Ok(match self {
            Self::Compact { instructions } => {
                let params = CompactParams { session_id, instructions };
                compacted(&client.request::<rq::SessionCompact>(params).await?)
            }
            Self::Undo => {
                let params = UndoParams { session_id, ..UndoParams::default() };
                undone(&client.request::<rq::SessionUndo>(params).await?)
            }
            Self::Rename(name) => {
                let params = RenameParams { session_id, name: name.clone() };
                client.request::<rq::SessionRename>(params).await?;
                format!("Renamed the session to {}.", json!(name))
            }
            Self::Model(model) => {
                let params = SetModelParams { session_id, model: model.clone() };
                client.request::<rq::SessionSetModel>(params).await?;
                format!("Switched the model to {}.", json!(model))
            }
            Self::Thinking(level) => {
                let params = SetThinkingParams { session_id, level };
                client.request::<rq::SessionSetThinking>(params).await?;
                format!("Thinking level set to {}.", json!(level))
            }
        })
    }
}

/// The report of a finished `/compact`.
fn compacted(result: &CompactResult) -> String {
    format!("Compacted the context: {} → {} tokens.", result.tokens_before, result.tokens_after)
}

/// The report of a finished `/undo`.
fn undone(result: &UndoResult) -> String {
    format!(
        "Undid turn {}: {} file(s) restored, {} removed.",
        result.turn,
        result.restored.len(),
        result.removed.len()
    )
}

/// The daemon call for `text` when it is one of the offered slash commands; `Ok(None)` for
/// ordinary prompts (including unknown `/words`, which go to the model), `Err` with a usage
/// message for an offered command with a bad argument.
pub fn parse(text: &str) -> Result<Option<SlashCall>, String> {
    let Some(command) = text.trim().strip_prefix('/') else {
        return Ok(None);
    };
    let (name, rest) = match command.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (command, ""),
    };
    match name {
        "compact" => {
            let instructions = (!rest.is_empty()).then(|| rest.to_string());
            Ok(Some(SlashCall::Compact { instructions }))
        }
        "undo" if rest.is_empty() => Ok(Some(SlashCall::Undo)),
        "undo" => Err("usage: /undo".into()),
        "rename" if !rest.is_empty() => Ok(Some(SlashCall::Rename(rest.to_string()))),
        "rename" => Err("usage: /rename NAME".into()),
        "model" if !rest.is_empty() && !rest.contains(char::is_whitespace) => {
            Ok(Some(SlashCall::Model(rest.to_string())))
        }
        "model" => Err("usage: /model provider/model".into()),
        "thinking" => match ThinkingLevel::parse(rest) {
            Some(level) => Ok(Some(SlashCall::Thinking(level))),
            None => Err("usage: /thinking off|minimal|low|medium|high|xhigh".into()),
        },
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_offered_command_parses_to_a_daemon_call() {
        let update = available_commands_update();
        let offered = update["availableCommands"].as_array().map(Vec::len);
        assert_eq!(offered, Some(OFFERED.len()));
        let with_args = [
            "/compact keep the tests",
            "/undo",
            "/rename parser fix",
            "/model local/m",
            "/thinking high",
        ];
        for (command, text) in OFFERED.iter().zip(with_args) {
            let parsed = parse(text).ok().flatten();
            assert!(parsed.is_some(), "/{} did not parse", command.name);
        }
        assert_eq!(
            parse("/compact keep the tests"),
            Ok(Some(SlashCall::Compact { instructions: Some("keep the tests".into()) }))
        );
        assert_eq!(parse("/thinking high"), Ok(Some(SlashCall::Thinking(ThinkingLevel::High))));
    }

    #[test]
    fn reports_read_the_typed_results() {
        let result = UndoResult {
            turn: 3,
            restored: vec!["a.rs".into(), "b.rs".into()],
            removed: vec!["new.rs".into()],
            overwritten: Vec::new(),
            entry_id: "e1".into(),
        };
        assert_eq!(undone(&result), "Undid turn 3: 2 file(s) restored, 1 removed.");
        let result = CompactResult {
            entry_id: "e2".into(),
            tokens_before: 900,
            tokens_after: 120,
            summary: String::new(),
        };
        assert_eq!(compacted(&result), "Compacted the context: 900 → 120 tokens.");
    }

    #[test]
    fn ordinary_prompts_and_unknown_commands_go_to_the_model() {
        assert_eq!(parse("fix the lexer"), Ok(None));
        assert_eq!(parse("/etc/hosts is wrong"), Ok(None));
        assert!(parse("/thinking loud").is_err());
        assert!(parse("/rename").is_err());
    }
}
