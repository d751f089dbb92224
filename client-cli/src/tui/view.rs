//! Drawing the app: the transcript (scrolled to its end unless scrolled back), the approval
//! dialog or session picker over it, the status line, the input box and a hint line.

use super::app::{App, Approval, Picker};
use super::diff;
use super::keys::KeyAction;
use super::theme::{Role, Symbol, Theme, ascii_only};
use super::wrap::wrap_text;
use crate::render::summarize_arguments;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use rein_protocol::method::SessionSummary;
use serde_json::Value;
use std::time::Instant;
use unicode_width::UnicodeWidthStr;

/// The most lines the input box grows to.
const INPUT_LINES: usize = 6;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &App, now: Instant) {
    let area = frame.area();
    let theme = app.theme;
    let width = area.width.max(1) as usize;
    let input_lines = app.editor.text().split('\n').count().clamp(1, INPUT_LINES);
    let [body, status, rule, input, hint] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Length(input_lines as u16),
        Constraint::Length(1),
    ])
    .areas(area);

    // An overlay (approval dialog, picker) takes the bottom of the body; the transcript ends
    // above it, so what led to the question stays in view.
    let overlay = if let Some(approval) = app.approvals.first().filter(|_| app.reason_for.is_none())
    {
        let lines = dialog_lines(approval, app.approvals.len(), body, theme);
        let height = (lines.len() as u16 + 2).min(body.height);
        Some(Overlay::Approval(lines, height))
    } else {
        app.picker.as_ref().map(|picker| Overlay::Picker(picker, picker_height(picker, body)))
    };
    let overlay_height = match &overlay {
        Some(Overlay::Approval(_, height) | Overlay::Picker(_, height)) => *height,
        None => 0,
    };
    let body_full = body;
    let body = Rect { height: body.height - overlay_height, ..body };

    // The transcript, its end at the bottom of the body.
    let lines = app.transcript.lines(width, theme, app.view, now);
    let height = body.height as usize;
    let max_scroll = lines.len().saturating_sub(height);
    let scroll = app.scroll.min(max_scroll);
    let end = lines.len() - scroll;
    let start = end.saturating_sub(height);
    let shown: Vec<Line<'static>> = lines[start..end].to_vec();
    let pad = height.saturating_sub(shown.len());
    let body_area =
        Rect { y: body.y + pad as u16, height: (shown.len() as u16).min(body.height), ..body };
    frame.render_widget(Paragraph::new(shown), body_area);

    match overlay {
        Some(Overlay::Approval(lines, height)) => {
            approval_dialog(frame, body_full, lines, height, approval_title(app), theme)
        }
        Some(Overlay::Picker(picker, height)) => {
            picker_dialog(frame, body_full, picker, height, app)
        }
        None => {}
    }

    let status_text = app.status_text(now, width.saturating_sub(1));
    let status_line = format!(" {status_text}");
    frame.render_widget(
        Paragraph::new(Line::styled(fit_width(&status_line, width), theme.style(Role::Status))),
        status,
    );
    let rule_char = if theme.unicode { "─" } else { "-" };
    let rule_text = if scroll > 0 {
        format!(
            "{} {scroll} lines below ({}) ",
            rule_char.repeat(2),
            app.keys.first(KeyAction::ScrollDown)
        )
    } else {
        String::new()
    };
    let rule_line =
        format!("{rule_text}{}", rule_char.repeat(width.saturating_sub(rule_text.width())));
    frame.render_widget(Paragraph::new(Line::styled(rule_line, theme.style(Role::Dim))), rule);

    // The input box, its cursor line in view.
    let prompt = if app.reason_for.is_some() {
        "reason: "
    } else if theme.unicode {
        "› "
    } else {
        "> "
    };
    let text = app.editor.text();
    let (cursor_line, cursor_column) = app.editor.cursor_position();
    let first_shown = (cursor_line + 1).saturating_sub(INPUT_LINES);
    let input_text: Vec<Line<'static>> = text
        .split('\n')
        .enumerate()
        .skip(first_shown)
        .take(INPUT_LINES)
        .map(|(at, line)| {
            let lead = if at == 0 { prompt.to_string() } else { " ".repeat(prompt.width()) };
            Line::from(vec![
                Span::styled(lead, theme.style(Role::User)),
                Span::raw(line.to_string()),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(input_text), input);
    let x = input.x + (prompt.width() + cursor_column).min(width.saturating_sub(1)) as u16;
    let y = input.y + (cursor_line - first_shown) as u16;
    if app.approvals.is_empty() || app.reason_for.is_some() {
        frame.set_cursor_position(Position { x, y });
    }

    let keys = &app.keys;
    let hint_text = match (&app.hint, app.approvals.is_empty(), app.running) {
        (Some(hint), _, _) => hint.clone(),
        (None, false, _) => {
            "y allow once · a allow for the session · n deny · r deny with a reason".into()
        }
        (None, true, true) => format!(
            "{} steers · {} cancels the run · {} cancels and clears the queue · {} tool output",
            keys.first(KeyAction::Submit),
            keys.first(KeyAction::Cancel),
            keys.first(KeyAction::Interrupt),
            keys.first(KeyAction::ExpandTools),
        ),
        (None, true, false) => format!(
            "{} sends · {} new line · {} completes · /help · {} leaves",
            keys.first(KeyAction::Submit),
            keys.first(KeyAction::Newline),
            keys.first(KeyAction::Complete),
            keys.first(KeyAction::Interrupt),
        ),
    };
    let hint_text = if theme.unicode { hint_text } else { hint_text.replace('·', "|") };
    frame.render_widget(
        Paragraph::new(Line::styled(fit_width(&hint_text, width), theme.style(Role::Dim))),
        hint,
    );

    if !theme.unicode {
        let buffer = frame.buffer_mut();
        for cell in buffer.content.iter_mut() {
            if !cell.symbol().is_ascii() {
                let replaced = ascii_only(cell.symbol());
                cell.set_symbol(&replaced);
            }
        }
    }
}

/// `text` cut to `width` columns.
fn fit_width(text: &str, width: usize) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) > width {
            break;
        }
        out.push(c);
    }
    out
}

