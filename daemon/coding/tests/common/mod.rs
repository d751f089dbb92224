//! The fixture every coding-session test uses: a scripted fake provider on 127.0.0.1, a
//! registry pointing at it, temporary REIN_HOME and project directories, and the events the
//! session emitted.

#![allow(dead_code)]
// each test file uses a different part of the fixture
// Test helpers: a failed setup step should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rein_ai::{ProvidersConfig, Registry};
use rein_coding::{
    ApprovalGate, CodingEnvironment, CodingSession, EventSink, FileLocks, SessionDefaults,
    TrustStore,
};
use rein_protocol::event::SessionEvent;
use rein_protocol::message::Message;
use rein_protocol::method::{ApprovalPolicy, CreateSessionParams, PromptParams, RunLimits};
use rein_session::SessionStore;
use rein_testkit::fake_provider::{FakeProvider, RecordedRequest, Reply};
use serde_json::Value;
use tokio::sync::mpsc;

/// Longest wait for an expected event before a test fails (a guard against hangs, not a
/// timing assertion).
const EVENT_WAIT: Duration = Duration::from_secs(20);

/// Whether a client that answers approvals is attached (switchable per test).
#[derive(Debug, Default)]
pub(crate) struct TestGate(pub AtomicBool);

impl ApprovalGate for TestGate {
    fn has_approver(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The approver never leaves while a request waits here; leaving is tested end to end
    /// against the daemon's real gate.
    fn abandoned(&self, _grace: Duration) -> futures::future::BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

/// What a session emitted, in order.
pub(crate) struct Events {
    receiver: mpsc::UnboundedReceiver<SessionEvent>,
    /// Every event received so far.
    pub seen: Vec<SessionEvent>,
}

impl Events {
    /// Receives events until one matches; returns it. Panics after [`EVENT_WAIT`].
    pub(crate) async fn until(&mut self, wanted: impl Fn(&SessionEvent) -> bool) -> SessionEvent {
        loop {
            let event = tokio::time::timeout(EVENT_WAIT, self.receiver.recv())
                .await
                .unwrap_or_else(|_| panic!("no matching event; saw {:#?}", self.seen))
                .expect("the sink was dropped");
            self.seen.push(event.clone());
            if wanted(&event) {
                return event;
            }
        }
    }

    /// Receives events until the session settles.
    pub(crate) async fn settled(&mut self) {
        self.until(|e| matches!(e, SessionEvent::Settled)).await;
    }

    /// Forgets what was seen so far.
    pub(crate) fn clear(&mut self) {
        self.seen.clear();
    }

    /// What `pick` takes out of each event seen so far that it picks (a field or two of
    /// one kind of event, say), in order.
    pub(crate) fn picked<T>(&self, pick: impl Fn(&SessionEvent) -> Option<T>) -> Vec<T> {
        self.seen.iter().filter_map(pick).collect()
    }

    /// Events seen so far that match.
    pub(crate) fn matching(&self, wanted: impl Fn(&SessionEvent) -> bool) -> Vec<SessionEvent> {
        self.seen.iter().filter(|e| wanted(e)).cloned().collect()
    }
}

/// A fake provider, a daemon-like environment and a project directory.
pub(crate) struct Fixture {
    pub fake: FakeProvider,
    pub home: tempfile::TempDir,
    pub project: tempfile::TempDir,
    pub env: CodingEnvironment,
    pub gate: Arc<TestGate>,
}

/// The model every fixture session uses.
pub(crate) const MODEL: &str = "local/test-model";

impl Fixture {
    /// A fixture whose provider replays `script`, with a model of a 100 000-token window.
    pub(crate) async fn new(script: Vec<Reply>) -> Self {
        Self::with_window(script, 100_000).await
    }

    /// A fixture whose model has this context window (and 100 output tokens).
    pub(crate) async fn with_window(script: Vec<Reply>, context_window: u64) -> Self {
        let fake = FakeProvider::start(script).await.expect("fake provider starts");
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let config = ProvidersConfig::from_toml(&format!(
            "model = \"{MODEL}\"\n\
             [retry]\nmax_retries = 0\nbase_delay_ms = 1\nmax_delay_ms = 1\n\
             [providers.local]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\
             [providers.local.models.\"test-model\"]\n\
             context_window = {context_window}\nmax_output_tokens = 100\n",
            fake.base_url()
        ))
        .unwrap();
        let registry = Registry::with_environment(config, Arc::new(|_| None)).unwrap();
        let global_dir = home.path().join("config");
        std::fs::create_dir_all(&global_dir).unwrap();
        let env = CodingEnvironment {
            registry: Arc::new(registry),
            store: SessionStore::new(home.path()),
            trust: Arc::new(TrustStore::open(home.path()).unwrap()),
            file_locks: FileLocks::new(),
            global_skills_dir: global_dir.join("skills"),
            global_dir,
            output_dir: home.path().join("output"),
            defaults: SessionDefaults {
                approval_policy: ApprovalPolicy::Yolo,
                ..SessionDefaults::default()
            },
            mcp: Arc::new(rein_coding::mcp::McpServers::none()),
            mcp_sink: rein_coding::session::ignore_mcp_status(),
        };
        Self { fake, home, project, env, gate: Arc::new(TestGate::default()) }
    }

    /// The project directory (canonical, so paths compare as the tools print them).
    pub(crate) fn cwd(&self) -> PathBuf {
        self.project.path().canonicalize().unwrap()
    }

    /// Writes a project file.
    pub(crate) fn write(&self, relative: &str, content: &str) {
        let path = self.cwd().join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    /// Reads a project file.
    pub(crate) fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.cwd().join(relative)).unwrap()
    }

    /// A sink and the events it receives.
    pub(crate) fn sink(&self) -> (EventSink, Events) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let sink: EventSink = Arc::new(move |event| {
            let _ = sender.send(event);
        });
        (sink, Events { receiver, seen: Vec::new() })
    }

