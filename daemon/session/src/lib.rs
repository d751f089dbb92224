//! Session files: the JSONL entry tree, crash-safe storage with locks, replay, tool-history
//! repair, branching, compaction, listing and export.
//!
//! This crate is the only code that writes session files. The layout and format are documented
//! in `docs/sessions.md`. A [`SessionStore`] owns a storage root and creates, opens, lists,
//! forks and deletes sessions; an open [`Session`] holds its file's lock, appends entries
//! (written and fsync'd by the file's own writer thread, see [`writer`], before returning) and replays the active path into the messages the next request
//! sends. Model calls (compaction and branch summaries) go through [`rein_ai::Provider`].

pub mod branch;
pub mod compaction;
mod context_tally;
mod entry_line;
pub mod error;
pub mod export;
pub mod header;
pub mod ids;
pub mod listing;
mod ordered_lines;
pub mod paths;
pub mod repair;
pub mod replay;
pub mod session;
pub mod storage;
pub mod store;
pub mod summarize;
pub mod tree;
pub mod writer;

pub use compaction::{
    Compacted, CompactionJob, CompactionOutcome, CompactionSettings, should_compact,
};
pub use error::SessionError;
pub use header::{FORMAT_VERSION, SessionHeader};
pub use repair::PathMessage;
pub use replay::Replay;
pub use session::{LoadReport, QueuedAppend, Session};
pub use store::SessionStore;
pub use tree::SessionTree;
