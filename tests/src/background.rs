//! The fake provider on a runtime of its own, for tests that are not async themselves (most
//! end-to-end tests: they drive blocking sockets and child processes).

use crate::daemon::DaemonFixture;
use crate::fake_provider::{FakeProvider, RecordedRequest, Reply};

/// A fake provider served from a background runtime; stops when dropped.
#[derive(Debug)]
pub struct BackgroundFake {
    fake: Option<FakeProvider>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl BackgroundFake {
    /// Starts a fake provider replaying `script`.
    pub fn start(script: Vec<Reply>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("cannot build a runtime for the fake provider: {e}"));
        let fake = runtime
            .block_on(FakeProvider::start(script))
            .unwrap_or_else(|e| panic!("cannot start the fake provider: {e}"));
        Self { fake: Some(fake), runtime: Some(runtime) }
    }

    fn fake(&self) -> &FakeProvider {
        self.fake.as_ref().unwrap_or_else(|| unreachable!("present until drop"))
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        self.fake().base_url()
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.fake().requests()
    }

    /// How many connections the fake accepted so far.
    pub fn connections(&self) -> usize {
        self.fake().connections()
    }

    /// Appends a reply to the script.
    pub fn push(&self, reply: Reply) {
        self.fake().push(reply);
    }

    /// The `config.toml` text pointing provider `local` (model `test-model`, the default) at
    /// this fake, with `extra` appended (for example `approval_policy = "ask"`).
    pub fn config(&self, extra: &str) -> String {
        format!(
            "model = \"local/test-model\"\n{extra}\n\n[providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\n[retry]\nmax_retries = 0\n",
            self.base_url()
        )
    }

    /// A started daemon whose configuration points at this fake (`extra` as in
    /// [`BackgroundFake::config`]).
    pub fn daemon(&self, extra: &str) -> DaemonFixture {
        let mut daemon = DaemonFixture::new();
        std::fs::write(daemon.home().join("config.toml"), self.config(extra))
            .unwrap_or_else(|e| panic!("cannot write config.toml: {e}"));
        daemon.spawn();
        daemon
    }
}

/// The usual end-to-end set-up: the real `reind` configured for a scripted fake provider,
/// and an empty project directory for its sessions. Fields drop in order: the daemon stops
/// first, then the fake, then the project goes.
#[derive(Debug)]
pub struct Served {
    /// The daemon, started.
    pub daemon: DaemonFixture,
    /// The fake provider it talks to.
    pub fake: BackgroundFake,
    /// A temporary project directory.
    pub project: tempfile::TempDir,
}

impl Served {
    /// A fake replaying `script` and a daemon configured for it with `extra` appended to its
    /// `config.toml` (as in [`BackgroundFake::config`]).
    pub fn start(script: Vec<Reply>, extra: &str) -> Self {
        let project = tempfile::tempdir()
            .unwrap_or_else(|e| panic!("cannot create a temp project directory: {e}"));
        let fake = BackgroundFake::start(script);
        let daemon = fake.daemon(extra);
        Self { daemon, fake, project }
    }
}

impl Drop for BackgroundFake {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            let fake = self.fake.take();
            runtime.block_on(async move { drop(fake) });
            runtime.shutdown_background();
        }
    }
}
