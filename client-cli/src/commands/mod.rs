//! One module per `rein` subcommand.

pub mod batch;
pub mod checkpoints;
pub mod daemon;
pub mod doctor;
pub mod login;
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
    /// `rein run`: the turn limit ended the run.
    pub const MAX_TURNS: u8 = 3;
    /// `rein run`: the cost limit ended the run.
    pub const COST_LIMIT: u8 = 4;
    /// `rein run`: the wall-time limit ended the run.
    pub const TIME_LIMIT: u8 = 5;
    /// `rein run`: any other limit ended the run (too many failing tool calls in a row).
    pub const OTHER_LIMIT: u8 = 6;
    /// The model ended the run but the project's checks still failed (`verify_failed`).
    pub const VERIFY_FAILED: u8 = 7;
    /// Events were lost and could not be recovered from the session (`{"type": "gap"}`).
    pub const GAP: u8 = 8;
    /// The run was cancelled (Ctrl-C, or another client).
    pub const CANCELLED: u8 = 130;
}
