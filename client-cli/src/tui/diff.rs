//! Coloured unified diffs of the changes `edit` and `write` make (or propose, in an approval
//! dialog), computed with `similar` from the tool's arguments and the file on disk.

use super::theme::{Role, Theme};
use ratatui::text::{Line, Span};
use serde_json::Value;
use similar::TextDiff;
use std::path::Path;

/// Lines of context around each change.
const CONTEXT: usize = 3;

/// The unified diff a call to `tool_name` with `arguments` makes in `cwd`, or `None` for a
/// tool that changes no file. `write` is compared with the file as it is now (a new file is
/// all additions); `edit` shows each replacement in its place in the file when it is found
/// there, else the replaced text against the new text.
pub fn proposed(tool_name: &str, arguments: &Value, cwd: &Path) -> Option<String> {
    let path = arguments.get("path")?.as_str()?;
    let full = cwd.join(path);
    match tool_name {
        "write" => {
            let content = arguments.get("content")?.as_str()?;
            let before = std::fs::read_to_string(&full).unwrap_or_default();
            Some(unified(path, &before, content))
        }
        "edit" => {
            let edits = arguments.get("edits")?.as_array()?;
            let pairs: Vec<(&str, &str)> = edits
                .iter()
                .filter_map(|edit| {
                    Some((edit.get("oldText")?.as_str()?, edit.get("newText")?.as_str()?))
                })
                .collect();
            if pairs.is_empty() {
                return None;
            }
            if let Ok(before) = std::fs::read_to_string(&full) {
                let mut after = before.clone();
                let applied = pairs.iter().all(|(old, new)| {
                    if after.matches(old).count() == 1 {
                        after = after.replacen(old, new, 1);
                        true
                    } else {
                        false
                    }
                });
                if applied {
                    return Some(unified(path, &before, &after));
                }
            }
            let (before, after): (Vec<&str>, Vec<&str>) = pairs.into_iter().unzip();
            Some(unified(path, &before.join("\n"), &after.join("\n")))
        }
        _ => None,
    }
}

/// The diff a finished call reported (`details.diff` of `edit`), if any.
pub fn reported(details: Option<&Value>) -> Option<String> {
    details?.get("diff")?.as_str().map(str::to_string)
}

/// A unified diff of `before` and `after` under `a/PATH` and `b/PATH`.
pub fn unified(path: &str, before: &str, after: &str) -> String {
    TextDiff::from_lines(before, after)
        .unified_diff()
        .context_radius(CONTEXT)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// A unified diff painted line by line: additions green, removals red, headers blue.
pub fn lines(diff: &str, theme: Theme) -> Vec<Line<'static>> {
    diff.lines()
        .map(|line| {
            let role =
                if line.starts_with("+++") || line.starts_with("---") || line.starts_with("@@") {
                    Role::DiffHeader
                } else if line.starts_with('+') {
                    Role::Added
                } else if line.starts_with('-') {
                    Role::Removed
                } else {
                    Role::Dim
                };
            Line::from(Span::styled(format!("  {line}"), theme.style(role)))
        })
        .collect()
}

/// How many lines a diff adds and removes.
pub fn counts(diff: &str) -> (usize, usize) {
    let added = diff.lines().filter(|l| l.starts_with('+') && !l.starts_with("+++")).count();
    let removed = diff.lines().filter(|l| l.starts_with('-') && !l.starts_with("---")).count();
    (added, removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_edit_is_shown_in_its_place_in_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("app.py"), "a = 1\nb = 2\nc = 3\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let arguments =
            json!({"path": "app.py", "edits": [{"oldText": "b = 2", "newText": "b = 20"}]});
        let diff = proposed("edit", &arguments, dir.path()).unwrap_or_default();
        assert!(diff.contains("--- a/app.py\n+++ b/app.py\n"), "{diff}");
        assert!(diff.contains("\n a = 1\n-b = 2\n+b = 20\n c = 3\n"), "{diff}");
        assert_eq!(counts(&diff), (1, 1));
        let painted = lines(&diff, Theme::default());
        let added = painted.iter().find(|l| l.spans[0].content == "  +b = 20");
        assert_eq!(added.map(|l| l.spans[0].style), Some(Theme::default().style(Role::Added)));
    }

    #[test]
    fn a_write_of_a_new_file_is_all_additions() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let arguments = json!({"path": "new.txt", "content": "one\ntwo\n"});
        let diff = proposed("write", &arguments, dir.path()).unwrap_or_default();
        assert_eq!(counts(&diff), (2, 0));
        assert!(proposed("bash", &json!({"command": "ls"}), dir.path()).is_none());
    }
}
