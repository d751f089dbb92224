//! A Unix-socket forwarder between clients and a running daemon, so a test can drop a
//! client's connection while the daemon lives on and decide when it may connect again:
//! while cut off, new connections are accepted but wait unanswered (as with a daemon too busy
//! to accept), and are forwarded once the proxy is restored.

use std::io::{Read, Write};
use std::net::Shutdown;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// Listens on `path` and forwards every connection to the daemon's socket.
#[derive(Debug)]
pub struct SocketProxy {
    path: PathBuf,
    shared: Arc<Shared>,
}

#[derive(Debug, Default)]
struct Shared {
    /// While false, new connections wait in `parked`.
    open: AtomicBool,
    parked: Mutex<Vec<UnixStream>>,
    target: PathBuf,
    stopping: AtomicBool,
    /// Both ends of every forwarded connection, to cut them.
    live: Mutex<Vec<UnixStream>>,
    /// Connections forwarded so far.
    forwarded: Mutex<usize>,
}

impl SocketProxy {
    /// Starts forwarding `path` to `target`.
    pub fn start(path: &Path, target: &Path) -> Self {
        let listener = UnixListener::bind(path)
            .unwrap_or_else(|e| panic!("cannot listen on {}: {e}", path.display()));
        let shared = Arc::new(Shared {
            open: AtomicBool::new(true),
            target: target.to_path_buf(),
            ..Shared::default()
        });
        let accepting = Arc::clone(&shared);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accepting.stopping.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(client) = stream else { continue };
                let mut parked = accepting.parked.lock().unwrap_or_else(|e| e.into_inner());
                if accepting.open.load(Ordering::SeqCst) {
                    drop(parked);
                    forward(&accepting, client);
                } else {
                    parked.push(client);
                }
            }
        });
        Self { path: path.to_path_buf(), shared }
    }

    /// The socket clients connect to.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Drops every forwarded connection; new ones wait until [`SocketProxy::restore`].
    pub fn cut(&self) {
        let parked = self.shared.parked.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.open.store(false, Ordering::SeqCst);
        drop(parked);
        let live = std::mem::take(&mut *self.shared.live.lock().unwrap_or_else(|e| e.into_inner()));
        for stream in live {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    /// Forwards the connections that waited, and new ones again.
    pub fn restore(&self) {
        let mut parked = self.shared.parked.lock().unwrap_or_else(|e| e.into_inner());
        self.shared.open.store(true, Ordering::SeqCst);
        for client in parked.drain(..) {
            forward(&self.shared, client);
        }
    }

    /// How many connections were forwarded so far.
    pub fn forwarded(&self) -> usize {
        *self.shared.forwarded.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Connects `client` to the daemon and copies both ways on threads of their own.
fn forward(shared: &Arc<Shared>, client: UnixStream) {
    let Ok(daemon) = UnixStream::connect(&shared.target) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let (Ok(client_copy), Ok(daemon_copy)) = (client.try_clone(), daemon.try_clone()) else {
        return;
    };
    {
        let mut live = shared.live.lock().unwrap_or_else(|e| e.into_inner());
        if let (Ok(a), Ok(b)) = (client.try_clone(), daemon.try_clone()) {
            live.push(a);
            live.push(b);
        }
        *shared.forwarded.lock().unwrap_or_else(|e| e.into_inner()) += 1;
    }
    std::thread::spawn(move || pump(client, daemon_copy));
    std::thread::spawn(move || pump(daemon, client_copy));
}

/// Copies `from` into `to` until either side ends, then closes both.
fn pump(mut from: UnixStream, mut to: UnixStream) {
    let mut buffer = [0u8; 16 * 1024];
    loop {
        match from.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}

impl Drop for SocketProxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.cut();
        for client in self.shared.parked.lock().unwrap_or_else(|e| e.into_inner()).drain(..) {
            let _ = client.shutdown(Shutdown::Both);
        }
        // Wakes the accepting thread so it sees `stopping`.
        let _ = UnixStream::connect(&self.path);
        let _ = std::fs::remove_file(&self.path);
    }
}
