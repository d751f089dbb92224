//! The daemon's allocator: jemalloc, tuned to give freed memory back to the system soon.
//!
//! glibc kept the memory of closed sessions in its arenas (RSS stayed at its peak after 500
//! sessions closed); jemalloc returns pages nobody uses. By default it waits about 10 s before
//! purging a freed page, so a daemon that had just closed a large session still looked as big
//! as with it loaded: here freed pages are purged after about a second, by jemalloc's own
//! background threads (never on a request's path).

use tikv_jemalloc_ctl::{Access, AsName, arenas, background_thread, max_background_threads};

/// The allocator of `reind`.
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read by jemalloc itself before `main` through this C symbol (its weak
/// default is replaced; `_RJEM_MALLOC_CONF` in the environment still overrides it).
///
/// `percpu_arena:percpu`: one arena per CPU, each thread allocating from the arena of the CPU
/// it runs on. By default jemalloc gives each new thread an arena of its own up to four per
/// CPU, and a new arena costs dozens of fresh pages of metadata and extents: a cold start made
/// seven of them for its eight threads (about 185 of its 990 page faults, docs/benchmarks.md,
/// "Fourteenth pass"). Per-CPU arenas keep threads on different CPUs apart as well as the
/// default does, and fewer arenas hold fewer partly used pages. Linux only: elsewhere jemalloc
/// may have no way to ask for the current CPU, and would say so on stderr at every start.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)] // Naming a C symbol: jemalloc reads a NUL-terminated string through it.
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: &[u8; 20] = b"percpu_arena:percpu\0";

/// How long (ms) a freed dirty page stays mapped before it is purged (jemalloc's default is
/// 10,000).
const DIRTY_DECAY_MS: isize = 1_000;

/// How long (ms) a lazily freed page stays counted before it is purged: at once, so RSS
/// shows what the daemon holds.
const MUZZY_DECAY_MS: isize = 0;

/// Starts the purging threads and sets the decay times, for the arenas made later and for
/// those already in use. Failures are logged and leave jemalloc's defaults in place.
pub(crate) fn start_purging() {
    // One purging thread is plenty for a daemon that frees in bursts (sessions closing); the
    // default of one per CPU costs a thread start each on the way up.
    if let Err(error) = max_background_threads::write(1) {
        tracing::debug!(%error, "cannot limit the allocator's purging threads");
    }
    if let Err(error) = background_thread::write(true) {
        tracing::warn!(%error, "cannot start the allocator's purging threads");
    }
    let defaults = [
        (b"arenas.dirty_decay_ms\0".as_slice(), DIRTY_DECAY_MS),
        (b"arenas.muzzy_decay_ms\0".as_slice(), MUZZY_DECAY_MS),
    ];
    for (key, value) in defaults {
        if let Err(error) = key.name().write(value) {
            tracing::warn!(%error, "cannot set the allocator's decay time");
        }
    }
    // Arenas that were not made yet refuse the write; they get the defaults above.
    let count = arenas::narenas::read().unwrap_or(0);
    for arena in 0..count {
        for (setting, value) in
            [("dirty_decay_ms", DIRTY_DECAY_MS), ("muzzy_decay_ms", MUZZY_DECAY_MS)]
        {
            let key = format!("arena.{arena}.{setting}\0");
            let _ = key.as_bytes().name().write(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(target_os = "linux")]
    fn jemalloc_reads_the_options_compiled_in() {
        // A variable set for the test run would override the compiled-in options.
        if std::env::var_os("_RJEM_MALLOC_CONF").is_some() {
            return;
        }
        let mode: &str = b"opt.percpu_arena\0".name().read().expect("a jemalloc option");
        assert_eq!(mode.trim_end_matches('\0'), "percpu");
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        let arenas = arenas::narenas::read().expect("the number of arenas") as usize;
        // One arena per CPU jemalloc counts (all online CPUs, which an affinity mask may
        // narrow for this process), never the default of four per CPU.
        assert!(arenas >= cpus && arenas < 4 * cpus.max(2), "{arenas} arenas for {cpus} CPUs");
    }
}
