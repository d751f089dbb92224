//! The daemon's second thread while it starts: it makes what the daemon serves with and does
//! ahead of time what the first requests would otherwise do on their path (issue 18).
//!
//! While `reind` starts, whoever started it waits for its socket, so a core is idle: the main
//! thread takes the home's lock, opens the log and starts listening while this thread makes
//! the async runtime (mostly starting its worker threads) and, once the log is open, the
//! provider registry with its default provider's HTTP client (for an `https` provider,
//! reading the system's root certificates, which takes milliseconds). Then it warms up:
//! - the CPU feature probes that byte searches and hashing make on first use (each `cpuid`
//!   costs microseconds under a hypervisor);
//! - the built-in tools' parameter schemas, shared by every tool set of the process (see
//!   `rein_agent::ToolSet`);
//! - the first threads of the runtime's blocking pool ([`BLOCKING_THREADS_AHEAD`]).
//!
//! What the thread logs before the main thread has opened the log is not kept.
use rein_ai::registry::Registry;
use rein_ai::{ConfigError, ProvidersConfig};
use rein_daemon::first_run;
use rein_daemon::keys::KeyStore;
use rein_protocol::method::LocalServer;
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

/// What the daemon serves with, made by the start's second thread.
pub(crate) struct Started {
    /// The async runtime.
    pub(crate) runtime: Runtime,
    /// The provider registry (its default provider's client is made on the start thread
    /// meanwhile).
    pub(crate) registry: Arc<Registry>,
    /// The local model server chosen when nothing else is set up.
    pub(crate) local_server: Option<LocalServer>,
}

/// Why the daemon could not get ready to serve.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    /// No async runtime (out of threads or file descriptors).
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[from] std::io::Error),
    /// The provider configuration is not usable.
    #[error(transparent)]
    Config(#[from] ConfigError),
}

/// The main thread's side of the start's second thread.
pub(crate) struct StartHelper {
    /// Where the thread sends what it made; `None` when no thread could be made (the main
    /// thread makes it all then).
    started: Option<Receiver<Result<Started, StartError>>>,
    /// Tells the thread that the log is open, so what the registry's start logs is kept.
    log_opened: Option<SyncSender<()>>,
    /// What the main thread needs to make it itself.
    providers: ProvidersConfig,
    keys: Arc<KeyStore>,
}

impl StartHelper {
    /// Starts the thread. Call it once threads may start (the provider keys are out of the
    /// environment, see `secrets`).
    pub(crate) fn begin(home: &Path, providers: ProvidersConfig, keys: Arc<KeyStore>) -> Self {
        let context = rein_coding::ToolContext::new(home, rein_coding::FileLocks::default(), home);
        let home = home.to_path_buf();
        let (sender, started) = sync_channel(1);
        let (log_opened, log_open) = sync_channel::<()>(1);
        let (thread_providers, thread_keys) = (providers.clone(), keys.clone());
        let spawned = std::thread::Builder::new().name("reind-start".into()).spawn(move || {
            let made = Runtime::new().map_err(StartError::from).and_then(|runtime| {
                // Gone when the start failed before the log was open: nothing is served then.
                let _ = log_open.recv();
                with_registry(runtime, &thread_providers, &thread_keys)
            });
            let made_here = made
                .as_ref()
                .ok()
                .map(|started| (started.runtime.handle().clone(), started.registry.clone()));
            if sender.send(made).is_err() {
                return;
            }
            // First, as it takes longest: the first request waits for this client if it is
            // still being made.
            if let Some((handle, registry)) = &made_here {
                registry.prepare_default();
                // Then its connection, on the runtime, while the daemon starts and the first
                // session is made: the first prompt finds it open (see
                // `rein_ai::preconnect`).
                let registry = registry.clone();
                handle.spawn(async move { registry.open_default_connection().await });
            }
            #[cfg(target_arch = "x86_64")]
            let _ = std::arch::is_x86_feature_detected!("avx2");
            let _ = rein_session::paths::project_dir_name(&home.to_string_lossy());
            if let Err(error) =
                rein_agent::toolset::ToolSet::new(rein_coding::coding_tools(context))
            {
                tracing::warn!(%error, "the built-in tools' schemas do not compile");
            }
            if let Some((handle, _)) = made_here {
                drop(make_blocking_threads(&handle, BLOCKING_THREADS_AHEAD));
            }
        });
        match spawned {
            Ok(_) => {
                step_aside();
                Self { started: Some(started), log_opened: Some(log_opened), providers, keys }
            }
            Err(error) => {
                tracing::debug!(%error, "no thread to start on; the main thread does it all");
                Self { started: None, log_opened: None, providers, keys }
            }
        }
    }

