//! Opening a provider's connection before its first request: the TCP connection and, for an
//! `https` provider, the TLS handshake, done while the daemon starts instead of on the first
//! prompt's path, where they cost a network round trip or more each (issue 18).
//!
//! reqwest has no call that only connects, and its connector's request and connection types
//! cannot be named outside it. So a connection is opened by a request sent with
//! [`Opener::open`] inside [`OPENING`]: the [`OpenAheadLayer`] around the client's connector
//! sees the flag, lets the connector connect, keeps the connection and fails that request, so
//! nothing is written on the connection. The client's next connect (its first real request)
//! is answered with the kept connection. The opening is only done on a client that has sent
//! nothing yet, and a request that starts meanwhile waits for it ([`Opener::before_request`]):
//! so the client's pool holds no connection the opening request could be sent on instead, and
//! the first request takes the connection as soon as it is made rather than making a second
//! one. A kept connection is given up after [`KEEP_FOR`], before a server would close it for
//! idling. Should a later reqwest connect outside the task that sends (so the flag is not
//! seen), the opening request would go out: it is a `HEAD` of the base URL without the key,
//! which a provider answers without effect.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

/// How long a connection opened ahead is kept for the first request: less than the time
/// hosted providers and local servers leave an idle connection open.
pub const KEEP_FOR: Duration = Duration::from_secs(20);

tokio::task_local! {
    /// Set while a connection is opened ahead: the connector keeps what it makes.
    static OPENING: ();
}

/// The connection opened ahead, of the connector's own type.
struct Kept {
    /// When it was made.
    made: Instant,
    /// The connection (reqwest's, which cannot be named here).
    connection: Box<dyn Any + Send>,
}

/// Where a client's connection opened ahead waits for its first request. Cheap to clone;
/// clones share the place.
#[derive(Clone, Default)]
struct KeptConnection {
    kept: Arc<Mutex<Option<Kept>>>,
}

impl std::fmt::Debug for KeptConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeptConnection").field("held", &self.is_held()).finish()
    }
}

impl KeptConnection {
    /// Whether a connection waits here.
    fn is_held(&self) -> bool {
        self.lock().is_some()
    }

    /// Lets go of the kept connection (closing it), if it is `made` or older.
    fn forget_made_before(&self, made: Instant) {
        let mut kept = self.lock();
        if kept.as_ref().is_some_and(|kept| kept.made <= made) {
            *kept = None;
        }
    }

    fn keep<C: Send + 'static>(&self, connection: C) {
        self.keep_made_at(connection, Instant::now());
    }

    fn keep_made_at<C: Send + 'static>(&self, connection: C, made: Instant) {
        *self.lock() = Some(Kept { made, connection: Box::new(connection) });
    }

    /// The kept connection, when there is one of type `C` younger than [`KEEP_FOR`] that the
    /// server has not closed.
    fn take<C: hyper::rt::Read + Unpin + 'static>(&self) -> Option<C> {
        let kept = self.lock().take()?;
        if kept.made.elapsed() >= KEEP_FOR {
            return None;
        }
        let mut connection = kept.connection.downcast::<C>().ok()?;
        is_open(&mut *connection).then_some(*connection)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Kept>> {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Where a client is in its life, for opening its connection ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Nothing sent, nothing opened.
    Fresh,
    /// Its connection is being opened ahead; requests wait.
    Opening,
    /// Requests go ahead: the opening is over, or a request came first.
    Sending,
}

/// Ends an opening when dropped: requests go ahead.
struct Done<'a>(&'a tokio::sync::watch::Sender<Phase>);

impl Drop for Done<'_> {
    fn drop(&mut self) {
        self.0.send_replace(Phase::Sending);
    }
}

/// What [`Opener::open`] did.
#[derive(Debug)]
pub(crate) enum Opened {
    /// A connection is kept for the first request.
    Kept,
    /// Nothing: the client had started sending already.
    TooLate,
    /// The opening request went out instead of stopping at the connector (see the module's
    /// documentation); its answer was dropped.
    Sent,
    /// The connection could not be made.
    Failed(reqwest::Error),
}

/// Opens one client's connection ahead, in step with its requests (see the module's
/// documentation). Cheap to clone; clones share the state.
#[derive(Debug, Clone)]
pub(crate) struct Opener {
    kept: KeptConnection,
    phase: Arc<tokio::sync::watch::Sender<Phase>>,
}

impl Default for Opener {
    fn default() -> Self {
        let (phase, _) = tokio::sync::watch::channel(Phase::Fresh);
        Self { kept: KeptConnection::default(), phase: Arc::new(phase) }
    }
}

impl Opener {
    /// The layer to build the client with.
    pub(crate) fn layer(&self) -> OpenAheadLayer {
        OpenAheadLayer { kept: self.kept.clone() }
    }

