//! The transcript: what happened in the session as cells (prompts, answers, reasoning, tool
//! calls, notices), built from the session's events and laid out for the screen.
//!
//! Text streams into the open answer cell delta by delta; a tool cell shows the live tail of
//! its output while it runs, then its outcome (✓ or ✗ with the exit code, the last lines of a
//! failure) and, for `edit` and `write`, the coloured diff. Everything is pure: the screen is
//! drawn from [`Transcript::lines`] at the current width.

use super::diff;
use super::markdown;
use super::theme::{Role, Symbol, Theme, sanitize};
use super::wrap::{wrap, wrap_text};
use crate::render::summarize_arguments;
use ratatui::text::{Line, Span};
use rein_protocol::message::ContentBlock;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Lines of a running tool's output shown under it.
const LIVE_TAIL: usize = 5;
/// Lines of a failed tool's output shown under it (its last ones).
const FAILURE_TAIL: usize = 8;
/// Lines of a diff shown under a tool call before it is expanded.
const DIFF_LINES: usize = 40;

/// How a tool call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEnd {
    /// Whether it failed.
    pub is_error: bool,
    /// The exit code of a command.
    pub exit_code: Option<i64>,
    /// How long it took.
    pub duration: Option<Duration>,
}

/// What a finished tool call reports.
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    /// The call id.
    pub id: &'a str,
    /// The tool.
    pub name: &'a str,
    /// Its full output.
    pub output: &'a str,
    /// Whether it failed.
    pub is_error: bool,
    /// Its details (`exitCode`, `durationMs`, `diff`).
    pub details: Option<&'a Value>,
}

/// One tool call (or `!command`) and its output.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCell {
    /// The call id (or the shell command's id).
    pub id: String,
    /// The tool, `!` for a shell command typed by a person.
    pub name: String,
    /// The arguments.
    pub arguments: Value,
    /// The output so far (the full output once ended).
    pub output: String,
    /// The change it makes, for `edit` and `write`.
    pub diff: Option<String>,
    /// When it started (for the elapsed time while it runs).
    pub started: Instant,
    /// How it ended; `None` while it runs.
    pub end: Option<ToolEnd>,
    /// It waits for an approval (the dialog shows its diff; the cell does not repeat it).
    pub asking: bool,
}

/// One block of the transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A prompt (from any attached client).
    User(String),
    /// The assistant's answer, Markdown.
    Answer(String),
    /// The model's reasoning.
    Thinking(String),
    /// A tool call.
    Tool(ToolCell),
    /// Something rein says, with its look.
    Notice(String, Role),
}

/// How the transcript is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ViewOptions {
    /// Show every tool's full output and whole diffs.
    pub expand_tools: bool,
    /// Show reasoning in full instead of one line.
    pub show_thinking: bool,
}

/// The keys the transcript's hints name (`Ctrl-O expands`), as `tui.toml` binds them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyNames {
    /// The key that expands tool output.
    pub expand_tools: String,
    /// The key that shows reasoning whole.
    pub show_thinking: String,
}

impl Default for KeyNames {
    fn default() -> Self {
        Self { expand_tools: "Ctrl-O".into(), show_thinking: "Ctrl-T".into() }
    }
}

/// What a cell's laid-out lines depend on: cells only grow (text is appended, a tool ends
/// once), so their size and state tell whether the lines kept from the last frame still hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LayoutKey {
    width: usize,
    theme: Theme,
    view: ViewOptions,
    size: usize,
    finished: bool,
}

fn layout_key(cell: &Cell, width: usize, theme: Theme, view: ViewOptions) -> Option<LayoutKey> {
    let (size, finished) = match cell {
        Cell::User(text) | Cell::Answer(text) | Cell::Thinking(text) | Cell::Notice(text, _) => {
            (text.len(), true)
        }
        // A running tool shows its elapsed time: laid out every frame.
        Cell::Tool(tool) if tool.end.is_none() => return None,
        Cell::Tool(tool) => (tool.output.len() + tool.diff.as_ref().map_or(0, String::len), true),
    };
    Some(LayoutKey { width, theme, view, size, finished })
}

/// A cell's lines and what they were laid out for.
type KeptLayout = (LayoutKey, Vec<Line<'static>>);

/// The cells, oldest first.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// The cells (change them through the methods, which keep the layout cache right).
    pub cells: Vec<Cell>,
    /// Each cell's lines as last laid out, so a frame lays out only what changed (Markdown of
    /// a long answer is not parsed again for every tick of the status line).
    layout: std::cell::RefCell<Vec<Option<KeptLayout>>>,
    /// The answer or reasoning cell that still receives deltas. A notice arriving meanwhile
    /// (another client changed the model, say) goes below it without ending it, so the
    /// streamed text is never broken in the middle of a word.
    open: Option<usize>,
    /// The project directory, for diffs against files on disk.
    cwd: PathBuf,
    /// The keys the hints name.
    keys: KeyNames,
}

