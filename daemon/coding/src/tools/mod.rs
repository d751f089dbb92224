//! The coding tools and what they share: the per-session context, the typed tool trait
//! ([`typed`]) and the output limits.
//!
//! Every tool is one file: an argument struct (its doc comments are the schema the model sees)
//! and a [`TypedTool`] impl. Tools resolve paths against the session's working directory (see
//! [`crate::paths`]), run commands and touch files only through the session's
//! [`Environment`](crate::environment::Environment), report failures as error results the
//! model can read, and never panic on bad input.

mod bash;
mod capture;
mod edit;
mod find;
mod grep;
mod limit;
mod ls;
mod read;
pub mod spill;
pub mod typed;
mod walk;
mod write;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use rein_agent::{Tool, ToolOutput};

use crate::environment::{Environment, LocalEnvironment};
use crate::file_locks::FileLocks;
use crate::file_tracker::FileTracker;

pub use bash::{BashTool, CommandOutcome, CommandRequest, Launch, run_command};
pub(crate) use bash::{default_shell, run_launched};
pub use edit::EditTool;
pub use find::FindTool;
pub use grep::GrepTool;
pub use limit::{Limit, LineNumber};
pub use ls::LsTool;
pub use read::ReadTool;
pub use typed::{BlockingTool, ToolCall, ToolSpec, Typed, TypedTool};
pub(crate) use walk::walker;
pub use write::WriteTool;

/// Lines of output a tool result holds at most.
pub const MAX_OUTPUT_LINES: usize = 2_000;
/// Bytes of output a tool result holds at most.
pub const MAX_OUTPUT_BYTES: usize = 50 * 1024;

/// How the `bash` tool runs commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BashSettings {
    /// Timeout when a call gives none.
    pub default_timeout: Duration,
    /// The shell to run commands with (`<shell> -c <command>`). `None` picks `bash` when it is
    /// installed, otherwise `sh`.
    pub shell: Option<PathBuf>,
    /// Environment variables removed before a command runs: the providers' API key variables,
    /// so a command (say, `env`) cannot print a key into the conversation and the session file.
    pub hidden_env: Vec<String>,
    /// How large a file with a command's full output may grow, and the free space it leaves.
    pub spill: spill::SpillLimits,
}

impl Default for BashSettings {
    fn default() -> Self {
        Self {
            default_timeout: Duration::from_secs(120),
            shell: None,
            hidden_env: Vec::new(),
            spill: spill::SpillLimits::default(),
        }
    }
}

/// Everything the tools of one session need. Cheap to clone: the tracker and the locks are
/// shared handles.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// The session's working directory; relative paths resolve against it.
    pub cwd: PathBuf,
    /// Whether the model accepts images. When false, `read` describes an image in text instead
    /// of returning it. The host rebuilds the tools when the model changes.
    pub images_allowed: bool,
    /// How `bash` runs commands.
    pub bash: BashSettings,
    /// This session's record of what the model has seen of each file.
    pub files: FileTracker,
    /// The daemon-wide per-file locks.
    pub locks: FileLocks,
    /// Where `bash` puts the full output of commands whose output was cut.
    pub output_dir: PathBuf,
    /// Files no tool reads, searches or changes: the stored API keys (`REIN_HOME/auth.toml`).
    /// (A `bash` command can still reach them by path unless a sandbox hides them.)
    pub hidden_files: Vec<PathBuf>,
    /// Where commands run and files are touched: the host, or a sandbox.
    pub env: Arc<dyn Environment>,
    /// Who is asked before a command the sandbox refused runs outside it; without one it
    /// never does.
    pub escalation: Option<Arc<dyn Escalation>>,
}

/// Asks a person whether a command that failed inside the sandbox for lack of permission may
/// run again outside it.
pub trait Escalation: Send + Sync + std::fmt::Debug {
    /// `Ok` when allowed; `Err` with the reason otherwise (denied, nobody to ask, cancelled).
    fn allow_unconfined<'a>(
        &'a self,
        call_id: &'a str,
        command: &'a str,
        why: String,
        cancel: &'a tokio_util::sync::CancellationToken,
    ) -> futures::future::BoxFuture<'a, Result<(), String>>;
}

