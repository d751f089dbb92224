//! End-to-end: an `edit` whose `oldText` matches only after ignoring indentation has its
//! `newText` re-indented to the file's, and one whose indentation cannot be placed is refused
//! without touching the file. Driven through the real `rein run`, daemon and edit tool.

#![allow(clippy::unwrap_used)] // test helpers outside #[test] fns: a failure stops the test

mod cli_support;

use cli_support::{CliEnv, assert_exit};
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::process::Command;

const SOURCE: &str = "def main():\n    if True:\n        x = 1\n        y = 2\n    return x\n";

/// Python itself says whether the file is valid, when it is installed.
fn python_accepts(path: &std::path::Path) -> Option<bool> {
    let status = Command::new("python3")
        .args(["-c", "import ast, sys; ast.parse(open(sys.argv[1]).read())"])
        .arg(path)
        .status()
        .ok()?;
    Some(status.success())
}

fn edit_call(old: &str, new: &str) -> Reply {
    Reply::tool_call("edit", json!({"path": "app.py", "edits": [{"oldText": old, "newText": new}]}))
}

#[test]
fn a_block_quoted_with_less_indentation_is_reindented_to_the_file() {
    // The model quotes the `if` block as if it were at the top level.
    let env = CliEnv::start(vec![
        edit_call(
            "if True:\n    x = 1\n    y = 2",
            "if True:\n    x = 1\n    y = 3\n    if y:\n        z = 4",
        ),
        Reply::text("edited"),
    ]);
    let file = env.project.path().join("app.py");
    std::fs::write(&file, SOURCE).unwrap();
    let output = env.run(&["run", "--approve", "yolo", "change y"]);
    assert_exit(&output, 0);
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        text,
        "def main():\n    if True:\n        x = 1\n        y = 3\n        if y:\n            z = \
         4\n    return x\n"
    );
    if let Some(valid) = python_accepts(&file) {
        assert!(valid, "python rejects the edited file:\n{text}");
    }
    let requests = env.requests();
    let result = requests[1].body.to_string();
    assert!(result.contains("re-indented"), "the model is told: {result}");
}

#[test]
fn a_line_that_cannot_be_placed_is_refused_and_nothing_is_written() {
    // The last new line is indented less than anything quoted: where it belongs is unknown.
    let env = CliEnv::start(vec![
        edit_call("  x = 1\n  y = 2", "  x = 1\ny = 3"),
        Reply::text("gave up"),
    ]);
    let file = env.project.path().join("app.py");
    std::fs::write(&file, SOURCE).unwrap();
    let output = env.run(&["run", "--approve", "yolo", "change y"]);
    assert_exit(&output, 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), SOURCE, "the file was changed");
    let requests = env.requests();
    let result = requests[1].body.to_string();
    assert!(result.contains("No changes made"), "{result}");
    assert!(result.contains("line 2 of newText is indented less"), "{result}");
}
