//! The session commands: `sessions`, `tree`, `branch`, `compact`, `steer`, `follow-up`,
//! `cancel`, `export`, `label`, `trust` and `models`.
//!
//! Each is one function that makes the calls and returns a [`Report`]: the daemon's result as
//! JSON (for `--json`) and a text for people. The command line prints one or the other; the
//! interactive attach runs the same functions for its slash commands.

use crate::client::{Client, ClientError};
use crate::render::shorten;
use crate::resolve;
use rein_protocol::entry::{EntryKind, SessionEntry};
use rein_protocol::message::{ContentBlock, Message};
use rein_protocol::method::{
    BranchParams, BranchResult, CancelResult, CompactParams, CompactResult, Empty, ExportFormat,
    HistoryPageParams, LabelParams, ModelsResult, QueueMessageParams, QueueMessageResult,
    SessionRef, SessionSummary, TreeResult, TrustParams,
};
use rein_protocol::requests as rq;
use serde::Serialize;
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;

/// What a command produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// The result as JSON.
    pub json: Value,
    /// The result for people (ends with a newline, or is empty).
    pub text: String,
}

impl Report {
    fn new(json: impl Serialize, text: String) -> Self {
        Self { json: serde_json::to_value(json).unwrap_or(Value::Null), text }
    }

    /// A report of a JSON value and a text.
    pub fn from_value(json: Value, text: String) -> Self {
        Self { json, text }
    }

    /// Prints the JSON (one line) or the text on stdout.
    pub fn print(&self, as_json: bool) {
        if as_json {
            println!("{}", self.json);
        } else {
            print!("{}", self.text);
        }
    }
}

/// Loads a session (when the daemon has not yet) and returns its full id.
async fn open(client: &mut Client, session: &str) -> Result<String, ClientError> {
    let session_id = resolve::session_id(client, session).await?;
    client.request::<rq::SessionOpen>(SessionRef { session_id: session_id.clone() }).await?;
    Ok(session_id)
}

/// `rein sessions [--all]`: sessions of `cwd`, or of every directory.
/// Files or directories that could not be read get a warning line each after the table.
pub async fn sessions(client: &mut Client, cwd: Option<&Path>) -> Result<Report, ClientError> {
    let listing = resolve::list_sessions_with_errors(client, cwd).await?;
    let mut text = format_sessions(&listing.sessions, cwd.is_none());
    for error in &listing.errors {
        text.push_str(&format!("warning: skipped {}: {}\n", error.path, error.message));
    }
    Ok(Report::new(&listing, text))
}

/// The session table.
pub fn format_sessions(sessions: &[SessionSummary], with_cwd: bool) -> String {
    if sessions.is_empty() {
        return "no sessions\n".into();
    }
    let mut text = String::new();
    for session in sessions {
        let state = if session.running {
            "running"
        } else if session.loaded {
            "loaded"
        } else {
            ""
        };
        let title = session
            .name
            .clone()
            .or_else(|| session.first_prompt.clone())
            .unwrap_or_else(|| "(no prompt yet)".into());
        let updated = session.updated.get(..19).unwrap_or(&session.updated).replace('T', " ");
        text.push_str(&format!(
            "{}  {updated}  {:>4} entries  {state:<7}  {}",
            session.session_id,
            session.entry_count,
            shorten(&title.replace('\n', " "), 60)
        ));
        if with_cwd {
            text.push_str(&format!("  ({})", session.cwd));
        }
        text.push('\n');
    }
    text
}

/// `rein tree SESSION`.
pub async fn tree(client: &mut Client, session: &str) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    // The tree comes in pages; the drawing needs all of it.
    let mut params = HistoryPageParams { session_id, limit: None, cursor: None };
    let mut result: TreeResult = client.request::<rq::SessionTree>(&params).await?;
    while let Some(cursor) = result.next_cursor.take() {
        params.cursor = Some(cursor);
        let page: TreeResult = client.request::<rq::SessionTree>(&params).await?;
        result.entries.extend(page.entries);
        result.leaf_id = page.leaf_id;
        result.next_cursor = page.next_cursor;
    }
    let text = format_tree(&result.entries, result.leaf_id.as_deref());
    Ok(Report::new(result, text))
}