/// The lines of an approval dialog: what the call does (the command, or the diff) and why it
/// asks.
pub fn approval_lines(approval: &Approval, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let tool = &approval.tool_name;
    match (tool.as_str(), &approval.diff) {
        ("bash", _) => {
            let command =
                approval.arguments.get("command").and_then(Value::as_str).unwrap_or_default();
            lines.push(Line::styled("run this command?".to_string(), theme.style(Role::Plain)));
            for line in wrap_text(command, width.saturating_sub(2), theme.style(Role::Code), "$ ") {
                lines.push(line);
            }
        }
        (_, Some(diff_text)) => {
            let path = approval.arguments.get("path").and_then(Value::as_str).unwrap_or_default();
            let (added, removed) = diff::counts(diff_text);
            lines.push(Line::styled(
                format!("{tool} {path} (+{added} -{removed})?"),
                theme.style(Role::Plain),
            ));
            lines.extend(diff::lines(diff_text, theme));
        }
        _ => {
            let summary = summarize_arguments(tool, &approval.arguments);
            lines.push(Line::styled(format!("{tool} {summary}?"), theme.style(Role::Plain)));
        }
    }
    lines.extend(wrap_text(
        &format!("why: {}", approval.reason),
        width,
        theme.style(Role::Dim),
        "",
    ));
    lines
}

