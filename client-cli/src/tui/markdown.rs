//! Markdown (as models write it) laid out for the terminal with `pulldown-cmark`: headings,
//! emphasis, inline code, lists, block quotes, tables, rules and fenced code blocks with
//! syntax highlighting, word-wrapped to the screen's width.

use super::highlight::highlight_block;
use super::theme::{Role, Symbol, Theme};
use super::wrap::wrap;
use pulldown_cmark::{CodeBlockKind, Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

/// Lays out `text` as Markdown at `width` columns.
pub fn render(text: &str, width: usize, theme: Theme) -> Vec<Line<'static>> {
    let mut layout = Layout::new(width.max(8), theme);
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    for event in Parser::new_ext(text, options) {
        layout.event(event);
    }
    layout.finish()
}

/// A list being laid out: its next number when ordered.
#[derive(Debug)]
struct List {
    next: Option<u64>,
}

/// A table being collected (laid out when it ends, when every column's width is known).
#[derive(Debug, Default)]
struct Table {
    rows: Vec<Vec<String>>,
    row: Vec<String>,
    cell: String,
    header_rows: usize,
}

struct Layout {
    width: usize,
    theme: Theme,
    lines: Vec<Line<'static>>,
    spans: Vec<Span<'static>>,
    styles: Vec<Style>,
    lists: Vec<List>,
    /// The marker of the item whose first line is not out yet.
    item_marker: Option<String>,
    quote: usize,
    code: Option<(String, String)>,
    table: Option<Table>,
    link: Option<String>,
}

impl Layout {
    fn new(width: usize, theme: Theme) -> Self {
        Self {
            width,
            theme,
            lines: Vec::new(),
            spans: Vec::new(),
            styles: vec![theme.style(Role::Plain)],
            lists: Vec::new(),
            item_marker: None,
            quote: 0,
            code: None,
            table: None,
            link: None,
        }
    }

    fn style(&self) -> Style {
        self.styles.last().copied().unwrap_or_default()
    }

    fn push_style(&mut self, change: impl FnOnce(Style) -> Style) {
        let style = change(self.style());
        self.styles.push(style);
    }

    /// The indent of the current block (quotes and list nesting).
    fn indent(&self) -> String {
        let mut indent = "│ ".repeat(self.quote);
        if !self.theme.unicode {
            indent = "| ".repeat(self.quote);
        }
        indent.push_str(&"  ".repeat(self.lists.len()));
        indent
    }

    fn blank(&mut self) {
        if self
            .lines
            .last()
            .is_some_and(|line| !line.spans.iter().all(|s| s.content.trim().is_empty()))
        {
            self.lines.push(Line::default());
        }
    }

    /// Ends the paragraph being collected, wrapped at the width.
    fn flush(&mut self) {
        if self.spans.is_empty() && self.item_marker.is_none() {
            return;
        }
        let spans = std::mem::take(&mut self.spans);
        let indent = self.indent();
        let (first, rest) = match self.item_marker.take() {
            Some(marker) => {
                let outer = indent.chars().count().saturating_sub(2);
                let outer: String = indent.chars().take(outer).collect();
                let first = format!("{outer}{marker}");
                let rest = " ".repeat(first.width());
                (first, rest)
            }
            None => (indent.clone(), indent),
        };
        let dim = self.theme.style(Role::Dim);
        self.lines.extend(wrap(
            &spans,
            self.width,
            Span::styled(first, dim),
            Span::styled(rest, dim),
        ));
    }