/// The entry tree, one entry per line: `*` marks the active path, indentation shows where
/// the tree branches, labels are shown in brackets.
pub fn format_tree(entries: &[SessionEntry], leaf_id: Option<&str>) -> String {
    if entries.is_empty() {
        return "(empty session)\n".into();
    }
    let mut children: HashMap<Option<&str>, Vec<&SessionEntry>> = HashMap::new();
    let mut labels: HashMap<&str, &str> = HashMap::new();
    let by_id: HashMap<&str, &SessionEntry> =
        entries.iter().map(|entry| (entry.id.as_str(), entry)).collect();
    for entry in entries {
        let parent = entry.parent_id.as_deref().filter(|parent| by_id.contains_key(parent));
        children.entry(parent).or_default().push(entry);
        if let EntryKind::Label { target_id, label } = &entry.kind {
            match label {
                Some(label) => labels.insert(target_id, label),
                None => labels.remove(target_id.as_str()),
            };
        }
    }
    let mut active = std::collections::HashSet::new();
    let mut cursor = leaf_id;
    while let Some(id) = cursor {
        if !active.insert(id) {
            break;
        }
        cursor = by_id.get(id).and_then(|entry| entry.parent_id.as_deref());
    }
    let mut text = String::new();
    // Depth-first, iteratively; depth grows only where the tree branches.
    let mut stack: Vec<(&SessionEntry, usize)> = children
        .get(&None)
        .map(|roots| roots.iter().rev().map(|entry| (*entry, 0)).collect())
        .unwrap_or_default();
    let roots_branch = stack.len() > 1;
    while let Some((entry, depth)) = stack.pop() {
        let depth = if roots_branch && depth == 0 { 1 } else { depth };
        let marker = if active.contains(entry.id.as_str()) { '*' } else { ' ' };
        let mut line = format!("{marker} {}{}  {}", "  ".repeat(depth), entry.id, describe(entry));
        if let Some(label) = labels.get(entry.id.as_str()) {
            line.push_str(&format!("  [{label}]"));
        }
        if Some(entry.id.as_str()) == leaf_id {
            line.push_str("  ← leaf");
        }
        text.push_str(&line);
        text.push('\n');
        if let Some(kids) = children.get(&Some(entry.id.as_str())) {
            let child_depth = if kids.len() > 1 { depth + 1 } else { depth };
            stack.extend(kids.iter().rev().map(|kid| (*kid, child_depth)));
        }
    }
    text
}

/// A short description of an entry for the tree.
pub fn describe(entry: &SessionEntry) -> String {
    let one_line = |text: &str| shorten(&text.replace('\n', " "), 70);
    match &entry.kind {
        EntryKind::Message { message } => describe_message(message),
        EntryKind::ModelChange { provider, model } => format!("model → {provider}/{model}"),
        EntryKind::ThinkingLevelChange { thinking_level } => {
            format!("thinking → {}", thinking_level.as_str())
        }
        EntryKind::ApprovalPolicyChange { approval_policy } => {
            format!("approval policy → {}", approval_policy.as_str())
        }
        EntryKind::RunEnd { reason, turns, .. } => {
            let reason = serde_json::to_value(reason).unwrap_or_default();
            format!("run ended: {} after {turns} turns", reason.as_str().unwrap_or("?"))
        }
        EntryKind::Compaction { tokens_before, .. } => {
            format!("compaction ({tokens_before} tokens before)")
        }
        EntryKind::BranchSummary { summary, .. } => {
            format!("branch summary: {}", one_line(summary))
        }
        EntryKind::Label { target_id, label } => match label {
            Some(label) => format!("label {target_id}: {label}"),
            None => format!("label {target_id} removed"),
        },
        EntryKind::SessionInfo { name } => format!("name: {}", name.as_deref().unwrap_or("")),
        EntryKind::Repair { actions } => format!("repair ({} actions)", actions.len()),
        EntryKind::Custom { custom_type, .. } => format!("custom {custom_type}"),
        EntryKind::Unknown => "(unknown entry kind)".into(),
    }
}

