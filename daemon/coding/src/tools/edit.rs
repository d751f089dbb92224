//! `edit`: exact replacements in an existing file, all or nothing, with a diff.
//!
//! The matching itself lives in [`crate::edit_match`]; this module handles the file: the lock,
//! the staleness check against what the model last read, the BOM and line endings, and the
//! atomic write.

use std::path::PathBuf;
use std::sync::Arc;

use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolCall, ToolContext, ToolSpec, TypedTool};
use crate::edit_match::{MatchKind, Replacement, apply_replacements, unified_diff};
use crate::file_tracker::FileStamp;

const BOM: &str = "\u{feff}";

const DESCRIPTION: &str = "Edit a file by exact text replacement. Each edit's oldText must \
match exactly one place in the file (quote it exactly, with its indentation); newText replaces \
it. Several edits may be given; they must not overlap, and either all apply or none does. \
Line endings and a byte-order mark are preserved. Returns a unified diff.";

const GUIDANCE: &str = "Read a file before editing it. Keep oldText short but unique: a few \
lines around the change. If the file changed since you read it, the edit is refused; read it \
again. To make several changes to one file, pass them as several edits in one call.";

/// The `edit` tool.
pub struct EditTool;

impl TypedTool for EditTool {
    type Args = EditArgs;
    const SPEC: ToolSpec = ToolSpec::sequential("edit", DESCRIPTION, GUIDANCE);

    async fn run(ctx: Arc<ToolContext>, args: EditArgs, call: ToolCall) -> ToolOutput {
        let file = match ctx.lock_for_change(&args.path).await {
            Ok(file) => file,
            Err(output) => return output,
        };
        let request = EditRequest {
            path: file.path.clone(),
            shown: file.shown.clone(),
            replacements: args
                .edits
                .into_iter()
                .map(|e| Replacement::new(e.old_text, e.new_text))
                .collect(),
            ctx: ctx.clone(),
        };
        call.blocking(move || request.run()).await
    }
}

/// The arguments of `edit`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditArgs {
    /// File to edit, relative to the working directory or absolute.
    path: String,
    /// Replacements to make; each oldText must match exactly once.
    #[schemars(length(min = 1))]
    #[serde(deserialize_with = "at_least_one_edit")]
    edits: Vec<EditArgument>,
}

/// Parses `edits`, refusing an empty list (the schema's `minItems`).
fn at_least_one_edit<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<EditArgument>, D::Error> {
    let edits = Vec::<EditArgument>::deserialize(deserializer)?;
    if edits.is_empty() {
        return Err(serde::de::Error::custom("no edits given"));
    }
    Ok(edits)
}

// One replacement (no doc comment: it would become a description the schema never had).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
struct EditArgument {
    /// Exact text to replace (non-empty, unique in the file).
    old_text: String,
    /// Text to put in its place.
    new_text: String,
}

struct EditRequest {
    path: PathBuf,
    shown: String,
    replacements: Vec<Replacement>,
    ctx: Arc<ToolContext>,
}

impl EditRequest {
    fn run(self) -> ToolOutput {
        let shown = &self.shown;
        let bytes = match self.ctx.env.read(&self.path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                return ToolOutput::error(format!(
                    "File not found: {shown}. Use write to create a new file."
                ));
            }
            Err(err) => return ToolOutput::error(format!("Cannot read {shown}: {err}")),
        };
        if let Err(changed) = self.ctx.files.check(&self.path, &bytes) {
            return ToolOutput::error(format!(
                "{shown} changed on disk since you last read it ({} bytes then, {} now). Read \
                 it again before editing.",
                changed.old_size, changed.new_size
            ));
        }
        let Ok(text) = String::from_utf8(bytes) else {
            return ToolOutput::error(format!("{shown} is not UTF-8 text; edit only changes text"));
        };
        let style = TextStyle::of(&text);
        let before = style.to_lf(&text);
        let outcome = match apply_replacements(&before, &self.replacements) {
            Ok(outcome) => outcome,
            Err(err) => {
                return ToolOutput::error(format!("No changes made to {shown}: {err}"));
            }
        };
        let written = style.restore(&outcome.text);
        if let Err(err) = self.ctx.env.write(&self.path, written.as_bytes()) {
            return ToolOutput::error(format!("Cannot write {shown}: {err}"));
        }
        self.ctx.files.record(&self.path, FileStamp::of(&self.path, written.as_bytes()));
        self.report(&before, &outcome)
    }

    fn report(&self, before: &str, outcome: &crate::edit_match::EditOutcome) -> ToolOutput {
        let diff = unified_diff(&self.shown, before, &outcome.text);
        let count = outcome.applied.len();
        let mut text =
            format!("Applied {count} edit{} to {}.", if count == 1 { "" } else { "s" }, self.shown);
        for applied in outcome.applied.iter().filter(|a| a.kind == MatchKind::Whitespace) {
            text.push_str(&format!(
                "\nNote: edit {} did not match exactly; it matched line {} after ignoring \
                 whitespace differences, and its newText was re-indented to the file's \
                 indentation. Check the diff.",
                applied.index + 1,
                applied.line
            ));
        }
        text.push_str("\n\n");
        text.push_str(&diff);
        let first_changed = outcome.applied.iter().map(|a| a.line).min();
        let edits: Vec<Value> = outcome
            .applied
            .iter()
            .map(|a| json!({ "line": a.line, "match": a.kind.to_string() }))
            .collect();
        ToolOutput::text(text).with_details(json!({
            "path": self.shown,
            "diff": diff,
            "firstChangedLine": first_changed,
            "edits": edits,
        }))
    }
}

