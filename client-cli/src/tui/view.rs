//! Drawing the app: the transcript (scrolled to its end unless scrolled back), the approval
//! dialog or session picker over it, the status line, the input box and a hint line.

use super::app::{App, Approval, Picker};
use super::diff;
use super::theme::{Role, Symbol, Theme, ascii_only};
use super::wrap::wrap_text;
use crate::render::summarize_arguments;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Position, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
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

    if let Some(approval) = app.approvals.first().filter(|_| app.reason_for.is_none()) {
        approval_dialog(
            frame,
            body,
            approval,
            app.approvals.len(),
            theme,
            app.session.cwd.as_path(),
        );
    } else if let Some(picker) = &app.picker {
        picker_dialog(frame, body, picker, theme);
    }

    let status_text = app.status_text(now);
    let status_line = format!(" {status_text}");
    frame.render_widget(
        Paragraph::new(Line::styled(fit_width(&status_line, width), theme.style(Role::Status))),
        status,
    );
    let rule_char = if theme.unicode { "─" } else { "-" };
    let rule_text = if scroll > 0 {
        format!("{} {scroll} lines below (PageDown) ", rule_char.repeat(2))
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

    let hint_text = match (&app.hint, app.approvals.is_empty(), app.running) {
        (Some(hint), _, _) => hint.clone(),
        (None, false, _) => "y allow once · a allow for the session · n deny · r deny with a reason".into(),
        (None, true, true) => "Enter steers · Esc cancels the run · Ctrl-C cancels and clears the queue · Ctrl-O tool output".into(),
        (None, true, false) => "Enter sends · Alt-Enter new line · Tab completes · /help · Ctrl-C leaves".into(),
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
pub fn approval_lines(
    approval: &Approval,
    width: usize,
    theme: Theme,
    cwd: &std::path::Path,
) -> Vec<Line<'static>> {
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
            let _ = cwd;
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

fn approval_dialog(
    frame: &mut Frame<'_>,
    body: Rect,
    approval: &Approval,
    waiting: usize,
    theme: Theme,
    cwd: &std::path::Path,
) {
    let inner_width = body.width.saturating_sub(2) as usize;
    let mut lines = approval_lines(approval, inner_width, theme, cwd);
    let keys = format!(
        "[y] allow once  [a] allow for the session  [n] deny  [r] deny with a reason{}",
        if waiting > 1 { format!("  ({} more waiting)", waiting - 1) } else { String::new() }
    );
    let max_inner = body.height.saturating_sub(2) as usize;
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
    let height = (lines.len() as u16 + 2).min(body.height);
    let area = Rect { y: body.y + body.height - height, height, ..body };
    frame.render_widget(Clear, area);
    let title = format!(" approval needed: {} ", approval.tool_name);
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

fn picker_dialog(frame: &mut Frame<'_>, body: Rect, picker: &Picker, theme: Theme) {
    let inner = body.width.saturating_sub(4) as usize;
    let mut lines: Vec<Line<'static>> = picker
        .sessions
        .iter()
        .enumerate()
        .map(|(at, session)| {
            let title =
                session.name.clone().or_else(|| session.first_prompt.clone()).unwrap_or_default();
            let when = session.updated.get(..16).unwrap_or(&session.updated).replace('T', " ");
            let id = session.session_id.get(..8).unwrap_or(&session.session_id);
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
    let visible = body.height.saturating_sub(3) as usize;
    let first = picker.selected.saturating_sub(visible.saturating_sub(1));
    let mut shown: Vec<Line<'static>> = lines.into_iter().skip(first).take(visible).collect();
    shown.push(Line::styled("↑/↓ choose · Enter opens · Esc closes", theme.style(Role::Dim)));
    let height = (shown.len() as u16 + 2).min(body.height);
    let area = Rect { y: body.y + body.height - height, height, ..body };
    frame.render_widget(Clear, area);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.style(Role::Frame))
        .title(" resume a session ");
    let block = if theme.unicode { block } else { block.border_set(ascii_border()) };
    frame.render_widget(Paragraph::new(shown).block(block), area);
}
