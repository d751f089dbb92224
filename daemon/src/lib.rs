//! `reind`, the rein daemon.
//!
//! The daemon owns every session and serves them to any number of clients as JSON-RPC 2.0 over
//! a local socket, one compact JSON message per line. This crate is the `server` layer: the
//! socket listener with its single-instance guard ([`server::listener`]), one task per
//! connection ([`server::connection`]), the line-to-method dispatcher ([`server::dispatch`]) and
//! the methods themselves ([`methods`]).

pub mod clients;
pub mod config;
pub mod config_reload;
pub mod daemon;
pub mod first_run;
pub mod home;
pub mod home_lock;
pub mod housekeeping;
pub mod hub;
pub mod keys;
pub mod logging;
pub mod methods;
pub mod path_io;
pub mod rpc_error;
pub mod secrets;
pub mod server;
pub mod sync;
pub mod validate;

pub use daemon::{Daemon, DaemonOptions};