impl Transcript {
    /// An empty transcript for a session in `cwd`.
    pub fn new(cwd: &Path) -> Self {
        Self {
            cells: Vec::new(),
            layout: Default::default(),
            open: None,
            cwd: cwd.to_path_buf(),
            keys: KeyNames::default(),
        }
    }

    /// Names `keys` in the hints from now on.
    pub fn set_key_names(&mut self, keys: KeyNames) {
        if self.keys != keys {
            self.keys = keys;
            self.layout.borrow_mut().clear();
        }
    }

    /// Removes every cell (`/clear`).
    pub fn clear(&mut self) {
        self.cells.clear();
        self.layout.borrow_mut().clear();
        self.open = None;
    }

    /// Adds a notice (below a streaming answer, which goes on receiving its text).
    pub fn notice(&mut self, text: impl Into<String>, role: Role) {
        self.cells.push(Cell::Notice(text.into(), role));
    }

    /// Adds a prompt.
    pub fn user(&mut self, text: &str) {
        self.close();
        self.cells.push(Cell::User(text.to_string()));
    }

    /// Appends streamed answer text.
    pub fn answer_delta(&mut self, delta: &str) {
        match self.open.and_then(|at| self.cells.get_mut(at)) {
            Some(Cell::Answer(text)) => text.push_str(delta),
            _ => {
                self.cells.push(Cell::Answer(delta.to_string()));
                self.open = Some(self.cells.len() - 1);
            }
        }
    }

    /// Appends streamed reasoning.
    pub fn thinking_delta(&mut self, delta: &str) {
        match self.open.and_then(|at| self.cells.get_mut(at)) {
            Some(Cell::Thinking(text)) => text.push_str(delta),
            _ => {
                self.cells.push(Cell::Thinking(delta.to_string()));
                self.open = Some(self.cells.len() - 1);
            }
        }
    }

    /// Ends the streaming cell (a message ended, or something else happened).
    pub fn close(&mut self) {
        self.open = None;
    }

    /// A tool call starts; `edit` and `write` get their diff against the file as it is now.
    pub fn tool_start(&mut self, id: &str, name: &str, arguments: &Value, now: Instant) {
        let diff = diff::proposed(name, arguments, &self.cwd);
        self.tool_cell(id, name, arguments, diff, now);
    }

    /// A tool call from the session's history: the file on disk may have changed since, so
    /// no diff is computed (a finished `edit` reports its own).
    pub fn past_tool(&mut self, id: &str, name: &str, arguments: &Value, now: Instant) {
        self.tool_cell(id, name, arguments, None, now);
    }

    fn tool_cell(
        &mut self,
        id: &str,
        name: &str,
        arguments: &Value,
        diff: Option<String>,
        now: Instant,
    ) {
        self.close();
        self.cells.push(Cell::Tool(ToolCell {
            id: id.to_string(),
            name: name.to_string(),
            arguments: arguments.clone(),
            output: String::new(),
            diff,
            started: now,
            end: None,
            asking: false,
        }));
    }

    fn tool_mut(&mut self, id: &str) -> Option<&mut ToolCell> {
        self.cells.iter_mut().rev().find_map(|cell| match cell {
            Cell::Tool(tool) if tool.id == id => Some(tool),
            _ => None,
        })
    }

    /// Marks whether a tool call waits for an approval.
    pub fn set_asking(&mut self, id: &str, asking: bool) {
        if let Some(tool) = self.tool_mut(id) {
            tool.asking = asking;
        }
    }

    /// More output of a running tool.
    pub fn tool_output(&mut self, id: &str, content: &[ContentBlock]) {
        if let Some(tool) = self.tool_mut(id) {
            for block in content {
                if let ContentBlock::Text { text, .. } = block {
                    tool.output.push_str(text);
                }
            }
        }
    }

    /// More output of a running tool, as text.
    pub fn tool_text(&mut self, id: &str, text: &str) {
        if let Some(tool) = self.tool_mut(id) {
            tool.output.push_str(text);
        }
    }

