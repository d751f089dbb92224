//! Slash commands offered to the editor (`available_commands_update`) and run when a prompt
//! starts with one of them: each maps onto one daemon method instead of going to the model.

use rein_protocol::model::ThinkingLevel;
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

/// A slash command from a prompt, as the daemon call that carries it out.
#[derive(Debug, Clone, PartialEq)]
pub struct SlashCall {
    /// The daemon method.
    pub method: &'static str,
    /// Its params without `session_id`.
    pub params: Value,
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
    let call = |method, params| Ok(Some(SlashCall { method, params }));
    match name {
        "compact" => {
            let instructions = (!rest.is_empty()).then_some(rest);
            call("session/compact", json!({"instructions": instructions}))
        }
        "undo" if rest.is_empty() => call("session/undo", json!({})),
        "undo" => Err("usage: /undo".into()),
        "rename" if !rest.is_empty() => call("session/rename", json!({"name": rest})),
        "rename" => Err("usage: /rename NAME".into()),
        "model" if !rest.is_empty() && !rest.contains(char::is_whitespace) => {
            call("session/set_model", json!({"model": rest}))
        }
        "model" => Err("usage: /model provider/model".into()),
        "thinking" => match ThinkingLevel::parse(rest) {
            Some(level) => call("session/set_thinking", json!({"level": level})),
            None => Err("usage: /thinking off|minimal|low|medium|high|xhigh".into()),
        },
        _ => Ok(None),
    }
}

/// A one-line report of a finished slash command for the editor, from the daemon's result.
pub fn report(call: &SlashCall, result: &Value) -> String {
    match call.method {
        "session/compact" => format!(
            "Compacted the context: {} → {} tokens.",
            result.get("tokens_before").and_then(Value::as_u64).unwrap_or(0),
            result.get("tokens_after").and_then(Value::as_u64).unwrap_or(0)
        ),
        "session/undo" => {
            let count =
                |field: &str| result.get(field).and_then(Value::as_array).map_or(0, Vec::len);
            format!(
                "Undid turn {}: {} file(s) restored, {} removed.",
                result.get("turn").and_then(Value::as_u64).unwrap_or(0),
                count("restored"),
                count("removed")
            )
        }
        "session/rename" => format!("Renamed the session to {}.", call.params["name"]),
        "session/set_model" => format!("Switched the model to {}.", call.params["model"]),
        "session/set_thinking" => format!("Thinking level set to {}.", call.params["level"]),
        other => format!("{other} done."),
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
            Ok(Some(SlashCall {
                method: "session/compact",
                params: json!({"instructions": "keep the tests"})
            }))
        );
        assert_eq!(
            parse("/thinking high"),
            Ok(Some(SlashCall {
                method: "session/set_thinking",
                params: json!({"level": "high"})
            }))
        );
    }

    #[test]
    fn ordinary_prompts_and_unknown_commands_go_to_the_model() {
        assert_eq!(parse("fix the lexer"), Ok(None));
        assert_eq!(parse("/etc/hosts is wrong"), Ok(None));
        assert!(parse("/thinking loud").is_err());
        assert!(parse("/rename").is_err());
    }
}
