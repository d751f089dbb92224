//! The edit tool's matcher, which decides where a model's `oldText` lands in a file.
//!
//! Input layout: NUL-separated fields, read as UTF-8 (lossily): the file text, then pairs of
//! `oldText` and `newText` (up to eight). Checked, besides not panicking:
//!
//! - a success replaces exactly the reported ranges (in bounds, on character boundaries, not
//!   overlapping), each exact match is the only occurrence of its `oldText` and each
//!   whitespace-tolerant one equals it once whitespace is folded, the text written for it
//!   differs from its `newText` only in indentation, and the reported line numbers are right;
//! - each error is true: `NotFound` means no exact occurrence, an exact `Ambiguous` means
//!   that many occurrences, `EmptyOldText` an empty `oldText`, `NoChange` an unchanged text.

use rein_coding::edit_match::{EditError, MatchKind, Replacement, apply_replacements};

/// Most replacements taken from one input.
const MAX_REPLACEMENTS: usize = 8;

/// Runs the matcher checks on one input.
pub fn check(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let mut fields = text.split('\0');
    let Some(file) = fields.next() else { return };
    let rest: Vec<&str> = fields.collect();
    let replacements: Vec<Replacement> = rest
        .chunks(2)
        .take(MAX_REPLACEMENTS)
        .map(|pair| Replacement::new(pair[0], pair.get(1).copied().unwrap_or_default()))
        .collect();
    match apply_replacements(file, &replacements) {
        Ok(outcome) => {
            assert_eq!(outcome.applied.len(), replacements.len());
            let mut ranges = Vec::new();
            for (position, applied) in outcome.applied.iter().enumerate() {
                assert_eq!(applied.index, position, "results are not in request order");
                let range = applied.range.clone();
                assert!(
                    range.start <= range.end && range.end <= file.len(),
                    "{range:?} out of bounds"
                );
                assert!(
                    file.is_char_boundary(range.start) && file.is_char_boundary(range.end),
                    "{range:?} splits a character"
                );
                let old = replacements[position].old_text.replace("\r\n", "\n");
                let found = &file[range.clone()];
                match applied.kind {
                    MatchKind::Exact => {
                        assert_eq!(found, old, "an exact match is not the old text");
                        let new = replacements[position].new_text.replace("\r\n", "\n");
                        assert_eq!(applied.new_text, new, "an exact match's text was changed");
                        assert_eq!(occurrences(file, &old), 1, "an exact match is not unique");
                    }
                    MatchKind::Whitespace => {
                        assert_eq!(
                            occurrences(file, &old),
                            0,
                            "whitespace match with an exact one"
                        );
                        assert_eq!(fold(found), fold(&old), "a whitespace match differs in more");
                        let new = replacements[position].new_text.replace("\r\n", "\n");
                        assert_eq!(
                            unindent(&applied.new_text),
                            unindent(&new),
                            "re-indenting changed more than indentation"
                        );
                    }
                }
                assert_eq!(applied.line, file[..range.start].matches('\n').count() + 1);
                ranges.push((range, position));
            }
            ranges.sort_by_key(|(range, _)| (range.start, range.end));
            let mut rebuilt = String::new();
            let mut cursor = 0;
            for (range, position) in &ranges {
                assert!(range.start >= cursor, "replacements overlap");
                rebuilt.push_str(&file[cursor..range.start]);
                rebuilt.push_str(&outcome.applied[*position].new_text);
                cursor = range.end;
            }
            rebuilt.push_str(&file[cursor..]);
            assert_eq!(rebuilt, outcome.text, "the new text is not the reported replacements");
            assert_ne!(outcome.text, file, "a success that changes nothing");
        }
        Err(EditError::NoEdits) => assert!(replacements.is_empty()),
        Err(EditError::EmptyOldText { index }) => {
            assert!(replacements[index].old_text.replace("\r\n", "\n").is_empty());
        }
        Err(EditError::NotFound { index, .. }) => {
            let old = replacements[index].old_text.replace("\r\n", "\n");
            assert_eq!(occurrences(file, &old), 0, "not found, yet it occurs");
        }
        Err(EditError::Ambiguous { index, count, whitespace, .. }) => {
            let old = replacements[index].old_text.replace("\r\n", "\n");
            if whitespace {
                assert_eq!(occurrences(file, &old), 0, "whitespace ambiguity with an exact match");
            } else {
                assert_eq!(occurrences(file, &old), count, "wrong ambiguity count");
            }
            assert!(count > 1);
        }
        Err(EditError::Overlap { first, second, .. }) => assert_ne!(first, second),
        Err(EditError::NoChange) => {}
        Err(EditError::Indentation { index, .. }) => {
            let old = replacements[index].old_text.replace("\r\n", "\n");
            assert_eq!(occurrences(file, &old), 0, "re-indentation refused for an exact match");
        }
    }
}

/// The lines with their leading spaces and tabs removed (what re-indenting may change).
fn unindent(text: &str) -> Vec<&str> {
    text.split('\n').map(|line| line.trim_start_matches([' ', '\t'])).collect()
}

/// Occurrences of `needle` in `haystack`, overlapping ones included.
fn occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    haystack.char_indices().filter(|(at, _)| haystack[*at..].starts_with(needle)).count()
}

/// Whitespace folded as the matcher promises: per line, leading and trailing spaces and tabs
/// dropped and inner runs made one space; line breaks kept.
fn fold(text: &str) -> String {
    let lines: Vec<String> = text
        .split('\n')
        .map(|line| line.split([' ', '\t']).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" "))
        .collect();
    lines.join("\n")
}
