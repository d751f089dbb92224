//! The rein wire protocol.
//!
//! Every type that crosses the daemon socket lives here, so that the daemon and every client
//! agree on one definition: content blocks and messages ([`message`]), the models and their
//! prices ([`model`]), the session entry tree as clients see it ([`entry`]), the event stream
//! ([`event`]), the methods with their params and results ([`method`]), the method table that declares each
//! method once ([`requests`]), the error codes
//! ([`error`]) and the newline-delimited framing ([`codec`]).
//!
//! # Forward compatibility
//!
//! The rule, tested in this crate: a client built against protocol version `N.x` keeps working
//! against a daemon speaking `N.y` for any `y`. Within one major version the daemon only *adds*:
//! new methods, new optional params, new fields in results and events, new event kinds, new
//! entry kinds and new error kinds. Clients therefore must ignore fields they do not know (no
//! type here denies unknown fields) and must skip event and entry kinds they do not know (every
//! open enum has an `Unknown` variant that swallows them). Removing or renaming anything bumps
//! the major version, and the daemon refuses an `initialize` from a different major version.

pub mod auth;
pub mod checkpoint;
pub mod clock;
pub mod codec;
pub mod entry;
pub mod error;
pub mod event;
pub mod mcp;
pub mod message;
pub mod method;
pub mod model;
pub mod paths;
pub mod requests;
pub mod verify;
pub mod version;

pub use entry::{EntryKind, SessionEntry};
pub use error::{ErrorData, ErrorKind};
pub use event::{DaemonEvent, EventEnvelope, SessionEvent, SubscriptionItem};
pub use message::{
    AssistantMessage, ContentBlock, Cost, Message, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
pub use model::{Api, ModelCost, ModelInfo, ModelRef, ThinkingLevel};
pub use verify::RunOutcome;
pub use version::{PROTOCOL_VERSION, ProtocolVersion};
