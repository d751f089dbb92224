//! Shared by the `cli_*` end-to-end tests: a fake provider, a daemon configured to use it, a
//! project directory, and the real `rein` aimed at all three.

#![allow(dead_code)] // each test file uses a different part
#![allow(clippy::unwrap_used)] // test helpers: a failure should stop the test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{RecordedRequest, Reply};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Command, Output};

/// A fake provider, a daemon that uses it as `fake/test-model`, and a project directory.
pub(crate) struct CliEnv {
    /// The scripted provider.
    pub fake: BackgroundFake,
    /// The daemon.
    pub daemon: DaemonFixture,
    /// The project directory `rein` runs in.
    pub project: tempfile::TempDir,
}

impl CliEnv {
    /// Starts everything with `script` and the daemon already running.
    pub(crate) fn start(script: Vec<Reply>) -> Self {
        let mut env = Self::configured(script);
        env.daemon.spawn();
        env
    }

    /// Everything but the daemon (for tests where `rein` starts it).
    pub(crate) fn configured(script: Vec<Reply>) -> Self {
        let fake = BackgroundFake::start(script);
        let daemon = DaemonFixture::new();
        let config = format!(
            r#"model = "fake/test-model"

[providers.fake]
api = "openai-chat"
base_url = "{}"
api_key_env = ""

[providers.fake.models."test-model"]
context_window = 32768

[retry]
max_retries = 0
"#,
            fake.base_url()
        );
        std::fs::write(daemon.home().join("config.toml"), config).unwrap();
        let project = tempfile::Builder::new().prefix("rein-project-").tempdir().unwrap();
        Self { fake, daemon, project }
    }

    /// The project directory, canonical (as the daemon stores it).
    pub(crate) fn project_dir(&self) -> std::path::PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    /// `rein` in the project directory.
    pub(crate) fn rein(&self) -> Command {
        let mut command = self.daemon.rein();
        command.current_dir(self.project.path());
        command
    }

    /// Runs `rein ARGS` in the project directory with no stdin.
    pub(crate) fn run(&self, args: &[&str]) -> Output {
        self.rein().args(args).stdin(std::process::Stdio::null()).output().unwrap()
    }

    /// One JSON-RPC call on a fresh connection; returns the whole response.
    pub(crate) fn rpc(&self, method: &str, params: Value) -> Value {
        self.daemon.connect().call(1, method, params)
    }

    /// The `result` of a call that must succeed.
    pub(crate) fn rpc_ok(&self, method: &str, params: Value) -> Value {
        let response = self.rpc(method, params);
        assert!(response.get("error").is_none(), "{method} failed: {response}");
        response["result"].clone()
    }

