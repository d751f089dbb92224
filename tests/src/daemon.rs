//! The daemon fixture: the real `reind` on a temp socket and temp `REIN_HOME`, and the real
//! `rein` pointed at it.
//!
//! The binaries are built on first use (`cargo build --workspace --bins --tests`: under
//! `cargo test --workspace` it only links them), so the tests always exercise the current code.

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

/// The variable listing the loopback ports probed for a local model server.
pub const LOCAL_PROBE_PORTS: &str = "REIN_LOCAL_PROBE_PORTS";

/// Also empties the local server port list, so no test finds a model server that happens to
/// run on this machine (a test that wants detection sets the variable to its fake's port).
fn without_provider_keys(command: &mut Command) {
    for variable in PROVIDER_KEY_VARIABLES {
        command.env_remove(variable);
    }
    command.env(LOCAL_PROBE_PORTS, "");
}

/// How long to wait for the daemon to come up or go away.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// Names a directory of already built `reind` and `rein` binaries for the end-to-end tests to
/// run instead of building their own profile's (CI points it at `target/release`).
pub const BIN_DIR_VARIABLE: &str = "REIN_TEST_BIN_DIR";

/// The directory holding the binaries the tests run: `$REIN_TEST_BIN_DIR` when set, else the
/// workspace's binaries for the profile these tests run under, built on first use.
pub fn bin_dir() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| match std::env::var_os(BIN_DIR_VARIABLE).filter(|dir| !dir.is_empty()) {
            Some(dir) => given_binaries(PathBuf::from(dir)),
            None => build_binaries(),
        })
        .clone()
}

/// Checks that a directory named by `REIN_TEST_BIN_DIR` holds both binaries, so a wrong path
/// fails loudly instead of testing something else.
fn given_binaries(dir: PathBuf) -> PathBuf {
    for name in ["reind", "rein"] {
        assert!(
            dir.join(name).is_file(),
            "{BIN_DIR_VARIABLE}={} holds no `{name}` binary",
            dir.display()
        );
    }
    dir
}

fn build_binaries() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    // target/<profile>/deps/<test binary>
    let profile_dir =
        exe.parent().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
    let release = profile_dir.file_name().is_some_and(|name| name == "release");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    // The whole workspace's binaries, with the features README's `cargo test --workspace`
    // resolves, so under it only the binaries themselves are linked. That takes the test
    // targets (`--tests`): they switch on the dev-dependencies' features (tokio's `test-util`),
    // and without them, or with `-p` selecting packages, the libraries behind reind and rein
    // were compiled a second time (about a minute, in whichever test binary came first).
    command.args(["build", "--quiet", "--workspace", "--bins", "--tests"]);
    without_cargo_test_variables(&mut command);
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

/// Prefixes of the variables `cargo test` sets for the test process about its own package.
/// Passed on to the nested build they differ from a plain `cargo build`'s, and a crate that
/// reads one at compile time is rebuilt: ring reads `CARGO_MANIFEST_DIR`, and with it rustls,
/// reqwest and both binaries were compiled again on each first end-to-end test (90 s).
const CARGO_TEST_VARIABLES: &[&str] = &[
    "CARGO_MANIFEST_",
    "CARGO_PKG_",
    "CARGO_CRATE_",
    "CARGO_BIN_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "CARGO_RUSTC_CURRENT_DIR",
    "OUT_DIR",
];

/// Runs `command` without the variables `cargo test` set for this process's package.
fn without_cargo_test_variables(command: &mut Command) {
    for (name, _) in std::env::vars_os() {
        let Some(text) = name.to_str() else { continue };
        if CARGO_TEST_VARIABLES.iter().any(|prefix| text.starts_with(prefix)) {
            command.env_remove(&name);
        }
    }
}

