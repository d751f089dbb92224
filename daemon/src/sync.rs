//! The daemon's one convention for poisoned locks.
//!
//! A `std::sync::Mutex` is poisoned when a thread panicked while holding it. Every method call
//! runs on a task of its own and a panic there is answered with `internal` (see
//! `server::dispatch`), so the daemon keeps running after one; what it must never do is
//! quietly skip the work the lock guards (an insert or remove that silently does not happen
//! leaves the hub wrong for good). The data behind the daemon's locks is kept consistent at
//! every step that can panic, so the convention is: take the guard anyway, log once per
//! occurrence, and carry on. Use [`lock`] instead of `Mutex::lock` in daemon code.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// Locks `mutex`, recovering the guard when a panic elsewhere poisoned it.
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned: PoisonError<MutexGuard<'_, T>>| {
        tracing::warn!("a lock was poisoned by a panic elsewhere; using its data as it is");
        poisoned.into_inner()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_poisoned_lock_still_gives_its_data() {
        let shared = Arc::new(Mutex::new(vec![1]));
        let clone = shared.clone();
        let _ = std::thread::spawn(move || {
            let _guard = clone.lock();
            panic!("poison it");
        })
        .join();
        assert!(shared.is_poisoned());
        lock(&shared).push(2);
        assert_eq!(*lock(&shared), vec![1, 2]);
    }
}