impl ToolContext {
    /// A context with default bash settings, images allowed, a fresh file tracker and the local
    /// environment.
    pub fn new(cwd: impl Into<PathBuf>, locks: FileLocks, output_dir: impl Into<PathBuf>) -> Self {
        Self {
            cwd: cwd.into(),
            images_allowed: true,
            bash: BashSettings::default(),
            files: FileTracker::new(),
            locks,
            output_dir: output_dir.into(),
            hidden_files: Vec::new(),
            env: Arc::new(LocalEnvironment::new()),
            escalation: None,
        }
    }

    /// Whether `path` is one of [`ToolContext::hidden_files`] (compared after resolving
    /// symlinks and `..`, so another spelling of the path does not get around it).
    pub fn is_hidden(&self, path: &std::path::Path) -> bool {
        if self.hidden_files.is_empty() {
            return false;
        }
        let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        self.hidden_files.iter().any(|hidden| {
            let hidden_real = std::fs::canonicalize(hidden).unwrap_or_else(|_| hidden.clone());
            real == hidden_real || path == hidden
        })
    }
}

/// A file a tool is about to change: resolved against the working directory, not one of the
/// hidden files, and locked against other sessions' tools while the guard lives.
pub(crate) struct FileToChange {
    /// The path as the tools use it.
    pub path: PathBuf,
    /// The path as results show it.
    pub shown: String,
    /// The daemon-wide lock of the file.
    pub _guard: crate::file_locks::FileLockGuard,
}

impl ToolContext {
    /// Resolves `raw`, refuses a hidden file and takes the file's lock.
    pub(crate) async fn lock_for_change(&self, raw: &str) -> Result<FileToChange, ToolOutput> {
        let path = crate::paths::resolve(&self.cwd, raw);
        let shown = crate::paths::display(&self.cwd, &path);
        if self.is_hidden(&path) {
            return Err(hidden_file_error(&shown));
        }
        let _guard = self.locks.lock(&path).await;
        Ok(FileToChange { path, shown, _guard })
    }
}

/// The error result for a tool call aimed at a hidden file.
fn hidden_file_error(shown: &str) -> ToolOutput {
    ToolOutput::error(format!("{shown} holds rein's stored API keys; tools may not use it"))
}

/// The full set of coding tools bound to one session's context, in the order they are
/// presented to the model.
pub fn coding_tools(ctx: ToolContext) -> Vec<Arc<dyn Tool>> {
    let ctx = Arc::new(ctx);
    vec![
        Arc::new(Typed::new(ReadTool, ctx.clone())),
        Arc::new(Typed::new(WriteTool, ctx.clone())),
        Arc::new(Typed::new(EditTool, ctx.clone())),
        Arc::new(Typed::new(BashTool, ctx.clone())),
        Arc::new(Typed::new(GrepTool, ctx.clone())),
        Arc::new(Typed::new(FindTool, ctx.clone())),
        Arc::new(Typed::new(LsTool, ctx)),
    ]
}

/// A result of `text` with `note` (why the listing stops where it does) after a blank line.
fn with_note(mut text: String, note: Option<String>, details: serde_json::Value) -> ToolOutput {
    if let Some(note) = note {
        text.push_str("\n\n");
        text.push_str(&note);
    }
    ToolOutput::text(text).with_details(details)
}

/// Cuts `line` to at most `max_chars` characters, saying how much was left out.
fn clip_line(line: &str, max_chars: usize) -> String {
    match line.char_indices().nth(max_chars) {
        Some((cut, _)) => {
            let rest = line[cut..].chars().count();
            format!("{}... [{rest} more characters]", &line[..cut])
        }
        None => line.to_string(),
    }
}

#[cfg(test)]
mod hidden_files_tests {
    use super::test_support::*;
    use serde_json::json;

