//! One module per `rein` subcommand.

pub mod checkpoints;
pub mod daemon;
pub mod rpc;
pub mod run;
pub mod session;
pub mod stdio;

/// Process exit codes shared by every command.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// The daemon or a provider failed.
    pub const FAILURE: u8 = 1;
    /// The command line was wrong.
    pub const USAGE: u8 = 2;
    /// A limit (turns, cost, time, failing tools) ended the run.
    pub const LIMIT: u8 = 3;
    /// The model ended the run but the project's checks still failed (`verify_failed`).
    pub const VERIFY_FAILED: u8 = 7;
    /// The run was cancelled (Ctrl-C, or another client).
    pub const CANCELLED: u8 = 130;
}
