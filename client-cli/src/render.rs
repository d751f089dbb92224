//! Turning session events into text for people.
//!
//! A [`Renderer`] follows one session's events and says what to print and where: the
//! assistant's text goes to standard output as it streams; reasoning (dimmed), tool activity,
//! approvals, retries and errors go to standard error, so `rein run > answer.txt` captures only
//! the answer. The renderer is pure (it returns [`Chunk`]s and prints nothing), so the one-shot
//! run and the interactive attach share it and tests can check its output.

use crate::style::{Paint, Style};
use rein_protocol::event::{
    ApprovalDecision, AssistantDelta, ClientIdentity, EndReason, EventEnvelope, HookDecision,
    SessionEvent,
};
use rein_protocol::message::{ContentBlock, Message};
use rein_protocol::verify::RunOutcome;
use serde_json::Value;

/// Where a chunk of output goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output: the assistant's answer.
    Out,
    /// Standard error: everything else.
    Err,
}

/// A piece of text to print on one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The stream.
    pub stream: Stream,
    /// The text (possibly a partial line).
    pub text: String,
}

/// How a renderer presents events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RenderOptions {
    /// Colours for the terminal.
    pub style: Style,
    /// A person is attached: show user messages (also those typed in other terminals), queue
    /// changes and how to answer approvals.
    pub interactive: bool,
}

/// A finished tool call, kept so its full output can be shown on request.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutcome {
    /// The tool.
    pub tool_name: String,
    /// Its arguments.
    pub arguments: Value,
    /// Its full output text.
    pub output: String,
    /// Whether it failed.
    pub is_error: bool,
}

/// The kind of block whose line is still open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
    Shell,
}

/// The longest tool argument summary or result preview shown on one line, in characters.
const PREVIEW_CHARS: usize = 120;

/// Follows one session's events and renders them.
#[derive(Debug, Default)]
pub struct Renderer {
    options: RenderOptions,
    open: Option<Open>,
    mid_line: Option<Stream>,
    pending_arguments: Vec<(String, Value)>,
    tools: Vec<ToolOutcome>,
}

impl Renderer {
    /// A renderer with `options`.
    pub fn new(options: RenderOptions) -> Self {
        Self { options, ..Self::default() }
    }

    /// Finished tool calls, oldest first.
    pub fn tool_outcomes(&self) -> &[ToolOutcome] {
        &self.tools
    }

    /// What to print for an event as delivered: an answered approval names the client that
    /// answered with its pid and terminal when it gave them.
    pub fn render_envelope(&mut self, envelope: &EventEnvelope) -> Vec<Chunk> {
        if let (SessionEvent::ApprovalResolved { decision, reason, .. }, Some(client)) =
            (&envelope.event, &envelope.client)
        {
            let mut out = Vec::new();
            let text = approval_text(*decision, reason.as_deref(), &client_text(client));
            let paint =
                if *decision == ApprovalDecision::Deny { Paint::Error } else { Paint::Notice };
            self.line(&mut out, paint, &text);
            return out;
        }
        self.render(&envelope.event)
    }

