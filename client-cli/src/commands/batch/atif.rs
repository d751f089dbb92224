//! ATIF (Agent Trajectory Interchange Format, v1.4; the trajectory format of the Harbor
//! evaluation framework) from a rein JSONL trajectory (`session/export`, format `jsonl`).
//!
//! Each user message is a `user` step; each model reply an `agent` step with its text, its
//! reasoning, its tool calls and their results as the step's observation, and its tokens and
//! cost as metrics; each verification round a `system` step whose observation holds the checks.
//! What ATIF has no field for (end reason, outcome, run settings, whether the trajectory is
//! partial) goes under `extra.rein`.

use super::outputs::rfc3339_millis;
use rein_protocol::message::{ContentBlock, Message, Usage};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// The ATIF version written.
pub const SCHEMA_VERSION: &str = "ATIF-v1.4";

/// What the trajectory itself does not say.
#[derive(Debug, Clone, Default)]
pub struct AtifContext {
    /// The rein version (the agent's version).
    pub version: String,
    /// `provider/model`, when known.
    pub model: Option<String>,
    /// True when the run did not finish (the batch stopped mid-task).
    pub partial: bool,
    /// More to record under `extra.rein` (task id, end reason, outcome).
    pub extra: Map<String, Value>,
}

#[derive(Debug, Serialize)]
struct Trajectory {
    schema_version: &'static str,
    session_id: String,
    agent: Agent,
    steps: Vec<Step>,
    #[serde(skip_serializing_if = "Option::is_none")]
    notes: Option<String>,
    final_metrics: FinalMetrics,
    extra: Value,
}

#[derive(Debug, Serialize)]
struct Agent {
    name: &'static str,
    version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_name: Option<String>,
}

#[derive(Debug, Serialize)]
struct Step {
    step_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    timestamp: Option<String>,
    source: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_name: Option<String>,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    reasoning_content: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<ToolCallRecord>,
    #[serde(skip_serializing_if = "Option::is_none")]
    observation: Option<Observation>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metrics: Option<Metrics>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Serialize)]
struct ToolCallRecord {
    tool_call_id: String,
    function_name: String,
    arguments: Value,
}

#[derive(Debug, Default, Serialize)]
struct Observation {
    results: Vec<ObservationResult>,
}

#[derive(Debug, Serialize)]
struct ObservationResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    source_call_id: Option<String>,
    content: String,
}

#[derive(Debug, Serialize)]
struct Metrics {
    prompt_tokens: u64,
    completion_tokens: u64,
    cached_tokens: u64,
    cost_usd: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra: Option<Value>,
}

#[derive(Debug, Default, Serialize)]
struct FinalMetrics {
    total_prompt_tokens: u64,
    total_completion_tokens: u64,
    total_cached_tokens: u64,
    total_cost_usd: f64,
    total_steps: usize,
}

/// Converts a rein JSONL trajectory to an ATIF trajectory. Lines that are not JSON or of an
/// unknown type are skipped (a newer daemon may add some).
pub fn from_rein_jsonl(session_id: &str, jsonl: &str, context: &AtifContext) -> Value {
    let mut steps: Vec<Step> = Vec::new();
    let mut totals = FinalMetrics::default();
    let mut run_info = Value::Null;
    for line in jsonl.lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        match record.get("type").and_then(Value::as_str) {
            Some("message") => {
                let Some(message) = record.get("message").cloned() else { continue };
                let Ok(message) = serde_json::from_value::<Message>(message) else { continue };
                add_message(&mut steps, &mut totals, message);
            }
            Some("verification") => {
                let step = verification_step(steps.len() + 1, &record);
                steps.push(step);
            }
            Some("run_info") => run_info = record,
            _ => {}
        }
    }
    if steps.is_empty() {
        // ATIF wants at least one step; a session stopped before its prompt has none.
        steps.push(Step {
            step_id: 1,
            timestamp: None,
            source: "system",
            model_name: None,
            message: "The session recorded no messages.".to_string(),
            reasoning_content: None,
            tool_calls: Vec::new(),
            observation: None,
            metrics: None,
            extra: None,
        });
    }
    totals.total_steps = steps.len();
    let model = context
        .model
        .clone()
        .or_else(|| run_info.get("model").and_then(Value::as_str).map(str::to_string));
    let mut rein = context.extra.clone();
    rein.insert("partial".into(), Value::Bool(context.partial));
    if !run_info.is_null() {
        rein.insert("run_info".into(), run_info);
    }
    let trajectory = Trajectory {
        schema_version: SCHEMA_VERSION,
        session_id: session_id.to_string(),
        agent: Agent { name: "rein", version: context.version.clone(), model_name: model },
        steps,
        notes: context.partial.then(|| {
            "Partial trajectory: the batch stopped before this task's run ended.".to_string()
        }),
        final_metrics: totals,
        extra: json!({ "rein": rein }),
    };
    serde_json::to_value(trajectory).unwrap_or(Value::Null)
}

