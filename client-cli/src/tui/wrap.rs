//! Soft wrapping by words: styled text broken into lines no wider than the screen, so the
//! terminal never hard-wraps mid-word. A word longer than a whole line is broken where it must.

use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// A run of characters that are all spaces or all not, with their styles.
#[derive(Debug, Default)]
struct Token {
    pieces: Vec<(String, Style)>,
    space: bool,
    width: usize,
}

impl Token {
    fn push(&mut self, c: char, style: Style) {
        self.width += c.width().unwrap_or(0);
        match self.pieces.last_mut() {
            Some((text, last)) if *last == style => text.push(c),
            _ => self.pieces.push((c.to_string(), style)),
        }
    }
}

fn tokens(spans: &[Span<'_>]) -> Vec<Token> {
    let mut tokens: Vec<Token> = Vec::new();
    for span in spans {
        for c in span.content.chars() {
            let space = c == ' ';
            match tokens.last_mut() {
                Some(token) if token.space == space => token.push(c, span.style),
                _ => {
                    let mut token = Token { space, ..Token::default() };
                    token.push(c, span.style);
                    tokens.push(token);
                }
            }
        }
    }
    tokens
}

/// Lays `spans` (one logical line, no newlines) out in lines at most `width` columns wide.
/// The first line starts with `first`, the others with `rest` (indents, gutters, bullets).
pub fn wrap(
    spans: &[Span<'_>],
    width: usize,
    first: Span<'static>,
    rest: Span<'static>,
) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    let mut current: Vec<Span<'static>> = vec![first.clone()];
    let mut used = first.content.width();
    let mut has_text = false;
    let new_line = |lines: &mut Vec<Line<'static>>, current: &mut Vec<Span<'static>>| {
        lines.push(Line::from(std::mem::replace(current, vec![rest.clone()])));
    };
    let rest_width = rest.content.width();
    for token in tokens(spans) {
        if token.space {
            // Spaces between words, and the indentation a line starts with, are kept.
            if (has_text || lines.is_empty()) && used + token.width <= width {
                for (text, style) in token.pieces {
                    current.push(Span::styled(text, style));
                }
                used += token.width;
            }
            continue;
        }
        if has_text && used + token.width > width {
            // Trailing spaces of the finished line are not worth keeping.
            trim_trailing_spaces(&mut current);
            new_line(&mut lines, &mut current);
            used = rest_width;
            has_text = false;
        }
        for (text, style) in token.pieces {
            let mut piece = String::new();
            for c in text.chars() {
                let w = c.width().unwrap_or(0);
                if used + w > width && (has_text || !piece.is_empty()) && width > rest_width {
                    current.push(Span::styled(std::mem::take(&mut piece), style));
                    new_line(&mut lines, &mut current);
                    used = rest_width;
                    has_text = false;
                }
                piece.push(c);
                used += w;
            }
            if !piece.is_empty() {
                current.push(Span::styled(piece, style));
                has_text = true;
            }
        }
    }
    trim_trailing_spaces(&mut current);
    lines.push(Line::from(current));
    lines
}

fn trim_trailing_spaces(spans: &mut Vec<Span<'static>>) {
    while spans.len() > 1 {
        let Some(last) = spans.last() else { break };
        let trimmed = last.content.trim_end_matches(' ').to_string();
        if trimmed.len() == last.content.len() {
            break;
        }
        if trimmed.is_empty() {
            spans.pop();
        } else if let Some(last) = spans.last_mut() {
            last.content = trimmed.into();
            break;
        }
    }
}

/// `text` broken into lines by words at `width`, every line with `style`, each line prefixed
/// with `prefix`.
pub fn wrap_text(text: &str, width: usize, style: Style, prefix: &str) -> Vec<Line<'static>> {
    text.split('\n')
        .flat_map(|line| {
            wrap(
                &[Span::styled(line.to_string(), style)],
                width,
                Span::styled(prefix.to_string(), style),
                Span::styled(prefix.to_string(), style),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines.iter().map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect()).collect()
    }

    #[test]
    fn breaks_between_words_never_inside_them() {
        let lines = wrap_text("the quick brown fox jumps over the lazy dog", 12, Style::new(), "");
        assert_eq!(plain(&lines), ["the quick", "brown fox", "jumps over", "the lazy dog"]);
    }

    #[test]
    fn prefixes_count_toward_the_width_and_long_words_are_cut() {
        let lines = wrap(&[Span::raw("abcdefghij klm")], 6, Span::raw("- "), Span::raw("  "));
        assert_eq!(plain(&lines), ["- abcd", "  efgh", "  ij", "  klm"]);
    }

    #[test]
    fn indentation_is_kept() {
        let lines = wrap_text("    indented code", 40, Style::new(), "");
        assert_eq!(plain(&lines), ["    indented code"]);
    }

    #[test]
    fn styles_survive_wrapping() {
        let bold = Style::new().add_modifier(ratatui::style::Modifier::BOLD);
        let lines = wrap(
            &[Span::raw("one "), Span::styled("two", bold), Span::raw(" three")],
            8,
            Span::raw(""),
            Span::raw(""),
        );
        assert_eq!(plain(&lines), ["one two", "three"]);
        assert!(lines[0].spans.iter().any(|s| s.content == "two" && s.style == bold));
    }
}