    /// A tool call ended with its full `output`; `details` may hold its exit code, duration
    /// and diff.
    pub fn tool_end(&mut self, ended: Ended<'_>, now: Instant) {
        let Ended { id, name, output, is_error, details } = ended;
        if self.tool_mut(id).is_none() {
            // Its start was not seen (attached later, or lost in a gap).
            self.past_tool(id, name, &Value::Null, now);
        }
        let Some(tool) = self.tool_mut(id) else { return };
        let exit_code = details.and_then(|d| d.get("exitCode")).and_then(Value::as_i64);
        let duration = details
            .and_then(|d| d.get("durationMs"))
            .and_then(Value::as_u64)
            .map(Duration::from_millis)
            .or_else(|| Some(now.saturating_duration_since(tool.started)));
        if let Some(reported) = diff::reported(details) {
            tool.diff = Some(reported);
        }
        if is_error {
            // A failed edit changed nothing.
            tool.diff = tool.diff.take().filter(|_| tool.name != "edit" && tool.name != "write");
        }
        tool.output = output.to_string();
        tool.end = Some(ToolEnd { is_error, exit_code, duration });
    }

    /// Marks tools still running as cut off (the daemon went away under them).
    pub fn interrupt_running(&mut self) {
        for cell in &mut self.cells {
            if let Cell::Tool(tool) = cell
                && tool.end.is_none()
            {
                tool.end = Some(ToolEnd { is_error: true, exit_code: None, duration: None });
                tool.output.push_str("\n(interrupted: the daemon went away)");
            }
        }
        self.close();
    }

    /// Finished tool calls, oldest first.
    pub fn tools(&self) -> impl Iterator<Item = &ToolCell> {
        self.cells.iter().filter_map(|cell| match cell {
            Cell::Tool(tool) => Some(tool),
            _ => None,
        })
    }

    /// Every cell laid out at `width`, with a blank line between cells.
    pub fn lines(
        &self,
        width: usize,
        theme: Theme,
        view: ViewOptions,
        now: Instant,
    ) -> Vec<Line<'static>> {
        let mut lines = Vec::new();
        let mut layout = self.layout.borrow_mut();
        layout.resize(self.cells.len(), None);
        for (cell, kept) in self.cells.iter().zip(layout.iter_mut()) {
            let key = layout_key(cell, width, theme, view);
            let cell_lines = match (key, kept.as_ref()) {
                (Some(key), Some((kept_key, kept_lines))) if *kept_key == key => kept_lines.clone(),
                _ => {
                    let fresh = cell_lines(cell, width, theme, view, &self.keys, now);
                    *kept = key.map(|key| (key, fresh.clone()));
                    fresh
                }
            };
            if cell_lines.is_empty() {
                continue;
            }
            if !lines.is_empty() && needs_gap(cell) {
                lines.push(Line::default());
            }
            lines.extend(cell_lines);
        }
        lines
    }
}

fn needs_gap(cell: &Cell) -> bool {
    matches!(cell, Cell::User(_) | Cell::Answer(_) | Cell::Tool(_) | Cell::Thinking(_))
}

fn cell_lines(
    cell: &Cell,
    width: usize,
    theme: Theme,
    view: ViewOptions,
    keys: &KeyNames,
    now: Instant,
) -> Vec<Line<'static>> {
    match cell {
        Cell::User(text) => {
            let style = theme.style(Role::User);
            let marker = if theme.unicode { "› " } else { "> " };
            sanitize(text)
                .split('\n')
                .enumerate()
                .flat_map(|(at, line)| {
                    let first = if at == 0 { marker } else { "  " };
                    wrap(
                        &[Span::styled(line.to_string(), style)],
                        width,
                        Span::styled(first, style),
                        Span::styled("  ", style),
                    )
                })
                .collect()
        }
        Cell::Answer(text) => markdown::render(&sanitize(text), width, theme),
        Cell::Thinking(text) => {
            let dim = theme.style(Role::Dim);
            let text = sanitize(text);
            let text = text.trim();
            if text.is_empty() {
                return Vec::new();
            }
            if view.show_thinking {
                wrap_text(text, width, dim, "  ")
            } else {
                let count = text.lines().count();
                let first = text.lines().next().unwrap_or_default();
                let more = if count > 1 {
                    format!(" (+{} lines, {} shows)", count - 1, keys.show_thinking)
                } else {
                    String::new()
                };
                let summary = format!("thinking: {first}{more}");
                vec![Line::styled(
                    shorten_to(&summary, width, theme),
                    dim.add_modifier(ratatui::style::Modifier::ITALIC),
                )]
            }
        }
        Cell::Tool(tool) => tool_lines(tool, width, theme, view, keys, now),
        Cell::Notice(text, role) => wrap_text(&sanitize(text), width, theme.style(*role), ""),
    }
}

