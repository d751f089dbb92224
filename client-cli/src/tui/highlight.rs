//! A light syntax highlighter for fenced code blocks: keywords, string literals, numbers and
//! comments of the common languages, line by line. It is deliberately small (no grammar
//! files, no regex engine), since a chat transcript only needs code to be easier to scan.

use super::theme::{Role, Theme};
use ratatui::text::Span;

/// What a language's source looks like to the highlighter.
#[derive(Debug, Clone, Copy)]
struct Language {
    keywords: &'static [&'static str],
    /// Starts a comment that runs to the end of the line.
    line_comment: &'static [&'static str],
}

const RUST: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
    "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "Some", "None", "Ok", "Err",
];
const PYTHON: &[&str] = &[
    "and", "as", "assert", "async", "await", "break", "class", "continue", "def", "del", "elif",
    "else", "except", "False", "finally", "for", "from", "global", "if", "import", "in", "is",
    "lambda", "None", "nonlocal", "not", "or", "pass", "raise", "return", "True", "try", "while",
    "with", "yield",
];
const JS: &[&str] = &[
    "async",
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "default",
    "delete",
    "do",
    "else",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "return",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "type",
    "typeof",
    "undefined",
    "var",
    "void",
    "while",
    "yield",
];
const GO: &[&str] = &[
    "break",
    "case",
    "chan",
    "const",
    "continue",
    "default",
    "defer",
    "else",
    "false",
    "for",
    "func",
    "go",
    "if",
    "import",
    "interface",
    "map",
    "nil",
    "package",
    "range",
    "return",
    "select",
    "struct",
    "switch",
    "true",
    "type",
    "var",
];
const C: &[&str] = &[
    "auto",
    "bool",
    "break",
    "case",
    "char",
    "class",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "false",
    "float",
    "for",
    "if",
    "include",
    "int",
    "long",
    "namespace",
    "new",
    "nullptr",
    "private",
    "public",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "template",
    "this",
    "true",
    "typedef",
    "union",
    "unsigned",
    "void",
    "while",
];
const SHELL: &[&str] = &[
    "case", "do", "done", "echo", "elif", "else", "esac", "exit", "export", "fi", "for",
    "function", "if", "in", "local", "return", "then", "until", "while",
];
const DATA: &[&str] = &["true", "false", "null"];

fn language(name: &str) -> Option<Language> {
    let slashes: &[&str] = &["//"];
    let hash: &[&str] = &["#"];
    let (keywords, line_comment) = match name.to_ascii_lowercase().as_str() {
        "rust" | "rs" => (RUST, slashes),
        "python" | "py" => (PYTHON, hash),
        "javascript" | "js" | "typescript" | "ts" | "tsx" | "jsx" => (JS, slashes),
        "go" | "golang" => (GO, slashes),
        "c" | "h" | "cpp" | "c++" | "cc" | "hpp" | "java" | "cs" | "csharp" => (C, slashes),
        "sh" | "bash" | "shell" | "zsh" | "console" => (SHELL, hash),
        "json" => (DATA, &[][..]),
        "toml" | "yaml" | "yml" | "ini" => (DATA, hash),
        _ => return None,
    };
    Some(Language { keywords, line_comment })
}

/// One line of code in `lang` (the fence's info word) as styled spans; unknown languages get
/// the code style only.
pub fn highlight_line(line: &str, lang: &str, theme: Theme) -> Vec<Span<'static>> {
    let code = theme.style(Role::Code);
    let Some(language) = language(lang) else {
        return vec![Span::styled(line.to_string(), code)];
    };
    let plain = theme.style(Role::Plain);
    let mut spans = Vec::new();
    let chars: Vec<char> = line.chars().collect();
    let mut at = 0;
    let mut plain_run = String::new();
    let flush = |run: &mut String, spans: &mut Vec<Span<'static>>| {
        if !run.is_empty() {
            spans.push(Span::styled(std::mem::take(run), plain));
        }
    };
    while at < chars.len() {
        let rest: String = chars[at..].iter().collect();
        if language.line_comment.iter().any(|mark| rest.starts_with(mark)) {
            flush(&mut plain_run, &mut spans);
            spans.push(Span::styled(rest, theme.style(Role::Comment)));
            return spans;
        }
        let c = chars[at];
        if c == '"' || c == '\'' || c == '`' {
            flush(&mut plain_run, &mut spans);
            let mut end = at + 1;
            while end < chars.len() && chars[end] != c {
                end += if chars[end] == '\\' { 2 } else { 1 };
            }
            let end = (end + 1).min(chars.len());
            spans.push(Span::styled(
                chars[at..end].iter().collect::<String>(),
                theme.style(Role::Literal),
            ));
            at = end;
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            let mut end = at;
            while end < chars.len() && (chars[end].is_alphanumeric() || chars[end] == '_') {
                end += 1;
            }
            let word: String = chars[at..end].iter().collect();
            if language.keywords.contains(&word.as_str()) {
                flush(&mut plain_run, &mut spans);
                spans.push(Span::styled(word, theme.style(Role::Keyword)));
            } else if c.is_ascii_digit() {
                flush(&mut plain_run, &mut spans);
                spans.push(Span::styled(word, theme.style(Role::Code)));
            } else {
                plain_run.push_str(&word);
            }
            at = end;
            continue;
        }
        plain_run.push(c);
        at += 1;
    }
    flush(&mut plain_run, &mut spans);
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roles(spans: &[Span<'_>], theme: Theme) -> Vec<(String, Option<Role>)> {
        let all = [Role::Keyword, Role::Literal, Role::Comment, Role::Code, Role::Plain];
        spans
            .iter()
            .map(|s| {
                let role = all.iter().copied().find(|role| theme.style(*role) == s.style);
                (s.content.to_string(), role)
            })
            .collect()
    }

    #[test]
    fn keywords_strings_and_comments_are_told_apart() {
        let theme = Theme::default();
        let spans = highlight_line("let s = \"fn\"; // note", "rust", theme);
        assert_eq!(
            roles(&spans, theme),
            [
                ("let".to_string(), Some(Role::Keyword)),
                (" s = ".to_string(), Some(Role::Plain)),
                ("\"fn\"".to_string(), Some(Role::Literal)),
                ("; ".to_string(), Some(Role::Plain)),
                ("// note".to_string(), Some(Role::Comment)),
            ]
        );
        let python = highlight_line("def f(): return 1  # x", "py", theme);
        assert_eq!(python[0].content, "def");
        assert_eq!(python.last().map(|s| s.content.to_string()), Some("# x".to_string()));
        let unknown = highlight_line("whatever", "brainfuck", theme);
        assert_eq!(roles(&unknown, theme), [("whatever".to_string(), Some(Role::Code))]);
    }
}