/// What covers the bottom of the transcript.
enum Overlay<'a> {
    Approval(Vec<Line<'static>>, u16),
    Picker(&'a Picker, u16),
}

fn approval_title(app: &App) -> String {
    let tool = app.approvals.first().map(|a| a.tool_name.as_str()).unwrap_or_default();
    format!(" approval needed: {tool} ")
}

/// The dialog's lines (without its frame), cut to fit the body.
fn dialog_lines(
    approval: &Approval,
    waiting: usize,
    body: Rect,
    theme: Theme,
) -> Vec<Line<'static>> {
    let inner_width = body.width.saturating_sub(2) as usize;
    let mut lines = approval_lines(approval, inner_width, theme);
    let keys = format!(
        "[y] allow once  [a] allow for the session  [n] deny  [r] deny with a reason{}",
        if waiting > 1 { format!("  ({} more waiting)", waiting - 1) } else { String::new() }
    );
    // At most two thirds of the body, so some of the transcript stays in view.
    let max_inner = (body.height as usize * 2 / 3).saturating_sub(2).max(3);
    if lines.len() + 1 > max_inner {
        let keep = max_inner.saturating_sub(2);
        let hidden = lines.len() - keep;
        lines.truncate(keep);
        lines.push(Line::styled(
            format!("{} {hidden} more lines", theme.symbol(Symbol::Ellipsis)),
            theme.style(Role::Dim),
        ));
    }
    lines.push(Line::styled(keys, theme.style(Role::Notice)));
    lines
}

fn approval_dialog(
    frame: &mut Frame<'_>,
    body: Rect,
    lines: Vec<Line<'static>>,
    height: u16,
    title: String,
    theme: Theme,
) {
    let area = Rect { y: body.y + body.height - height, height, ..body };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Frame))
        .title(Span::styled(title, theme.style(Role::Notice)));
    let block = if theme.unicode { block } else { block.border_set(ascii_border()) };
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

fn ascii_border() -> ratatui::symbols::border::Set<'static> {
    ratatui::symbols::border::Set {
        top_left: "+",
        top_right: "+",
        bottom_left: "+",
        bottom_right: "+",
        vertical_left: "|",
        vertical_right: "|",
        horizontal_top: "-",
        horizontal_bottom: "-",
    }
}

fn picker_height(picker: &Picker, body: Rect) -> u16 {
    let rows = picker.sessions.len().max(1) as u16 + 3;
    rows.min(body.height * 2 / 3).max(4).min(body.height)
}

/// How many leading characters of the ids tell the listed sessions apart (at least 8). Ids
/// begin with their creation time, so sessions made within a minute share 8 or more.
fn distinguishing_width(sessions: &[SessionSummary]) -> usize {
    let longest = sessions.iter().map(|s| s.session_id.len()).max().unwrap_or(0);
    let mut width = 8;
    while width < longest {
        let mut prefixes: Vec<&str> =
            sessions.iter().map(|s| s.session_id.get(..width).unwrap_or(&s.session_id)).collect();
        prefixes.sort_unstable();
        prefixes.dedup();
        if prefixes.len() == sessions.len() {
            break;
        }
        width += 1;
    }
    width
}

