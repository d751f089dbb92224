//! Export of the active path: a readable Markdown transcript, and a JSONL trajectory (one
//! message per line, then a run-info line) for tools and training pipelines.

use rein_protocol::event::EndReason;
use rein_protocol::message::{ContentBlock, Message, StopReason, Usage};
use rein_protocol::method::RunLimits;
use rein_protocol::{EntryKind, SessionEntry};
use serde::Serialize;

use crate::error::SessionError;
use crate::session::Session;
use crate::storage::push_line;

/// The last line of a JSONL trajectory: how the run went.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunInfo {
    /// Always `run_info`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    /// The session.
    pub session_id: String,
    /// Why the run ended: given by the caller, else `end_reason`, else (a file with no
    /// recorded run end) the last assistant message's stop reason.
    pub exit_reason: Option<String>,
    /// How the last run on the path ended, as recorded when it ended: `completed`,
    /// `max_turns`, `cost_limit`, `time_limit`, `tool_failure_limit`, `cancelled` or `error`;
    /// null when no run ended on the path (the daemon stopped mid-run).
    pub end_reason: Option<EndReason>,
    /// What went wrong, when `end_reason` is `error`.
    pub error: Option<String>,
    /// The rein version that ran the last run.
    pub rein_version: Option<String>,
    /// The provider the last run started with.
    pub provider: Option<String>,
    /// The limits the last run ran under.
    pub limits: Option<RunLimits>,
    /// SHA-256 (hex) of the system prompt the last run started with.
    pub system_prompt_sha256: Option<String>,
    /// SHA-256 (hex) of the configuration files in force for the last run.
    pub config_sha256: Option<String>,
    /// The project's git commit when the last run started (git work trees only).
    pub git_commit: Option<String>,
    /// Whether that work tree had uncommitted changes.
    pub git_dirty: Option<bool>,
    /// Assistant messages on the path (model calls).
    pub steps: u64,
    /// What the path's model calls cost, in US dollars (`usage.cost.total`).
    pub cost: f64,
    /// Usage summed over the path's assistant messages.
    pub usage: Usage,
    /// The model in force, as `provider/model`.
    pub model: Option<String>,
}

/// `custom_type` of the entry recording one verification round (written by the coding
/// layer); the JSONL trajectory exports each as a `verification` line.
pub const VERIFICATION_ENTRY_TYPE: &str = "rein.verification";

/// One verification line of a JSONL trajectory: the round's record with its entry id.
#[derive(Debug, Serialize)]
struct VerificationLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    entry_id: &'a str,
    #[serde(flatten)]
    data: &'a serde_json::Value,
}

/// One message line of a JSONL trajectory.
#[derive(Debug, Serialize)]
struct MessageLine<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    entry_id: &'a str,
    message: &'a Message,
}

fn stop_reason_text(reason: StopReason) -> &'static str {
    match reason {
        StopReason::Stop => "stop",
        StopReason::Length => "length",
        StopReason::ToolUse => "tool_use",
        StopReason::ContentFilter => "content_filter",
        StopReason::Error => "error",
        StopReason::Aborted => "aborted",
    }
}