    #[tokio::test]
    async fn no_tool_reads_searches_or_changes_a_hidden_file() {
        let mut f = Fixture::new();
        f.write("home/auth.toml", "[p]\napi_key = \"sk-hidden\"\n");
        f.write("notes.txt", "api_key mentioned here\n");
        f.ctx.hidden_files = vec![f.path("home/auth.toml")];
        for path in ["home/auth.toml", "home/../home/./auth.toml"] {
            let out = f.call("read", json!({"path": path})).await;
            assert!(out.is_error && !text(&out).contains("sk-hidden"), "{}", text(&out));
        }
        let found = f.call("grep", json!({"pattern": "api_key"})).await;
        assert!(text(&found).contains("notes.txt"), "{}", text(&found));
        assert!(!text(&found).contains("sk-hidden"), "{}", text(&found));
        let write = f.call("write", json!({"path": "home/auth.toml", "content": "x"})).await;
        assert!(write.is_error && text(&write).contains("stored API keys"), "{}", text(&write));
        let edit = f
            .call(
                "edit",
                json!({"path": "home/auth.toml", "edits": [{"oldText": "sk", "newText": "x"}]}),
            )
            .await;
        assert!(edit.is_error && text(&edit).contains("stored API keys"), "{}", text(&edit));
        assert!(String::from_utf8(f.read("home/auth.toml")).unwrap().contains("sk-hidden"));
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    //! Helpers shared by the tool tests.

    use super::*;
    use rein_agent::ToolInvocation;
    use rein_agent::ToolUpdateSink;
    use serde_json::Value;
    use tokio_util::sync::CancellationToken;

    /// A context over a temporary project directory.
    pub(crate) struct Fixture {
        pub _dir: tempfile::TempDir,
        pub ctx: ToolContext,
    }

    impl Fixture {
        pub(crate) fn new() -> Self {
            let dir = tempfile::tempdir().unwrap();
            let cwd = dir.path().canonicalize().unwrap().join("project");
            std::fs::create_dir_all(&cwd).unwrap();
            let output_dir = dir.path().canonicalize().unwrap().join("outputs");
            let mut ctx = ToolContext::new(cwd, FileLocks::new(), output_dir);
            ctx.env = test_environment(&ctx.cwd);
            Self { _dir: dir, ctx }
        }

        pub(crate) fn path(&self, relative: &str) -> PathBuf {
            self.ctx.cwd.join(relative)
        }

        pub(crate) fn write(&self, relative: &str, content: impl AsRef<[u8]>) {
            let path = self.path(relative);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, content).unwrap();
        }

        pub(crate) fn read(&self, relative: &str) -> Vec<u8> {
            std::fs::read(self.path(relative)).unwrap()
        }

        pub(crate) fn tool(&self, name: &str) -> Arc<dyn Tool> {
            coding_tools(self.ctx.clone()).into_iter().find(|t| t.name() == name).unwrap()
        }

        pub(crate) async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
            let (updates, _rx) = ToolUpdateSink::channel();
            self.tool(name).execute(invocation(arguments, updates, CancellationToken::new())).await
        }
    }

    /// The environment tool tests run in: the host, or the sandbox mode named by
    /// `REIN_TEST_SANDBOX` (CI runs the tool tests once more under `workspace-write`).
    pub(crate) fn test_environment(cwd: &std::path::Path) -> Arc<dyn Environment> {
        let Ok(mode) = std::env::var("REIN_TEST_SANDBOX") else {
            return Arc::new(LocalEnvironment::new());
        };
        let mode = serde_json::from_value(Value::String(mode)).unwrap();
        let settings = crate::environment::SandboxSettings {
            image: std::env::var("REIN_TEST_CONTAINER_IMAGE").ok(),
            ..Default::default()
        };
        crate::environment::for_session(mode, cwd, &settings, &[]).unwrap()
    }

    pub(crate) fn invocation(
        arguments: Value,
        updates: ToolUpdateSink,
        cancel: CancellationToken,
    ) -> ToolInvocation {
        ToolInvocation { call_id: "call_1".into(), arguments, cancel, updates }
    }

    /// All text blocks of a result joined.
    pub(crate) fn text(output: &ToolOutput) -> String {
        output.content.iter().filter_map(|b| b.as_text()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::*;
    use super::*;
    use rein_agent::ExecutionMode;
    use serde_json::{Value, json};

    #[test]
    fn every_tool_has_a_schema_description_and_guidance() {
        let fixture = Fixture::new();
        let tools = coding_tools(fixture.ctx.clone());
        let names: Vec<&str> = tools.iter().map(|t| t.name()).collect();
        assert_eq!(names, ["read", "write", "edit", "bash", "grep", "find", "ls"]);
        for tool in &tools {
            let schema = tool.parameters();
            assert_eq!(schema["type"], "object", "{}", tool.name());
            let properties = schema["properties"].as_object().unwrap();
            for required in schema["required"].as_array().into_iter().flatten() {
                assert!(properties.contains_key(required.as_str().unwrap()), "{}", tool.name());
            }
            for (name, property) in properties {
                assert!(property["description"].is_string(), "{}.{name}", tool.name());
            }
            assert!(tool.description().len() > 40, "{}", tool.name());
            assert!(tool.guidance().is_some(), "{}", tool.name());
        }
    }

    #[test]
    fn read_only_tools_run_in_parallel() {
        let fixture = Fixture::new();
        for tool in coding_tools(fixture.ctx.clone()) {
            let expected = match tool.name() {
                "read" | "grep" | "find" | "ls" => ExecutionMode::Parallel,
                _ => ExecutionMode::Sequential,
            };
            assert_eq!(tool.mode(), expected, "{}", tool.name());
        }
    }

    #[tokio::test]
    async fn invalid_arguments_are_error_results() {
        let fixture = Fixture::new();
        let cases = [
            ("read", json!({})),
            ("read", json!({"path": 3})),
            ("write", json!({"path": "a"})),
            ("edit", json!({"path": "a", "edits": "x"})),
            ("edit", json!({"path": "a", "edits": [{"old": "x"}]})),
            ("bash", json!({"command": ["ls"]})),
            ("bash", json!({"command": "true", "timeout": -1})),
            ("grep", json!({"path": "."})),
            ("find", json!({"pattern": 1})),
            ("ls", json!({"limit": "ten"})),
        ];
        for (name, arguments) in cases {
            let output = fixture.call(name, arguments.clone()).await;
            assert!(output.is_error, "{name} {arguments}");
            let message = text(&output);
            assert!(!message.is_empty(), "{name} {arguments}");
        }
    }

    /// The schemas providers see are the ones the hand-written JSON gave before the tools were
    /// typed (`schemas.json` holds them as they were).
    #[test]
    fn generated_schemas_match_what_providers_always_saw() {
        let expected: Value = serde_json::from_str(include_str!("schemas.json")).unwrap();
        let fixture = Fixture::new();
        for tool in coding_tools(fixture.ctx.clone()) {
            assert_eq!(tool.parameters(), expected[tool.name()], "{}", tool.name());
        }
    }

    #[test]
    fn a_schema_is_generated_once_and_shared() {
        let first = typed::schema_of::<read::ReadArgs>();
        let fixture = Fixture::new();
        let _tools = coding_tools(fixture.ctx.clone());
        assert!(Arc::ptr_eq(&first, &typed::schema_of::<read::ReadArgs>()));
    }

    #[tokio::test]
    async fn invalid_arguments_name_the_field_at_fault() {
        let fixture = Fixture::new();
        let out = fixture.call("read", json!({"path": 3})).await;
        assert!(text(&out).starts_with("Invalid arguments for read: field `path`: invalid type"));
        let out = fixture.call("edit", json!({"path": "a", "edits": [{"oldText": "x"}]})).await;
        let message = text(&out);
        assert!(message.contains("field `edits[0]`"), "{message}");
        assert!(message.contains("missing field `newText`"), "{message}");
        let out = fixture.call("grep", json!({"pattern": "x", "limit": 0})).await;
        assert_eq!(
            text(&out),
            "Invalid arguments for grep: field `limit`: limit must be at least 1"
        );
        // What the schema says and nothing checks but the parse: unknown fields, empty lists,
        // line numbers from 1.
        let out = fixture.call("read", json!({"path": "a", "lines": 3})).await;
        let message = text(&out);
        assert!(message.contains("unknown field `lines`"), "{message}");
        let out = fixture.call("edit", json!({"path": "a", "edits": []})).await;
        assert_eq!(text(&out), "Invalid arguments for edit: field `edits`: no edits given");
        let out = fixture.call("read", json!({"path": "a", "offset": 0})).await;
        assert_eq!(
            text(&out),
            "Invalid arguments for read: field `offset`: offset must be at least 1"
        );
    }

    #[test]
    fn clip_line_counts_what_it_drops() {
        assert_eq!(clip_line("abcdef", 10), "abcdef");
        assert_eq!(clip_line("abcdef", 2), "ab... [4 more characters]");
    }
}