fn text_of(blocks: &[ContentBlock]) -> String {
    let texts: Vec<&str> = blocks
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    texts.join("\n")
}

fn timestamp(millis: i64) -> Option<String> {
    (millis > 0).then(|| rfc3339_millis(millis)).filter(|text| !text.is_empty())
}

fn metrics(usage: &Usage) -> Metrics {
    Metrics {
        // ATIF counts every input token as a prompt token, cached ones included.
        prompt_tokens: usage.input + usage.cache_read + usage.cache_write,
        completion_tokens: usage.output,
        cached_tokens: usage.cache_read,
        cost_usd: usage.cost.total,
        extra: (usage.cache_write > 0)
            .then(|| json!({ "cache_creation_input_tokens": usage.cache_write })),
    }
}

fn add_message(steps: &mut Vec<Step>, totals: &mut FinalMetrics, message: Message) {
    let step_id = steps.len() + 1;
    match message {
        Message::User(user) => steps.push(Step {
            step_id,
            timestamp: timestamp(user.timestamp),
            source: "user",
            model_name: None,
            message: text_of(&user.content),
            reasoning_content: None,
            tool_calls: Vec::new(),
            observation: None,
            metrics: None,
            extra: None,
        }),
        Message::Assistant(reply) => {
            let reasoning: Vec<&str> = reply
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::Thinking { thinking, .. } if !thinking.is_empty() => {
                        Some(thinking.as_str())
                    }
                    _ => None,
                })
                .collect();
            let tool_calls = reply
                .content
                .iter()
                .filter_map(|block| match block {
                    ContentBlock::ToolCall(call) => Some(ToolCallRecord {
                        tool_call_id: call.id.clone(),
                        function_name: call.name.clone(),
                        // ATIF wants an object; text the model sent that is not one is kept.
                        arguments: match &call.arguments {
                            Value::Object(_) => call.arguments.clone(),
                            other => json!({ "raw": other }),
                        },
                    }),
                    _ => None,
                })
                .collect();
            let metrics = metrics(&reply.usage);
            totals.total_prompt_tokens += metrics.prompt_tokens;
            totals.total_completion_tokens += metrics.completion_tokens;
            totals.total_cached_tokens += metrics.cached_tokens;
            totals.total_cost_usd += metrics.cost_usd;
            steps.push(Step {
                step_id,
                timestamp: timestamp(reply.timestamp),
                source: "agent",
                model_name: Some(format!("{}/{}", reply.provider, reply.model)),
                message: text_of(&reply.content),
                reasoning_content: (!reasoning.is_empty()).then(|| reasoning.join("\n")),
                tool_calls,
                observation: None,
                metrics: Some(metrics),
                extra: reply
                    .error_message
                    .as_ref()
                    .map(|error| json!({ "stop_reason": reply.stop_reason, "error": error })),
            });
        }
        Message::ToolResult(result) => {
            let owner = steps.iter_mut().rev().find(|step| {
                step.tool_calls.iter().any(|call| call.tool_call_id == result.tool_call_id)
            });
            let content = text_of(&result.content);
            match owner {
                Some(step) => {
                    step.observation.get_or_insert_with(Observation::default).results.push(
                        ObservationResult { source_call_id: Some(result.tool_call_id), content },
                    )
                }
                // A result whose call is not on the path: kept as a system observation.
                None => steps.push(Step {
                    step_id,
                    timestamp: timestamp(result.timestamp),
                    source: "system",
                    model_name: None,
                    message: format!("Result of tool `{}`", result.tool_name),
                    reasoning_content: None,
                    tool_calls: Vec::new(),
                    observation: Some(Observation {
                        results: vec![ObservationResult { source_call_id: None, content }],
                    }),
                    metrics: None,
                    extra: None,
                }),
            }
        }
    }
}

