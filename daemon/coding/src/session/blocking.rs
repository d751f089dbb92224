//! Blocking work (session files, their fsyncs, project files) kept off the async workers.
//!
//! Two levels use a blocking thread: a whole session load or creation
//! ([`on_a_blocking_thread`], used by the daemon), and each piece of session-file work inside
//! a session ([`off_the_workers`]). When the second runs inside the first, it runs inline on
//! the thread the load already has: a nested hand-off would only start a second thread and
//! wait for it (about a tenth of a millisecond each time a thread is started, on the first
//! prompt's path of a daemon that just started).

use std::cell::Cell;
use std::future::Future;

use super::error::CodingError;

thread_local! {
    /// True while this thread runs a future given to [`on_a_blocking_thread`].
    static ON_A_BLOCKING_THREAD: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as running blocking work for as long as it lives.
struct Marked {
    before: bool,
}

impl Marked {
    fn new() -> Self {
        Self { before: ON_A_BLOCKING_THREAD.replace(true) }
    }
}

impl Drop for Marked {
    fn drop(&mut self) {
        ON_A_BLOCKING_THREAD.set(self.before);
    }
}

/// Runs the future `load` makes to completion on a blocking thread of the current runtime
/// and returns its output, so a load that reads and writes files (and awaits their fsyncs)
/// keeps no async worker waiting. Session-file work inside it ([`off_the_workers`]) runs on
/// the same thread. Errs when the load panicked or the runtime is shutting down.
pub async fn on_a_blocking_thread<T, F>(
    load: impl FnOnce() -> F + Send + 'static,
) -> Result<T, tokio::task::JoinError>
where
    F: Future<Output = T>,
    T: Send + 'static,
{
    let runtime = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let _marked = Marked::new();
        runtime.block_on(load())
    })
    .await
}

/// Runs blocking session-file work (a write and the wait for its fsync, or a file of its
/// own) on a blocking thread and awaits it; inline when this already runs on one (inside
/// [`on_a_blocking_thread`]).
pub(crate) async fn off_the_workers<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, CodingError> + Send + 'static,
) -> Result<T, CodingError> {
    if ON_A_BLOCKING_THREAD.get() {
        return work();
    }
    match tokio::task::spawn_blocking(work).await {
        Ok(done) => done,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // The runtime is shutting down: the daemon is going away with the session.
        Err(_) => Err(CodingError::Closed),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn thread_id() -> Result<std::thread::ThreadId, CodingError> {
        Ok(std::thread::current().id())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn work_inside_a_load_stays_on_the_loads_thread() {
        let (load, inner) = on_a_blocking_thread(|| async {
            (std::thread::current().id(), off_the_workers(thread_id).await.unwrap())
        })
        .await
        .unwrap();
        assert_eq!(load, inner);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn work_on_a_worker_moves_to_a_blocking_thread() {
        let here = std::thread::current().id();
        assert_ne!(off_the_workers(thread_id).await.unwrap(), here);
        // The mark does not outlive the load on the pool thread it ran on.
        on_a_blocking_thread(|| async {}).await.unwrap();
        let after = tokio::task::spawn_blocking(|| ON_A_BLOCKING_THREAD.get()).await.unwrap();
        assert!(!after);
    }
}
