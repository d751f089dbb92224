//! `write`: create or replace a whole file.

use std::path::Path;
use std::sync::Arc;

use futures::future::BoxFuture;
use rein_agent::{ExecutionMode, Tool, ToolInvocation, ToolOutput};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{ToolContext, blocking, parse_arguments};
use crate::atomic::write_atomic;
use crate::file_tracker::FileStamp;
use crate::paths;

const DESCRIPTION: &str = "Write a UTF-8 text file, replacing it if it exists. Missing parent \
directories are created. The file is replaced atomically, so nobody sees it half written.";

const GUIDANCE: &str = "Use write to create new files or to replace a file completely. To \
change part of an existing file, use edit instead: it is safer and shows a diff.";

/// The `write` tool.
pub struct WriteTool {
    ctx: Arc<ToolContext>,
}

impl WriteTool {
    /// A `write` tool for one session.
    pub fn new(ctx: Arc<ToolContext>) -> Self {
        Self { ctx }
    }
}

#[derive(Debug, Deserialize)]
struct Arguments {
    path: String,
    content: String,
}

impl Tool for WriteTool {
    fn name(&self) -> &str {
        "write"
    }

    fn description(&self) -> &str {
        DESCRIPTION
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "description": "File to write, relative to the working directory or absolute."
                },
                "content": {
                    "type": "string",
                    "description": "The complete new content of the file."
                }
            },
            "required": ["path", "content"],
            "additionalProperties": false
        })
    }

    fn guidance(&self) -> Option<&str> {
        Some(GUIDANCE)
    }

    fn mode(&self) -> ExecutionMode {
        ExecutionMode::Sequential
    }

    fn execute(&self, invocation: ToolInvocation) -> BoxFuture<'_, ToolOutput> {
        Box::pin(async move {
            let args: Arguments = match parse_arguments(self.name(), &invocation.arguments) {
                Ok(args) => args,
                Err(output) => return output,
            };
            let path = paths::resolve(&self.ctx.cwd, &args.path);
            let shown = paths::display(&self.ctx.cwd, &path);
            if self.ctx.is_hidden(&path) {
                return super::hidden_file_error(&shown);
            }
            let _guard = self.ctx.locks.lock(&path).await;
            let tracker = self.ctx.files.clone();
            let bytes = args.content.into_bytes();
            blocking("write", move || match write(&path, &bytes) {
                Ok(created) => {
                    tracker.record(&path, FileStamp::of(&path, &bytes));
                    let lines = count_lines(&bytes);
                    let verb = if created { "Created" } else { "Overwrote" };
                    ToolOutput::text(format!(
                        "{verb} {shown} ({lines} lines, {} bytes)",
                        bytes.len()
                    ))
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
        })
    }
}

/// Writes the file; answers whether it was created.
fn write(path: &Path, bytes: &[u8]) -> std::io::Result<bool> {
    let created = match std::fs::metadata(path) {
        Ok(meta) if meta.is_dir() => {
            return Err(std::io::Error::other("it is a directory"));
        }
        Ok(_) => false,
        Err(_) => true,
    };
    write_atomic(path, bytes)?;
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