    /// What to print for `event`.
    pub fn render(&mut self, event: &SessionEvent) -> Vec<Chunk> {
        let mut out = Vec::new();
        match event {
            SessionEvent::MessageUpdate { delta } => self.delta(delta, &mut out),
            SessionEvent::MessageStart { message: Message::User(user) }
                if self.options.interactive =>
            {
                let text = user_text(&user.content);
                self.line(&mut out, Paint::User, &format!("you: {text}"));
            }
            SessionEvent::MessageEnd { .. } => self.close(&mut out),
            SessionEvent::ToolExecutionStart { tool_call_id, tool_name, arguments } => {
                self.pending_arguments.push((tool_call_id.clone(), arguments.clone()));
                let summary = summarize_arguments(tool_name, arguments);
                self.line(&mut out, Paint::Tool, &format!("→ {tool_name} {summary}"));
            }
            SessionEvent::ToolExecutionEnd { tool_call_id, tool_name, result } => {
                let arguments = self
                    .pending_arguments
                    .iter()
                    .position(|(id, _)| id == tool_call_id)
                    .map(|at| self.pending_arguments.remove(at).1)
                    .unwrap_or(Value::Null);
                let output = result.text();
                let preview = preview(&output);
                let (paint, text) = if result.is_error {
                    (Paint::Error, format!("  ✗ {tool_name}: {preview}"))
                } else {
                    (Paint::Tool, format!("  ✓ {tool_name}: {preview}"))
                };
                self.line(&mut out, paint, &text);
                self.tools.push(ToolOutcome {
                    tool_name: tool_name.clone(),
                    arguments,
                    output,
                    is_error: result.is_error,
                });
            }
            SessionEvent::AgentEnd { reason, error, usage, turns, outcome, .. } => {
                self.close(&mut out);
                match outcome {
                    RunOutcome::Verified => self.line(&mut out, Paint::Tool, "outcome: verified"),
                    RunOutcome::VerifyFailed => {
                        self.line(&mut out, Paint::Error, "outcome: verify_failed")
                    }
                    RunOutcome::Unverified => {}
                }
                if self.options.interactive && *reason == EndReason::Completed {
                    let text = format!(
                        "done: {turns} turn{}, {} tokens, ${:.4}",
                        if *turns == 1 { "" } else { "s" },
                        usage.total_tokens,
                        usage.cost.total
                    );
                    self.line(&mut out, Paint::Dim, &text);
                }
                if let Some(text) = end_reason_text(*reason, error.as_deref()) {
                    let paint =
                        if *reason == EndReason::Error { Paint::Error } else { Paint::Notice };
                    self.line(&mut out, paint, &text);
                }
            }
            SessionEvent::Error { error_kind, message, .. } => {
                self.close(&mut out);
                self.line(&mut out, Paint::Error, &format!("{error_kind} error: {message}"));
            }
            SessionEvent::AutoRetry { attempt, max_attempts, delay_ms, error } => {
                let text = format!(
                    "provider request failed ({error}); retry {attempt}/{max_attempts} in {delay_ms} ms"
                );
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::ApprovalRequested { tool_name, arguments, reason, .. } => {
                let summary = summarize_arguments(tool_name, arguments);
                let mut text = format!("approval needed: {tool_name} {summary} ({reason})");
                if self.options.interactive {
                    text.push_str(
                        "\n  answer y (allow once), a (allow for the session) or n [reason]",
                    );
                }
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::ApprovalResolved { decision, reason, resolved_by, .. } => {
                let text = approval_text(*decision, reason.as_deref(), resolved_by);
                let paint =
                    if *decision == ApprovalDecision::Deny { Paint::Error } else { Paint::Notice };
                self.line(&mut out, paint, &text);
            }
            SessionEvent::CompactionStart { reason } => {
                let reason = serde_json::to_value(reason).unwrap_or_default();
                let reason = reason.as_str().unwrap_or("manual").to_string();
                self.line(&mut out, Paint::Notice, &format!("compacting the context ({reason})…"));
            }
            SessionEvent::CompactionEnd { tokens_before, error, .. } => {
                let text = match error {
                    Some(error) => format!("compaction failed: {error}"),
                    None => format!("compacted ({tokens_before} tokens before)"),
                };
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::ModelChanged { model } => {
                self.line(&mut out, Paint::Notice, &format!("model: {model}"));
            }
            SessionEvent::ThinkingLevelChanged { level } => {
                self.line(&mut out, Paint::Notice, &format!("thinking: {}", level.as_str()));
            }
            SessionEvent::ApprovalPolicyChanged { policy } => {
                self.line(
                    &mut out,
                    Paint::Notice,
                    &format!("approval policy: {}", policy.as_str()),
                );
            }
            SessionEvent::QueueChanged { queues } if self.options.interactive => {
                let (steering, follow_up) = (queues.steering.len(), queues.follow_up.len());
                if steering + follow_up > 0 {
                    let text = format!("queued: {steering} steering, {follow_up} follow-up");
                    self.line(&mut out, Paint::Notice, &text);
                }
            }
            SessionEvent::LeafChanged { leaf_id } if self.options.interactive => {
                let leaf = leaf_id.as_deref().unwrap_or("(empty)");
                self.line(&mut out, Paint::Notice, &format!("active leaf: {leaf}"));
            }
            SessionEvent::VerifyStarted { round, max_rounds, commands, .. } => {
                let text = format!("verify {round}/{max_rounds}: {}", commands.join(" && "));
                self.line(&mut out, Paint::Tool, &text);
            }
            SessionEvent::VerifyFinished { checks, cancelled, .. } => {
                for check in checks {
                    let seconds = check.duration_ms as f64 / 1000.0;
                    let (paint, text) = match (check.passed, check.timed_out, check.exit_code) {
                        (true, _, _) => {
                            (Paint::Tool, format!("  ✓ {} ({seconds:.1} s)", check.command))
                        }
                        (false, true, _) => {
                            (Paint::Error, format!("  ✗ {}: timed out", check.command))
                        }
                        (false, false, Some(code)) => (
                            Paint::Error,
                            format!(
                                "  ✗ {}: exit {code}: {}",
                                check.command,
                                preview(&check.output_tail)
                            ),
                        ),
                        (false, false, None) => (
                            Paint::Error,
                            format!("  ✗ {}: {}", check.command, preview(&check.output_tail)),
                        ),
                    };
                    self.line(&mut out, paint, &text);
                }
                if *cancelled {
                    self.line(&mut out, Paint::Notice, "verification cancelled");
                }
            }
            SessionEvent::CheckpointFailed { error, .. } => {
                self.line(
                    &mut out,
                    Paint::Notice,
                    &format!("no checkpoint for this turn: {error}"),
                );
            }
            SessionEvent::CheckpointCreated { skipped, .. } if !skipped.is_empty() => {
                let names: Vec<&str> = skipped.iter().map(|file| file.path.as_str()).collect();
                let text =
                    format!("checkpoint left out files over the size cap: {}", names.join(", "));
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::UndoApplied { turn, restored, removed, requested_by, .. } => {
                let text = format!(
                    "undo to before turn {turn} by {requested_by}: {} restored, {} removed",
                    restored.len(),
                    removed.len()
                );
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::HookFinished { hook_event, command, decision, message, .. }
                if *decision != HookDecision::None =>
            {
                let decision = serde_json::to_value(decision)
                    .ok()
                    .and_then(|value| value.as_str().map(str::to_string))
                    .unwrap_or_default();
                let mut text = format!("hook {hook_event} ({command}): {decision}");
                if let Some(message) = message.as_deref().filter(|m| !m.trim().is_empty()) {
                    text.push_str(": ");
                    text.push_str(message.trim());
                }
                self.line(&mut out, Paint::Notice, &text);
            }
            SessionEvent::ShellStart { command, .. } => {
                self.line(&mut out, Paint::Tool, &format!("$ {command}"));
            }
            SessionEvent::ShellOutput { chunk, .. } => {
                self.switch(&mut out, Open::Shell);
                self.emit(&mut out, Stream::Out, None, chunk);
            }
            SessionEvent::ShellEnd { exit_code, cancelled, .. } => {
                let text = match (cancelled, exit_code) {
                    (true, _) => "shell command cancelled".to_string(),
                    (false, Some(code)) => format!("exit {code}"),
                    (false, None) => "shell command ended by a signal".to_string(),
                };
                self.line(&mut out, Paint::Tool, &text);
            }
            _ => {}
        }
        out
    }

    /// Ends any open line (call before printing something of your own).
    pub fn finish(&mut self) -> Vec<Chunk> {
        let mut out = Vec::new();
        self.close(&mut out);
        out
    }

    fn delta(&mut self, delta: &AssistantDelta, out: &mut Vec<Chunk>) {
        match delta {
            AssistantDelta::TextDelta { delta, .. } => {
                self.switch(out, Open::Text);
                self.emit(out, Stream::Out, None, delta);
            }
            AssistantDelta::ThinkingDelta { delta, .. } => {
                self.switch(out, Open::Thinking);
                self.emit(out, Stream::Err, Some(Paint::Dim), delta);
            }
            _ => {}
        }
    }

    /// Makes `kind` the open block, ending another block's line first.
    fn switch(&mut self, out: &mut Vec<Chunk>, kind: Open) {
        if self.open != Some(kind) {
            self.close(out);
            self.open = Some(kind);
        }
    }

    /// Ends the open block's line.
    fn close(&mut self, out: &mut Vec<Chunk>) {
        let Some(open) = self.open.take() else { return };
        let stream = match open {
            Open::Text | Open::Shell => Stream::Out,
            Open::Thinking => Stream::Err,
        };
        if self.mid_line == Some(stream) {
            out.push(Chunk { stream, text: "\n".into() });
        }
        self.mid_line = None;
    }

    fn emit(&mut self, out: &mut Vec<Chunk>, stream: Stream, paint: Option<Paint>, text: &str) {
        if text.is_empty() {
            return;
        }
        self.mid_line = if text.ends_with('\n') { None } else { Some(stream) };
        let text = match paint {
            Some(paint) => self.options.style.paint(paint, text),
            None => text.to_string(),
        };
        out.push(Chunk { stream, text });
    }

    /// A whole line on standard error.
    fn line(&mut self, out: &mut Vec<Chunk>, paint: Paint, text: &str) {
        self.close(out);
        let mut text = self.options.style.paint(paint, text);
        text.push('\n');
        out.push(Chunk { stream: Stream::Err, text });
    }
}

/// The text blocks of a user message, joined; images are shown as `[image]`.
pub fn user_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .map(|block| match block {
            ContentBlock::Text { text } => text.clone(),
            ContentBlock::Image { .. } => "[image]".to_string(),
            _ => String::new(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// One line saying what a tool call does: the main argument of the built-in tools (the
/// command of `bash`, the path of `read`, ...), else the arguments as compact JSON.
pub fn summarize_arguments(tool_name: &str, arguments: &Value) -> String {
    let key = match tool_name {
        "bash" => Some("command"),
        "read" | "write" | "edit" | "ls" => Some("path"),
        "grep" | "find" => Some("pattern"),
        _ => None,
    };
    let text = match key.and_then(|key| arguments.get(key)).and_then(Value::as_str) {
        Some(main) => main.to_string(),
        None => arguments.to_string(),
    };
    shorten(&text.replace('\n', " ⏎ "), PREVIEW_CHARS)
}

/// The first line of a tool's output, shortened, with how many lines were left out.
pub fn preview(output: &str) -> String {
    let trimmed = output.trim_end();
    if trimmed.is_empty() {
        return "(no output)".to_string();
    }
    let mut lines = trimmed.lines();
    let first = shorten(lines.next().unwrap_or_default(), PREVIEW_CHARS);
    match lines.count() {
        0 => first,
        more => format!("{first} (+{more} lines)"),
    }
}

/// `text` cut to at most `max` characters, with an ellipsis when cut.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut cut: String = text.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What to say when a run ends, or nothing for a normal completion.
pub fn end_reason_text(reason: EndReason, error: Option<&str>) -> Option<String> {
    match reason {
        EndReason::Completed => None,
        EndReason::Cancelled => Some("run cancelled".into()),
        EndReason::MaxTurns => Some("run stopped: the turn limit was reached".into()),
        EndReason::CostLimit => Some("run stopped: the cost limit was reached".into()),
        EndReason::TimeLimit => Some("run stopped: the time limit was reached".into()),
        EndReason::ToolFailureLimit => {
            Some("run stopped: too many turns in a row in which every tool call failed".into())
        }
        EndReason::Error => Some(format!("error: {}", error.unwrap_or("the run failed"))),
    }
}

/// A client as a person can tell it apart: `rein (pid 4242, /dev/pts/3)`.
pub fn client_text(client: &ClientIdentity) -> String {
    let details: Vec<String> =
        client.pid.map(|pid| format!("pid {pid}")).into_iter().chain(client.tty.clone()).collect();
    if details.is_empty() {
        client.name.clone()
    } else {
        format!("{} ({})", client.name, details.join(", "))
    }
}

/// What to say when an approval was answered.
pub fn approval_text(decision: ApprovalDecision, reason: Option<&str>, by: &str) -> String {
    let mut text = match decision {
        ApprovalDecision::AllowOnce => format!("approved once by {by}"),
        ApprovalDecision::AllowSession => format!("approved for this session by {by}"),
        ApprovalDecision::Deny => format!("denied by {by}"),
    };
    if let Some(reason) = reason.filter(|r| !r.is_empty()) {
        text.push_str(&format!(": {reason}"));
    }
    if decision == ApprovalDecision::Deny && by == "daemon" {
        text.push_str(
            "\n  no attached client can answer approvals; run `rein attach` to answer them, or \
             use --approve auto-edit or --approve yolo",
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::message::{ToolResultMessage, Usage, UserMessage};
    use serde_json::json;

    fn text(delta: &str) -> SessionEvent {
        SessionEvent::MessageUpdate {
            delta: AssistantDelta::TextDelta { index: 0, delta: delta.into() },
        }
    }

    fn thinking(delta: &str) -> SessionEvent {
        SessionEvent::MessageUpdate {
            delta: AssistantDelta::ThinkingDelta { index: 0, delta: delta.into() },
        }
    }

    fn joined(chunks: &[Chunk], stream: Stream) -> String {
        chunks.iter().filter(|c| c.stream == stream).map(|c| c.text.as_str()).collect()
    }

    fn render_all(renderer: &mut Renderer, events: &[SessionEvent]) -> Vec<Chunk> {
        events.iter().flat_map(|event| renderer.render(event)).collect()
    }

    fn end(reason: EndReason, error: Option<&str>) -> SessionEvent {
        SessionEvent::AgentEnd {
            run_id: "r".into(),
            reason,
            error: error.map(str::to_string),
            usage: Usage::default(),
            turns: 1,
            outcome: RunOutcome::Unverified,
        }
    }

    fn tool_end(id: &str, output: &str, is_error: bool) -> SessionEvent {
        SessionEvent::ToolExecutionEnd {
            tool_call_id: id.into(),
            tool_name: "bash".into(),
            result: ToolResultMessage {
                tool_call_id: id.into(),
                tool_name: "bash".into(),
                content: vec![ContentBlock::text(output)],
                is_error,
                details: None,
                timestamp: 0,
            },
        }
    }

    #[test]
    fn text_streams_to_stdout_and_thinking_to_stderr_with_lines_closed() {
        let mut renderer = Renderer::new(RenderOptions::default());
        let chunks = render_all(
            &mut renderer,
            &[thinking("let me "), thinking("see"), text("Hel"), text("lo"), end_message()],
        );
        assert_eq!(joined(&chunks, Stream::Out), "Hello\n");
        assert_eq!(joined(&chunks, Stream::Err), "let me see\n");
        // Each delta is its own chunk: the text streams as it arrives.
        assert_eq!(chunks.iter().filter(|c| c.stream == Stream::Out).count(), 3);
    }

    fn end_message() -> SessionEvent {
        SessionEvent::MessageEnd { message: Message::User(UserMessage::text("x", 0)).into() }
    }

    #[test]
    fn a_text_ending_in_a_newline_gets_no_extra_one() {
        let mut renderer = Renderer::new(RenderOptions::default());
        let chunks = render_all(&mut renderer, &[text("done\n"), end_message()]);
        assert_eq!(joined(&chunks, Stream::Out), "done\n");
    }

    #[test]
    fn thinking_is_dimmed_when_coloured() {
        let options = RenderOptions { style: Style::new(true), interactive: false };
        let mut renderer = Renderer::new(options);
        let chunks = render_all(&mut renderer, &[thinking("hmm")]);
        assert_eq!(joined(&chunks, Stream::Err), "\x1b[2mhmm\x1b[0m");
    }

    #[test]
    fn tool_calls_show_arguments_and_a_short_result_and_keep_the_full_output() {
        let mut renderer = Renderer::new(RenderOptions::default());
        let chunks = render_all(
            &mut renderer,
            &[
                text("Looking"),
                SessionEvent::ToolExecutionStart {
                    tool_call_id: "c1".into(),
                    tool_name: "bash".into(),
                    arguments: json!({"command": "ls -la"}),
                },
                tool_end("c1", "a\nb\nc\n", false),
            ],
        );
        assert_eq!(joined(&chunks, Stream::Out), "Looking\n");
        assert_eq!(joined(&chunks, Stream::Err), "→ bash ls -la\n  ✓ bash: a (+2 lines)\n");
        let outcomes = renderer.tool_outcomes();
        assert_eq!(outcomes.len(), 1);
        assert_eq!(outcomes[0].output, "a\nb\nc\n");
        assert_eq!(outcomes[0].arguments, json!({"command": "ls -la"}));
        let failed = renderer.render(&tool_end("c2", "boom", true));
        assert_eq!(joined(&failed, Stream::Err), "  ✗ bash: boom\n");
    }

    #[test]
    fn run_endings_other_than_completion_are_reported() {
        let mut renderer = Renderer::new(RenderOptions::default());
        assert!(renderer.render(&end(EndReason::Completed, None)).is_empty());
        let mut attached =
            Renderer::new(RenderOptions { style: Style::plain(), interactive: true });
        let done = attached.render(&end(EndReason::Completed, None));
        assert_eq!(joined(&done, Stream::Err), "done: 1 turn, 0 tokens, $0.0000\n");
        let chunks = renderer.render(&end(EndReason::Error, Some("HTTP 500")));
        assert_eq!(joined(&chunks, Stream::Err), "error: HTTP 500\n");
        let chunks = renderer.render(&end(EndReason::MaxTurns, None));
        assert!(joined(&chunks, Stream::Err).contains("turn limit"));
    }

    #[test]
    fn user_messages_and_approval_hints_only_when_interactive() {
        let prompt =
            SessionEvent::MessageStart { message: Message::User(UserMessage::text("hi", 0)) };
        let request = SessionEvent::ApprovalRequested {
            request_id: "a".into(),
            tool_call_id: "c".into(),
            tool_name: "bash".into(),
            arguments: json!({"command": "rm x"}),
            reason: "bash asks".into(),
        };
        let mut plain = Renderer::new(RenderOptions::default());
        assert!(plain.render(&prompt).is_empty());
        let text = joined(&plain.render(&request), Stream::Err);
        assert_eq!(text, "approval needed: bash rm x (bash asks)\n");
        let mut attached =
            Renderer::new(RenderOptions { style: Style::plain(), interactive: true });
        assert_eq!(joined(&attached.render(&prompt), Stream::Err), "you: hi\n");
        assert!(joined(&attached.render(&request), Stream::Err).contains("answer y"));
    }

    #[test]
    fn a_denial_by_the_daemon_explains_itself() {
        let client =
            ClientIdentity { name: "rein".into(), pid: Some(7), tty: Some("/dev/pts/3".into()) };
        assert_eq!(client_text(&client), "rein (pid 7, /dev/pts/3)");
        assert_eq!(
            client_text(&ClientIdentity { name: "vim".into(), ..client.clone() }.clone()),
            "vim (pid 7, /dev/pts/3)"
        );
        assert_eq!(client_text(&ClientIdentity { name: "x".into(), pid: None, tty: None }), "x");
        let text = approval_text(ApprovalDecision::Deny, Some("no approver"), "daemon");
        assert!(text.starts_with("denied by daemon: no approver"), "{text}");
        assert!(text.contains("--approve"));
        assert_eq!(
            approval_text(ApprovalDecision::AllowOnce, None, "rein"),
            "approved once by rein"
        );
    }

    #[test]
    fn argument_summaries_and_previews_are_short() {
        assert_eq!(summarize_arguments("read", &json!({"path": "src/a.rs"})), "src/a.rs");
        assert_eq!(summarize_arguments("mytool", &json!({"x": 1})), r#"{"x":1}"#);
        let long = "x".repeat(500);
        assert_eq!(summarize_arguments("bash", &json!({"command": long})).chars().count(), 120);
        assert_eq!(preview(""), "(no output)");
        assert_eq!(preview("one\n"), "one");
        assert_eq!(shorten("abcdef", 4), "abc…");
    }
}
