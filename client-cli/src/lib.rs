//! The `rein` command-line client.
//!
//! A thin client: it holds no agent state and uses only what the protocol offers every client.
//! [`client`] connects to the daemon (starting it when needed) and makes calls; [`commands`]
//! holds one module per subcommand.

pub mod acp;
pub mod client;
pub mod commands;
pub mod launcher;
