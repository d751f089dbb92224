//! The coding runtime: what binds an agent to a project directory.
//!
//! It provides the tools a coding agent works with (`read`, `write`, `edit`, `bash`, `grep`,
//! `find`, `ls`), assembles the system prompt from the tools, the project's instructions
//! (`AGENTS.md`) and its skills, and keeps the store of trusted project directories whose own
//! files may enter the prompt. A [`CodingSession`] binds all of it to one agent harness and one
//! session file, with approvals ([`approval`]) deciding which tool calls need a person's yes.

pub mod approval;
pub mod atomic;
pub mod checkpoint;
pub mod command_hooks;
pub mod config_file;
pub mod edit_match;
pub mod environment;
pub mod file_locks;
pub mod file_tracker;
pub mod instructions;
pub mod limits_config;
pub mod mcp;
pub mod paths;
pub mod process_groups;
pub mod project;
pub mod project_config;
pub mod project_extensions;
pub mod prompt;
pub mod reindent;
pub mod session;
pub mod skills;
pub mod tools;
pub mod trust;
pub mod verify;

pub use approval::{ApprovalAnswer, ApprovalNotFound, Approvals, approval_reason};
pub use file_locks::{FileLockGuard, FileLocks};
pub use file_tracker::{FileChanged, FileStamp, FileTracker};
pub use project::{ContextFingerprint, ContextSources, ProjectContext};
pub use prompt::{BASE_PROMPT, PromptInputs, system_prompt};
pub use session::{
    ApprovalGate, CodingEnvironment, CodingError, CodingSession, EventSink, SessionDefaults,
};
pub use tools::{BashSettings, ToolContext, coding_tools};
pub use trust::{TrustError, TrustStore};
