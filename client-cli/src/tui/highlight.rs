//! Syntax highlighting of fenced code blocks with `syntect`'s bundled Sublime grammars (the
//! pure-Rust regex engine, no C library).
//!
//! The grammars say what each piece of code is (a scope such as `keyword.control` or
//! `string.quoted`); the client paints those kinds with its own [`Role`]s rather than with a
//! syntect colour theme, so highlighted code uses the 16 ANSI colours every terminal has, and
//! none at all under `NO_COLOR`.

use super::theme::{Role, Theme};
use ratatui::text::Span;
use std::sync::OnceLock;
use syntect::easy::ScopeRangeIterator;
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};

/// The bundled grammars, loaded on the first code block (a few milliseconds).
fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// Scope prefixes and how they are painted; the innermost scope that has one decides.
fn painted_scopes() -> &'static [(Scope, Role)] {
    static SCOPES: OnceLock<Vec<(Scope, Role)>> = OnceLock::new();
    SCOPES.get_or_init(|| {
        [
            ("comment", Role::Comment),
            ("string", Role::Literal),
            ("constant.character", Role::Literal),
            ("constant.numeric", Role::Code),
            ("constant.language", Role::Keyword),
            ("keyword.operator", Role::Plain),
            ("keyword", Role::Keyword),
            ("storage", Role::Keyword),
            ("entity.name.function", Role::Name),
            ("support.function", Role::Name),
            ("entity.name", Role::Name),
        ]
        .into_iter()
        .filter_map(|(name, role)| Scope::new(name).ok().map(|scope| (scope, role)))
        .collect()
    })
}

/// The grammar for a fence's info string (`rust`, `py`, `rust,ignore`, `sh title=x`).
fn syntax_for(info: &str) -> Option<&'static SyntaxReference> {
    let token = info.split([',', ' ', '{']).next().unwrap_or_default().trim().to_ascii_lowercase();
    // Names people write that the bundled grammars know under another one.
    let token = match token.as_str() {
        "" | "text" | "plain" | "txt" => return None,
        "ts" | "tsx" | "typescript" | "jsx" | "mjs" => "js",
        "shell" | "zsh" | "console" | "shell-session" => "sh",
        "golang" => "go",
        "c++" => "cpp",
        "yml" => "yaml",
        other => other,
    };
    syntaxes().find_syntax_by_token(token)
}

fn role_of(stack: &ScopeStack) -> Role {
    for scope in stack.as_slice().iter().rev() {
        if let Some((_, role)) =
            painted_scopes().iter().find(|(prefix, _)| prefix.is_prefix_of(*scope))
        {
            return *role;
        }
    }
    Role::Plain
}

/// A code block in the language its fence names, one vector of styled spans per line;
/// a language without a grammar (or code the grammar cannot follow) gets the code style only.
pub fn highlight_block(code: &str, lang: &str, theme: Theme) -> Vec<Vec<Span<'static>>> {
    let lines: Vec<&str> = code.split('\n').collect();
    let plain = || {
        let code = theme.style(Role::Code);
        lines.iter().map(|line| vec![Span::styled(line.to_string(), code)]).collect()
    };
    let Some(syntax) = syntax_for(lang) else { return plain() };
    let mut state = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::with_capacity(lines.len());
    for line in &lines {
        // The grammars are written for lines that end in a newline.
        let with_newline = format!("{line}\n");
        let Ok(ops) = state.parse_line(&with_newline, syntaxes()) else { return plain() };
        let mut spans: Vec<Span<'static>> = Vec::new();
        for (range, op) in ScopeRangeIterator::new(&ops, &with_newline) {
            if stack.apply(op).is_err() {
                return plain();
            }
            let range = range.start..range.end.min(line.len());
            let Some(text) = line.get(range).filter(|text| !text.is_empty()) else { continue };
            let style = theme.style(role_of(&stack));
            match spans.last_mut() {
                Some(last) if last.style == style => last.content.to_mut().push_str(text),
                _ => spans.push(Span::styled(text.to_string(), style)),
            }
        }
        out.push(spans);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(spans: &[Span<'_>], theme: Theme) -> Vec<(String, Role)> {
        let all =
            [Role::Keyword, Role::Literal, Role::Comment, Role::Name, Role::Code, Role::Plain];
        spans
            .iter()
            .map(|s| {
                let role = all.iter().copied().find(|role| theme.style(*role) == s.style);
                (s.content.to_string(), role.unwrap_or(Role::Frame))
            })
            .collect()
    }

    fn role_of_word(line: &[Span<'_>], word: &str, theme: Theme) -> Option<Role> {
        let spans = roles(line, theme);
        let exact = spans.iter().find(|(text, _)| text.trim() == word);
        exact.or_else(|| spans.iter().find(|(text, _)| text.contains(word))).map(|(_, role)| *role)
    }

    #[test]
    fn keywords_strings_and_comments_are_told_apart() {
        let theme = Theme::default();
        let block = highlight_block("let s = \"fn\"; // note", "rust", theme);
        let line = &block[0];
        assert_eq!(role_of_word(line, "let", theme), Some(Role::Keyword));
        assert_eq!(role_of_word(line, "\"fn\"", theme), Some(Role::Literal));
        assert_eq!(role_of_word(line, "note", theme), Some(Role::Comment));
        let text: String = line.iter().map(|s| s.content.as_ref()).collect();
        assert_eq!(text, "let s = \"fn\"; // note");
        let python = highlight_block("def f():\n    return 1  # x", "py", theme);
        assert_eq!(role_of_word(&python[0], "def", theme), Some(Role::Keyword));
        assert_eq!(role_of_word(&python[0], "f", theme), Some(Role::Name));
        assert_eq!(role_of_word(&python[1], "return", theme), Some(Role::Keyword));
        assert_eq!(role_of_word(&python[1], "# x", theme), Some(Role::Comment));
        let unknown = highlight_block("whatever", "brainfuck-2000", theme);
        assert_eq!(roles(&unknown[0], theme), [("whatever".to_string(), Role::Code)]);
    }

    #[test]
    fn state_carries_across_lines_and_aliases_resolve() {
        let theme = Theme::default();
        // A block comment opened on one line is still a comment on the next.
        let c = highlight_block("/* start\n   end */ int x;", "c", theme);
        assert_eq!(role_of_word(&c[1], "end", theme), Some(Role::Comment));
        assert_eq!(role_of_word(&c[1], "int", theme), Some(Role::Keyword));
        let ts = highlight_block("const x = 'a';", "typescript", theme);
        assert_eq!(role_of_word(&ts[0], "'a'", theme), Some(Role::Literal));
        let shell = highlight_block("echo \"hi\"  # greet", "console", theme);
        assert_eq!(role_of_word(&shell[0], "greet", theme), Some(Role::Comment));
    }

    #[test]
    fn no_color_keeps_only_emphasis() {
        let theme = Theme { color: false, unicode: true };
        let block = highlight_block("fn main() {} // x", "rust", theme);
        assert!(block[0].iter().all(|span| span.style.fg.is_none()), "{block:?}");
    }
}
