//! Logging through `tracing`: to `$REIN_HOME/logs/reind.log`, and to stderr in the foreground.

use std::path::Path;
use tracing_appender::non_blocking::WorkerGuard;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How many log lines may wait for the log file's writer thread. The queue is set up slot by
/// slot before the socket listens: 1,024 slots are 8 pages to fault in, 8,192 were 64 (about
/// 0.15 ms of a cold start on a virtual machine, where a page fault costs 2 to 4 us). The
/// writer drains a line in microseconds, so a burst would have to log a thousand lines
/// faster than that to lose any.
const LOG_QUEUE_LINES: usize = 1_024;

/// Installs the global subscriber. The level comes from `RUST_LOG` (default `info`). Keep the
/// returned guard alive for the process's life so buffered lines are written.
pub fn init(logs_dir: &Path, to_stderr: bool) -> std::io::Result<WorkerGuard> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(logs_dir)?;
    // Created private before the appender opens it (for appending, keeping the mode).
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(logs_dir.join("reind.log"))?;
    let appender = tracing_appender::rolling::never(logs_dir, "reind.log");
    // The default queue holds 128,000 lines: a 5 MB array set up slot by slot, about 4 ms of
    // every daemon start (a third of a cold `rein run`'s wait for the socket). A burst longer
    // than this many lines waiting for the disk drops lines rather than blocking a request.
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE_LINES)
        .lossy(true)
        .finish(appender);
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let file_layer = tracing_subscriber::fmt::layer().with_writer(writer).with_ansi(false);
    let stderr_layer =
        to_stderr.then(|| tracing_subscriber::fmt::layer().with_writer(std::io::stderr));
    let _ =
        tracing_subscriber::registry().with(filter).with(file_layer).with(stderr_layer).try_init();
    Ok(guard)
}