    /// Opens a connection of `client` (built with [`Opener::layer`]) to the server of `url`
    /// and keeps it for the first request, unless the client has sent a request already.
    pub(crate) async fn open(&self, client: &reqwest::Client, url: &str) -> Opened {
        let starts = self.phase.send_if_modified(|phase| {
            let fresh = *phase == Phase::Fresh;
            if fresh {
                *phase = Phase::Opening;
            }
            fresh
        });
        if !starts {
            return Opened::TooLate;
        }
        // Requests go ahead once this ends, however it ends (the future may be dropped).
        let _done = Done(&self.phase);
        match OPENING.scope((), client.head(url).send()).await {
            Ok(_) => Opened::Sent,
            Err(_) if self.kept.is_held() => Opened::Kept,
            Err(error) => Opened::Failed(error),
        }
    }

    /// To be awaited before each request: waits while the connection is being opened ahead,
    /// and ends any later opening.
    pub(crate) async fn before_request(&self) {
        self.phase.send_if_modified(|phase| {
            let fresh = *phase == Phase::Fresh;
            if fresh {
                *phase = Phase::Sending;
            }
            fresh
        });
        // The sender lives in `self`, so the wait ends only when the phase moves on.
        let _ = self.phase.subscribe().wait_for(|phase| *phase == Phase::Sending).await;
    }

    /// Lets go of the kept connection, if it was made at `made` or before.
    pub(crate) fn forget_made_before(&self, made: Instant) {
        self.kept.forget_made_before(made);
    }
}

/// Whether `connection` still looks usable for a first request: nothing to read on it yet.
/// Before its first request an HTTP/1 server sends nothing, so anything readable (the end of
/// the stream, a timeout answer, an error) means the server let it go. TLS messages of the
/// handshake's aftermath (session tickets) are taken in by the read without counting.
fn is_open<C: hyper::rt::Read + Unpin>(connection: &mut C) -> bool {
    let mut byte = [std::mem::MaybeUninit::uninit(); 1];
    let mut buffer = hyper::rt::ReadBuf::uninit(&mut byte);
    let mut context = Context::from_waker(std::task::Waker::noop());
    Pin::new(connection).poll_read(&mut context, buffer.unfilled()).is_pending()
}

/// The connection was opened ahead and kept: the opening request ends here, unsent.
#[derive(Debug, thiserror::Error)]
#[error("connection opened ahead and kept for the first request")]
pub(crate) struct OpenedAhead;

/// The layer around a client's connector that keeps a connection opened ahead (see the
/// module's documentation).
#[derive(Clone, Debug)]
pub(crate) struct OpenAheadLayer {
    kept: KeptConnection,
}

impl<S> tower_layer::Layer<S> for OpenAheadLayer {
    type Service = OpenAhead<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OpenAhead { inner, kept: self.kept.clone() }
    }
}

/// The connector of [`OpenAheadLayer`].
#[derive(Clone, Debug)]
pub(crate) struct OpenAhead<S> {
    inner: S,
    kept: KeptConnection,
}

type Connecting<C, E> = Pin<Box<dyn Future<Output = Result<C, E>> + Send>>;