/// How a text file is laid out on disk, so an edit can write it back the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TextStyle {
    bom: bool,
    crlf: bool,
}

impl TextStyle {
    /// The style of `text`: a leading BOM, and CRLF when its first line break is CRLF.
    fn of(text: &str) -> Self {
        let bom = text.starts_with(BOM);
        let crlf = text.find('\n').is_some_and(|at| at > 0 && text.as_bytes()[at - 1] == b'\r');
        Self { bom, crlf }
    }

    /// The text without BOM and with LF line breaks.
    fn to_lf(self, text: &str) -> String {
        let text = text.strip_prefix(BOM).unwrap_or(text);
        text.replace("\r\n", "\n")
    }

    /// LF text back in this style.
    fn restore(self, text: &str) -> String {
        let body = if self.crlf { text.replace('\n', "\r\n") } else { text.to_string() };
        if self.bom { format!("{BOM}{body}") } else { body }
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::super::{ToolContext, coding_tools};
    use super::*;
    use crate::file_tracker::FileTracker;

    fn edit(path: &str, edits: &[(&str, &str)]) -> Value {
        let edits: Vec<Value> =
            edits.iter().map(|(o, n)| json!({"oldText": o, "newText": n})).collect();
        json!({"path": path, "edits": edits})
    }

    #[tokio::test]
    async fn unique_match_is_replaced_and_a_diff_returned() {
        let f = Fixture::new();
        f.write("a.rs", "fn a() {\n    1\n}\n");
        let out = f.call("edit", edit("a.rs", &[("    1\n", "    2\n")])).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(f.read("a.rs"), b"fn a() {\n    2\n}\n");
        let text = text(&out);
        assert!(text.starts_with("Applied 1 edit to a.rs."));
        assert!(text.contains("-    1\n+    2\n"), "{text}");
        let details = out.details.unwrap();
        assert_eq!(details["firstChangedLine"], 2);
        assert!(details["diff"].as_str().unwrap().contains("+++ b/a.rs"));
    }

    #[tokio::test]
    async fn no_match_names_candidates_and_changes_nothing() {
        let f = Fixture::new();
        f.write("a.rs", "let value = compute();\nother();\n");
        let out = f.call("edit", edit("a.rs", &[("let valeu = compute();", "x")])).await;
        assert!(out.is_error);
        let text = text(&out);
        assert!(text.contains("not found"), "{text}");
        assert!(text.contains("line 1: let value = compute();"), "{text}");
        assert_eq!(f.read("a.rs"), b"let value = compute();\nother();\n");
    }

    #[tokio::test]
    async fn several_matches_are_refused() {
        let f = Fixture::new();
        f.write("a.txt", "x\ny\nx\n");
        let out = f.call("edit", edit("a.txt", &[("x", "z")])).await;
        assert!(out.is_error);
        assert!(text(&out).contains("matches 2 places"));
        assert_eq!(f.read("a.txt"), b"x\ny\nx\n");
    }

    #[tokio::test]
    async fn overlapping_edits_are_refused() {
        let f = Fixture::new();
        f.write("a.txt", "abcdef\n");
        let out = f.call("edit", edit("a.txt", &[("abcd", "1"), ("cdef", "2")])).await;
        assert!(out.is_error);
        assert!(text(&out).contains("overlap"));
        assert_eq!(f.read("a.txt"), b"abcdef\n");
    }

    #[tokio::test]
    async fn all_or_nothing() {
        let f = Fixture::new();
        f.write("a.txt", "one\ntwo\nthree\n");
        let out = f.call("edit", edit("a.txt", &[("one", "1"), ("four", "4")])).await;
        assert!(out.is_error);
        assert!(text(&out).contains("edit 2"), "{}", text(&out));
        assert_eq!(f.read("a.txt"), b"one\ntwo\nthree\n", "the first edit was not applied");

        let out = f.call("edit", edit("a.txt", &[("one", "1"), ("three", "3")])).await;
        assert!(!out.is_error);
        assert_eq!(f.read("a.txt"), b"1\ntwo\n3\n");
        assert!(text(&out).starts_with("Applied 2 edits"));
    }

    #[tokio::test]
    async fn whitespace_tolerant_match_is_reported() {
        let f = Fixture::new();
        f.write("a.py", "def f():\n\treturn  1   \n");
        let out = f.call("edit", edit("a.py", &[("return 1", "return 2")])).await;
        assert!(!out.is_error, "{out:?}");
        assert!(text(&out).contains("after ignoring whitespace differences"));
        assert_eq!(f.read("a.py"), b"def f():\n\treturn 2   \n");
        assert_eq!(out.details.unwrap()["edits"][0]["match"], "whitespace-insensitive");
    }

    #[tokio::test]
    async fn crlf_and_bom_are_preserved() {
        let f = Fixture::new();
        f.write("win.txt", "\u{feff}first\r\nsecond\r\nthird\r\n");
        let out = f.call("edit", edit("win.txt", &[("first\nsecond", "1st\nmiddle\n2nd")])).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(
            String::from_utf8(f.read("win.txt")).unwrap(),
            "\u{feff}1st\r\nmiddle\r\n2nd\r\nthird\r\n"
        );
        // The diff the model sees has plain line breaks and no BOM.
        assert!(!text(&out).contains('\r'));
        assert!(!text(&out).contains('\u{feff}'));
    }

    #[tokio::test]
    async fn lf_files_stay_lf() {
        let f = Fixture::new();
        f.write("unix.txt", "a\nb\n");
        let out = f.call("edit", edit("unix.txt", &[("a", "x\r\ny")])).await;
        assert!(!out.is_error);
        assert_eq!(f.read("unix.txt"), b"x\ny\nb\n");
    }

    #[tokio::test]
    async fn a_file_changed_since_it_was_read_is_refused() {
        let f = Fixture::new();
        f.write("a.txt", "original\n");
        let read = f.call("read", json!({"path": "a.txt"})).await;
        assert!(!read.is_error);
        f.write("a.txt", "changed by someone else\n");
        let out = f.call("edit", edit("a.txt", &[("changed", "edited")])).await;
        assert!(out.is_error);
        assert!(text(&out).contains("changed on disk since you last read it"), "{}", text(&out));
        assert_eq!(f.read("a.txt"), b"changed by someone else\n");

        // After reading again the edit goes through, and its own write counts as seen.
        f.call("read", json!({"path": "a.txt"})).await;
        let out = f.call("edit", edit("a.txt", &[("changed", "edited")])).await;
        assert!(!out.is_error, "{out:?}");
        let out = f.call("edit", edit("a.txt", &[("edited", "changed again")])).await;
        assert!(!out.is_error, "{out:?}");
    }

    #[tokio::test]
    async fn missing_and_non_text_files() {
        let f = Fixture::new();
        let out = f.call("edit", edit("nope.txt", &[("a", "b")])).await;
        assert!(out.is_error && text(&out).contains("Use write"));
        f.write("bin", b"\xff\xfe\x00x");
        let out = f.call("edit", edit("bin", &[("x", "y")])).await;
        assert!(out.is_error && text(&out).contains("not UTF-8"));
        f.write("a", "a");
        let out = f.call("edit", json!({"path": "a", "edits": []})).await;
        assert!(out.is_error && text(&out).contains("no edits"));
        let out = f.call("edit", edit("a", &[("", "b")])).await;
        assert!(out.is_error && text(&out).contains("oldText is empty"));
    }

    #[tokio::test]
    async fn sessions_editing_one_file_are_serialized() {
        let f = Fixture::new();
        let lines: Vec<String> = (0..20).map(|i| format!("line {i};")).collect();
        f.write("shared.txt", lines.join("\n"));
        // Twenty sessions with their own trackers but the daemon's one set of locks.
        let mut calls = Vec::new();
        for i in 0..20 {
            let ctx = ToolContext { files: FileTracker::new(), ..f.ctx.clone() };
            let tool = coding_tools(ctx).into_iter().find(|t| t.name() == "edit").unwrap();
            let args = edit("shared.txt", &[(&format!("line {i};"), &format!("LINE {i};"))]);
            calls.push(tokio::spawn(async move {
                let (updates, _rx) = rein_agent::ToolUpdateSink::channel();
                tool.execute(invocation(args, updates, Default::default())).await
            }));
        }
        for call in calls {
            let out = call.await.unwrap();
            assert!(!out.is_error, "{out:?}");
        }
        let expected: Vec<String> = (0..20).map(|i| format!("LINE {i};")).collect();
        assert_eq!(String::from_utf8(f.read("shared.txt")).unwrap(), expected.join("\n"));
    }

    #[test]
    fn text_style_round_trips() {
        for original in ["a\nb", "a\r\nb\r\n", "\u{feff}x\r\n", "\u{feff}", "", "\r\n"] {
            let style = TextStyle::of(original);
            assert_eq!(style.restore(&style.to_lf(original)), original);
        }
    }
}