fn picker_dialog(frame: &mut Frame<'_>, body: Rect, picker: &Picker, height: u16, app: &App) {
    let theme = app.theme;
    let inner = body.width.saturating_sub(4) as usize;
    let id_width = distinguishing_width(&picker.sessions);
    let mut lines: Vec<Line<'static>> = picker
        .sessions
        .iter()
        .enumerate()
        .map(|(at, session)| {
            let title =
                session.name.clone().or_else(|| session.first_prompt.clone()).unwrap_or_default();
            let when = session.updated.get(..16).unwrap_or(&session.updated).replace('T', " ");
            let id = session.session_id.get(..id_width).unwrap_or(&session.session_id);
            let text = fit_width(&format!("{id}  {when}  {title}"), inner);
            let style = if at == picker.selected {
                theme.style(Role::Status)
            } else {
                theme.style(Role::Plain)
            };
            Line::styled(text, style)
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled(
            "no other session with a prompt in this directory",
            theme.style(Role::Dim),
        ));
    }
    let visible = height.saturating_sub(3) as usize;
    let first = picker.selected.saturating_sub(visible.saturating_sub(1));
    let mut shown: Vec<Line<'static>> = lines.into_iter().skip(first).take(visible).collect();
    let keys = format!(
        "↑/↓ choose · {} opens · {} closes",
        app.keys.first(KeyAction::Submit),
        app.keys.first(KeyAction::Cancel)
    );
    shown.push(Line::styled(keys, theme.style(Role::Dim)));
    let area = Rect { y: body.y + body.height - height, height, ..body };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Frame))
        .title(" resume a session ");
    let block = if theme.unicode { block } else { block.border_set(ascii_border()) };
    frame.render_widget(Paragraph::new(shown).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::app::Action;
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;
    use rein_protocol::event::{
        ApprovalDecision, AssistantDelta, ClientIdentity, EventEnvelope, SessionEvent,
    };
    use rein_protocol::message::{Message, ToolResultMessage, UserMessage};
    use rein_protocol::method::SessionState;
    use serde_json::json;
    use std::time::Duration;

    fn state(cwd: &std::path::Path) -> SessionState {
        let state = json!({
            "session_id": "0193a5c2-7f3e", "cwd": cwd.display().to_string(),
            "model": {"provider": "fake", "model": "test-model"}, "thinking_level": "medium",
            "approval_policy": "ask", "running": false, "queues": {"steering": [], "follow_up": []},
            "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 1200,
                "cost": {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "total": 0.0123}},
            "context_tokens": 6400, "context_window": 32000, "trusted": true, "last_seq": 0,
            "stream": "s1"
        });
        serde_json::from_value(state).unwrap_or_else(|e| panic!("{e}"))
    }

    fn envelope(seq: u64, event: SessionEvent) -> EventEnvelope {
        EventEnvelope { session_id: "0193a5c2-7f3e".into(), seq, timestamp: 0, event, client: None }
    }

    fn text(delta: &str) -> SessionEvent {
        SessionEvent::MessageUpdate {
            delta: AssistantDelta::TextDelta { index: 0, delta: delta.into() },
        }
    }

    fn screen(app: &App, now: Instant, size: (u16, u16)) -> (String, ratatui::buffer::Buffer) {
        let mut terminal =
            Terminal::new(TestBackend::new(size.0, size.1)).unwrap_or_else(|e| panic!("{e}"));
        terminal.draw(|frame| draw(frame, app, now)).unwrap_or_else(|e| panic!("{e}"));
        let buffer = terminal.backend().buffer().clone();
        let mut lines = Vec::new();
        for y in 0..buffer.area.height {
            let line: String = (0..buffer.area.width)
                .map(|x| {
                    buffer.cell((x, y)).map(|cell| cell.symbol().to_string()).unwrap_or_default()
                })
                .collect();
            lines.push(line.trim_end().to_string());
        }
        (lines.join("\n"), buffer)
    }

    /// A run with streamed Markdown, a failed command and an edit waiting for approval, on a
    /// 60x22 screen without colour.
    #[test]
    fn a_run_with_a_failing_command_and_an_edit_approval() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("app.py"), "def greet():\n    return 'hi'\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let mut app = App::new(&state(dir.path()), theme, Vec::new(), start);
        let events = vec![
            SessionEvent::AgentStart { run_id: "r1".into() },
            SessionEvent::MessageStart {
                message: Message::User(UserMessage::text("fix the greeting", 0)),
            },
            text("I'll **run** the"),
            text(" tests first."),
            SessionEvent::ToolExecutionStart {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                arguments: json!({"command": "pytest -q"}),
            },
            SessionEvent::ToolExecutionUpdate {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![rein_protocol::message::ContentBlock::text("collected 3 items\n")],
            },
        ];
        for (seq, event) in events.into_iter().enumerate() {
            app.apply(&envelope(seq as u64 + 1, event), start);
        }
        let running = screen(&app, start + Duration::from_millis(3200), (60, 22)).0;
        assert!(running.contains("→ bash pytest -q  (3.2 s)"), "{running}");
        assert!(running.contains("  │ collected 3 items"), "{running}");
        assert!(running.contains(" running `bash` 3.2 s · context 20% · $0.0123"), "{running}");

        let output =
            (1..=12).map(|n| format!("line {n}\n")).collect::<String>() + "FAILED test_greet\n";
        let end = SessionEvent::ToolExecutionEnd {
            tool_call_id: "c1".into(),
            tool_name: "bash".into(),
            result: ToolResultMessage {
                tool_call_id: "c1".into(),
                tool_name: "bash".into(),
                content: vec![rein_protocol::message::ContentBlock::text(output)],
                is_error: true,
                details: Some(json!({"exitCode": 1, "durationMs": 4100})),
                timestamp: 0,
            },
        };
        app.apply(&envelope(7, end), start);
        app.apply(
            &envelope(
                8,
                SessionEvent::ApprovalRequested {
                    request_id: "ap-1".into(),
                    tool_call_id: "c2".into(),
                    tool_name: "edit".into(),
                    arguments: json!({"path": "app.py", "edits": [{"oldText": "return 'hi'", "newText": "return 'hello'"}]}),
                    reason: "edit always asks under the ask policy".into(),
                },
            ),
            start,
        );
        let (shown, _) = screen(&app, start + Duration::from_secs(5), (60, 22));
        // The last lines of the failure stay in view above the dialog.
        let expected = "  │ line 9
  │ line 10
  │ line 11
  │ line 12
  │ FAILED test_greet
