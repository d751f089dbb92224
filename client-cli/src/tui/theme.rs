//! How the terminal client paints: colours unless `NO_COLOR` is set, Unicode symbols unless
//! the locale is not UTF-8, and text made safe to put on screen.

use ratatui::style::{Color, Modifier, Style};

/// What a piece of text is, which decides how it looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Plain text.
    Plain,
    /// Reasoning, hints and secondary details.
    Dim,
    /// The user's own prompts.
    User,
    /// Tool activity.
    Tool,
    /// Something that went right (✓).
    Good,
    /// Something that failed (✗).
    Bad,
    /// Notices from rein.
    Notice,
    /// Markdown headings.
    Heading,
    /// Inline code and code blocks.
    Code,
    /// Lines a diff adds.
    Added,
    /// Lines a diff removes.
    Removed,
    /// Diff hunk headers and file names.
    DiffHeader,
    /// Keywords in highlighted code.
    Keyword,
    /// String literals in highlighted code.
    Literal,
    /// Comments in highlighted code.
    Comment,
    /// Names of functions and types in highlighted code.
    Name,
    /// The status line.
    Status,
    /// Borders and the dialog frame.
    Frame,
    /// Links.
    Link,
}

/// The symbols the client draws, in Unicode and in ASCII.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Symbol {
    /// A finished tool call.
    Check,
    /// A failed tool call.
    Cross,
    /// A tool call starting.
    Arrow,
    /// A bullet of a list.
    Bullet,
    /// The gutter before tool output.
    Gutter,
    /// Text left out.
    Ellipsis,
    /// A separator in the status line.
    Separator,
}

/// The look of the client in this terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// Whether to use colours.
    pub color: bool,
    /// Whether the terminal takes UTF-8.
    pub unicode: bool,
}

impl Default for Theme {
    fn default() -> Self {
        Self { color: true, unicode: true }
    }
}

impl Theme {
    /// The theme for this process: `NO_COLOR` (set and non-empty) turns colours off; a locale
    /// (`LC_ALL`, else `LC_CTYPE`, else `LANG`) that does not name UTF-8 turns to ASCII.
    pub fn detect() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let locale = var("LC_ALL").or_else(|| var("LC_CTYPE")).or_else(|| var("LANG"));
        Self {
            color: var("NO_COLOR").is_none(),
            unicode: locale.as_deref().is_some_and(is_utf8_locale),
        }
    }

    /// The style of `role`: colours only when they are on; emphasis always.
    pub fn style(self, role: Role) -> Style {
        let base = Style::default();
        let modifier = match role {
            Role::Dim | Role::Comment => Modifier::DIM,
            Role::User | Role::Heading => Modifier::BOLD,
            Role::Status => Modifier::REVERSED,
            Role::Link => Modifier::UNDERLINED,
            _ => Modifier::empty(),
        };
        let base = base.add_modifier(modifier);
        if !self.color {
            return base;
        }
        let color = match role {
            Role::Plain | Role::Dim | Role::Status => return base,
            Role::User => Color::White,
            Role::Tool => Color::Cyan,
            Role::Good | Role::Added => Color::Green,
            Role::Bad | Role::Removed => Color::Red,
            Role::Notice => Color::Yellow,
            Role::Heading => Color::Magenta,
            Role::Code => Color::LightYellow,
            Role::Literal => Color::LightGreen,
            Role::DiffHeader => Color::Blue,
            Role::Keyword => Color::LightMagenta,
            Role::Comment => Color::DarkGray,
            Role::Name => Color::LightCyan,
            Role::Frame => Color::Yellow,
            Role::Link => Color::LightBlue,
        };
        base.fg(color)
    }

    /// The symbol as this terminal can show it.
    pub fn symbol(self, symbol: Symbol) -> &'static str {
        match (symbol, self.unicode) {
            (Symbol::Check, true) => "✓",
            (Symbol::Check, false) => "+",
            (Symbol::Cross, true) => "✗",
            (Symbol::Cross, false) => "x",
            (Symbol::Arrow, true) => "→",
            (Symbol::Arrow, false) => "->",
            (Symbol::Bullet, true) => "•",
            (Symbol::Bullet, false) => "*",
            (Symbol::Gutter, true) => "│",
            (Symbol::Gutter, false) => "|",
            (Symbol::Ellipsis, true) => "…",
            (Symbol::Ellipsis, false) => "...",
            (Symbol::Separator, true) => " · ",
            (Symbol::Separator, false) => " | ",
        }
    }
}

/// Whether a locale name (`en_US.UTF-8`, `C.utf8`) says UTF-8.
pub fn is_utf8_locale(locale: &str) -> bool {
    let lower = locale.to_ascii_lowercase();
    lower.contains("utf-8") || lower.contains("utf8")
}

/// `text` safe to draw: escape sequences and control characters dropped, tabs expanded,
/// carriage returns ending a line's progress redraw keep only what followed them.
pub fn sanitize(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => {
                // CSI: ESC [ params final-byte; other escapes: ESC and one character.
                if chars.peek() == Some(&'[') {
                    chars.next();
                    for next in chars.by_ref() {
                        if ('@'..='~').contains(&next) {
                            break;
                        }
                    }
                } else {
                    chars.next();
                }
            }
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            '\r' if chars.peek() == Some(&'\n') => {}
            '\r' => {
                // A progress line redrawn in place: keep what follows.
                let start = out.rfind('\n').map_or(0, |at| at + 1);
                out.truncate(start);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// `text` with every character outside ASCII replaced, for a terminal that is not UTF-8.
pub fn ascii_only(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii() { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locales_and_no_color() {
        assert!(is_utf8_locale("en_US.UTF-8"));
        assert!(is_utf8_locale("C.utf8"));
        assert!(!is_utf8_locale("C"));
        assert!(!is_utf8_locale("POSIX"));
        let plain = Theme { color: false, unicode: false };
        assert_eq!(plain.style(Role::Bad).fg, None);
        assert_eq!(Theme::default().style(Role::Bad).fg, Some(Color::Red));
        assert_eq!(plain.symbol(Symbol::Check), "+");
        assert_eq!(Theme::default().symbol(Symbol::Cross), "✗");
    }

    #[test]
    fn escapes_and_controls_are_dropped() {
        assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m\tx\u{7}"), "red    x");
        assert_eq!(sanitize("a\r\nb"), "a\nb");
        assert_eq!(sanitize("10%\r50%\r100%\ndone"), "100%\ndone");
        assert_eq!(ascii_only("naïve ✓"), "na?ve ?");
    }
}
