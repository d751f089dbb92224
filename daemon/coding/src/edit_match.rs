//! Finding and applying the replacements of an `edit` call: a pure function over strings.
//!
//! The input is the file's text with LF line endings (the tool strips a BOM and converts CRLF
//! before calling, and converts back after). Each replacement's `old_text` must match exactly
//! once. When it matches nowhere, a match that differs only in whitespace (trailing spaces,
//! indentation, runs of spaces or tabs) is accepted if it is unique. Replacements must not
//! overlap. A whitespace-tolerant match has its new text re-indented to the file's
//! indentation ([`crate::reindent`]), and is refused when that cannot be done safely.
//! Everything is checked before the new text is built, so a failing call changes nothing. No I/O happens here, which keeps the module easy to test and to fuzz.

use std::fmt;

use similar::TextDiff;

/// One requested replacement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Replacement {
    /// The text to find (must be non-empty).
    pub old_text: String,
    /// The text to put in its place.
    pub new_text: String,
}

impl Replacement {
    /// A replacement of `old_text` by `new_text`.
    pub fn new(old_text: impl Into<String>, new_text: impl Into<String>) -> Self {
        Self { old_text: old_text.into(), new_text: new_text.into() }
    }
}

/// How a replacement's `old_text` was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchKind {
    /// Byte for byte.
    Exact,
    /// Equal once whitespace differences are ignored.
    Whitespace,
}

/// Where one replacement landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppliedReplacement {
    /// Position of the replacement in the request (0-based).
    pub index: usize,
    /// How it matched.
    pub kind: MatchKind,
    /// The 1-based line of the original text where the match starts.
    pub line: usize,
    /// The byte range of the original text that was replaced.
    pub range: std::ops::Range<usize>,
    /// The text written in its place: the request's `new_text` (LF line endings), re-indented
    /// to the file when the match was whitespace-tolerant.
    pub new_text: String,
}

/// The result of applying all replacements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutcome {
    /// The new text (LF line endings).
    pub text: String,
    /// Each replacement, in request order.
    pub applied: Vec<AppliedReplacement>,
}

impl EditOutcome {
    /// True when any replacement needed the whitespace-tolerant match.
    pub fn used_whitespace_match(&self) -> bool {
        self.applied.iter().any(|a| a.kind == MatchKind::Whitespace)
    }
}

/// A line of the original text offered as a likely intended match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateLine {
    /// 1-based line number.
    pub line: usize,
    /// The line's text.
    pub text: String,
}

/// Why the replacements cannot be applied. Indices are 0-based positions in the request; the
/// `Display` text counts from 1 for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The request had no replacements.
    #[error("no edits given")]
    NoEdits,
    /// An `old_text` was empty.
    #[error("edit {}: oldText is empty; it must quote the text to replace", .index + 1)]
    EmptyOldText {
        /// Which replacement.
        index: usize,
    },
    /// An `old_text` matched nowhere, not even ignoring whitespace.
    #[error(
        "edit {}: oldText was not found in the file{}",
        .index + 1,
        describe_candidates("the closest lines are", .candidates)
    )]
    NotFound {
        /// Which replacement.
        index: usize,
        /// Lines that resemble it most, best first.
        candidates: Vec<CandidateLine>,
    },
    /// An `old_text` matched more than once.
    #[error(
        "edit {}: oldText matches {count} places{}; include more surrounding lines so it \
         matches exactly one{}",
        .index + 1,
        if *.whitespace { " (ignoring whitespace)" } else { "" },
        describe_candidates("matches start at", .candidates)
    )]
    Ambiguous {
        /// Which replacement.
        index: usize,
        /// How many matches there were.
        count: usize,
        /// True when the matches were found ignoring whitespace.
        whitespace: bool,
        /// The first line of each match (up to a few).
        candidates: Vec<CandidateLine>,
    },
    /// Two replacements cover overlapping text.
    #[error(
        "edits {} and {} overlap (both touch line {line}); merge them into one edit",
        .first + 1,
        .second + 1
    )]
    Overlap {
        /// The earlier replacement in the text.
        first: usize,
        /// The later one.
        second: usize,
        /// The line where the later one starts.
        line: usize,
    },
    /// The replacements leave the text as it was.
    #[error("the edits change nothing: each newText equals the text it replaces")]
    NoChange,
    /// A whitespace-tolerant match whose new text cannot be fitted to the file's indentation.
    #[error(
        "edit {}: {source}; quote oldText with the file's exact indentation and write newText          indented the same way",
        .index + 1
    )]
    Indentation {
        /// Which replacement.
        index: usize,
        /// What would break.
        source: crate::reindent::IndentError,
    },
}