    /// Lets the thread go on from the runtime to the registry, whose start logs (a local model
    /// server chosen, say) must reach the log.
    pub(crate) fn log_opened(&self) {
        if let Some(log_opened) = &self.log_opened {
            let _ = log_opened.send(());
        }
    }

    /// The runtime and the registry, waited for (made here when the thread could not be made).
    pub(crate) fn started(self) -> Result<Started, StartError> {
        match self.started.map(|started| started.recv()) {
            Some(Ok(made)) => made,
            Some(Err(_)) => {
                Err(std::io::Error::other("the thread making the runtime is gone").into())
            }
            None => with_registry(Runtime::new()?, &self.providers, &self.keys),
        }
    }
}

/// What the daemon serves with: `runtime`, and the registry made on it.
fn with_registry(
    runtime: Runtime,
    providers: &ProvidersConfig,
    keys: &Arc<KeyStore>,
) -> Result<Started, StartError> {
    let (registry, local_server) = runtime.block_on(first_run::build_registry(providers, keys))?;
    Ok(Started { runtime, registry: Arc::new(registry), local_server })
}

/// Moves the calling thread to another of the CPUs it may run on, then lets it run on all of
/// them again, so a thread it has just made runs at once on the CPU it leaves.
///
/// Linux queues a new thread on its creator's CPU. Measured on the 2-CPU VM of
/// docs/benchmarks.md: a thread made while its creator kept running started only once the
/// creator stopped (in 90% of tries), even with the other CPU idle, and load balancing did not
/// move it sooner; so the start thread began its work only when the main thread waited for it.
/// A thread that is already running stays where it is when its CPUs are widened again.
fn step_aside() {
    use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
    use nix::unistd::Pid;
    let me = Pid::from_raw(0);
    let (Ok(allowed), Ok(here)) = (sched_getaffinity(me), sched_getcpu()) else { return };
    let mut elsewhere = allowed;
    if elsewhere.unset(here).is_err()
        || !(0..CpuSet::count()).any(|cpu| elsewhere.is_set(cpu).unwrap_or(false))
    {
        return;
    }
    if sched_setaffinity(me, &elsewhere).is_ok() {
        let _ = sched_setaffinity(me, &allowed);
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

    /// The helper makes the daemon's usual runtime (a worker per core) and the registry of
    /// the configuration it was given, once told the log is open.
    #[test]
    fn the_helper_makes_the_multi_thread_runtime_and_the_registry() {
        let home = tempfile::tempdir().unwrap();
        let providers = ProvidersConfig {
            model: Some("anthropic/claude-sonnet-4-5".into()),
            ..Default::default()
        };
        let keys = KeyStore::with_environment(home.path(), Arc::new(|_: &str| None));
        let helper = StartHelper::begin(home.path(), providers, keys);
        helper.log_opened();
        let Started { runtime, registry, local_server } = helper.started().unwrap();
        let cores = std::thread::available_parallelism().unwrap().get();
        assert_eq!(runtime.metrics().num_workers(), cores);
        assert_eq!(runtime.block_on(async { tokio::spawn(async { 1 + 1 }).await.unwrap() }), 2);
        assert_eq!(
            registry.effective_default_model().as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert!(local_server.is_none());
    }

    /// Stepping aside leaves the CPUs the thread may use as they were, and is a no-op for a
    /// thread bound to one CPU.
    #[test]
    fn stepping_aside_keeps_the_cpus_the_thread_may_use() {
        use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
        use nix::unistd::Pid;
        let me = Pid::from_raw(0);
        let before = sched_getaffinity(me).unwrap();
        step_aside();
        assert_eq!(sched_getaffinity(me).unwrap(), before);
        std::thread::spawn(move || {
            let mut one = CpuSet::new();
            one.set(sched_getcpu().unwrap()).unwrap();
            sched_setaffinity(me, &one).unwrap();
            step_aside();
            assert_eq!(sched_getaffinity(me).unwrap(), one);
        })
        .join()
        .unwrap();
    }

    /// A configuration the registry refuses is the start's error, as it was on the main
    /// thread.
    #[test]
    fn a_bad_provider_configuration_is_the_start_error() {
        let home = tempfile::tempdir().unwrap();
        let providers = ProvidersConfig { model: Some("no-slash".into()), ..Default::default() };
        let keys = KeyStore::with_environment(home.path(), Arc::new(|_: &str| None));
        let helper = StartHelper::begin(home.path(), providers, keys);
        helper.log_opened();
        assert!(matches!(helper.started(), Err(StartError::Config(_))));
    }
}
