//! `ls`: the entries of one directory.

use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{BlockingTool, Limit, ToolContext, ToolSpec, with_note};
use crate::paths;

/// Entries returned when the call gives no limit.
const DEFAULT_LIMIT: usize = 500;

const DESCRIPTION: &str = "List a directory's entries, sorted by name, directories marked \
with a trailing `/`. Hidden entries are included; entries ignored by .gitignore and .git are \
left out. Returns at most limit entries (default 500).";

const GUIDANCE: &str = "Use ls to get oriented in a directory; use find to search a whole \
tree by name.";

/// The `ls` tool.
pub struct LsTool;

impl BlockingTool for LsTool {
    type Args = LsArgs;
    const SPEC: ToolSpec = ToolSpec::parallel("ls", DESCRIPTION, GUIDANCE);

    fn run_blocking(ctx: &ToolContext, args: LsArgs, _cancel: &CancellationToken) -> ToolOutput {
        let dir = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
        let shown = paths::display(&ctx.cwd, &dir);
        let limit = Limit::or(args.limit, DEFAULT_LIMIT);
        match ctx.env.stat(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return ToolOutput::error(format!("Not a directory: {shown}; use read for files"));
            }
            Err(err) => return ToolOutput::error(format!("Cannot list {shown}: {err}")),
        }
        let mut walk = match ctx.env.walk(&dir) {
            Ok(walk) => walk,
            Err(err) => return ToolOutput::error(format!("Cannot list {shown}: {err}")),
        };
        let mut entries: Vec<String> = walk
            .max_depth(Some(1))
            .build()
            .filter_map(Result::ok)
            .filter(|entry| entry.depth() == 1)
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                if entry.file_type().is_some_and(|t| t.is_dir()) {
                    format!("{name}/")
                } else {
                    name
                }
            })
            .collect();
        entries.sort_by(|a, b| a.to_lowercase().cmp(&b.to_lowercase()).then_with(|| a.cmp(b)));
        let total = entries.len();
        let details = json!({ "path": shown, "entries": total, "truncated": total > limit });
        if entries.is_empty() {
            return ToolOutput::text(format!("{shown} is empty")).with_details(details);
        }
        entries.truncate(limit);
        let note = (total > limit)
            .then(|| format!("[Showing {limit} of {total} entries; raise limit to see more]"));
        with_note(entries.join("\n"), note, details)
    }
}

/// The arguments of `ls`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LsArgs {
    /// Directory to list (default: the working directory).
    path: Option<String>,
    /// Most entries to return (default 500).
    limit: Option<Limit>,
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn lists_sorted_with_directories_marked_and_ignored_entries_left_out() {
        let f = Fixture::new();
        f.write(".gitignore", "build/\nsecret.txt\n");
        f.write("b.txt", "");
        f.write("A.md", "");
        f.write("src/lib.rs", "");
        f.write("build/out", "");
        f.write("secret.txt", "");
        std::fs::create_dir(f.path(".git")).unwrap();
        let out = f.call("ls", json!({})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(text(&out), ".gitignore\nA.md\nb.txt\nsrc/");
        let out = f.call("ls", json!({"path": "src"})).await;
        assert_eq!(text(&out), "lib.rs");
    }

    #[tokio::test]
    async fn caps_the_listing() {
        let f = Fixture::new();
        for i in 0..5 {
            f.write(&format!("f{i}"), "");
        }
        let out = f.call("ls", json!({"limit": 2})).await;
        assert_eq!(text(&out), "f0\nf1\n\n[Showing 2 of 5 entries; raise limit to see more]");
        assert_eq!(out.details.unwrap()["truncated"], true);
    }

    #[tokio::test]
    async fn files_missing_paths_and_empty_directories() {
        let f = Fixture::new();
        f.write("file.txt", "");
        std::fs::create_dir(f.path("empty")).unwrap();
        let out = f.call("ls", json!({"path": "file.txt"})).await;
        assert!(out.is_error && text(&out).contains("Not a directory"));
        let out = f.call("ls", json!({"path": "missing"})).await;
        assert!(out.is_error && text(&out).contains("Cannot list missing"));
        let out = f.call("ls", json!({"path": "empty"})).await;
        assert_eq!(text(&out), "empty is empty");
    }
}