/// Path of a workspace binary (`reind`, `rein`).
pub fn binary(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// A running `reind` with its own state directory; killed when dropped. When the test
/// panicked, dropping it prints what the daemon said (its stderr, every start's, and the end
/// of its log), so a failure in CI carries the daemon's side of the story.
#[derive(Debug)]
pub struct DaemonFixture {
    home: tempfile::TempDir,
    socket: PathBuf,
    child: Option<Child>,
    /// The daemon's stderr, outside the home so the daemon's own checks never see it.
    stderr: tempfile::NamedTempFile,
}

impl DaemonFixture {
    /// A fixture whose daemon is not started yet.
    pub fn new() -> Self {
        Self::new_in(&std::env::temp_dir())
    }

    /// A fixture whose home is a new directory in `parent`, its daemon not started yet.
    pub fn new_in(parent: &Path) -> Self {
        let home =
            tempfile::Builder::new().prefix("rein-e2e-").tempdir_in(parent).unwrap_or_else(|e| {
                panic!("cannot create a temp REIN_HOME in {}: {e}", parent.display())
            });
        let socket = home.path().join("run").join("reind.sock");
        let stderr = tempfile::NamedTempFile::new()
            .unwrap_or_else(|e| panic!("cannot create a file for the daemon's stderr: {e}"));
        Self { home, socket, child: None, stderr }
    }

    /// Starts a daemon whose home another user could reach once the home and run directory
    /// are opened up: the home goes under `/tmp` (TMPDIR may be private). `Err` says why not
    /// when `/tmp` or one of its ancestors is closed to other users.
    pub fn start_reachable_by_others() -> Result<Self, String> {
        let parent = Path::new("/tmp");
        if let Some(closed) = parent.ancestors().find(|dir| !others_may_enter(dir)) {
            return Err(format!("{} is closed to other users", closed.display()));
        }
        let mut fixture = Self::new_in(parent);
        fixture.spawn();
        Ok(fixture)
    }

    /// Starts `reind --foreground` and waits until its socket answers.
    pub fn start() -> Self {
        let mut fixture = Self::new();
        fixture.spawn();
        fixture
    }

    /// Spawns the daemon (again) and waits for it.
    pub fn spawn(&mut self) {
        self.spawn_with(|_| {});
    }

    /// Spawns the daemon after `configure` adjusted its command (an environment variable,
    /// say), and waits for it.
    pub fn spawn_with(&mut self, configure: impl FnOnce(&mut Command)) {
        let mut command = self.reind();
        configure(&mut command);
        // Each start appends to the one file: a restart keeps the earlier daemon's account.
        let stderr = std::fs::OpenOptions::new()
            .append(true)
            .open(self.stderr.path())
            .map_or_else(|_| Stdio::null(), Stdio::from);
        let child = command
            .arg("--foreground")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
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

    /// The daemon's pid, when this fixture started it.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The daemon's process, when this fixture started it.
    pub fn child_mut(&mut self) -> Option<&mut Child> {
        self.child.as_mut()
    }

    /// Waits until the socket answers `daemon/info`, from the daemon this fixture started when
    /// it started one (its pid in the answer). A connection alone proves nothing: a daemon
    /// killed while it was starting a tool leaves its listening socket open in the half-started
    /// child until that child's exec, and a connection made in that window is accepted by
    /// nobody and then reset.
    pub fn wait_until_answering(&self) {
        let expected = self.pid();
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            if self.answering_pid().is_some_and(|pid| expected.is_none_or(|ours| ours == pid)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("reind did not answer on {} in time", self.socket.display());
    }

    /// The pid in the socket's answer to `daemon/info`; `None` when nothing answered.
    fn answering_pid(&self) -> Option<u32> {
        use std::io::{BufRead, Write};
        let stream = UnixStream::connect(&self.socket).ok()?;
        stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
        let request = r#"{"jsonrpc":"2.0","id":1,"method":"daemon/info","params":{}}"#;
        writeln!(&stream, "{request}").ok()?;
        let mut line = String::new();
        std::io::BufReader::new(&stream).read_line(&mut line).ok()?;
        let answer: serde_json::Value = serde_json::from_str(&line).ok()?;
        answer["result"]["pid"].as_u64().and_then(|pid| u32::try_from(pid).ok())
    }

    /// Waits until the daemon's start-up walk of its home is done: from then on everything
    /// under the home that existed before the start is private. The walk starts a second
    /// after the daemon listens, beside its first requests.
    pub fn wait_for_home_walk(&self) {
        self.wait_for_log("REIN_HOME is private");
    }

    /// Opens the home and run directory (mode 0711) and the socket (0666) to every user, so
    /// only the daemon's own peer check stands between another user and it. Waits first for
    /// the daemon's start-up walk of its home (see [`Self::wait_for_home_walk`]), which takes
    /// such permissions away and would otherwise undo this.
    pub fn open_to_other_users(&self) {
        use std::os::unix::fs::PermissionsExt;
        self.wait_for_home_walk();
        let run_dir = self.socket.parent().unwrap_or(self.home.path());
        for (path, mode) in [(self.home.path(), 0o711), (run_dir, 0o711), (&self.socket, 0o666)] {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
                .unwrap_or_else(|e| panic!("cannot open {} to others: {e}", path.display()));
        }
    }

    /// Waits until the daemon's log holds a line containing `needle` (the log is written
    /// off the daemon's request path, so a line may land a moment after what it reports).
    pub fn wait_for_log(&self, needle: &str) {
        let log = self.home().join("logs").join("reind.log");
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        while Instant::now() < deadline {
            if std::fs::read_to_string(&log).is_ok_and(|text| text.contains(needle)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!("no line with {needle:?} in {} in time", log.display());
    }

    /// Kills the daemon with SIGKILL (leaving its socket file behind) and reaps it.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops a daemon that a `rein` started on this fixture's home and socket and that the
    /// test left running (a command that started it, then stopped at a usage error, say):
    /// SIGTERM to the pid its home lock records, when that process is a `reind` serving this
    /// socket, then a wait for it to exit, so no daemon outlives the test's home.
    fn stop_started_by_a_client(&self) {
        let lock = self.home.path().join("run").join("reind.lock");
        let Ok(record) = std::fs::read_to_string(&lock) else { return };
        let Some(pid) = record
            .lines()
            .find_map(|line| line.strip_prefix("pid "))
            .and_then(|pid| pid.trim().parse::<i32>().ok())
        else {
            return;
        };
        let serves_this_socket = std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| {
            let line = String::from_utf8_lossy(&line);
            line.contains("reind") && line.contains(&*self.socket.to_string_lossy())
        });
        if !serves_this_socket {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(pid);
        if nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).is_err() {
            return;
        }
        let deadline = Instant::now() + STOP_PATIENCE;
        while Instant::now() < deadline && is_running(pid.as_raw()) {
            std::thread::sleep(Duration::from_millis(10));
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

    /// A connection that introduced itself as `name`; `approvals` says whether it answers
    /// approval requests.
    pub fn client(&self, name: &str, approvals: bool) -> RawConnection {
        self.client_with(crate::connection::client_params(name, approvals))
    }

    /// A connection that introduced itself with `params` (a pid or tty of its own, say).
    pub fn client_with(&self, params: rein_protocol::method::InitializeParams) -> RawConnection {
        RawConnection::connect_with(&self.socket, params)
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
        if std::thread::panicking() {
            self.print_account();
        }
        self.stop_started_by_a_client();
    }
}

/// How long a fixture going away waits for a daemon a client started to exit.
const STOP_PATIENCE: Duration = Duration::from_secs(5);

/// Whether process `pid` exists and has not exited (an exited process not yet reaped by
/// whoever adopted it is a zombie: `Z` in `/proc/PID/stat`).
fn is_running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which may hold spaces and parentheses.
        stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().next()) != Some("Z")
    })
}

/// Lines of the daemon's log a failed test prints.
const LOG_TAIL_LINES: usize = 80;

impl DaemonFixture {
    /// Prints the daemon's stderr and the end of its log to the test's output.
    fn print_account(&self) {
        let stderr = std::fs::read_to_string(self.stderr.path()).unwrap_or_default();
        let log =
            std::fs::read_to_string(self.home().join("logs").join("reind.log")).unwrap_or_default();
        eprintln!(
            "--- reind's stderr ({}) ---\n{}\n--- end of reind's log ---\n{}\n---",
            self.home().display(),
            tail_of(&stderr, LOG_TAIL_LINES),
            tail_of(&log, LOG_TAIL_LINES),
        );
    }
}

/// The last `count` lines of `text`.
fn tail_of(text: &str, count: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(count)..].join("\n")
}

pub use crate::connection::RawConnection;

/// Whether users other than the owner may pass through `dir` (its "others" execute bit).
fn others_may_enter(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o001 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[should_panic(expected = "holds no `reind` binary")]
    fn a_binary_directory_without_the_binaries_is_refused() {
        let empty = tempfile::tempdir().unwrap();
        given_binaries(empty.path().to_path_buf());
    }

    #[test]
    fn a_binary_directory_with_both_binaries_is_used() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["reind", "rein"] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(given_binaries(dir.path().to_path_buf()), dir.path());
    }
}