    fn text(&mut self, text: &str) {
        if let Some((_, code)) = self.code.as_mut() {
            code.push_str(text);
            return;
        }
        if let Some(table) = self.table.as_mut() {
            table.cell.push_str(text);
            return;
        }
        let style = self.style();
        self.spans.push(Span::styled(text.to_string(), style));
    }

    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => self.text(&text),
            Event::Code(code) => {
                if let Some(table) = self.table.as_mut() {
                    table.cell.push_str(&code);
                } else {
                    let style = self.theme.style(Role::Code);
                    self.spans.push(Span::styled(code.to_string(), style));
                }
            }
            Event::SoftBreak => self.text(" "),
            Event::HardBreak => self.flush(),
            Event::Rule => {
                self.flush();
                self.blank();
                let rule = if self.theme.unicode { "─" } else { "-" };
                let line = rule.repeat(self.width.min(40));
                self.lines.push(Line::styled(line, self.theme.style(Role::Dim)));
            }
            Event::TaskListMarker(done) => {
                let mark = if done { "[x] " } else { "[ ] " };
                self.text(mark);
            }
            Event::Html(html) | Event::InlineHtml(html) => self.text(&html),
            Event::FootnoteReference(name) => self.text(&format!("[{name}]")),
            Event::InlineMath(math) | Event::DisplayMath(math) => self.text(&math),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph if self.item_marker.is_none() => self.blank(),
            Tag::Paragraph => {}
            Tag::Heading { level, .. } => {
                self.flush();
                self.blank();
                let hashes = match level {
                    HeadingLevel::H1 => "# ",
                    HeadingLevel::H2 => "## ",
                    _ => "### ",
                };
                let heading = self.theme.style(Role::Heading);
                self.styles.push(heading);
                self.spans.push(Span::styled(hashes.to_string(), heading));
            }
            Tag::BlockQuote(_) => {
                self.flush();
                self.quote += 1;
                self.push_style(|style| style.add_modifier(Modifier::ITALIC));
            }
            Tag::CodeBlock(kind) => {
                self.flush();
                self.blank();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => {
                        info.split([' ', ',']).next().unwrap_or_default().to_string()
                    }
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::List(start) => {
                self.flush();
                if self.lists.is_empty() {
                    self.blank();
                }
                self.lists.push(List { next: start });
            }
            Tag::Item => {
                self.flush();
                let bullet = self.theme.symbol(Symbol::Bullet);
                let marker = match self.lists.last_mut().and_then(|list| list.next.as_mut()) {
                    Some(n) => {
                        let marker = format!("{n}. ");
                        *n += 1;
                        marker
                    }
                    None => format!("{bullet} "),
                };
                self.item_marker = Some(marker);
            }
            Tag::Emphasis => self.push_style(|style| style.add_modifier(Modifier::ITALIC)),
            Tag::Strong => self.push_style(|style| style.add_modifier(Modifier::BOLD)),
            Tag::Strikethrough => {
                self.push_style(|style| style.add_modifier(Modifier::CROSSED_OUT))
            }
            Tag::Link { dest_url, .. } => {
                let link = self.theme.style(Role::Link);
                self.styles.push(link);
                self.link = Some(dest_url.to_string());
            }
            Tag::Image { dest_url, .. } => self.text(&format!("[image: {dest_url}] ")),
            Tag::Table(_) => {
                self.flush();
                self.blank();
                self.table = Some(Table::default());
            }
            Tag::TableHead | Tag::TableRow | Tag::TableCell => {}
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph => self.flush(),
            TagEnd::Heading(_) => {
                self.flush();
                self.styles.pop();
            }
            TagEnd::BlockQuote(_) => {
                self.flush();
                self.quote = self.quote.saturating_sub(1);
                self.styles.pop();
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&lang, &code);
                }
            }
            TagEnd::List(_) => {
                self.flush();
                self.lists.pop();
            }
            TagEnd::Item => self.flush(),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.styles.pop();
            }
            TagEnd::Link => {
                self.styles.pop();
                if let Some(url) = self.link.take()
                    && !self.spans.iter().any(|span| span.content.contains(url.as_str()))
                {
                    let dim = self.theme.style(Role::Dim);
                    self.spans.push(Span::styled(format!(" ({url})"), dim));
                }
            }
            TagEnd::TableCell => {
                if let Some(table) = self.table.as_mut() {
                    let cell = std::mem::take(&mut table.cell);
                    table.row.push(cell.trim().to_string());
                }
            }
            TagEnd::TableHead => {
                if let Some(table) = self.table.as_mut() {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                    table.header_rows = table.rows.len();
                }
            }
            TagEnd::TableRow => {
                if let Some(table) = self.table.as_mut() {
                    let row = std::mem::take(&mut table.row);
                    table.rows.push(row);
                }
            }
            TagEnd::Table => {
                if let Some(table) = self.table.take() {
                    self.table_lines(&table);
                }
            }
            _ => {}
        }
    }

    fn code_block(&mut self, lang: &str, code: &str) {
        let indent = self.indent();
        let gutter = Span::styled(format!("{indent}  "), self.theme.style(Role::Dim));
        for spans in highlight_block(code.trim_end_matches('\n'), lang, self.theme) {
            self.lines.extend(wrap(&spans, self.width, gutter.clone(), gutter.clone()));
        }
        self.lines.push(Line::default());
    }

    fn table_lines(&mut self, table: &Table) {
        let columns = table.rows.iter().map(Vec::len).max().unwrap_or(0);
        if columns == 0 {
            return;
        }
        let mut widths = vec![0usize; columns];
        for row in &table.rows {
            for (at, cell) in row.iter().enumerate() {
                widths[at] = widths[at].max(cell.width());
            }
        }
        // Shrink the widest columns until the table fits.
        let separators = 3 * (columns - 1);
        while widths.iter().sum::<usize>() + separators > self.width {
            let Some(widest) = widths.iter().copied().max().filter(|w| *w > 3) else { break };
            if let Some(at) = widths.iter().position(|w| *w == widest) {
                widths[at] -= 1;
            }
        }
        let bar = if self.theme.unicode { " │ " } else { " | " };
        let dim = self.theme.style(Role::Dim);
        for (index, row) in table.rows.iter().enumerate() {
            let header = index < table.header_rows;
            let style = if header {
                self.theme.style(Role::Plain).add_modifier(Modifier::BOLD)
            } else {
                self.theme.style(Role::Plain)
            };
            let mut spans = Vec::new();
            for (at, width) in widths.iter().enumerate() {
                if at > 0 {
                    spans.push(Span::styled(bar, dim));
                }
                let cell = row.get(at).map(String::as_str).unwrap_or_default();
                spans.push(Span::styled(fit(cell, *width, self.theme), style));
            }
            self.lines.push(Line::from(spans));
            if header && index + 1 == table.header_rows {
                let (dash, cross) =
                    if self.theme.unicode { ("─", "─┼─") } else { ("-", "-+-") };
                let rule: Vec<String> = widths.iter().map(|w| dash.repeat(*w)).collect();
                self.lines.push(Line::styled(rule.join(cross), dim));
            }
        }
    }

    fn finish(mut self) -> Vec<Line<'static>> {
        if let Some((lang, code)) = self.code.take() {
            // A code block still streaming in.
            self.code_block(&lang, &code);
        }
        if let Some(table) = self.table.take() {
            self.table_lines(&table);
        }
        self.flush();
        while self.lines.first().is_some_and(|line| line.spans.is_empty()) {
            self.lines.remove(0);
        }
        while self.lines.last().is_some_and(|line| line.spans.is_empty()) {
            self.lines.pop();
        }
        self.lines
    }
}