/// How many candidate lines an error names at most.
const MAX_CANDIDATES: usize = 3;
/// Characters of a candidate line shown at most.
const MAX_CANDIDATE_CHARS: usize = 200;

fn describe_candidates(lead: &str, candidates: &[CandidateLine]) -> String {
    if candidates.is_empty() {
        return String::new();
    }
    let lines: Vec<String> =
        candidates.iter().map(|c| format!("  line {}: {}", c.line, c.text)).collect();
    format!("; {lead}:\n{}", lines.join("\n"))
}

/// Applies `replacements` to `text` (LF line endings). All replacements are located in the
/// original text first; only when every one matches exactly once and none overlap is the new
/// text built.
pub fn apply_replacements(
    text: &str,
    replacements: &[Replacement],
) -> Result<EditOutcome, EditError> {
    if replacements.is_empty() {
        return Err(EditError::NoEdits);
    }
    let normalized = std::cell::OnceCell::new();
    let mut applied = Vec::with_capacity(replacements.len());
    for (index, replacement) in replacements.iter().enumerate() {
        let old = replacement.old_text.replace("\r\n", "\n");
        if old.is_empty() {
            return Err(EditError::EmptyOldText { index });
        }
        let (kind, range) = locate(text, &normalized, &old, index)?;
        let new = replacement.new_text.replace("\r\n", "\n");
        let (range, new_text) = match kind {
            MatchKind::Exact => (range, new),
            MatchKind::Whitespace => {
                let fitted = crate::reindent::reindent(text, range, &old, &new)
                    .map_err(|source| EditError::Indentation { index, source })?;
                (fitted.range, fitted.text)
            }
        };
        applied.push(AppliedReplacement {
            index,
            kind,
            line: line_of(text, range.start),
            range,
            new_text,
        });
    }

    let mut order: Vec<&AppliedReplacement> = applied.iter().collect();
    order.sort_by_key(|a| (a.range.start, a.range.end));
    for pair in order.windows(2) {
        if let [earlier, later] = pair
            && later.range.start < earlier.range.end
        {
            return Err(EditError::Overlap {
                first: earlier.index,
                second: later.index,
                line: later.line,
            });
        }
    }

    let mut out = String::with_capacity(text.len());
    let mut cursor = 0;
    for a in &order {
        out.push_str(&text[cursor..a.range.start]);
        out.push_str(&a.new_text);
        cursor = a.range.end;
    }
    out.push_str(&text[cursor..]);
    if out == text {
        return Err(EditError::NoChange);
    }
    Ok(EditOutcome { text: out, applied })
}

