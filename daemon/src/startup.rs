//! The daemon's second thread while it starts: it makes the async runtime and does ahead of
//! time what the first requests would otherwise do on their path (issue 18).
//!
//! While `reind` starts, whoever started it waits for its socket, so a core is idle: the main
//! thread takes the home's lock, opens the log and starts listening while this thread makes
//! the runtime (mostly starting its worker threads, about 0.3 ms on 2 cores), then warms up:
//! - the CPU feature probes that byte searches and hashing make on first use (each `cpuid`
//!   costs microseconds under a hypervisor);
//! - the built-in tools' parameter schemas, shared by every tool set of the process (see
//!   `rein_agent::ToolSet`);
//! - once the main thread hands the provider registry over, the default provider's HTTP client
//!   (for an `https` provider, reading the system's root certificates) and the first threads
//!   of the runtime's blocking pool ([`BLOCKING_THREADS_AHEAD`]).
//!
//! What the thread logs before the main thread has opened the log is not kept.

use rein_ai::registry::Registry;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;
use tokio::runtime::{Handle, Runtime};

/// How many threads of the runtime's blocking pool the warm-up makes ahead: as many as a first
/// `rein run` uses at once (the new session file's work, and beside it reads of the file).
/// Made on first use, they cost a cold `rein run` about 1.2 ms at the median on 2 cores (each
/// new thread also sets up an allocator arena); the pool keeps idle threads for its keep-alive
/// time (10 s), well past a starter's first requests.
const BLOCKING_THREADS_AHEAD: usize = 2;

/// The main thread's side of the start's second thread.
pub(crate) struct StartHelper {
    /// The runtime, once made; `None` when no thread could be made (the main thread makes the
    /// runtime then).
    runtime: Option<Receiver<std::io::Result<Runtime>>>,
    /// Where the registry goes once it exists.
    registry: Option<SyncSender<Arc<Registry>>>,
}

impl StartHelper {
    /// Starts the thread. Call it once threads may start (the provider keys are out of the
    /// environment, see `secrets`).
    pub(crate) fn begin(home: &Path) -> Self {
        let context = rein_coding::ToolContext::new(home, rein_coding::FileLocks::default(), home);
        let home = home.to_path_buf();
        let (made, runtime) = sync_channel(1);
        let (handover, handed) = sync_channel::<Arc<Registry>>(1);
        let spawned = std::thread::Builder::new().name("reind-start".into()).spawn(move || {
            let runtime = Runtime::new();
            let handle = runtime.as_ref().ok().map(|runtime| runtime.handle().clone());
            if made.send(runtime).is_err() {
                return;
            }
            #[cfg(target_arch = "x86_64")]
            let _ = std::arch::is_x86_feature_detected!("avx2");
            let _ = rein_session::paths::project_dir_name(&home.to_string_lossy());
            if let Err(error) =
                rein_agent::toolset::ToolSet::new(rein_coding::coding_tools(context))
            {
                tracing::warn!(%error, "the built-in tools' schemas do not compile");
            }
            // Gone when the start failed before the registry was made.
            if let Ok(registry) = handed.recv() {
                registry.prepare_default();
                if let Some(handle) = handle {
                    drop(make_blocking_threads(&handle, BLOCKING_THREADS_AHEAD));
                }
            }
        });
        match spawned {
            Ok(_) => Self { runtime: Some(runtime), registry: Some(handover) },
            Err(error) => {
                tracing::debug!(%error, "no thread to start on; the main thread does it all");
                Self { runtime: None, registry: None }
            }
        }
    }

    /// The runtime, waited for (made here when the thread could not be made).
    pub(crate) fn runtime(&mut self) -> std::io::Result<Runtime> {
        match self.runtime.take().map(|made| made.recv()) {
            Some(Ok(runtime)) => runtime,
            Some(Err(_)) => Err(std::io::Error::other("the thread making the runtime is gone")),
            None => Runtime::new(),
        }
    }

    /// Hands the registry to the thread, which makes the default provider's client and the
    /// first blocking threads.
    pub(crate) fn hand_over(self, registry: Arc<Registry>) {
        if let Some(handover) = self.registry {
            // Gone only when it could not warm up: the first requests do it then.
            let _ = handover.send(registry);
        }
    }
}

/// Makes the runtime's blocking pool start `count` threads now: `count` tasks that each wait,
/// for at most a moment, until all have started, so none can run on a thread another has
/// already left idle. Each task answers the thread it ran on (the daemon does not wait).
fn make_blocking_threads(
    runtime: &Handle,
    count: usize,
) -> Vec<tokio::task::JoinHandle<std::thread::ThreadId>> {
    let started = Arc::new((Mutex::new(0_usize), Condvar::new()));
    let task = move || {
        let (lock, all_started) = &*started;
        let mut here = lock.lock().unwrap_or_else(PoisonError::into_inner);
        *here += 1;
        all_started.notify_all();
        // Bounded: a pool that cannot make a thread runs the rest one after another.
        let _ =
            all_started.wait_timeout_while(here, Duration::from_millis(100), |here| *here < count);
        std::thread::current().id()
    };
    (0..count).map(|_| runtime.spawn_blocking(task.clone())).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn the_blocking_threads_made_ahead_are_distinct_threads() {
        let runtime = Runtime::new().unwrap();
        let tasks = make_blocking_threads(runtime.handle(), 3);
        let threads: std::collections::HashSet<_> = runtime
            .block_on(async { futures::future::join_all(tasks).await })
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(threads.len(), 3);
        assert!(!threads.contains(&std::thread::current().id()));
    }

    /// The runtime the helper makes is the daemon's usual one (a worker per core), and handing
    /// the registry over does not wait for the warm-up.
    #[test]
    fn the_helper_makes_the_multi_thread_runtime_and_takes_the_registry() {
        let home = tempfile::tempdir().unwrap();
        let mut helper = StartHelper::begin(home.path());
        let runtime = helper.runtime().unwrap();
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(runtime.metrics().num_workers(), cores);
        assert_eq!(runtime.block_on(async { tokio::spawn(async { 1 + 1 }).await.unwrap() }), 2);
        let registry = Registry::new(Default::default()).unwrap();
        helper.hand_over(Arc::new(registry));
    }
}