fn verification_step(step_id: usize, record: &Value) -> Step {
    let passed = record.get("passed").and_then(Value::as_bool).unwrap_or(false);
    let round = record.get("round").and_then(Value::as_u64).unwrap_or(0);
    let max_rounds = record.get("max_rounds").and_then(Value::as_u64).unwrap_or(0);
    let results = record
        .get("checks")
        .and_then(Value::as_array)
        .map(|checks| {
            checks
                .iter()
                .map(|check| {
                    let command = check.get("command").and_then(Value::as_str).unwrap_or("");
                    let verdict = if check.get("passed").and_then(Value::as_bool) == Some(true) {
                        "passed"
                    } else {
                        "failed"
                    };
                    let exit = check
                        .get("exit_code")
                        .and_then(Value::as_i64)
                        .map_or("no exit code".to_string(), |code| format!("exit {code}"));
                    let tail = check.get("output_tail").and_then(Value::as_str).unwrap_or("");
                    ObservationResult {
                        source_call_id: None,
                        content: format!("$ {command}\n[{verdict}, {exit}]\n{tail}"),
                    }
                })
                .collect()
        })
        .unwrap_or_default();
    let verdict = if passed { "passed" } else { "failed" };
    Step {
        step_id,
        timestamp: None,
        source: "system",
        model_name: None,
        message: format!("Verification round {round} of {max_rounds}: {verdict}"),
        reasoning_content: None,
        tool_calls: Vec::new(),
        observation: Some(Observation { results }),
        metrics: None,
        extra: Some(json!({ "rein_verification": record })),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRAJECTORY: &str = r#"{"type":"message","entry_id":"e1","message":{"role":"user","content":[{"type":"text","text":"fix the test"}],"timestamp":1760000000000}}
{"type":"message","entry_id":"e2","message":{"role":"assistant","content":[{"type":"thinking","thinking":"look first"},{"type":"text","text":"Reading."},{"type":"tool_call","id":"c1","name":"read","arguments":{"path":"a.sh"}}],"api":"openai-chat","provider":"fake","model":"m1","stop_reason":"tool_use","timestamp":1760000001000,"usage":{"input":100,"output":20,"cache_read":50,"cache_write":0,"total_tokens":170,"cost":{"total":0.25}}}}
{"type":"message","entry_id":"e3","message":{"role":"tool_result","tool_call_id":"c1","tool_name":"read","content":[{"type":"text","text":"echo 1"}],"timestamp":1760000002000}}
{"type":"verification","entry_id":"e4","run_id":"r1","round":1,"max_rounds":2,"passed":false,"checks":[{"command":"sh test.sh","passed":false,"exit_code":1,"duration_ms":3,"output_tail":"FAIL"}]}
{"type":"message","entry_id":"e5","message":{"role":"assistant","content":[{"type":"text","text":"Done."}],"api":"openai-chat","provider":"fake","model":"m1","stop_reason":"stop","usage":{"input":10,"output":5,"cache_read":0,"cache_write":7,"total_tokens":22,"cost":{"total":0.5}}}}
{"type":"some_future_line"}
{"type":"run_info","session_id":"s1","end_reason":"completed","model":"fake/m1"}
"#;

    #[test]
    fn steps_follow_the_conversation() {
        let context = AtifContext { version: "9.9".into(), ..AtifContext::default() };
        let atif = from_rein_jsonl("s1", TRAJECTORY, &context);
        assert_eq!(atif["schema_version"], "ATIF-v1.4");
        assert_eq!(atif["session_id"], "s1");
        assert_eq!(
            atif["agent"],
            json!({"name": "rein", "version": "9.9", "model_name": "fake/m1"})
        );
        let steps = atif["steps"].as_array().cloned().unwrap_or_default();
        let sources: Vec<&str> = steps.iter().filter_map(|s| s["source"].as_str()).collect();
        assert_eq!(sources, ["user", "agent", "system", "agent"]);
        let ids: Vec<u64> = steps.iter().filter_map(|s| s["step_id"].as_u64()).collect();
        assert_eq!(ids, [1, 2, 3, 4]);
        assert_eq!(steps[0]["timestamp"], "2025-10-09T08:53:20Z");
        assert_eq!(steps[0]["message"], "fix the test");
        let agent = &steps[1];
        assert_eq!(agent["reasoning_content"], "look first");
        assert_eq!(
            agent["tool_calls"][0],
            json!({"tool_call_id": "c1", "function_name": "read", "arguments": {"path": "a.sh"}})
        );
        assert_eq!(
            agent["observation"]["results"][0],
            json!({"source_call_id": "c1", "content": "echo 1"})
        );
        assert_eq!(agent["metrics"]["prompt_tokens"], 150);
        assert_eq!(agent["metrics"]["cached_tokens"], 50);
        assert!(steps[2]["message"].as_str().unwrap_or("").contains("round 1 of 2: failed"));
        assert!(
            steps[2]["observation"]["results"][0]["content"]
                .as_str()
                .unwrap_or("")
                .contains("FAIL")
        );
        assert_eq!(steps[3]["metrics"]["extra"]["cache_creation_input_tokens"], 7);
        assert_eq!(atif["final_metrics"]["total_prompt_tokens"], 167);
        assert_eq!(atif["final_metrics"]["total_completion_tokens"], 25);
        assert_eq!(atif["final_metrics"]["total_cost_usd"], 0.75);
        assert_eq!(atif["final_metrics"]["total_steps"], 4);
        assert_eq!(atif["extra"]["rein"]["partial"], false);
        assert_eq!(atif["extra"]["rein"]["run_info"]["end_reason"], "completed");
        assert!(atif.get("notes").is_none());
    }

    #[test]
    fn partial_trajectories_say_so() {
        let context = AtifContext { partial: true, ..AtifContext::default() };
        let atif = from_rein_jsonl("s1", "", &context);
        assert_eq!(atif["extra"]["rein"]["partial"], true);
        assert!(atif["notes"].as_str().unwrap_or("").contains("Partial"));
        assert_eq!(atif["steps"][0]["source"], "system", "ATIF needs a step");
        assert_eq!(atif["final_metrics"]["total_steps"], 1);
    }
}