/// A unified diff between two texts, with `path` in the headers and three lines of context.
pub fn unified_diff(path: &str, before: &str, after: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

fn locate(
    text: &str,
    normalized: &std::cell::OnceCell<Normalized>,
    old: &str,
    index: usize,
) -> Result<(MatchKind, std::ops::Range<usize>), EditError> {
    let exact = find_all(text, old);
    match exact.len() {
        1 => return Ok((MatchKind::Exact, exact[0]..exact[0] + old.len())),
        0 => {}
        count => {
            return Err(EditError::Ambiguous {
                index,
                count,
                whitespace: false,
                candidates: lines_at(text, &exact),
            });
        }
    }

    let needle = Normalized::new(old);
    if !needle.text.is_empty() {
        // Only built when some replacement needs it, and then once for all of them.
        let normalized = normalized.get_or_init(|| Normalized::new(text));
        let hits = find_all(&normalized.text, &needle.text);
        match hits.len() {
            1 => {
                let range = normalized.original_range(text, hits[0], needle.text.len(), old);
                return Ok((MatchKind::Whitespace, range));
            }
            0 => {}
            count => {
                let starts: Vec<usize> = hits.iter().map(|&h| normalized.origin[h]).collect();
                return Err(EditError::Ambiguous {
                    index,
                    count,
                    whitespace: true,
                    candidates: lines_at(text, &starts),
                });
            }
        }
    }
    Err(EditError::NotFound { index, candidates: closest_lines(text, old) })
}

/// Start offsets of every occurrence of `needle`, overlapping ones included.
fn find_all(haystack: &str, needle: &str) -> Vec<usize> {
    let mut hits = Vec::new();
    let mut from = 0;
    while let Some(pos) = haystack[from..].find(needle) {
        let at = from + pos;
        hits.push(at);
        // Step past the first character of this hit so overlapping hits are counted.
        let step = haystack[at..].chars().next().map_or(1, char::len_utf8);
        from = at + step;
    }
    hits
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

fn line_text(text: &str, offset: usize) -> &str {
    let start = text[..offset].rfind('\n').map_or(0, |p| p + 1);
    let end = text[offset..].find('\n').map_or(text.len(), |p| offset + p);
    &text[start..end]
}

fn clip(line: &str) -> String {
    match line.char_indices().nth(MAX_CANDIDATE_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_string(),
    }
}

fn lines_at(text: &str, offsets: &[usize]) -> Vec<CandidateLine> {
    offsets
        .iter()
        .take(MAX_CANDIDATES)
        .map(|&offset| CandidateLine {
            line: line_of(text, offset),
            text: clip(line_text(text, offset)),
        })
        .collect()
}

/// The lines of `text` that start the window most like `old`: each window of as many
/// non-blank lines as `old` has (up to five) is scored by the mean similarity of its lines.
fn closest_lines(text: &str, old: &str) -> Vec<CandidateLine> {
    const WINDOW: usize = 5;
    const MIN_SCORE: f32 = 0.5;
    let wanted: Vec<Bigrams> = old
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(WINDOW)
        .map(Bigrams::of)
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    let lines: Vec<&str> = text.lines().collect();
    // Non-blank lines with their bigrams, computed once for every window they appear in.
    let content: Vec<(usize, Bigrams)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| (i, Bigrams::of(l.trim())))
        .collect();
    let mut scored: Vec<(f32, usize)> = Vec::new();
    for start in 0..content.len() {
        let window = &content[start..content.len().min(start + wanted.len())];
        let total: f32 = wanted.iter().zip(window).map(|(w, (_, have))| w.similarity(have)).sum();
        let score = total / wanted.len() as f32;
        if score >= MIN_SCORE {
            scored.push((score, content[start].0));
        }
    }
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(MAX_CANDIDATES)
        .map(|(_, line)| CandidateLine { line: line + 1, text: clip(lines[line]) })
        .collect()
}

/// The character pairs of a line, sorted, for a cheap similarity measure (the Dice
/// coefficient over bigrams): linear in the line's length, so ranking every line of a large
/// file stays fast.
struct Bigrams {
    pairs: Vec<(char, char)>,
    line: String,
}

impl Bigrams {
    fn of(line: &str) -> Self {
        // Long lines are compared by their beginnings: enough to rank, and it bounds the cost.
        const PREFIX: usize = 200;
        let chars: Vec<char> = line.chars().take(PREFIX).collect();
        let mut pairs: Vec<(char, char)> = chars.windows(2).map(|w| (w[0], w[1])).collect();
        pairs.sort_unstable();
        Self { pairs, line: chars.into_iter().collect() }
    }

    /// 1.0 for equal lines, 0.0 for lines sharing no character pair.
    fn similarity(&self, other: &Bigrams) -> f32 {
        if self.pairs.is_empty() || other.pairs.is_empty() {
            return if self.line == other.line { 1.0 } else { 0.0 };
        }
        let (mut i, mut j, mut shared) = (0, 0, 0);
        while i < self.pairs.len() && j < other.pairs.len() {
            match self.pairs[i].cmp(&other.pairs[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    shared += 1;
                    i += 1;
                    j += 1;
                }
            }
        }
        2.0 * shared as f32 / (self.pairs.len() + other.pairs.len()) as f32
    }
}

/// A text with whitespace differences folded away, and where each byte of it came from.
///
/// Per line: leading and trailing spaces and tabs are dropped and every inner run of them
/// becomes one space. Only ASCII bytes are removed or replaced, so the result stays valid
/// UTF-8 and every byte maps back to a byte range of the original.
struct Normalized {
    text: String,
    /// The original offset of each byte of `text` (for a folded run, where the run starts).
    origin: Vec<usize>,
}

impl Normalized {
    fn new(original: &str) -> Self {
        let bytes = original.as_bytes();
        let mut out = Vec::with_capacity(bytes.len());
        let mut origin = Vec::with_capacity(bytes.len());
        let mut line_start = 0;
        loop {
            let line_end =
                original[line_start..].find('\n').map_or(bytes.len(), |p| line_start + p);
            let mut i = line_start;
            while i < line_end && is_blank(bytes[i]) {
                i += 1;
            }
            let mut content_end = line_end;
            while content_end > i && is_blank(bytes[content_end - 1]) {
                content_end -= 1;
            }
            while i < content_end {
                if is_blank(bytes[i]) {
                    let run_start = i;
                    while is_blank(bytes[i]) {
                        i += 1;
                    }
                    out.push(b' ');
                    origin.push(run_start);
                } else {
                    out.push(bytes[i]);
                    origin.push(i);
                    i += 1;
                }
            }
            if line_end == bytes.len() {
                break;
            }
            out.push(b'\n');
            origin.push(line_end);
            line_start = line_end + 1;
        }
        // Only ASCII spaces and tabs were dropped or replaced by a space, so `out` is UTF-8.
        let text = String::from_utf8(out)
            .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned());
        Self { text, origin }
    }

    /// The original byte range of a match of `len` normalized bytes at `at`. When the model's
    /// `old` began with indentation and the match begins a line, the range reaches back to the
    /// start of that line so the new text's indentation replaces the file's.
    fn original_range(
        &self,
        original: &str,
        at: usize,
        len: usize,
        old: &str,
    ) -> std::ops::Range<usize> {
        let mut start = self.origin[at];
        // A normalized needle never ends in a folded run (trailing blanks are dropped), so the
        // last matched byte stands for exactly one original byte.
        let end = self.origin[at + len - 1] + 1;
        let begins_line = at == 0 || self.text.as_bytes()[at - 1] == b'\n';
        if begins_line && old.starts_with([' ', '\t']) {
            start = original[..start].rfind('\n').map_or(0, |p| p + 1);
        }
        start..end
    }
}