    /// The messages on a session's active path.
    pub(crate) fn messages(&self, session_id: &str) -> Vec<Value> {
        let result = self.rpc_ok("session/messages", json!({"session_id": session_id}));
        result["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Requests the fake provider received.
    pub(crate) fn requests(&self) -> Vec<RecordedRequest> {
        self.fake.requests()
    }
}

/// Standard output as text.
pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Standard error as text.
pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The session id `rein run` printed on stderr (`session: ID`).
pub(crate) fn session_id(stderr: &str) -> String {
    stderr
        .lines()
        .find_map(|line| line.strip_prefix("session: "))
        .unwrap_or_else(|| panic!("no session line in: {stderr}"))
        .trim()
        .to_string()
}

/// Whether any text block of a recorded request mentions `needle`.
pub(crate) fn request_mentions(request: &RecordedRequest, needle: &str) -> bool {
    request.body.to_string().contains(needle)
}

/// Asserts the exit code, showing both streams when it differs.
pub(crate) fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

/// Stops a daemon that `rein` started on its own.
pub(crate) fn stop_daemon(env: &CliEnv) {
    let _ = env.run(&["daemon", "stop"]);
}

/// The path as a string.
pub(crate) fn path_str(path: &Path) -> String {
    path.display().to_string()
}

/// `rein` on a pseudo-terminal, through util-linux `script`, so the line editor runs as it
/// does for a person. Output is collected on a thread; [`Pty::expect`] waits for text.
pub(crate) struct Pty {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: std::sync::Arc<std::sync::Mutex<String>>,
    cursor: usize,
}

/// How long [`Pty::expect`] waits.
pub(crate) const EXPECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

impl Pty {
    /// Starts `rein ARGS` on a pseudo-terminal in the project directory.
    pub(crate) fn spawn(env: &CliEnv, args: &[&str]) -> Self {
        Self::spawn_line(env, args, "")
    }

    /// Starts `rein ARGS | cat` on a pseudo-terminal: keys come from a terminal, output goes
    /// to a pipe, so `rein` runs its line-mode client with the line editor's keys (Ctrl-C).
    pub(crate) fn spawn_piped(env: &CliEnv, args: &[&str]) -> Self {
        Self::spawn_line(env, args, " | cat")
    }

    fn spawn_line(env: &CliEnv, args: &[&str], tail: &str) -> Self {
        let rein = env.rein();
        let mut line = shell_quote(&rein.get_program().to_string_lossy());
        for arg in args {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        line.push_str(tail);
        let mut command = Command::new("script");
        command.args(["-q", "-f", "-e", "-c", &line, "/dev/null"]);
        for (key, value) in rein.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command
            .env("TERM", "xterm")
            .current_dir(env.project.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        Self::attach(command.spawn().unwrap())
    }

    /// Talks to a process started with piped stdin and stdout (line mode, without a
    /// terminal, when it is `rein` itself).
    pub(crate) fn attach(mut child: std::process::Child) -> Self {
        let input = child.stdin.take().unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let output = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = std::sync::Arc::clone(&output);
        std::thread::spawn(move || {
            use std::io::Read;
            let mut buffer = [0u8; 4096];
            while let Ok(n) = stdout.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock().unwrap().push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self { child, input, output, cursor: 0 }
    }

    /// Types `text` (use `\r` for Enter, `\x03` for Ctrl-C).
    pub(crate) fn send(&mut self, text: &str) {
        use std::io::Write;
        self.input.write_all(text.as_bytes()).unwrap();
        self.input.flush().unwrap();
    }

    /// Waits until `needle` appears after what earlier expects consumed; returns the output
    /// up to and including it.
    pub(crate) fn expect(&mut self, needle: &str) -> String {
        let deadline = std::time::Instant::now() + EXPECT_TIMEOUT;
        loop {
            {
                let output = self.output.lock().unwrap();
                if let Some(at) = output[self.cursor..].find(needle) {
                    let end = self.cursor + at + needle.len();
                    let seen = output[self.cursor..end].to_string();
                    self.cursor = end;
                    return seen;
                }
                if std::time::Instant::now() > deadline {
                    panic!("timed out waiting for {needle:?}; output so far:\n{}", *output);
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The process id (of `script` for [`Pty::spawn`], of `rein` for [`Pty::attach`]).
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything printed so far.
    pub(crate) fn all_output(&self) -> String {
        self.output.lock().unwrap().clone()
    }

    /// Waits for the process to exit and returns its exit code.
    pub(crate) fn wait(&mut self) -> Option<i32> {
        let deadline = std::time::Instant::now() + EXPECT_TIMEOUT;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            if std::time::Instant::now() > deadline {
                panic!("rein did not exit; output:\n{}", self.all_output());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// `rein` in a real terminal: a tmux pane of its own tmux server (a private socket), so the
/// full-screen client runs as it does for a person. [`Tmux::expect`] waits until the screen
/// shows a text; [`Tmux::screen`] is what a person would see.
pub(crate) struct Tmux {
    socket: std::path::PathBuf,
    status_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Tmux {
    /// Whether tmux is installed; tests print why they skip when it is not.
    pub(crate) fn available() -> bool {
        let found = Command::new("tmux").arg("-V").output().is_ok_and(|out| out.status.success());
        if !found {
            eprintln!("skipped: tmux is not installed (apt-get install tmux)");
        }
        found
    }

    /// Starts `rein ARGS` in the project directory on a `width`x`height` terminal with a UTF-8
    /// locale; `extra_env` adds variables (e.g. `NO_COLOR`).
    pub(crate) fn spawn(
        env: &CliEnv,
        args: &[&str],
        size: (u16, u16),
        extra_env: &[(&str, &str)],
    ) -> Self {
        let dir = tempfile::Builder::new().prefix("rein-tmux-").tempdir().unwrap();
        let socket = dir.path().join("tmux.sock");
        // The pane stays after rein exits, so its exit status can be read.
        let config = dir.path().join("tmux.conf");
        std::fs::write(&config, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let rein = env.rein();
        let mut line = shell_quote(&rein.get_program().to_string_lossy());
        for arg in args {
            line.push(' ');
            line.push_str(&shell_quote(arg));
        }
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&socket).arg("-f").arg(&config).args(["new-session", "-d"]);
        command.args(["-x", &size.0.to_string(), "-y", &size.1.to_string()]);
        command.args(["-c", &path_str(env.project.path())]);
        let mut vars: Vec<(String, Option<String>)> = rein
            .get_envs()
            .map(|(k, v)| {
                (k.to_string_lossy().into_owned(), v.map(|v| v.to_string_lossy().into_owned()))
            })
            .collect();
        vars.push(("LANG".into(), Some("C.UTF-8".into())));
        vars.push(("TERM".into(), Some("xterm-256color".into())));
        for (key, value) in extra_env {
            vars.push((key.to_string(), Some(value.to_string())));
        }
        // env takes its -u options before the assignments.
        let mut prefix = String::from("env");
        for (key, _) in vars.iter().filter(|(_, value)| value.is_none()) {
            prefix.push_str(&format!(" -u {}", shell_quote(key)));
        }
        for (key, value) in &vars {
            if let Some(value) = value {
                prefix.push_str(&format!(" {}", shell_quote(&format!("{key}={value}"))));
            }
        }
        // The shell records rein's exit status: tmux may be slow to reap a pane's process.
        // Then it keeps the terminal open a moment: tmux drops what a pane wrote but it had
        // not read yet when the pane's process exits, so a `rein` that prints one line and
        // exits at once (a start-up error) could leave a blank screen on a busy machine.
        let status_file = dir.path().join("status");
        command.arg(format!(
            "{prefix} {line}; echo $? > {}; sleep 2",
            shell_quote(&path_str(&status_file))
        ));
        command.env("TERM", "xterm-256color");
        let status = command.status().unwrap();
        assert!(status.success(), "tmux new-session failed");
        Self { socket, status_file, _dir: dir }
    }

    fn tmux(&self, args: &[&str]) -> Output {
        Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().unwrap()
    }

    /// What the screen shows now, as plain text.
    pub(crate) fn screen(&self) -> String {
        stdout(&self.tmux(&["capture-pane", "-p", "-t", "0"]))
    }

    /// The screen with its colours (escape sequences), to check what is painted how.
    pub(crate) fn screen_with_colours(&self) -> String {
        stdout(&self.tmux(&["capture-pane", "-p", "-e", "-t", "0"]))
    }

    /// Types `text` literally.
    pub(crate) fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", "0", "-l", text]);
    }

    /// Presses keys by tmux name (`Enter`, `C-c`, `Escape`, `Tab`, `PageUp`).
    pub(crate) fn press(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.tmux(&args);
    }

    /// Waits until the screen shows `needle`; returns the screen.
    pub(crate) fn expect(&self, needle: &str) -> String {
        self.expect_that(needle, |screen| screen.contains(needle))
    }

    /// Waits until `done` holds for the screen; `what` names it in the failure.
    pub(crate) fn expect_that(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = std::time::Instant::now() + EXPECT_TIMEOUT;
        loop {
            let screen = self.screen();
            if done(&screen) {
                return screen;
            }
            if std::time::Instant::now() > deadline {
                panic!("timed out waiting for {what:?}; the screen:\n{screen}");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    /// The pid of `rein` in the pane (the child of the pane's shell).
    pub(crate) fn pid(&self) -> u32 {
        let shell = stdout(&self.tmux(&["display-message", "-p", "-t", "0", "#{pane_pid}"]));
        let children =
            Command::new("ps").args(["-o", "pid=", "--ppid", shell.trim()]).output().unwrap();
        stdout(&children).split_whitespace().next().and_then(|pid| pid.parse().ok()).unwrap()
    }

    /// Waits for `rein` to exit and returns its exit status (`None` when a signal ended it).
    pub(crate) fn wait(&self) -> Option<i32> {
        let deadline = std::time::Instant::now() + EXPECT_TIMEOUT;
        loop {
            if let Ok(text) = std::fs::read_to_string(&self.status_file)
                && text.ends_with('\n')
            {
                // The shell reports death by signal N as 128 + N.
                return text.trim().parse().ok().filter(|code| *code < 128);
            }
            if std::time::Instant::now() > deadline {
                panic!("rein did not exit; the screen:\n{}", self.screen());
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.tmux(&["kill-server"]);
    }
}

/// The session id in the banner the client shows first (`new session ID (` or `attached to
/// ID (`).
pub(crate) fn banner_id(screen: &str) -> String {
    screen
        .lines()
        .find_map(|line| {
            let rest =
                line.split("new session ").nth(1).or_else(|| line.split("attached to ").nth(1))?;
            rest.split_whitespace().next().map(str::to_string)
        })
        .unwrap_or_default()
}