    /// Creates a session in the project directory with `policy`.
    pub(crate) async fn create(&self, policy: ApprovalPolicy) -> (Arc<CodingSession>, Events) {
        self.create_in(&self.cwd(), policy).await
    }

    /// Creates a session working in `cwd` with `policy`.
    pub(crate) async fn create_in(
        &self,
        cwd: &Path,
        policy: ApprovalPolicy,
    ) -> (Arc<CodingSession>, Events) {
        let (sink, events) = self.sink();
        let params = CreateSessionParams {
            cwd: cwd.display().to_string(),
            approval_policy: Some(policy),
            ..CreateSessionParams::default()
        };
        let session =
            CodingSession::create(self.env.clone(), params, sink, self.gate.clone()).await.unwrap();
        (session, events)
    }

    /// Opens a session again.
    pub(crate) async fn open(&self, id: &str) -> (Arc<CodingSession>, Events) {
        let (sink, events) = self.sink();
        let session =
            CodingSession::open(self.env.clone(), id, sink, self.gate.clone()).await.unwrap();
        (session, events)
    }

    /// The request bodies the fake provider received.
    pub(crate) fn bodies(&self) -> Vec<Value> {
        self.fake.requests().into_iter().map(|r: RecordedRequest| r.body).collect()
    }

    /// The system prompt of request `index`.
    pub(crate) fn system_prompt(&self, index: usize) -> String {
        let body = &self.bodies()[index];
        body["messages"][0]["content"].as_str().unwrap_or_default().to_string()
    }

    /// The session file of `id`.
    pub(crate) fn session_file(&self, id: &str) -> PathBuf {
        self.env.store.find(id).unwrap()
    }
}

/// Prompt params with only text.
pub(crate) fn prompt(session: &CodingSession, text: &str) -> PromptParams {
    PromptParams {
        session_id: session.id().to_string(),
        text: text.into(),
        images: Vec::new(),
        when_busy: None,
        limits: RunLimits::default(),
        verify: None,
    }
}

/// Every message line of a session file, parsed.
pub(crate) fn file_messages(path: &Path) -> Vec<Message> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let entry: rein_protocol::SessionEntry = serde_json::from_str(line).unwrap();
            match entry.kind {
                rein_protocol::EntryKind::Message { message } => Some(message.as_ref().clone()),
                _ => None,
            }
        })
        .collect()
}

/// The text of a message's text blocks.
pub(crate) fn text_of(message: &Message) -> String {
    use rein_protocol::message::ContentBlock;
    let blocks: &[ContentBlock] = match message {
        Message::User(m) => &m.content,
        Message::Assistant(m) => &m.content,
        Message::ToolResult(m) => &m.content,
    };
    blocks.iter().filter_map(ContentBlock::as_text).collect()
}