impl<S, R> tower_service::Service<R> for OpenAhead<S>
where
    S: tower_service::Service<R>,
    S::Response: hyper::rt::Read + Unpin + Send + 'static,
    S::Error: From<OpenedAhead> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Connecting<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let opening = OPENING.try_with(|()| ()).is_ok();
        if !opening && let Some(connection) = self.kept.take::<S::Response>() {
            return Box::pin(std::future::ready(Ok(connection)));
        }
        let connecting = self.inner.call(request);
        if !opening {
            return Box::pin(connecting);
        }
        let kept = self.kept.clone();
        Box::pin(async move {
            kept.keep(connecting.await?);
            Err(OpenedAhead.into())
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A connection with nothing to read.
    struct Quiet;

    impl hyper::rt::Read for Quiet {
        fn poll_read(
            self: Pin<&mut Self>,
            _: &mut Context<'_>,
            _: hyper::rt::ReadBufCursor<'_>,
        ) -> Poll<std::io::Result<()>> {
            Poll::Pending
        }
    }

    #[test]
    fn a_kept_connection_is_taken_once_and_only_while_young() {
        let kept = KeptConnection::default();
        kept.keep(Quiet);
        assert!(kept.is_held());
        assert!(kept.take::<Quiet>().is_some());
        assert!(!kept.is_held());
        assert!(kept.take::<Quiet>().is_none());
        let Some(long_ago) = Instant::now().checked_sub(KEEP_FOR) else { return };
        kept.keep_made_at(Quiet, long_ago);
        assert!(kept.take::<Quiet>().is_none());
        assert!(!kept.is_held(), "a stale connection is let go, not put back");
        kept.keep(Quiet);
        kept.forget_made_before(long_ago);
        assert!(kept.is_held(), "a younger connection than the one to forget stays");
        kept.forget_made_before(Instant::now());
        assert!(!kept.is_held());
    }

    /// A plain-HTTP client with the layer, and its opener.
    fn client() -> (reqwest::Client, Opener) {
        let opener = Opener::default();
        crate::tls::install_provider();
        let client = reqwest::Client::builder()
            .tls_certs_only(Vec::new())
            .connector_layer(opener.layer())
            .build()
            .unwrap();
        (client, opener)
    }

    /// What the test server saw: connections, and the first line of each request.
    #[derive(Debug, Default)]
    struct Seen {
        connections: usize,
        requests: Vec<String>,
    }

    /// Serves `ok` to every request of every connection but those whose number (from 1)
    /// `dropped` names, which it closes at once.
    async fn server(dropped: &'static [usize]) -> (String, Arc<Mutex<Seen>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Seen::default()));
        let counted = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let number = {
                    let mut seen = counted.lock().unwrap();
                    seen.connections += 1;
                    seen.connections
                };
                if dropped.contains(&number) {
                    continue;
                }
                let counted = counted.clone();
                tokio::spawn(async move {
                    let mut request = [0_u8; 4096];
                    while let Ok(read) = stream.read(&mut request).await {
                        if read == 0 {
                            return;
                        }
                        let text = String::from_utf8_lossy(&request[..read]);
                        let line = text.lines().next().unwrap_or_default().to_string();
                        counted.lock().unwrap().requests.push(line);
                        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                        if stream.write_all(answer.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (url, seen)
    }

    /// A request as [`crate::http`] sends one: after [`Opener::before_request`].
    async fn post(client: &reqwest::Client, opener: &Opener, url: &str) -> String {
        opener.before_request().await;
        let answer = client.post(format!("{url}/chat")).body("{}").send().await.unwrap();
        answer.text().await.unwrap()
    }

    #[tokio::test]
    async fn the_connection_opened_ahead_carries_the_first_request_and_nothing_before() {
        let (url, seen) = server(&[]).await;
        let (client, opener) = client();
        assert!(matches!(opener.open(&client, &url).await, Opened::Kept));
        tokio::time::sleep(Duration::from_millis(50)).await;
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.connections, 1);
            assert!(seen.requests.is_empty(), "{:?}", seen.requests);
        }
        assert_eq!(post(&client, &opener, &url).await, "ok");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.connections, 1, "the request went on the connection opened ahead");
        assert_eq!(seen.requests, ["POST /v1/chat HTTP/1.1"]);
        assert!(!opener.kept.is_held());
    }

    #[tokio::test]
    async fn a_request_during_the_opening_waits_for_it_and_takes_its_connection() {
        let (url, seen) = server(&[]).await;
        let (client, opener) = client();
        let opening = {
            let (client, opener, url) = (client.clone(), opener.clone(), url.clone());
            tokio::spawn(async move { opener.open(&client, &url).await })
        };
        tokio::task::yield_now().await;
        assert_eq!(post(&client, &opener, &url).await, "ok");
        assert!(matches!(opening.await.unwrap(), Opened::Kept | Opened::TooLate));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.connections, 1);
        assert_eq!(seen.requests, ["POST /v1/chat HTTP/1.1"]);
    }

    #[tokio::test]
    async fn nothing_is_opened_once_the_client_has_sent() {
        let (url, seen) = server(&[]).await;
        let (client, opener) = client();
        assert_eq!(post(&client, &opener, &url).await, "ok");
        assert!(matches!(opener.open(&client, &url).await, Opened::TooLate));
        assert_eq!(post(&client, &opener, &url).await, "ok");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.connections, 1, "the pooled connection is used, none opened");
        assert_eq!(seen.requests, ["POST /v1/chat HTTP/1.1", "POST /v1/chat HTTP/1.1"]);
    }

    #[tokio::test]
    async fn a_connection_the_server_closed_is_not_used() {
        let (url, seen) = server(&[1]).await;
        let (client, opener) = client();
        assert!(matches!(opener.open(&client, &url).await, Opened::Kept));
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(post(&client, &opener, &url).await, "ok");
        assert_eq!(seen.lock().unwrap().connections, 2, "a new connection for the request");
    }

    #[tokio::test]
    async fn an_opening_given_up_half_way_lets_requests_go() {
        // A server that accepts and says nothing: the TLS handshake never ends.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((stream, _)) = listener.accept().await {
                held.push(stream);
            }
        });
        let (client, opener) = client();
        let opening = tokio::time::timeout(Duration::from_millis(100), opener.open(&client, &url));
        assert!(opening.await.is_err(), "the opening was still under way");
        let waited = tokio::time::timeout(Duration::from_secs(5), opener.before_request()).await;
        assert_eq!(waited, Ok(()));
    }

    #[tokio::test]
    async fn nothing_is_kept_from_a_server_that_does_not_answer() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        drop(listener);
        let (client, opener) = client();
        assert!(matches!(opener.open(&client, &url).await, Opened::Failed(_)));
        assert!(!opener.kept.is_held());
        assert_eq!(
            tokio::time::timeout(Duration::from_secs(5), opener.before_request()).await,
            Ok(())
        );
    }
}