fn is_blank(byte: u8) -> bool {
    byte == b' ' || byte == b'\t'
}

impl fmt::Display for MatchKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Exact => "exact",
            Self::Whitespace => "whitespace-insensitive",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn apply(text: &str, edits: &[(&str, &str)]) -> Result<EditOutcome, EditError> {
        let edits: Vec<Replacement> = edits.iter().map(|(o, n)| Replacement::new(*o, *n)).collect();
        apply_replacements(text, &edits)
    }

    #[test]
    fn unique_exact_match_is_replaced() {
        let out = apply("a\nb\nc\n", &[("b\n", "B\nB2\n")]).unwrap();
        assert_eq!(out.text, "a\nB\nB2\nc\n");
        assert_eq!(out.applied[0].kind, MatchKind::Exact);
        assert_eq!(out.applied[0].line, 2);
        assert!(!out.used_whitespace_match());
    }

    #[test]
    fn several_edits_apply_in_text_order_whatever_the_request_order() {
        let out = apply("one two three", &[("three", "3"), ("one", "1")]).unwrap();
        assert_eq!(out.text, "1 two 3");
    }

    #[test]
    fn empty_old_text_is_refused() {
        assert_eq!(
            apply("abc", &[("a", "x"), ("", "y")]),
            Err(EditError::EmptyOldText { index: 1 })
        );
        assert_eq!(apply("abc", &[]), Err(EditError::NoEdits));
    }

    #[test]
    fn missing_text_names_the_closest_lines() {
        let text = "fn main() {\n    let total = compute(1, 2);\n    println!(\"{total}\");\n}\n";
        let err = apply(text, &[("let totl = compute(1, 3);", "x")]).unwrap_err();
        let EditError::NotFound { index, candidates } = &err else { panic!("{err:?}") };
        assert_eq!(*index, 0);
        assert_eq!(candidates[0].line, 2);
        assert_eq!(candidates[0].text, "    let total = compute(1, 2);");
        let message = err.to_string();
        assert!(message.contains("line 2:     let total"), "{message}");
    }

    #[test]
    fn missing_text_with_nothing_similar_has_no_candidates() {
        let err = apply("alpha\nbeta\n", &[("zzzzzzzzzzzz", "x")]).unwrap_err();
        assert_eq!(err, EditError::NotFound { index: 0, candidates: vec![] });
    }

    #[test]
    fn several_matches_are_an_error_listing_them() {
        let err = apply("x = 1\ny = 2\nx = 1\n", &[("x = 1", "x = 3")]).unwrap_err();
        let EditError::Ambiguous { count, whitespace, candidates, .. } = &err else {
            panic!("{err:?}")
        };
        assert_eq!((*count, *whitespace), (2, false));
        let lines: Vec<usize> = candidates.iter().map(|c| c.line).collect();
        assert_eq!(lines, vec![1, 3]);
        assert!(err.to_string().contains("matches 2 places"));
    }

    #[test]
    fn overlapping_occurrences_count_as_several() {
        let err = apply("aaa", &[("aa", "b")]).unwrap_err();
        assert!(matches!(err, EditError::Ambiguous { count: 2, .. }), "{err:?}");
    }

    #[test]
    fn overlapping_edits_are_refused() {
        let err = apply("let a = 1;\nlet b = 2;\n", &[("a = 1;\nlet b", "x"), ("let b = 2", "y")])
            .unwrap_err();
        assert_eq!(err, EditError::Overlap { first: 0, second: 1, line: 2 });
    }

    #[test]
    fn adjacent_edits_are_fine() {
        let out = apply("abcd", &[("ab", "1"), ("cd", "2")]).unwrap();
        assert_eq!(out.text, "12");
    }

    #[test]
    fn whitespace_differences_are_tolerated_when_unique() {
        let text = "fn f() {\n\tif  x {   \n\t\treturn 1;\n\t}\n}\n";
        let old = "    if x {\n        return 1;\n    }";
        let out = apply(text, &[(old, "    if x {\n        return 2;\n    }")]).unwrap();
        assert_eq!(out.applied[0].kind, MatchKind::Whitespace);
        assert_eq!(out.applied[0].line, 2);
        assert!(out.used_whitespace_match());
        // The new text is re-indented from the model's spaces to the file's tabs.
        assert_eq!(out.text, "fn f() {\n\tif x {\n\t\treturn 2;\n\t}\n}\n");
        assert_eq!(out.applied[0].new_text, "\tif x {\n\t\treturn 2;\n\t}");
    }

    #[test]
    fn whitespace_match_without_leading_indent_keeps_the_files_indent() {
        let text = "  call(a,   b);\n";
        let out = apply(text, &[("call(a, b);", "call(a, c);")]).unwrap();
        assert_eq!(out.text, "  call(a, c);\n");
        assert_eq!(out.applied[0].kind, MatchKind::Whitespace);
    }

    #[test]
    fn whitespace_match_that_is_not_unique_is_an_error() {
        let err = apply("a  b\nc\na b\n", &[("a   b", "x")]).unwrap_err();
        assert!(matches!(err, EditError::Ambiguous { count: 2, whitespace: true, .. }), "{err:?}");
    }

    #[test]
    fn exact_duplicates_do_not_fall_back_to_whitespace_matching() {
        let err = apply("ab\nab\na b\n", &[("ab", "x")]).unwrap_err();
        assert!(matches!(err, EditError::Ambiguous { count: 2, whitespace: false, .. }));
    }

    #[test]
    fn crlf_in_the_request_matches_lf_text() {
        let out = apply("a\nb\n", &[("a\r\nb", "c\r\nd")]).unwrap();
        assert_eq!(out.text, "c\nd\n");
    }

    #[test]
    fn edits_that_change_nothing_are_refused() {
        assert_eq!(apply("abc", &[("b", "b")]), Err(EditError::NoChange));
    }

    #[test]
    fn multibyte_text_is_handled() {
        let out = apply("héllo  wörld\nünïcode\n", &[("héllo wörld", "hi")]).unwrap();
        assert_eq!(out.text, "hi\nünïcode\n");
        let out = apply("ééé", &[("éé", "x")]);
        assert!(matches!(out, Err(EditError::Ambiguous { count: 2, .. })));
    }

    #[test]
    fn bigram_similarity() {
        let a = Bigrams::of("let total = 1;");
        assert_eq!(a.similarity(&Bigrams::of("let total = 1;")), 1.0);
        assert_eq!(a.similarity(&Bigrams::of("zzzz")), 0.0);
        let near = a.similarity(&Bigrams::of("let totl = 1;"));
        assert!(near > 0.7 && near < 1.0, "{near}");
        assert_eq!(Bigrams::of("x").similarity(&Bigrams::of("x")), 1.0);
        assert_eq!(Bigrams::of("x").similarity(&Bigrams::of("y")), 0.0);
    }

    #[test]
    fn candidates_follow_multi_line_windows() {
        let text = "fn a() {\n    one();\n}\n\nfn b() {\n    two();\n}\n";
        let err = apply(text, &[("fn b() {\n    tow();\n}", "x")]).unwrap_err();
        let EditError::NotFound { candidates, .. } = err else { panic!() };
        assert_eq!(candidates[0].line, 5);
    }

    #[test]
    fn diff_shows_the_change() {
        let diff = unified_diff("src/a.rs", "a\nb\nc\n", "a\nB\nc\n");
        assert!(diff.contains("--- a/src/a.rs"));
        assert!(diff.contains("+++ b/src/a.rs"));
        assert!(diff.contains("-b\n+B\n"), "{diff}");
    }

    /// A small deterministic fuzz: random edits over random texts never panic, and every
    /// success replaced a range that matches the old text (exactly, or once whitespace is
    /// folded) with the new text and left the rest alone.
    #[test]
    fn random_inputs_keep_the_invariants() {
        let alphabet = [" ", "\t", "\n", "a", "b", "é", "  ", "\r\n"];
        let mut seed: u64 = 0x9e3779b97f4a7c15;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut successes = 0;
        for _ in 0..5000 {
            let mut make = |len: usize| -> String {
                (0..len).map(|_| alphabet[next(alphabet.len())]).collect()
            };
            let text = make(12).replace("\r\n", "\n");
            let old = make(3);
            let new = make(2);
            let Ok(out) = apply(&text, &[(&old, &new)]) else { continue };
            successes += 1;
            let applied = &out.applied[0];
            let (before, replaced, after) = (
                &text[..applied.range.start],
                &text[applied.range.clone()],
                &text[applied.range.end..],
            );
            assert_eq!(out.text, format!("{before}{}{after}", applied.new_text));
            let old = old.replace("\r\n", "\n");
            let new = new.replace("\r\n", "\n");
            let unindent = |text: &str| -> Vec<String> {
                text.split('\n').map(|l| l.trim_start_matches([' ', '\t']).to_string()).collect()
            };
            match applied.kind {
                MatchKind::Exact => {
                    assert_eq!(replaced, old);
                    assert_eq!(applied.new_text, new);
                }
                MatchKind::Whitespace => {
                    assert_eq!(Normalized::new(replaced).text, Normalized::new(&old).text);
                    // Re-indenting changes only the indentation of the new text's lines.
                    assert_eq!(unindent(&applied.new_text), unindent(&new));
                }
            }
        }
        assert!(successes > 100, "the generator exercises the success path ({successes})");
    }
}
