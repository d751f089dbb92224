//! `grep`: search file contents with a regular expression, as ripgrep does.

use std::path::{Path, PathBuf};

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use rein_agent::ToolOutput;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::walk::PathGlob;
use super::{BlockingTool, Limit, MAX_OUTPUT_BYTES, ToolContext, ToolSpec, clip_line, with_note};
use crate::paths;

/// Matches returned when the call gives no limit.
const DEFAULT_LIMIT: usize = 100;
/// Characters of one result line shown at most.
const MAX_LINE_CHARS: usize = 500;
/// The most context lines a call may ask for on each side.
const MAX_CONTEXT: usize = 20;

const DESCRIPTION: &str = "Search file contents for a regular expression (Rust regex syntax, \
like ripgrep). Results are `path:line:text`, with context lines as `path-line-text`. Files \
ignored by .gitignore, the .git directory and binary files are skipped. path may be a \
directory or a file; glob filters file names (`*.rs`) or paths (`src/**/*.ts`). Stops after \
limit matches (default 100).";

const GUIDANCE: &str = "Use grep to find where something is defined or used before reading \
files. Escape regex metacharacters when searching for literal code (`foo\\(`). Narrow with \
path and glob rather than raising the limit.";

/// The `grep` tool.
pub struct GrepTool;

impl BlockingTool for GrepTool {
    type Args = GrepArgs;
    const SPEC: ToolSpec = ToolSpec::parallel("grep", DESCRIPTION, GUIDANCE);

    fn run_blocking(ctx: &ToolContext, args: GrepArgs, cancel: &CancellationToken) -> ToolOutput {
        let matcher = match RegexMatcherBuilder::new()
            .case_insensitive(args.ignore_case)
            .build(&args.pattern)
        {
            Ok(matcher) => matcher,
            Err(err) => return ToolOutput::error(format!("Invalid regular expression: {err}")),
        };
        let glob = match args.glob.as_deref().map(PathGlob::new).transpose() {
            Ok(glob) => glob,
            Err(err) => return ToolOutput::error(format!("Invalid glob: {err}")),
        };
        let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
        let limit = Limit::or(args.limit, DEFAULT_LIMIT);
        if ctx.env.stat(&root).is_err_and(|err| err.kind() == std::io::ErrorKind::NotFound) {
            return ToolOutput::error(format!(
                "Path not found: {}",
                paths::display(&ctx.cwd, &root)
            ));
        }
        let walk = match ctx.env.walk(&root) {
            Ok(walk) => walk,
            Err(err) => {
                let shown = paths::display(&ctx.cwd, &root);
                return ToolOutput::error(format!("Cannot search {shown}: {err}"));
            }
        };
        let context = args.context.unwrap_or(0).min(MAX_CONTEXT);
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .before_context(context)
            .after_context(context)
            .binary_detection(BinaryDetection::quit(0))
            .build();

        let mut results = Results::new(limit, context > 0);
        for entry in walk.build() {
            if cancel.is_cancelled() {
                return ToolOutput::error("grep was cancelled");
            }
            let entry = match entry {
                Ok(entry) => entry,
                Err(err) => {
                    tracing::debug!(error = %err, "grep skipped an entry");
                    continue;
                }
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                continue;
            }
            if ctx.is_hidden(entry.path()) {
                continue;
            }
            let relative = entry.path().strip_prefix(&root).unwrap_or(entry.path());
            if let Some(glob) = &glob
                && entry.depth() > 0
                && !glob.is_match(relative)
            {
                continue;
            }
            let shown = paths::display(&ctx.cwd, entry.path());
            let sink = FileSink { shown: &shown, results: &mut results, first: true };
            let searched = ctx.env.open(entry.path()).and_then(|file| {
                searcher.search_file(&matcher, &file, sink).map_err(std::io::Error::other)
            });
            if let Err(err) = searched {
                tracing::debug!(path = %entry.path().display(), error = %err, "grep skipped a file");
            }
            if results.stopped() {
                break;
            }
        }
        results.into_output(&args.pattern, &root_shown(ctx, &root))
    }
}

/// The arguments of `grep`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct GrepArgs {
    /// Regular expression to search for.
    pattern: String,
    /// Directory or file to search (default: the working directory).
    path: Option<String>,
    /// Only search files matching this glob, e.g. `*.rs` or `src/**/*.ts`.
    glob: Option<String>,
    /// Match case-insensitively (default false).
    #[serde(default)]
    ignore_case: bool,
    /// Lines of context to show before and after each match (default 0).
    context: Option<usize>,
    /// Most matches to return (default 100).
    limit: Option<Limit>,
}

fn root_shown(ctx: &ToolContext, root: &Path) -> String {
    paths::display(&ctx.cwd, root)
}

/// The lines found so far, and why the search stopped early, if it did.
struct Results {
    text: String,
    matches: usize,
    files: Vec<PathBuf>,
    limit: usize,
    limit_hit: bool,
    bytes_hit: bool,
    separate_files: bool,
}

impl Results {
    fn new(limit: usize, separate_files: bool) -> Self {
        Self {
            text: String::new(),
            matches: 0,
            files: Vec::new(),
            limit,
            limit_hit: false,
            bytes_hit: false,
            separate_files,
        }
    }

    fn stopped(&self) -> bool {
        self.limit_hit || self.bytes_hit
    }