/// One line for a message: who said it and the start of what they said.
pub fn describe_message(message: &Message) -> String {
    let one_line = |text: &str| shorten(&text.replace('\n', " "), 70);
    match message {
        Message::User(user) => {
            format!("user: {}", one_line(&crate::render::user_text(&user.content)))
        }
        Message::Assistant(assistant) => {
            let calls: Vec<&str> = assistant.tool_calls().map(|call| call.name.as_str()).collect();
            let text = assistant.text();
            match (text.trim().is_empty(), calls.is_empty()) {
                (false, _) => format!("assistant: {}", one_line(&text)),
                (true, false) => format!("assistant: calls {}", calls.join(", ")),
                (true, true) => "assistant: (no text)".into(),
            }
        }
        Message::ToolResult(result) => {
            let status = if result.is_error { "error" } else { "ok" };
            let first = result
                .content
                .iter()
                .find_map(ContentBlock::as_text)
                .map(|text| one_line(text.lines().next().unwrap_or_default()))
                .unwrap_or_default();
            format!("{} {status}: {first}", result.tool_name)
        }
    }
}

/// `rein branch SESSION ENTRY [--summarize]`.
pub async fn branch(
    client: &mut Client,
    session: &str,
    entry: &str,
    summarize: bool,
) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    let params = BranchParams { session_id, entry_id: Some(entry.to_string()), summarize };
    let result: BranchResult = client.request::<rq::SessionBranch>(params).await?;
    let mut text = format!("active leaf: {}\n", result.leaf_id.as_deref().unwrap_or("(empty)"));
    if let Some(summary) = &result.summary_entry_id {
        text.push_str(&format!("branch summary: {summary}\n"));
    }
    Ok(Report::new(result, text))
}

/// `rein compact SESSION [--instructions TEXT]`.
pub async fn compact(
    client: &mut Client,
    session: &str,
    instructions: Option<String>,
) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    let params = CompactParams { session_id, instructions };
    let result: CompactResult = client.request::<rq::SessionCompact>(params).await?;
    let text = format!(
        "compacted: {} → {} tokens (entry {})\n{}\n",
        result.tokens_before,
        result.tokens_after,
        result.entry_id,
        result.summary.trim_end()
    );
    Ok(Report::new(result, text))
}

/// Which queue `queue` puts a message in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    /// Steer the running run.
    Steer,
    /// A follow-up run.
    FollowUp,
}

/// `rein steer SESSION TEXT` and `rein follow-up SESSION TEXT`.
pub async fn queue(
    client: &mut Client,
    session: &str,
    kind: QueueKind,
    text: &str,
) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    let params = QueueMessageParams { session_id, text: text.to_string(), images: Vec::new() };
    let result: QueueMessageResult = match kind {
        QueueKind::Steer => client.request::<rq::SessionSteer>(params).await?,
        QueueKind::FollowUp => client.request::<rq::SessionFollowUp>(params).await?,
    };
    let text = if result.started_run {
        "the session was idle: started a run\n".to_string()
    } else {
        format!("queued ({})\n", result.id)
    };
    Ok(Report::new(result, text))
}

/// `rein cancel SESSION`.
pub async fn cancel(client: &mut Client, session: &str) -> Result<Report, ClientError> {
    let session_id = resolve::session_id(client, session).await?;
    let result: CancelResult =
        client.request::<rq::SessionCancel>(SessionRef { session_id }).await?;
    let text = if result.cancelled { "cancelled\n" } else { "nothing to cancel\n" };
    Ok(Report::new(result, text.to_string()))
}

