//! The daemon fixture: the real `reind` on a temp socket and temp `REIN_HOME`, and the real
//! `rein` pointed at it.
//!
//! The binaries are built on first use (`cargo build -p rein-daemon -p rein-cli`, a no-op when
//! they are fresh), so `cargo test` always exercises the current code.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// Provider key variables removed from every spawned binary, so no test can ever reach a real
/// provider, whatever the developer's shell has set.
pub const PROVIDER_KEY_VARIABLES: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "OPENAI_API_KEY",
    "OPENROUTER_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
];

fn without_provider_keys(command: &mut Command) {
    for variable in PROVIDER_KEY_VARIABLES {
        command.env_remove(variable);
    }
}

/// How long to wait for the daemon to come up or go away.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// The directory holding the workspace's binaries for the profile these tests run under.
pub fn bin_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT.get_or_init(build_binaries).clone()
}

fn build_binaries() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test binary>
    let profile_dir =
        exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let release = profile_dir.file_name().is_some_and(|name| name == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.args(["build", "--quiet", "-p", "rein-daemon", "-p", "rein-cli", "--bins"]);
    if release {
        command.arg("--release");
    }
    let status = command.status();
    assert!(
        status.as_ref().is_ok_and(|s| s.success()),
        "building reind and rein failed: {status:?}"
    );
    profile_dir
}

/// Path of a workspace binary (`reind`, `rein`).
pub fn binary(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// A running `reind` with its own state directory; killed when dropped.
#[derive(Debug)]
pub struct DaemonFixture {
    home: tempfile::TempDir,
    socket: PathBuf,
    child: Option<Child>,
}

impl DaemonFixture {
    /// A fixture whose daemon is not started yet.
    pub fn new() -> Self {
        let home = tempfile::Builder::new().prefix("rein-e2e-").tempdir().unwrap_or_else(|e| {
            panic!("cannot create a temp REIN_HOME: {e}");
        });
        let socket = home.path().join("run").join("reind.sock");
        Self { home, socket, child: None }
    }

    /// Starts `reind --foreground` and waits until its socket answers.
    pub fn start() -> Self {
        let mut fixture = Self::new();
        fixture.spawn();
        fixture
    }

    /// Spawns the daemon (again) and waits for it.
    pub fn spawn(&mut self) {
        self.spawn_with_env(&[]);
    }

    /// Like [`DaemonFixture::spawn`], with extra environment variables for the daemon.
    pub fn spawn_with_env(&mut self, vars: &[(&str, &str)]) {
        let child = self
            .reind()
            .envs(vars.iter().copied())
            .arg("--foreground")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start reind: {e}"));
        self.child = Some(child);
        self.wait_until_answering();
    }

    /// A `reind` command aimed at this fixture's home and socket.
    pub fn reind(&self) -> Command {
        let mut command = Command::new(binary("reind"));
        command.env("REIN_HOME", self.home.path()).arg("--socket").arg(&self.socket);
        command.env_remove("REIN_SOCKET");
        without_provider_keys(&mut command);
        command
    }

    /// A `rein` command aimed at this fixture's home and socket.
    pub fn rein(&self) -> Command {
        let mut command = Command::new(binary("rein"));
        command
            .env("REIN_HOME", self.home.path())
            .env("REIN_SOCKET", &self.socket)
            .env("REIN_DAEMON_BIN", binary("reind"))
            .env("NO_COLOR", "1");
        without_provider_keys(&mut command);
        command
    }

    /// Runs `rein` with `args` and returns its output.
    pub fn run_rein(&self, args: &[&str]) -> Output {
        self.rein().args(args).output().unwrap_or_else(|e| panic!("cannot run rein: {e}"))
    }

    /// The state directory.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// The socket path.
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The daemon's process, when this fixture started it.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Waits until a connection to the socket succeeds.
    pub fn wait_until_answering(&self) {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            if UnixStream::connect(&self.socket).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("reind did not answer on {} in time", self.socket.display());
    }

    /// Kills the daemon with SIGKILL (leaving its socket file behind) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Waits for the daemon process to exit and returns its exit code.
    pub fn wait_for_exit(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(status)) = child.try_wait() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("reind did not exit in time");
    }

    /// A raw line-oriented connection to the daemon.
    pub fn connect(&self) -> RawConnection {
        RawConnection::connect(&self.socket)
    }
}

impl Default for DaemonFixture {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for DaemonFixture {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A blocking raw socket client that writes and reads lines, for protocol-level tests.
#[derive(Debug)]
pub struct RawConnection {
    reader: BufReader<UnixStream>,
    writer: UnixStream,
    notifications: std::collections::VecDeque<serde_json::Value>,
}

impl RawConnection {
    /// Connects to `socket`.
    pub fn connect(socket: &Path) -> Self {
        let stream = UnixStream::connect(socket)
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", socket.display()));
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap_or_default();
        let writer = stream.try_clone().unwrap_or_else(|e| panic!("cannot clone stream: {e}"));
        Self { reader: BufReader::new(stream), writer, notifications: Default::default() }
    }

    /// Writes raw bytes (a newline is not added).
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap_or_else(|e| panic!("write failed: {e}"));
    }

    /// Writes one line (a newline is added).
    pub fn send_line(&mut self, line: &str) {
        self.send_raw(format!("{line}\n").as_bytes());
    }

    /// Reads one line and parses it as JSON.
    pub fn read_json(&mut self) -> serde_json::Value {
        let mut line = String::new();
        let read = self.reader.read_line(&mut line).unwrap_or_else(|e| panic!("read failed: {e}"));
        assert!(read > 0, "the daemon closed the connection");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// Sends a request with `id` and returns the message answering it. Notifications that
    /// arrive first are kept for [`RawConnection::next_notification`].
    pub fn call(&mut self, id: u64, method: &str, params: serde_json::Value) -> serde_json::Value {
        let request =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_line(&request.to_string());
        loop {
            let message = self.read_json();
            if message.get("method").is_some() {
                self.notifications.push_back(message);
            } else if message.get("id") == Some(&serde_json::json!(id)) {
                return message;
            }
        }
    }

    /// Like [`RawConnection::call`], returning `result` and panicking on an error response.
    pub fn call_ok(
        &mut self,
        id: u64,
        method: &str,
        params: serde_json::Value,
    ) -> serde_json::Value {
        let response = self.call(id, method, params);
        match response.get("result") {
            Some(result) => result.clone(),
            None => panic!("{method} failed: {response}"),
        }
    }

    /// The next notification (kept ones first).
    pub fn next_notification(&mut self) -> serde_json::Value {
        if let Some(message) = self.notifications.pop_front() {
            return message;
        }
        loop {
            let message = self.read_json();
            if message.get("method").is_some() {
                return message;
            }
        }
    }

    /// The next item of a session subscription (`params.result` of a `session/event`).
    pub fn next_session_item(&mut self) -> serde_json::Value {
        loop {
            let message = self.next_notification();
            if message["method"] == "session/event" {
                return message["params"]["result"].clone();
            }
        }
    }

    /// Session events (envelopes) up to and including the first whose kind is `kind`.
    pub fn events_until(&mut self, kind: &str) -> Vec<serde_json::Value> {
        let mut events = Vec::new();
        loop {
            let item = self.next_session_item();
            assert_eq!(item["type"], "event", "subscription ended: {item}");
            let done = item["event"]["kind"] == kind;
            events.push(item);
            if done {
                return events;
            }
        }
    }
}