    /// Adds one line; false when the byte cap is reached.
    fn push(&mut self, shown: &str, line: Option<u64>, separator: char, bytes: &[u8]) -> bool {
        let content = String::from_utf8_lossy(bytes);
        let content = content.trim_end_matches(['\n', '\r']);
        let entry = format!(
            "{shown}{separator}{}{separator}{}\n",
            line.unwrap_or(0),
            clip_line(content, MAX_LINE_CHARS)
        );
        if self.text.len() + entry.len() > MAX_OUTPUT_BYTES {
            self.bytes_hit = true;
            return false;
        }
        self.text.push_str(&entry);
        true
    }

    fn into_output(self, pattern: &str, root: &str) -> ToolOutput {
        let details = json!({
            "matches": self.matches,
            "files": self.files.len(),
            "truncated": self.stopped(),
        });
        if self.matches == 0 {
            return ToolOutput::text(format!("No matches for `{pattern}` in {root}"))
                .with_details(details);
        }
        let note = if self.limit_hit {
            Some(format!(
                "[Stopped after {} matches; narrow the search or raise limit]",
                self.limit
            ))
        } else if self.bytes_hit {
            Some(format!(
                "[Stopped at the {} KB output limit after {} matches; narrow the search]",
                MAX_OUTPUT_BYTES / 1024,
                self.matches
            ))
        } else {
            None
        };
        with_note(self.text.trim_end().to_string(), note, details)
    }
}

/// Collects the lines of one file into the results.
struct FileSink<'a> {
    shown: &'a str,
    results: &'a mut Results,
    first: bool,
}

impl FileSink<'_> {
    fn begin_line(&mut self) {
        if self.first {
            self.first = false;
            if self.results.separate_files && !self.results.text.is_empty() {
                self.results.text.push_str("--\n");
            }
        }
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, found: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.results.matches == self.results.limit {
            self.results.limit_hit = true;
            return Ok(false);
        }
        self.begin_line();
        if !self.results.push(self.shown, found.line_number(), ':', found.bytes()) {
            return Ok(false);
        }
        self.results.matches += 1;
        if self.results.files.last().is_none_or(|last| last.as_os_str() != self.shown) {
            self.results.files.push(PathBuf::from(self.shown));
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, line: &SinkContext<'_>) -> Result<bool, Self::Error> {
        self.begin_line();
        Ok(self.results.push(self.shown, line.line_number(), '-', line.bytes()))
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.results.text.push_str("--\n");
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    fn project() -> Fixture {
        let f = Fixture::new();
        f.write(".gitignore", "target/\n");
        f.write("src/main.rs", "fn main() {\n    helper();\n}\n\nfn helper() {}\n");
        f.write("src/lib.rs", "pub fn Helper() {}\n");
        f.write("notes.md", "call helper() here\n");
        f.write("target/build.rs", "fn helper() {}\n");
        f.write("blob.bin", b"helper\0\x01\x02");
        f
    }

    #[tokio::test]
    async fn finds_matches_with_line_numbers_and_respects_gitignore() {
        let f = project();
        let out = f.call("grep", json!({"pattern": "helper\\("})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(
            text(&out),
            "notes.md:1:call helper() here\nsrc/main.rs:2:    helper();\nsrc/main.rs:5:fn helper() {}"
        );
        assert_eq!(out.details.unwrap()["files"], 2);
    }

    #[tokio::test]
    async fn ignore_case_glob_and_path_narrow_the_search() {
        let f = project();
        let out = f
            .call("grep", json!({"pattern": "fn helper", "ignoreCase": true, "glob": "*.rs"}))
            .await;
        assert_eq!(text(&out), "src/lib.rs:1:pub fn Helper() {}\nsrc/main.rs:5:fn helper() {}");
        let out = f.call("grep", json!({"pattern": "helper", "path": "src/main.rs"})).await;
        assert_eq!(text(&out), "src/main.rs:2:    helper();\nsrc/main.rs:5:fn helper() {}");
    }

    #[tokio::test]
    async fn context_lines_are_marked() {
        let f = project();
        let out =
            f.call("grep", json!({"pattern": "helper\\(\\);", "context": 1, "path": "src"})).await;
        assert_eq!(
            text(&out),
            "src/main.rs-1-fn main() {\nsrc/main.rs:2:    helper();\nsrc/main.rs-3-}"
        );
    }

    #[tokio::test]
    async fn stops_at_the_limit() {
        let f = Fixture::new();
        let body: String = (0..50).map(|i| format!("match {i}\n")).collect();
        f.write("many.txt", body);
        let out = f.call("grep", json!({"pattern": "match", "limit": 3})).await;
        assert_eq!(
            text(&out),
            "many.txt:1:match 0\nmany.txt:2:match 1\nmany.txt:3:match 2\n\n\
             [Stopped after 3 matches; narrow the search or raise limit]"
        );
        assert_eq!(out.details.unwrap()["truncated"], true);
    }

    #[tokio::test]
    async fn no_matches_and_bad_input() {
        let f = project();
        let out = f.call("grep", json!({"pattern": "nowhere_to_be_found"})).await;
        assert!(!out.is_error);
        assert!(text(&out).starts_with("No matches"));
        let out = f.call("grep", json!({"pattern": "(unclosed"})).await;
        assert!(out.is_error && text(&out).contains("Invalid regular expression"));
        let out = f.call("grep", json!({"pattern": "x", "glob": "a["})).await;
        assert!(out.is_error && text(&out).contains("Invalid glob"));
        let out = f.call("grep", json!({"pattern": "x", "path": "missing"})).await;
        assert!(out.is_error && text(&out).contains("Path not found"));
        let out = f.call("grep", json!({"pattern": "x", "limit": 0})).await;
        assert!(out.is_error);
    }
}