/// `rein export SESSION [--format md|jsonl]`: the exported text is the report's text.
pub async fn export(
    client: &mut Client,
    session: &str,
    format: ExportFormat,
) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    let result = crate::session::export_all(client, &session_id, format).await?;
    let mut text = result.content.clone();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Report::new(result, text))
}

/// `rein label SESSION ENTRY TEXT`.
pub async fn label(
    client: &mut Client,
    session: &str,
    entry: &str,
    label: &str,
) -> Result<Report, ClientError> {
    let session_id = open(client, session).await?;
    let params = LabelParams {
        session_id,
        entry_id: entry.to_string(),
        label: (!label.is_empty()).then(|| label.to_string()),
    };
    let result = client.request::<rq::SessionLabel>(params).await?;
    Ok(Report::new(result, format!("labelled {entry}: {label}\n")))
}

/// `rein trust [DIR] [--revoke] [--force]`.
pub async fn trust(
    client: &mut Client,
    dir: &Path,
    revoke: bool,
    force: bool,
) -> Result<Report, ClientError> {
    let path = dir.display().to_string();
    let params = TrustParams { path: path.clone(), trusted: !revoke, force };
    let result = client.request::<rq::TrustSet>(params).await?;
    let text = if revoke {
        format!("no longer trusted: {path}\n")
    } else {
        format!(
            "trusted: {path}\n(its AGENTS.md, skills and project settings are read from now on)\n"
        )
    };
    Ok(Report::new(result, text))
}

/// Runs the slash commands whose whole answer is a report from the daemon (`/model` without a
/// name, `/compact`, `/branch`, `/tree`, `/label`, `/sessions`, `/trust`), the same way in every
/// interactive client, for `session` in project `cwd`. `None` for any other command, which the
/// client handles itself.
pub async fn slash_report(
    client: &mut Client,
    session: &str,
    cwd: &Path,
    slash: &crate::interactive::input::Slash,
) -> Option<Result<Report, ClientError>> {
    use crate::interactive::input::Slash;
    Some(match slash {
        Slash::Model(None) => models(client).await,
        Slash::Compact(instructions) => compact(client, session, instructions.clone()).await,
        Slash::Branch { entry, summarize } => branch(client, session, entry, *summarize).await,
        Slash::Tree => tree(client, session).await,
        Slash::Label { entry, text } => label(client, session, entry, text).await,
        Slash::Sessions => sessions(client, Some(cwd)).await,
        Slash::Trust { revoke } => trust(client, cwd, *revoke, false).await,
        _ => return None,
    })
}

/// `rein models`.
pub async fn models(client: &mut Client) -> Result<Report, ClientError> {
    let result: ModelsResult = client.request::<rq::ModelsList>(Empty {}).await?;
    let text = format_models(&result);
    Ok(Report::new(result, text))
}

/// `rein mcp list`.
pub async fn mcp_list(
    client: &mut Client,
    session_id: Option<String>,
) -> Result<Report, ClientError> {
    let params = rein_protocol::mcp::McpListParams { session_id };
    let result: rein_protocol::mcp::McpListResult = client.request::<rq::McpList>(params).await?;
    let text = format_mcp_servers(&result);
    Ok(Report::new(result, text))
}

/// The MCP server table: name, scope, transport, state, restarts, then tools or the error.
pub fn format_mcp_servers(result: &rein_protocol::mcp::McpListResult) -> String {
    if result.servers.is_empty() {
        return "no MCP servers configured (add [mcp_servers.NAME] to config.toml)\n".into();
    }
    let mut text = String::new();
    for server in &result.servers {
        text.push_str(&format!(
            "{:<20} {:<8} {:<6} {:<9} restarts {}\n",
            server.name,
            word(&server.scope),
            word(&server.transport),
            word(&server.state),
            server.restarts
        ));
        if let Some(error) = &server.error {
            text.push_str(&format!("    error: {error}\n"));
        }
        for tool in &server.tools {
            text.push_str(&format!("    {tool}\n"));
        }
    }
    text
}

