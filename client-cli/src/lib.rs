//! The `rein` command-line client.
//!
//! A thin client: it holds no agent state and uses only what the protocol offers every client.
//! [`client`] connects to the daemon (starting it when needed) and makes calls; [`session`]
//! creates or opens the session a command works on; [`render`] turns events into text;
//! [`commands`] holds one module per subcommand and [`interactive`] the attach.

pub mod acp;
pub mod ahead;
pub mod client;
pub mod commands;
pub mod follow;
pub mod gap;
pub mod interactive;
pub mod interrupt;
pub mod launcher;
pub mod render;
pub mod resolve;
pub mod session;
pub mod style;
pub mod tui;