approval needed: edit app.py (edit always asks under the ask
policy)
┌ approval needed: edit ───────────────────────────────────┐
│edit app.py (+1 -1)?                                      │
│  --- a/app.py                                            │
│  +++ b/app.py                                            │
│  @@ -1,2 +1,2 @@                                         │
│   def greet():                                           │
│  -    return 'hi'                                        │
│  +    return 'hello'                                     │
│why: edit always asks under the ask policy                │
│[y] allow once  [a] allow for the session  [n] deny  [r] d│
└──────────────────────────────────────────────────────────┘
 waiting for approval 5.0 s · context 20% · approve ask
────────────────────────────────────────────────────────────
›
y allow once · a allow for the session · n deny · r deny wit";
        assert_eq!(shown, expected, "\n{shown}");

        // Keys go to the dialog: y answers, nothing is typed.
        let actions = app.key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE), start);
        assert_eq!(
            actions,
            [Action::Answer {
                request_id: "ap-1".into(),
                decision: ApprovalDecision::AllowOnce,
                reason: None
            }]
        );
        assert!(app.editor.is_empty());
        // Answered in another terminal: the dialog closes and says who.
        let resolved = EventEnvelope {
            client: Some(ClientIdentity {
                name: "rein".into(),
                pid: Some(42),
                tty: Some("/dev/pts/7".into()),
            }),
            ..envelope(
                9,
                SessionEvent::ApprovalResolved {
                    request_id: "ap-1".into(),
                    decision: ApprovalDecision::AllowOnce,
                    reason: None,
                    resolved_by: "rein".into(),
                },
            )
        };
        app.apply(&resolved, start);
        let (after, _) = screen(&app, start + Duration::from_secs(6), (60, 22));
        assert!(!after.contains("approval needed: edit ─"), "{after}");
        assert!(after.contains("approved once by rein (pid 42, /dev/pts/7)"), "{after}");
        // A late y is held back once instead of becoming a prompt.
        app.key(KeyEvent::new(KeyCode::Char('y'), KeyModifiers::NONE), start);
        let held = app
            .key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE), start + Duration::from_secs(1));
        assert!(held.is_empty());
        assert_eq!(app.editor.text(), "y");
    }

    #[test]
    fn colours_mark_failures_and_diffs_and_ascii_replaces_symbols() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let mut app =
            App::new(&state(dir.path()), Theme { color: true, unicode: true }, Vec::new(), start);
        app.transcript.tool_start(
            "c1",
            "write",
            &json!({"path": "n.txt", "content": "new\n"}),
            start,
        );
        let ended = crate::tui::transcript::Ended {
            id: "c1",
            name: "write",
            output: "wrote",
            is_error: false,
            details: None,
        };
        app.transcript.tool_end(ended, start);
        app.transcript.tool_start("c2", "bash", &json!({"command": "false"}), start);
        let failed = crate::tui::transcript::Ended {
            id: "c2",
            name: "bash",
            output: "",
            is_error: true,
            details: Some(&json!({"exitCode": 1})),
        };
        app.transcript.tool_end(failed, start);
        let (shown, buffer) = screen(&app, start, (40, 12));
        let row = shown
            .lines()
            .position(|line| line.contains("+new"))
            .unwrap_or_else(|| panic!("{shown}"));
        let column =
            shown.lines().nth(row).and_then(|line| line.find('+')).unwrap_or_default() as u16;
        let cell = buffer.cell((column, row as u16)).unwrap_or_else(|| panic!("no cell"));
        assert_eq!(cell.fg, ratatui::style::Color::Green);
        let top = shown.lines().position(|line| line.starts_with('✓')).unwrap_or_default();
        let check = buffer.cell((0, top as u16)).map(|cell| cell.fg);
        assert_eq!(check, Some(ratatui::style::Color::Green), "{shown}");
        // A failure is another colour: red.
        let bottom = shown.lines().position(|line| line.starts_with("✗ bash false"));
        let bottom = bottom.unwrap_or_else(|| panic!("{shown}"));
        let cross = buffer.cell((0, bottom as u16)).map(|cell| cell.fg);
        assert_eq!(cross, Some(ratatui::style::Color::Red), "{shown}");

        app.theme = Theme { color: false, unicode: false };
        let (ascii, buffer) = screen(&app, start, (40, 12));
        assert!(ascii.contains("\n+ write n.txt  (+1 -0)\n"), "{ascii}");
        assert!(
            buffer
                .content
                .iter()
                .all(|cell| cell.symbol().is_ascii() && cell.fg == ratatui::style::Color::Reset),
            "{ascii}"
        );
    }

    #[test]
    fn fenced_code_is_painted_by_its_grammar_in_ansi_colours_only() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let theme = Theme { color: true, unicode: true };
        let mut app = App::new(&state(dir.path()), theme, Vec::new(), start);
        let answer = "Like this:\n\n```rust\nfn main() {\n    let s = \"hi\"; // greet\n}\n```\n";
        app.apply(&envelope(1, text(answer)), start);
        let (shown, buffer) = screen(&app, start, (50, 12));
        let find = |needle: &str| {
            let row = shown.lines().position(|line| line.contains(needle));
            let row = row.unwrap_or_else(|| panic!("no {needle} in\n{shown}"));
            let column = shown.lines().nth(row).and_then(|line| line.find(needle)).unwrap_or(0);
            // Columns count characters; the lines here are ASCII up to the needle.
            buffer.cell((column as u16, row as u16)).map(|cell| cell.fg)
        };
        use ratatui::style::Color;
        assert!(shown.contains("  fn main() {\n      let s = \"hi\"; // greet\n  }"), "{shown}");
        assert_eq!(find("fn main"), Some(Color::LightMagenta), "{shown}");
        assert_eq!(find("let"), Some(Color::LightMagenta), "{shown}");
        assert_eq!(find("\"hi\""), Some(Color::LightGreen), "{shown}");
        assert_eq!(find("// greet"), Some(Color::DarkGray), "{shown}");
        assert_eq!(find("main"), Some(Color::LightCyan), "{shown}");
        // Only the 16 ANSI colours: a 16-colour terminal shows all of it.
        let indexed_or_rgb =
            buffer.content.iter().any(|cell| matches!(cell.fg, Color::Rgb(..) | Color::Indexed(_)));
        assert!(!indexed_or_rgb, "{shown}");
        app.theme = Theme { color: false, unicode: true };
        let (_, plain) = screen(&app, start, (50, 12));
        assert!(plain.content.iter().all(|cell| cell.fg == Color::Reset));
    }

    /// On 80x24 a long change still leaves the question, its keys, the status line, the input
    /// and some of the transcript on screen.
    #[test]
    fn a_big_change_waiting_for_approval_fits_80x24() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let mut app = App::new(&state(dir.path()), theme, Vec::new(), start);
        app.apply(&envelope(1, SessionEvent::AgentStart { run_id: "r".into() }), start);
        let user = Message::User(UserMessage::text("write the module", 0));
        app.apply(&envelope(2, SessionEvent::MessageStart { message: user }), start);
        app.apply(&envelope(3, text("Writing `big.rs` with every case spelled out.")), start);
        let content: String = (1..=60).map(|n| format!("const C{n}: u32 = {n};\n")).collect();
        let ask = SessionEvent::ApprovalRequested {
            request_id: "ap".into(),
            tool_call_id: "c".into(),
            tool_name: "write".into(),
            arguments: json!({"path": "big.rs", "content": content}),
            reason: "write always asks under the ask policy".into(),
        };
        app.apply(&envelope(4, ask), start);
        let (shown, _) = screen(&app, start + Duration::from_secs(2), (80, 24));
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines.len(), 24, "{shown}");
        assert!(lines.iter().any(|l| l.contains("Writing big.rs with every case")), "{shown}");
        assert!(lines.iter().any(|l| l.contains("write big.rs (+60 -0)?")), "{shown}");
        assert!(lines.iter().any(|l| l.contains("more lines")), "{shown}");
        assert!(
            lines.iter().any(|l| l.contains(
                "[y] allow once  [a] allow for the session  [n] deny  [r] deny with a reason"
            )),
            "{shown}"
        );
        assert!(lines[20].starts_with(" waiting for approval 2.0 s · "), "{shown}");
        assert_eq!(lines[22], "›", "{shown}");
        assert!(lines[23].starts_with("y allow once · a allow for the session"), "{shown}");
    }

    #[test]
    fn the_picker_shows_as_much_of_each_id_as_tells_them_apart() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let mut app = App::new(&state(dir.path()), theme, Vec::new(), start);
        let summary = crate::interactive::slash::tests::summary;
        // Made in the same minute: the first 13 characters are the same.
        let sessions = vec![
            summary("01a234db-ff2b-7066-bcd4-5be0e29f710b", "the fork"),
            summary("01a234db-ff2b-70a1-8c3e-1d2f3a4b5c6d", "the original"),
        ];
        app.picker = Some(crate::tui::app::Picker { sessions, selected: 0 });
        let (shown, _) = screen(&app, start, (80, 12));
        assert!(shown.contains("│01a234db-ff2b-706  2026-12-01 20:01  the fork"), "{shown}");
        assert!(shown.contains("│01a234db-ff2b-70a  2026-12-01 20:01  the original"), "{shown}");
        let one = vec![summary("01a234db-ff2b-7066-bcd4-5be0e29f710b", "alone")];
        assert_eq!(distinguishing_width(&one), 8);
    }

    #[test]
    fn the_hints_name_the_configured_keys() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let start = Instant::now();
        let theme = Theme { color: false, unicode: true };
        let mut app = App::new(&state(dir.path()), theme, Vec::new(), start);
        let (shown, _) = screen(&app, start, (80, 6));
        assert!(
            shown.ends_with(
                "Enter sends · Alt-Enter new line · Tab completes · /help · Ctrl-C leaves"
            ),
            "{shown}"
        );
        let toml = "[keys]\nsubmit = \"ctrl-s\"\nnewline = [\"enter\", \"ctrl-j\"]\ninterrupt = \"ctrl-q\"\n";
        app.keys = crate::tui::keys::KeyMap::from_toml(toml, std::path::Path::new("tui.toml"))
            .unwrap_or_else(|e| panic!("{e}"));
        let (shown, _) = screen(&app, start, (80, 6));
        assert!(
            shown
                .ends_with("Ctrl-S sends · Enter new line · Tab completes · /help · Ctrl-Q leaves"),
            "{shown}"
        );
    }
}