/// The snake_case word a unit enum serializes to.
fn word<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|value| value.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The model table; `*` marks the default. Prices are US dollars per million input and output
/// tokens; `?` marks a model rein knows nothing about (defaults apply, see docs/config.md).
pub fn format_models(result: &ModelsResult) -> String {
    let mut text = String::new();
    match &result.default_model {
        Some(default) => text.push_str(&format!("default: {default}\n")),
        None => text.push_str(
            "default: none (set `model` in config.toml, rein login PROVIDER, or start a local model server)\n",
        ),
    }
    for model in &result.models {
        let reference = model.reference().to_string();
        let marker =
            if result.default_model.as_deref() == Some(reference.as_str()) { '*' } else { ' ' };
        let price = if model.known {
            format!("${:.2}/${:.2}", model.cost.input, model.cost.output)
        } else {
            "?".to_string()
        };
        text.push_str(&format!(
            "{marker} {reference:<45} {:>8} ctx  {price:>15} per Mtok  {}\n",
            model.context_window,
            model.api.as_str()
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::UserMessage;
    use rein_protocol::model::{Api, ModelCost, ModelInfo};

    fn entry(id: &str, parent: Option<&str>, kind: EntryKind) -> SessionEntry {
        SessionEntry {
            id: id.into(),
            parent_id: parent.map(str::to_string),
            timestamp: "2026-11-30T10:00:00Z".into(),
            kind,
        }
    }

    fn user(text: &str) -> EntryKind {
        EntryKind::Message { message: Message::User(UserMessage::text(text, 0)).into() }
    }

    #[test]
    fn the_tree_indents_at_branches_and_marks_the_active_path() {
        let entries = vec![
            entry("a", None, user("first")),
            entry("b", Some("a"), user("second try")),
            entry("c", Some("a"), user("other way")),
            entry("d", Some("c"), user("and on")),
            entry(
                "l",
                Some("d"),
                EntryKind::Label { target_id: "b".into(), label: Some("old".into()) },
            ),
        ];
        let text = format_tree(&entries, Some("l"));
        let expected = "\
* a  user: first
    b  user: second try  [old]
*   c  user: other way
*   d  user: and on
*   l  label b: old  ← leaf
";
        assert_eq!(text, expected);
        assert_eq!(format_tree(&[], None), "(empty session)\n");
    }

    #[test]
    fn session_rows_show_id_time_and_title() {
        let summary = SessionSummary {
            session_id: "0193a5c2".into(),
            cwd: "/p".into(),
            name: None,
            first_prompt: Some("fix the lexer".into()),
            entry_count: 12,
            size_bytes: 100,
            created: "2026-11-30T10:00:00Z".into(),
            updated: "2026-11-30T10:04:12.5Z".into(),
            path: "/x".into(),
            loaded: true,
            running: false,
        };
        let text = format_sessions(std::slice::from_ref(&summary), false);
        assert_eq!(text, "0193a5c2  2026-11-30 10:04:12    12 entries  loaded   fix the lexer\n");
        assert!(format_sessions(&[summary], true).ends_with("  (/p)\n"));
        assert_eq!(format_sessions(&[], false), "no sessions\n");
    }

    #[test]
    fn the_model_table_marks_the_default() {
        let model = ModelInfo {
            provider: "local".into(),
            id: "m".into(),
            name: "M".into(),
            api: Api::OpenAiChat,
            context_window: 32768,
            max_output_tokens: 100,
            images: false,
            reasoning: false,
            cost: ModelCost { input: 1.0, output: 2.0, ..ModelCost::default() },
            known: true,
        };
        let result = ModelsResult { default_model: Some("local/m".into()), models: vec![model] };
        let text = format_models(&result);
        assert!(text.starts_with("default: local/m\n* local/m "), "{text}");
        assert!(text.contains("$1.00/$2.00 per Mtok"), "{text}");
        assert!(format_models(&ModelsResult::default()).contains("rein login"));
    }
}
