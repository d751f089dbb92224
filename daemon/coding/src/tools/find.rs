//! `find`: list files and directories whose names or paths match a glob.

use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::walk::PathGlob;
use super::{BlockingTool, Limit, MAX_OUTPUT_BYTES, ToolContext, ToolSpec, with_note};
use crate::paths;

/// Paths returned when the call gives no limit.
const DEFAULT_LIMIT: usize = 1_000;

const DESCRIPTION: &str = "Find files and directories by glob. A pattern without `/` matches \
names anywhere below path (`*.rs`, `Cargo.toml`); one with `/` matches paths relative to path \
(`src/**/*.rs`, `*/tests/*`). Files ignored by .gitignore and the .git directory are skipped. \
Directories end with `/`. Returns at most limit paths (default 1000), sorted.";

const GUIDANCE: &str = "Use find to locate files by name; use grep to search their contents \
and ls to look at one directory.";

/// The `find` tool.
pub struct FindTool;

impl BlockingTool for FindTool {
    type Args = FindArgs;
    const SPEC: ToolSpec = ToolSpec::parallel("find", DESCRIPTION, GUIDANCE);

    fn run_blocking(ctx: &ToolContext, args: FindArgs, cancel: &CancellationToken) -> ToolOutput {
        let glob = match PathGlob::new(&args.pattern) {
            Ok(glob) => glob,
            Err(err) => return ToolOutput::error(format!("Invalid glob: {err}")),
        };
        let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
        let limit = Limit::or(args.limit, DEFAULT_LIMIT);
        let root_shown = paths::display(&ctx.cwd, &root);
        if !ctx.env.stat(&root).is_ok_and(|meta| meta.is_dir()) {
            return ToolOutput::error(format!("Not a directory: {root_shown}"));
        }
        let walk = match ctx.env.walk(&root) {
            Ok(walk) => walk,
            Err(err) => return ToolOutput::error(format!("Cannot search {root_shown}: {err}")),
        };
        let mut found = Vec::new();
        let mut truncated = false;
        for entry in walk.build() {
            if cancel.is_cancelled() {
                return ToolOutput::error("find was cancelled");
            }
            let Ok(entry) = entry else { continue };
            if entry.depth() == 0 {
                continue;
            }
            let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            if !glob.is_match(relative) {
                continue;
            }
            if found.len() == limit {
                truncated = true;
                break;
            }
            let mut shown = paths::display(&ctx.cwd, entry.path());
            if entry.file_type().is_some_and(|t| t.is_dir()) {
                shown.push('/');
            }
            found.push(shown);
        }
        found.sort();

        let mut text = String::new();
        let mut shown = 0;
        for path in &found {
            if text.len() + path.len() + 1 > MAX_OUTPUT_BYTES {
                truncated = true;
                break;
            }
            text.push_str(path);
            text.push('\n');
            shown += 1;
        }
        let details = json!({ "count": shown, "truncated": truncated });
        if found.is_empty() {
            return ToolOutput::text(format!(
                "No files matching `{}` in {root_shown}",
                args.pattern
            ))
            .with_details(details);
        }
        let note = truncated.then(|| {
            format!("[Showing the first {shown} matches; narrow the pattern or raise limit]")
        });
        with_note(text.trim_end().to_string(), note, details)
    }
}

/// The arguments of `find`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FindArgs {
    /// Glob to match, e.g. `*.rs` or `src/**/mod.rs`.
    pattern: String,
    /// Directory to search (default: the working directory).
    path: Option<String>,
    /// Most paths to return (default 1000).
    limit: Option<Limit>,
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn project() -> Fixture {
        let f = Fixture::new();
        f.write(".gitignore", "target/\n*.tmp\n");
        f.write("src/main.rs", "");
        f.write("src/util/mod.rs", "");
        f.write("tests/it.rs", "");
        f.write("README.md", "");
        f.write("scratch.tmp", "");
        f.write("target/debug/build.rs", "");
        f
    }

    #[tokio::test]
    async fn finds_by_name_anywhere_and_respects_gitignore() {
        let f = project();
        let out = f.call("find", json!({"pattern": "*.rs"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(text(&out), "src/main.rs\nsrc/util/mod.rs\ntests/it.rs");
        let out = f.call("find", json!({"pattern": "*.tmp"})).await;
        assert!(text(&out).starts_with("No files matching"));
    }

    #[tokio::test]
    async fn path_patterns_and_directories() {
        let f = project();
        let out = f.call("find", json!({"pattern": "src/*"})).await;
        assert_eq!(text(&out), "src/main.rs\nsrc/util/");
        let out = f.call("find", json!({"pattern": "*.rs", "path": "src/util"})).await;
        assert_eq!(text(&out), "src/util/mod.rs");
    }

    #[tokio::test]
    async fn stops_at_the_limit() {
        let f = project();
        let out = f.call("find", json!({"pattern": "*.rs", "limit": 2})).await;
        assert_eq!(
            text(&out),
            "src/main.rs\nsrc/util/mod.rs\n\n[Showing the first 2 matches; narrow the pattern or raise limit]"
        );
    }

    #[tokio::test]
    async fn bad_input() {
        let f = project();
        let out = f.call("find", json!({"pattern": "[z"})).await;
        assert!(out.is_error && text(&out).contains("Invalid glob"));
        let out = f.call("find", json!({"pattern": "*", "path": "README.md"})).await;
        assert!(out.is_error && text(&out).contains("Not a directory"));
    }
}
