//! Terminal styling: whether to colour output, and the few styles `rein` uses.
//!
//! Colour is used only when the stream is a terminal and `NO_COLOR` is unset (or empty, as
//! <https://no-color.org> asks). Everything else prints plain text.

use std::io::IsTerminal;

/// The styles `rein` paints text with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paint {
    /// Reasoning: dimmed.
    Dim,
    /// Tool activity: cyan.
    Tool,
    /// Errors: red.
    Error,
    /// Notices (session id, retries, queue changes): yellow.
    Notice,
    /// The user's own messages: bold.
    User,
}

impl Paint {
    fn code(self) -> &'static str {
        match self {
            Self::Dim => "2",
            Self::Tool => "36",
            Self::Error => "31",
            Self::Notice => "33",
            Self::User => "1",
        }
    }
}

/// Whether to emit ANSI colour codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    color: bool,
}

impl Style {
    /// A style that colours when `color` is true.
    pub fn new(color: bool) -> Self {
        Self { color }
    }

    /// Plain text only.
    pub fn plain() -> Self {
        Self { color: false }
    }

    /// Colour when `is_terminal` and `no_color` (the value of `NO_COLOR`) is unset or empty.
    pub fn decide(is_terminal: bool, no_color: Option<&str>) -> Self {
        Self { color: is_terminal && no_color.is_none_or(str::is_empty) }
    }

    /// The style for standard error of this process.
    pub fn for_stderr() -> Self {
        let no_color = std::env::var("NO_COLOR").ok();
        Self::decide(std::io::stderr().is_terminal(), no_color.as_deref())
    }

    /// The style for standard output of this process.
    pub fn for_stdout() -> Self {
        let no_color = std::env::var("NO_COLOR").ok();
        Self::decide(std::io::stdout().is_terminal(), no_color.as_deref())
    }

    /// Whether colour is on.
    pub fn is_color(self) -> bool {
        self.color
    }

    /// `text` painted with `paint`; unchanged without colour. Each line is painted on its own
    /// so a line printed above a prompt never leaves a style open.
    pub fn paint(self, paint: Paint, text: &str) -> String {
        if !self.color || text.is_empty() {
            return text.to_string();
        }
        let mut out = String::with_capacity(text.len() + 16);
        for piece in text.split_inclusive('\n') {
            let (body, newline) = match piece.strip_suffix('\n') {
                Some(body) => (body, "\n"),
                None => (piece, ""),
            };
            if !body.is_empty() {
                out.push_str("\x1b[");
                out.push_str(paint.code());
                out.push('m');
                out.push_str(body);
                out.push_str("\x1b[0m");
            }
            out.push_str(newline);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colour_needs_a_terminal_and_no_no_color() {
        assert!(Style::decide(true, None).is_color());
        assert!(Style::decide(true, Some("")).is_color());
        assert!(!Style::decide(true, Some("1")).is_color());
        assert!(!Style::decide(false, None).is_color());
    }

    #[test]
    fn plain_style_leaves_text_alone() {
        assert_eq!(Style::plain().paint(Paint::Error, "boom\n"), "boom\n");
    }

    #[test]
    fn colour_wraps_each_line_and_keeps_newlines_outside() {
        let text = Style::new(true).paint(Paint::Dim, "a\nb\n\n");
        assert_eq!(text, "\x1b[2ma\x1b[0m\n\x1b[2mb\x1b[0m\n\n");
    }
}
