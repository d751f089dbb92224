//! `reind`, the rein daemon.
//!
//! The daemon owns every session and serves them to any number of clients as JSON-RPC 2.0 over
//! a local socket, one compact JSON message per line. This crate is the `server` layer: the
//! socket listener with its single-instance guard ([`server::listener`]), one task per
//! connection ([`server::connection`]), the line-to-method dispatcher ([`server::dispatch`]) and
//! the methods themselves ([`methods`]).

pub mod config;
pub mod daemon;
pub mod first_run;
pub mod hub;
pub mod keys;
pub mod logging;
pub mod methods;
pub mod rpc_error;
pub mod server;

pub use daemon::{Daemon, DaemonOptions};