/// The wire name of an end reason (`max_turns`, ...).
fn end_reason_text(reason: EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

impl Session {
    /// Usage summed over every model call recorded in the file, on every branch: assistant
    /// messages plus the compaction and branch-summary requests.
    pub fn total_usage(&self) -> Usage {
        let mut total = Usage::default();
        for entry in self.tree().entries() {
            match &entry.kind {
                EntryKind::Message { message } => {
                    if let Message::Assistant(assistant) = message.as_ref() {
                        total.add(&assistant.usage);
                    }
                }
                EntryKind::Compaction { usage: Some(usage), .. }
                | EntryKind::BranchSummary { usage: Some(usage), .. } => total.add(usage),
                _ => {}
            }
        }
        total
    }

    /// The run info of the active path.
    pub fn run_info(&self, exit_reason: Option<&str>) -> RunInfo {
        let mut usage = Usage::default();
        let mut steps = 0;
        let mut last_stop = None;
        let mut last_run = None;
        for entry in self.tree().active_path() {
            match &entry.kind {
                EntryKind::Message { message } => {
                    if let Message::Assistant(assistant) = message.as_ref() {
                        steps += 1;
                        usage.add(&assistant.usage);
                        last_stop = Some(assistant.stop_reason);
                    }
                }
                EntryKind::RunEnd { reason, error, setup, .. } => {
                    last_run = Some((*reason, error.clone(), setup.clone()));
                }
                _ => {}
            }
        }
        let end_reason = last_run.as_ref().map(|(reason, _, _)| *reason);
        let (error, setup) = match last_run {
            Some((_, error, setup)) => (error, Some(setup)),
            None => (None, None),
        };
        RunInfo {
            kind: "run_info",
            session_id: self.id().to_string(),
            exit_reason: exit_reason
                .map(str::to_string)
                .or_else(|| end_reason.map(|r| end_reason_text(r).to_string()))
                .or_else(|| last_stop.map(|r| stop_reason_text(r).to_string())),
            end_reason,
            error,
            steps,
            cost: usage.cost.total,
            usage,
            model: self.settings().model.map(|m| m.to_string()),
            rein_version: setup.as_ref().map(|s| s.rein_version.clone()),
            provider: setup.as_ref().map(|s| s.provider.clone()),
            limits: setup.as_ref().map(|s| s.limits.clone()),
            system_prompt_sha256: setup.as_ref().map(|s| s.system_prompt_sha256.clone()),
            config_sha256: setup.as_ref().and_then(|s| s.config_sha256.clone()),
            git_commit: setup.as_ref().and_then(|s| s.git_commit.clone()),
            git_dirty: setup.as_ref().and_then(|s| s.git_dirty),
        }
    }

    /// The active path as JSONL: every message on it (the full history, compacted part
    /// included) as `{"type":"message","entry_id":..,"message":..}`, each verification round
    /// as `{"type":"verification","entry_id":..,"run_id":..,"round":..,"passed":..,"checks":[..]}`
    /// where it happened, then a `run_info` line.
    pub fn export_jsonl(&self, exit_reason: Option<&str>) -> Result<String, SessionError> {
        let mut out = Vec::new();
        for entry in self.tree().active_path() {
            match &entry.kind {
                EntryKind::Message { message } => push_line(
                    &mut out,
                    &MessageLine { kind: "message", entry_id: &entry.id, message },
                )?,
                EntryKind::Custom { custom_type, data }
                    if custom_type == VERIFICATION_ENTRY_TYPE && data.is_object() =>
                {
                    push_line(
                        &mut out,
                        &VerificationLine { kind: "verification", entry_id: &entry.id, data },
                    )?
                }
                _ => {}
            }
        }
        push_line(&mut out, &self.run_info(exit_reason))?;
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// The active path as a Markdown transcript (full history; compactions and branch summaries
    /// shown where they happened).
    pub fn export_markdown(&self) -> String {
        let mut out = format!("# {}\n\n", self.name().unwrap_or("Session"));
        out.push_str(&format!(
            "- Session: `{}`\n- Directory: `{}`\n- Created: {}\n",
            self.id(),
            self.cwd(),
            self.header().created
        ));
        if let Some(model) = self.settings().model {
            out.push_str(&format!("- Model: `{model}`\n"));
        }
        for entry in self.tree().active_path() {
            markdown_entry(&mut out, entry);
        }
        out
    }
}

fn markdown_message(out: &mut String, message: &Message) {
    match message {
        Message::User(user) => {
            out.push_str("\n## User\n\n");
            markdown_blocks(out, &user.content);
        }
        Message::Assistant(assistant) => {
            out.push_str("\n## Assistant\n\n");
            markdown_blocks(out, &assistant.content);
            if let Some(error) = &assistant.error_message {
                out.push_str(&format!("**Error:** {error}\n\n"));
            }
        }
        Message::ToolResult(result) => {
            let status = if result.is_error { " (error)" } else { "" };
            out.push_str(&format!("\n### Tool result: {}{status}\n\n", result.tool_name));
            fenced(out, "text", &result.text());
        }
    }
}

fn markdown_entry(out: &mut String, entry: &SessionEntry) {
    match &entry.kind {
        EntryKind::Message { message } => markdown_message(out, message),
        EntryKind::Compaction { summary, .. } => {
            out.push_str("\n## Context compacted\n\n");
            out.push_str(summary);
            out.push_str("\n\n");
        }
        EntryKind::BranchSummary { summary, .. } => {
            out.push_str("\n## Branch summary\n\n");
            out.push_str(summary);
            out.push_str("\n\n");
        }
        EntryKind::ModelChange { provider, model } => {
            out.push_str(&format!("\n*Model changed to `{provider}/{model}`.*\n"));
        }
        EntryKind::ThinkingLevelChange { thinking_level } => {
            out.push_str(&format!("\n*Thinking level set to {}.*\n", thinking_level.as_str()));
        }
        EntryKind::ApprovalPolicyChange { approval_policy } => {
            out.push_str(&format!("\n*Approval policy set to {}.*\n", approval_policy.as_str()));
        }
        _ => {}
    }
}

fn markdown_blocks(out: &mut String, blocks: &[ContentBlock]) {
    for block in blocks {
        match block {
            ContentBlock::Text { text } => {
                out.push_str(text);
                out.push_str("\n\n");
            }
            ContentBlock::Thinking { thinking, .. } if !thinking.is_empty() => {
                for line in thinking.lines() {
                    out.push_str("> ");
                    out.push_str(line);
                    out.push('\n');
                }
                out.push('\n');
            }
            ContentBlock::ToolCall(call) => {
                out.push_str(&format!("**Tool call** `{}` (`{}`)\n\n", call.name, call.id));
                let args = serde_json::to_string_pretty(&call.arguments).unwrap_or_default();
                fenced(out, "json", &args);
            }
            ContentBlock::Image { mime_type, .. } => {
                out.push_str(&format!("*[{mime_type} image]*\n\n"))
            }
            ContentBlock::Thinking { .. } => {}
        }
    }
}

/// A fenced code block long enough that no backtick run inside the text closes it.
fn fenced(out: &mut String, lang: &str, text: &str) {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest.max(2) + 1);
    out.push_str(&format!("{fence}{lang}\n{text}\n{fence}\n\n"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repair::tests::{assistant, result, user};
    use crate::store::SessionStore;
    use rein_protocol::model::ModelRef;

    #[test]
    fn exports_the_active_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = SessionStore::new(dir.path());
        let mut session = store.create("/p").unwrap();
        session.set_model(&ModelRef { provider: "prov".into(), model: "m1".into() }).unwrap();
        session.append_message(user("hello").message).unwrap();
        let a_with_cost = |cost: f64| {
            let mut a = assistant("a", &["c1"]).message;
            if let Message::Assistant(a) = &mut a {
                a.usage.total_tokens = 50;
                a.usage.cost.total = cost;
            }
            a
        };
        session.append_message(a_with_cost(0.25)).unwrap();
        let mut r = result("r", "c1").message;
        if let Message::ToolResult(r) = &mut r {
            r.content = vec![ContentBlock::text("has ``` fence")];
        }
        session.append_message(r).unwrap();
        session.append_message(assistant("b", &[]).message).unwrap();
        let last = session.set_name(Some("Demo".into())).unwrap().id;

        let jsonl = session.export_jsonl(None).unwrap();
        let lines: Vec<serde_json::Value> =
            jsonl.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 5);
        assert_eq!(lines[0]["type"], "message");
        assert_eq!(lines[0]["message"]["role"], "user");
        assert_eq!(lines[2]["message"]["role"], "tool_result");
        let info = &lines[4];
        assert_eq!(info["type"], "run_info");
        assert_eq!(info["steps"], 2);
        assert_eq!(info["exit_reason"], "stop");
        assert_eq!(info["usage"]["cost"]["total"], 0.25);
        assert_eq!(info["cost"], 0.25);
        assert_eq!(info["model"], "prov/m1");
        session.move_leaf(None).unwrap();
        session.append_message(a_with_cost(0.5)).unwrap();
        session
            .append(EntryKind::BranchSummary {
                from_id: "x".into(),
                summary: "s".into(),
                usage: Some(Box::new(Usage { total_tokens: 7, ..Usage::default() })),
            })
            .unwrap();
        assert!((session.total_usage().cost.total - 0.75).abs() < 1e-9);
        assert_eq!(session.total_usage().total_tokens, 107);
        session.move_leaf(Some(&last)).unwrap();
        let jsonl = session.export_jsonl(Some("max_turns")).unwrap();
        assert!(jsonl.lines().last().unwrap().contains("\"exit_reason\":\"max_turns\""));

        let md = session.export_markdown();
        assert!(md.starts_with("# Demo\n"), "{md}");
        assert!(md.contains("- Model: `prov/m1`"));
        assert!(md.contains("## User\n\nhello\n"));
        assert!(md.contains("**Tool call** `read` (`c1`)"));
        assert!(md.contains("### Tool result: read\n\n````text\nhas ``` fence\n````"), "{md}");
    }
}
