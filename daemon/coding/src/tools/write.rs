//! `write`: create or replace a whole file.

use std::path::Path;
use std::sync::Arc;

use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

use super::{FileToChange, ToolCall, ToolContext, ToolSpec, TypedTool};
use crate::environment::Environment;
use crate::file_tracker::FileStamp;

/// The `write` tool.
pub struct WriteTool;

const DESCRIPTION: &str = "Write a UTF-8 text file, replacing it if it exists. Missing parent \
directories are created. The file is replaced atomically, so nobody sees it half written.";

const GUIDANCE: &str = "Use write to create new files or to replace a file completely. To \
change part of an existing file, use edit instead: it is safer and shows a diff.";

impl TypedTool for WriteTool {
    type Args = WriteArgs;
    const SPEC: ToolSpec = ToolSpec::sequential("write", DESCRIPTION, GUIDANCE);

    async fn run(ctx: Arc<ToolContext>, args: WriteArgs, call: ToolCall) -> ToolOutput {
        let FileToChange { path, shown, _guard } = match ctx.lock_for_change(&args.path).await {
            Ok(file) => file,
            Err(output) => return output,
        };
        let bytes = args.content.into_bytes();
        let worker = ctx.clone();
        call.blocking(move || match write(worker.env.as_ref(), &path, &bytes) {
            Ok(created) => {
                worker.files.record(&path, FileStamp::of(&path, &bytes));
                let lines = count_lines(&bytes);
                let verb = if created { "Created" } else { "Overwrote" };
                ToolOutput::text(format!("{verb} {shown} ({lines} lines, {} bytes)", bytes.len()))
                    .with_details(json!({
                        "path": shown,
                        "created": created,
                        "bytes": bytes.len(),
                        "lines": lines,
                    }))
            }
            Err(err) => ToolOutput::error(format!("Cannot write {shown}: {err}")),
        })
        .await
    }
}

/// The arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// File to write, relative to the working directory or absolute.
    path: String,
    /// The complete new content of the file.
    content: String,
}

/// Writes the file through the environment; answers whether it was created.
fn write(env: &dyn Environment, path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let created = match env.stat(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(std::io::Error::other("it is a directory"));
        }
        Ok(_) => false,
        Err(_) => true,
    };
    env.write(path, bytes)?;
    Ok(created)
}

fn count_lines(bytes: &[u8]) -> usize {
    let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
    if bytes.is_empty() || bytes.ends_with(b"\n") { newlines } else { newlines + 1 }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[tokio::test]
    async fn creates_files_and_parent_directories() {
        let f = Fixture::new();
        let out =
            f.call("write", json!({"path": "deep/er/new.rs", "content": "fn a() {}\n"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(text(&out), "Created deep/er/new.rs (1 lines, 10 bytes)");
        assert_eq!(f.read("deep/er/new.rs"), b"fn a() {}\n");
        assert!(f.ctx.files.get(&f.path("deep/er/new.rs")).is_some());
    }

    #[tokio::test]
    async fn overwrites_existing_files() {
        let f = Fixture::new();
        f.write("a.txt", "old content");
        let out = f.call("write", json!({"path": "a.txt", "content": "new\nlines"})).await;
        assert_eq!(text(&out), "Overwrote a.txt (2 lines, 9 bytes)");
        assert_eq!(f.read("a.txt"), b"new\nlines");
        assert_eq!(out.details.unwrap()["created"], false);
    }

    #[tokio::test]
    async fn refuses_to_replace_a_directory() {
        let f = Fixture::new();
        std::fs::create_dir(f.path("d")).unwrap();
        let out = f.call("write", json!({"path": "d", "content": "x"})).await;
        assert!(out.is_error);
        assert!(text(&out).contains("directory"));
        assert!(f.path("d").is_dir());
    }
}