/// `text` padded or cut to exactly `width` columns.
fn fit(text: &str, width: usize, theme: Theme) -> String {
    let mut out = super::transcript::shorten_to(text, width, theme);
    let pad = width.saturating_sub(out.width());
    out.push_str(&" ".repeat(pad));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(lines: &[Line<'_>]) -> Vec<String> {
        lines
            .iter()
            .map(|line| line.spans.iter().map(|s| s.content.as_ref()).collect::<String>())
            .map(|line| line.trim_end().to_string())
            .collect()
    }

    #[test]
    fn headings_lists_and_emphasis() {
        let theme = Theme::default();
        let lines = render(
            "# Title\n\nSome *soft* and **bold** text.\n\n- one\n- two\n\n1. first\n2. second",
            40,
            theme,
        );
        assert_eq!(
            plain(&lines),
            [
                "# Title",
                "",
                "Some soft and bold text.",
                "",
                "• one",
                "• two",
                "",
                "1. first",
                "2. second"
            ]
        );
        let bold = lines[2].spans.iter().find(|s| s.content == "bold").map(|s| s.style);
        assert!(bold.is_some_and(|s| s.add_modifier.contains(Modifier::BOLD)));
    }

    #[test]
    fn fenced_code_is_highlighted_and_not_wrapped_as_prose() {
        let theme = Theme::default();
        let lines = render("Run:\n\n```rust\nfn main() {}\n```\n", 40, theme);
        assert_eq!(plain(&lines), ["Run:", "", "  fn main() {}"]);
        let keyword = lines[2].spans.iter().find(|s| s.content == "fn").map(|s| s.style);
        assert_eq!(keyword, Some(theme.style(Role::Keyword)));
    }

    #[test]
    fn tables_line_up_their_columns() {
        let theme = Theme { color: false, unicode: true };
        let lines =
            render("| name | size |\n|---|---|\n| a.rs | 10 |\n| long_name.rs | 2 |", 40, theme);
        assert_eq!(
            plain(&lines),
            ["name         │ size", "─────────────┼─────", "a.rs         │ 10", "long_name.rs │ 2"]
        );
    }

    #[test]
    fn paragraphs_wrap_by_words() {
        let lines = render("alpha beta gamma delta epsilon", 12, Theme::default());
        assert_eq!(plain(&lines), ["alpha beta", "gamma delta", "epsilon"]);
    }
}
