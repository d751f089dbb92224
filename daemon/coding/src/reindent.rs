//! Re-indenting the `newText` of an edit whose `oldText` matched only after ignoring
//! whitespace.
//!
//! A model often quotes a block with the wrong base indentation (it dropped the enclosing
//! levels, or used two spaces where the file uses four or a tab). The match still succeeds, but
//! writing `newText` as given would put the model's indentation into the file, which breaks
//! indentation-sensitive languages. So each line of `oldText` is paired with the file line it
//! matched, which gives a map from the model's indentation to the file's; every line of
//! `newText` is then translated through that map. A line the map cannot place (indented less
//! than anything the model quoted) or a result that would mix tabs into a space-indented file
//! (or the reverse) is refused: guessing there would silently change the file's structure.
//! Pure string code, like [`crate::edit_match`].

use std::ops::Range;

/// Why `newText` cannot be re-indented to fit the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndentError {
    /// A line is indented less than every line of `oldText`, so its place in the file's
    /// indentation cannot be told.
    #[error(
        "line {line} of newText is indented less than every line of oldText, and oldText \
         matched only after ignoring indentation, so where that line belongs in the file \
         cannot be told"
    )]
    Outdented {
        /// 1-based line of `newText`.
        line: usize,
    },
    /// The result would indent a line with tabs in a file indented with spaces, or the
    /// reverse.
    #[error(
        "line {line} of newText would be indented with {used} but the file is indented with \
         {file}"
    )]
    MixedStyle {
        /// 1-based line of `newText`.
        line: usize,
        /// What the line would use.
        used: &'static str,
        /// What the file uses.
        file: &'static str,
    },
}

/// The replacement to write instead of the model's `newText`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reindented {
    /// The byte range of the file to replace: the match, reaching back to the start of its
    /// first line when only indentation precedes it there (that indentation is rewritten).
    pub range: Range<usize>,
    /// The text to put there.
    pub text: String,
}

/// Re-indents `new` for a whitespace-tolerant match of `old` at `range` of `file` (all with
/// LF line endings).
pub fn reindent(
    file: &str,
    range: Range<usize>,
    old: &str,
    new: &str,
) -> Result<Reindented, IndentError> {
    let line_start = file[..range.start].rfind('\n').map_or(0, |p| p + 1);
    let whole_first_line = file[line_start..range.start].bytes().all(is_blank);
    let start = if whole_first_line { line_start } else { range.start };
    let unchanged =
        Reindented { range: start..range.end, text: prefixed(file, start, &range, new) };
    let block: Vec<&str> = file[start..range.end].split('\n').collect();
    let quoted: Vec<&str> = old.split('\n').collect();
    if block.len() != quoted.len() {
        // The folded match keeps line breaks, so this does not happen; stay conservative.
        return Ok(unchanged);
    }
    let mut map: Vec<(&str, &str)> = Vec::new();
    for (i, (model_line, file_line)) in quoted.iter().zip(&block).enumerate() {
        if model_line.trim().is_empty() || (i == 0 && !whole_first_line) {
            continue;
        }
        map.push((indent_of(model_line), indent_of(file_line)));
    }
    if map.is_empty() {
        return Ok(unchanged);
    }
    let units = Units::of(&map);
    let file_style = IndentStyle::of_file(file);
    let mut out = Vec::new();
    for (i, line) in new.split('\n').enumerate() {
        if line.trim().is_empty() || (i == 0 && !whole_first_line) {
            out.push(line.to_string());
            continue;
        }
        let indent = indent_of(line);
        let translated =
            translate(indent, &map, &units).ok_or(IndentError::Outdented { line: i + 1 })?;
        if let Some(file) = file_style
            && let Some(used) = IndentStyle::of_indent(&translated)
            && used != file
        {
            return Err(IndentError::MixedStyle {
                line: i + 1,
                used: used.describe(),
                file: file.describe(),
            });
        }
        out.push(format!("{translated}{}", &line[indent.len()..]));
    }
    Ok(Reindented { range: start..range.end, text: out.join("\n") })
}

/// `new` for a range that starts where `range` did (when the first line's indentation is
/// included in the replaced range, it is put back in front).
fn prefixed(file: &str, start: usize, range: &Range<usize>, new: &str) -> String {
    format!("{}{new}", &file[start..range.start])
}

/// The file's indentation for a line the model indented with `indent`: the same level when the
/// model used it in `oldText`, else the deepest quoted level it extends plus the extra levels
/// converted to the file's unit. `None` when it is shallower than every quoted level.
fn translate(indent: &str, map: &[(&str, &str)], units: &Units) -> Option<String> {
    if let Some((_, file)) = map.iter().find(|(model, _)| *model == indent) {
        return Some((*file).to_string());
    }
    let (model, file) = map
        .iter()
        .filter(|(model, _)| indent.starts_with(model))
        .max_by_key(|(model, _)| model.len())?;
    Some(format!("{file}{}", units.convert(&indent[model.len()..])))
}

/// One indentation step as the model wrote it and as the file writes it.
struct Units {
    model: Option<String>,
    file: Option<String>,
}