/// `text` cut to `width` columns with an ellipsis.
pub(super) fn shorten_to(text: &str, width: usize, theme: Theme) -> String {
    use unicode_width::UnicodeWidthStr;
    if text.width() <= width {
        return text.to_string();
    }
    let ellipsis = theme.symbol(Symbol::Ellipsis);
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + ellipsis.width() + unicode_width::UnicodeWidthChar::width(c).unwrap_or(0)
            > width
        {
            break;
        }
        out.push(c);
    }
    out + ellipsis
}

/// Seconds with one decimal: `3.2 s`.
pub fn seconds(duration: Duration) -> String {
    format!("{:.1} s", duration.as_secs_f64())
}

fn tool_lines(
    tool: &ToolCell,
    width: usize,
    theme: Theme,
    view: ViewOptions,
    keys: &KeyNames,
    now: Instant,
) -> Vec<Line<'static>> {
    let summary = if tool.name == "!" {
        tool.arguments.get("command").and_then(Value::as_str).unwrap_or_default().to_string()
    } else {
        summarize_arguments(&tool.name, &tool.arguments)
    };
    let name = if tool.name == "!" { "$".to_string() } else { tool.name.clone() };
    let (symbol, role) = match &tool.end {
        None => (theme.symbol(Symbol::Arrow), Role::Tool),
        Some(end) if end.is_error => (theme.symbol(Symbol::Cross), Role::Bad),
        Some(_) => (theme.symbol(Symbol::Check), Role::Good),
    };
    let mut detail = Vec::new();
    match &tool.end {
        None => detail.push(seconds(now.saturating_duration_since(tool.started))),
        Some(end) => {
            if let Some(code) = end.exit_code.filter(|code| *code != 0 || end.is_error) {
                detail.push(format!("exit {code}"));
            }
            if let Some(duration) = end.duration.filter(|d| *d >= Duration::from_millis(100)) {
                detail.push(seconds(duration));
            }
        }
    }
    if let Some(diff) = &tool.diff {
        let (added, removed) = diff::counts(diff);
        detail.push(format!("+{added} -{removed}"));
    }
    let mut header = vec![
        Span::styled(format!("{symbol} "), theme.style(role)),
        Span::styled(
            format!("{name} "),
            theme.style(role).add_modifier(ratatui::style::Modifier::BOLD),
        ),
        Span::styled(sanitize(&summary), theme.style(Role::Plain)),
    ];
    if !detail.is_empty() {
        header.push(Span::styled(format!("  ({})", detail.join(", ")), theme.style(Role::Dim)));
    }
    let mut lines = wrap(&header, width, Span::raw(""), Span::raw("    "));
    let gutter = format!("  {} ", theme.symbol(Symbol::Gutter));
    let output = sanitize(&tool.output);
    let output_lines: Vec<&str> = output.trim_end().lines().collect();
    let dim = theme.style(Role::Dim);
    let show = |from: usize, lines: &mut Vec<Line<'static>>, style| {
        if from > 0 {
            let hidden = format!(
                "{gutter}{} {from} earlier lines ({} expands)",
                theme.symbol(Symbol::Ellipsis),
                keys.expand_tools
            );
            lines.push(Line::styled(hidden, dim));
        }
        for line in &output_lines[from..] {
            lines.extend(wrap(
                &[Span::styled(line.to_string(), style)],
                width,
                Span::styled(gutter.clone(), dim),
                Span::styled(gutter.clone(), dim),
            ));
        }
    };
    let is_change = tool.diff.is_some() && matches!(tool.name.as_str(), "edit" | "write");
    match &tool.end {
        None => {
            if !is_change {
                show(output_lines.len().saturating_sub(LIVE_TAIL), &mut lines, dim);
            }
        }
        Some(_) if view.expand_tools => show(0, &mut lines, theme.style(Role::Plain)),
        Some(end) if end.is_error => {
            show(
                output_lines.len().saturating_sub(FAILURE_TAIL),
                &mut lines,
                theme.style(Role::Plain),
            );
        }
        Some(_) if is_change => {}
        Some(_) => {
            if let Some(first) = output_lines.first() {
                let more = match output_lines.len() {
                    1 => String::new(),
                    n => format!(" (+{} lines)", n - 1),
                };
                let text = shorten_to(&format!("{gutter}{first}{more}"), width, theme);
                lines.push(Line::styled(text, dim));
            }
        }
    }
    if let Some(diff_text) = tool.diff.as_ref().filter(|_| !tool.asking) {
        let painted = diff::lines(diff_text, theme);
        let total = painted.len();
        let shown = if view.expand_tools { total } else { total.min(DIFF_LINES) };
        lines.extend(painted.into_iter().take(shown));
        if shown < total {
            lines.push(Line::styled(
                format!(
                    "  {} {} more diff lines ({} expands)",
                    theme.symbol(Symbol::Ellipsis),
                    total - shown,
                    keys.expand_tools
                ),
                dim,
            ));
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn streamed_text_extends_the_open_answer_and_kept_layouts_follow_changes() {
        let now = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let view = ViewOptions::default();
        let mut transcript = Transcript::new(Path::new("/tmp"));
        transcript.user("hi");
        transcript.answer_delta("Hel");
        assert_eq!(text(&transcript.lines(40, theme, view, now)), ["› hi", "", "Hel"]);
        transcript.answer_delta("lo **there**");
        assert_eq!(text(&transcript.lines(40, theme, view, now)), ["› hi", "", "Hello there"]);
        assert_eq!(text(&transcript.lines(8, theme, view, now)), ["› hi", "", "Hello", "there"]);
        transcript.close();
        transcript.answer_delta("Next");
        assert_eq!(transcript.cells.len(), 3);
        transcript.clear();
        transcript.notice("fresh", Role::Notice);
        assert_eq!(text(&transcript.lines(40, theme, view, now)), ["fresh"]);
    }

    #[test]
    fn a_notice_arriving_mid_word_does_not_break_the_streamed_answer() {
        let now = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let view = ViewOptions::default();
        let mut transcript = Transcript::new(Path::new("/tmp"));
        transcript.thinking_delta("pon");
        transcript.notice("model: fake/other", Role::Notice);
        transcript.thinking_delta("dering");
        transcript.answer_delta("The fix is rea");
        transcript.notice("approval policy: yolo", Role::Notice);
        transcript.answer_delta("dy now.");
        let shown =
            text(&transcript.lines(40, theme, ViewOptions { show_thinking: true, ..view }, now));
        assert_eq!(
            shown,
            [
                "  pondering",
                "model: fake/other",
                "",
                "The fix is ready now.",
                "approval policy: yolo"
            ]
        );
        // Something that is not a notice (a tool call, a prompt) ends the answer.
        transcript.tool_start("c", "read", &serde_json::json!({"path": "a"}), now);
        transcript.answer_delta("Next answer");
        assert!(matches!(transcript.cells.last(), Some(Cell::Answer(t)) if t == "Next answer"));
    }

    #[test]
    fn reasoning_is_one_dim_line_until_shown() {
        let now = Instant::now();
        let theme = Theme::default();
        let mut transcript = Transcript::new(Path::new("/tmp"));
        transcript.thinking_delta("first idea\nsecond");
        transcript.thinking_delta(" idea");
        let collapsed = transcript.lines(60, theme, ViewOptions::default(), now);
        assert_eq!(text(&collapsed), ["thinking: first idea (+1 lines, Ctrl-T shows)"]);
        assert!(collapsed[0].style.add_modifier.contains(ratatui::style::Modifier::DIM));
        transcript.set_key_names(KeyNames { show_thinking: "F2".into(), ..KeyNames::default() });
        let renamed = transcript.lines(60, theme, ViewOptions::default(), now);
        assert_eq!(text(&renamed), ["thinking: first idea (+1 lines, F2 shows)"]);
        let shown = ViewOptions { expand_tools: false, show_thinking: true };
        assert_eq!(
            text(&transcript.lines(60, theme, shown, now)),
            ["  first idea", "  second idea"]
        );
    }

    #[test]
    fn a_failed_tool_keeps_its_last_lines_and_its_exit_code() {
        let now = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let mut transcript = Transcript::new(Path::new("/tmp"));
        transcript.tool_start("c", "bash", &serde_json::json!({"command": "make"}), now);
        let output: String = (1..=20).map(|n| format!("step {n}\n")).collect();
        let details = serde_json::json!({"exitCode": 2, "durationMs": 1500});
        let ended = Ended {
            id: "c",
            name: "bash",
            output: &output,
            is_error: true,
            details: Some(&details),
        };
        transcript.tool_end(ended, now);
        let lines = text(&transcript.lines(60, theme, ViewOptions::default(), now));
        assert_eq!(lines[0], "✗ bash make  (exit 2, 1.5 s)");
        assert_eq!(lines.last().map(String::as_str), Some("  │ step 20"));
        assert_eq!(lines.len(), 1 + 1 + FAILURE_TAIL);
        let expanded = ViewOptions { expand_tools: true, show_thinking: false };
        assert_eq!(transcript.lines(60, theme, expanded, now).len(), 21);
    }
}