impl Units {
    fn of(map: &[(&str, &str)]) -> Self {
        Self {
            model: step(map.iter().map(|(model, _)| *model)),
            file: step(map.iter().map(|(_, file)| *file)),
        }
    }

    /// Extra indentation beyond a known level, in the file's unit when both units are known
    /// and the extra is a whole number of the model's steps; as written otherwise.
    fn convert(&self, extra: &str) -> String {
        if let (Some(model), Some(file)) = (&self.model, &self.file)
            && !model.is_empty()
            && extra.len().is_multiple_of(model.len())
            && extra.as_bytes().chunks(model.len()).all(|chunk| chunk == model.as_bytes())
        {
            return file.repeat(extra.len() / model.len());
        }
        extra.to_string()
    }
}

/// The smallest non-empty difference between two nested indentations of a set: one step.
fn step<'a>(indents: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut all: Vec<&str> = indents.collect();
    all.sort_by_key(|indent| indent.len());
    all.dedup();
    let mut best: Option<&str> = None;
    for (i, shorter) in all.iter().enumerate() {
        for longer in &all[i + 1..] {
            if let Some(extra) = longer.strip_prefix(shorter)
                && !extra.is_empty()
                && best.is_none_or(|b| extra.len() < b.len())
            {
                best = Some(extra);
            }
        }
    }
    best.map(str::to_string)
}

/// Whether indentation is made of spaces or of tabs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndentStyle {
    Spaces,
    Tabs,
}

impl IndentStyle {
    /// What the indented lines of `file` all start with; `None` when none is indented or both
    /// kinds occur.
    fn of_file(file: &str) -> Option<Self> {
        let mut seen = None;
        for line in file.lines().filter(|line| !line.trim().is_empty()) {
            let Some(style) = Self::of_indent(indent_of(line)) else { continue };
            match seen {
                None => seen = Some(style),
                Some(existing) if existing != style => return None,
                Some(_) => {}
            }
        }
        seen
    }

    /// What an indentation starts with.
    fn of_indent(indent: &str) -> Option<Self> {
        match indent.as_bytes().first() {
            Some(b' ') => Some(Self::Spaces),
            Some(b'\t') => Some(Self::Tabs),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Self::Spaces => "spaces",
            Self::Tabs => "tabs",
        }
    }
}

fn indent_of(line: &str) -> &str {
    let end = line.bytes().position(|b| !is_blank(b)).unwrap_or(line.len());
    &line[..end]
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(file: &str, needle: &str) -> Range<usize> {
        let start = file.find(needle).unwrap();
        start..start + needle.len()
    }

    #[test]
    fn a_block_quoted_without_its_base_indentation_gets_it_back() {
        let file = "def main():\n    if True:\n        x = 1\n        y = 2\n    return x\n";
        let range = at(file, "if True:\n        x = 1\n        y = 2");
        let old = "if True:\n    x = 1\n    y = 2";
        let new = "if True:\n    x = 1\n    y = 3\n    if y:\n        z = 4";
        let out = reindent(file, range, old, new).unwrap();
        assert_eq!(out.range.start, file.find("    if True").unwrap());
        assert_eq!(
            out.text,
            "    if True:\n        x = 1\n        y = 3\n        if y:\n            z = 4"
        );
    }

    #[test]
    fn two_space_quotes_become_the_files_tabs() {
        let file = "func f() {\n\tif x {\n\t\ty()\n\t}\n}\n";
        let range = at(file, "\tif x {\n\t\ty()\n\t}");
        let old = "  if x {\n    y()\n  }";
        let new = "  if x {\n    y()\n    if z {\n      w()\n    }\n  }";
        let out = reindent(file, range, old, new).unwrap();
        assert_eq!(out.text, "\tif x {\n\t\ty()\n\t\tif z {\n\t\t\tw()\n\t\t}\n\t}");
    }

    #[test]
    fn a_line_shallower_than_the_quote_is_refused() {
        let file = "class A:\n    def f(self):\n        return 1\n";
        let range = at(file, "def f(self):\n        return 1");
        let old = "  def f(self):\n    return 1";
        let new = "  def f(self):\n    return 2\ng = 3";
        let err = reindent(file, range, old, new).unwrap_err();
        assert_eq!(err, IndentError::Outdented { line: 3 });
        assert!(err.to_string().contains("line 3 of newText"), "{err}");
    }

    #[test]
    fn tabs_in_a_space_indented_file_are_refused() {
        let file = "a\n    b\nc\n";
        let range = at(file, "a\n    b");
        let old = "a\n  b";
        let new = "a\n  b\n\tc";
        let err = reindent(file, range.clone(), old, new).unwrap_err();
        assert_eq!(err, IndentError::MixedStyle { line: 3, used: "tabs", file: "spaces" });
        // Whole steps of the model's unit become the file's unit.
        let out = reindent(file, range, old, "a\n  b\n    c").unwrap();
        assert_eq!(out.text, "a\n    b\n        c");
    }

    #[test]
    fn nothing_to_map_leaves_the_text_as_given() {
        let file = "x = 1  +  2\n";
        let range = at(file, "1  +  2");
        let out = reindent(file, range.clone(), "1 + 2", "3").unwrap();
        assert_eq!(out.range, range);
        assert_eq!(out.text, "3");
    }
}
