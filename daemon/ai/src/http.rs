//! The provider that speaks any of the three wire APIs over HTTP with streaming SSE.
//!
//! One attempt posts the request and decodes the event stream; failed attempts that may
//! succeed later (429, 5xx, connection errors, streams that break before any content) are
//! retried with backoff and reported as [`AssistantMessageEvent::Retry`]. The cancellation token
//! is watched throughout: while connecting, streaming and waiting to retry.

use crate::assemble::MessageBuilder;
use crate::compat::{self, Compat, CompatOverride};
use crate::failure::Failure;
use crate::preconnect::{KEEP_FOR, Opened, Opener};
use crate::provider::{
    AssistantMessageEvent, EventStream, Provider, ProviderErrorKind, ProviderRequest,
};
use crate::registry::Environment;
use crate::retry::RetryPolicy;
use crate::whole_reply;
use crate::wire::{Decoder, Step, auth_headers, encode_body, endpoint, sse_events, unterminated};
use bytes::Bytes;
use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rein_protocol::clock::now_ms;
use rein_protocol::message::StopReason;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// Everything needed to reach one configured provider. Holds the *name* of the key's
/// environment variable, never the key.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderSettings {
    /// The provider's name in the configuration.
    pub name: String,
    /// The URL the API paths are appended to (`…/v1`).
    pub base_url: String,
    /// The environment variable holding the API key; no key is sent when `None`.
    pub api_key_env: Option<String>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Retry behaviour.
    pub retry: RetryPolicy,
    /// Longest silence allowed on an open stream before it counts as dropped.
    pub idle_timeout: Duration,
    /// Compatibility settings from the configuration, by model id (they replace the
    /// catalog's).
    pub compat: BTreeMap<String, CompatOverride>,
}

/// Building the HTTP client failed (for instance the TLS backend could not start).
#[derive(Debug, Clone, thiserror::Error)]
#[error("cannot create the HTTP client for provider `{provider}`: {reason}")]
pub struct ClientError {
    provider: String,
    reason: String,
}

/// A provider reached over HTTP. Cheap to clone; clones share one connection pool.
#[derive(Debug, Clone)]
pub struct HttpProvider {
    inner: Arc<Inner>,
}

struct Inner {
    settings: ProviderSettings,
    /// Made on first use ([`HttpProvider::prepare`] or the first request): for an `https`
    /// provider that reads and parses the system's bundle of root certificates, about a
    /// millisecond of work that resolving a model (a new session does) need not wait for.
    client: OnceLock<Result<reqwest::Client, ClientError>>,
    environment: Environment,
    /// Opens a connection ahead of the first request ([`HttpProvider::open_connection`]).
    opener: Opener,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl HttpProvider {
    /// A provider with its own connection pool, reading its key from the process environment.
    pub fn new(settings: ProviderSettings) -> Self {
        Self::with_environment(settings, Arc::new(|name| std::env::var(name).ok()))
    }

    /// A provider reading its key through `environment` at each request. Its HTTP client is
    /// made on first use.
    pub fn with_environment(settings: ProviderSettings, environment: Environment) -> Self {
        let opener = Opener::default();
        Self { inner: Arc::new(Inner { settings, client: OnceLock::new(), environment, opener }) }
    }

    /// Makes the HTTP client now, unless it is made already, so the first request does not
    /// wait for it (a daemon does this on a spare thread while it starts).
    pub fn prepare(&self) -> Result<(), ClientError> {
        self.inner.client().map(drop).map_err(Clone::clone)
    }

    /// Opens a connection to the provider (and, for `https`, does the TLS handshake) and
    /// keeps it for the first request, which then starts with its own bytes (see
    /// [`crate::preconnect`]). Nothing is sent on it. The connection is given up if no request
    /// takes it within [`KEEP_FOR`]; the returned future lasts that long, for the caller to
    /// spawn. A failure (an unreachable server, a refused certificate) is left for the first
    /// request to meet and report.
    pub async fn open_connection(&self) {
        let Ok(client) = self.inner.client() else { return };
        let provider = &self.inner.settings.name;
        let url = self.inner.settings.base_url.as_str();
        match self.inner.opener.open(client, url).await {
            Opened::Kept => tracing::debug!(%provider, "connection opened ahead"),
            Opened::TooLate => return,
            Opened::Sent => {
                tracing::debug!(%provider, "the request opening a connection was sent");
                return;
            }
            Opened::Failed(error) => {
                let error = error_chain(&error);
                tracing::debug!(%provider, %error, "no connection opened ahead");
                return;
            }
        }
        let opened = Instant::now();
        tokio::time::sleep(KEEP_FOR).await;
        self.inner.opener.forget_made_before(opened);
    }

    /// The provider's settings.
    pub fn settings(&self) -> &ProviderSettings {
        &self.inner.settings
    }

    /// Whether the HTTP client is made already.
    #[cfg(test)]
    pub(crate) fn client_is_made(&self) -> bool {
        self.inner.client.get().is_some()
    }

    /// Whether `other` is a clone of this provider (the same client and connection pool).
    #[cfg(test)]
    pub(crate) fn is_clone_of(&self, other: &HttpProvider) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Provider for HttpProvider {
    fn stream(&self, request: ProviderRequest) -> EventStream {
        let (tx, rx) = mpsc::channel(64);
        let inner = Arc::clone(&self.inner);
        // The driver runs inside the returned stream (no task is spawned), so dropping the
        // stream stops the request.
        let driver = futures::stream::once(async move { inner.run(request, tx).await })
            .filter_map(|()| async { None });
        futures::stream::select(rx, driver).boxed()
    }
}

/// The HTTP client for `settings`, opening its connection ahead through `opener`.
fn build_client(
    settings: &ProviderSettings,
    opener: &Opener,
) -> Result<reqwest::Client, ClientError> {
    // A plain-HTTP endpoint (a local model server) never verifies a certificate, so its client
    // does not read the system's root certificates.
    let builder = if uses_tls(&settings.base_url) {
        crate::tls::client_builder()
    } else {
        crate::tls::plain_http_client_builder()
    };
    let builder = builder
        .connect_timeout(Duration::from_secs(30))
        .read_timeout(settings.idle_timeout)
        .connector_layer(opener.layer());
    builder.build().map_err(|source| ClientError {
        provider: settings.name.clone(),
        reason: error_chain(&source),
    })
}

/// Whether requests to `base_url` go over TLS, so the client needs the system's root
/// certificates. Anything but an explicit `http://` URL counts as TLS (the safe side).
fn uses_tls(base_url: &str) -> bool {
    let scheme = base_url.trim_start().split_once("://").map(|(scheme, _)| scheme);
    !scheme.is_some_and(|scheme| scheme.eq_ignore_ascii_case("http"))
}

type Sender = mpsc::Sender<AssistantMessageEvent>;

impl Inner {
    /// The HTTP client, made on the first call; later calls wait for a call making it.
    fn client(&self) -> Result<&reqwest::Client, &ClientError> {
        self.client.get_or_init(|| build_client(&self.settings, &self.opener)).as_ref()
    }

    async fn run(&self, request: ProviderRequest, mut tx: Sender) {
        let cancel = request.options.cancel.clone();
        let model = request.model.clone();
        let url = endpoint(model.api, &self.settings.base_url);
        let compat = self.compat(&model);
        let encoded = encode_body(&request, &compat);
        // The history is let go as soon as it is on the wire's bytes, so the harness can
        // append to it without copying it.
        drop(request.context);
        let body = match encoded {
            Ok(body) => Bytes::from(body),
            Err(error) => {
                let message = MessageBuilder::new(&model, now_ms())
                    .fail(StopReason::Error, format!("cannot encode the request: {error}"));
                let kind = ProviderErrorKind::Protocol;
                let _ = tx.send(AssistantMessageEvent::Error { message, kind }).await;
                return;
            }
        };
        if tx.send(AssistantMessageEvent::Start).await.is_err() {
            return;
        }
        let max_attempts = self.settings.retry.max_attempts();
        let mut attempt = 0;
        loop {
            attempt += 1;
            let mut builder = MessageBuilder::new(&model, now_ms());
            tracing::debug!(provider = %self.settings.name, model = %model.id, %url, attempt,
                "sending request");
            let outcome = tokio::select! {
                biased;
                () = cancel.cancelled() => Err(aborted()),
                result = self.attempt(&url, &body, &mut builder, &mut tx) => result,
            };
            let failure = match outcome {
                Ok(()) => {
                    let _ = tx.send(AssistantMessageEvent::Done(builder.finish())).await;
                    return;
                }
                Err(failure) => failure,
            };
            if failure.kind == ProviderErrorKind::Aborted {
                let message = builder.fail(StopReason::Aborted, failure.message);
                let _ = tx.send(AssistantMessageEvent::Error { message, kind: failure.kind }).await;
                return;
            }
            let delay = (failure.retryable && !builder.has_streamed() && attempt < max_attempts)
                .then(|| self.settings.retry.delay(attempt, failure.retry_after))
                .flatten();
            let Some(delay) = delay else {
                tracing::warn!(provider = %self.settings.name, model = %model.id, attempt,
                    error = %failure.message, "request failed");
                let message = builder.fail(StopReason::Error, failure.message);
                let _ = tx.send(AssistantMessageEvent::Error { message, kind: failure.kind }).await;
                return;
            };
            tracing::info!(provider = %self.settings.name, model = %model.id, attempt,
                delay_ms = delay.as_millis() as u64, error = %failure.message, "retrying");
            let retry = AssistantMessageEvent::Retry {
                attempt,
                max_attempts,
                delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                error: failure.message,
            };
            if tx.send(retry).await.is_err() {
                return;
            }
            tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    let message = builder.fail(StopReason::Aborted, aborted().message);
                    let kind = ProviderErrorKind::Aborted;
                    let _ = tx.send(AssistantMessageEvent::Error { message, kind }).await;
                    return;
                }
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// One attempt; the key is read here, at request time, and scrubbed from any error text.
    async fn attempt(
        &self,
        url: &str,
        body: &Bytes,
        builder: &mut MessageBuilder,
        tx: &mut Sender,
    ) -> Result<(), Failure> {
        let key = self.api_key()?;
        let result = self.exchange(url, body, key.as_deref(), builder, tx).await;
        result.map_err(|mut failure| {
            if let Some(key) = key.as_deref().filter(|k| k.len() >= 4) {
                failure.message = failure.message.replace(key, "[redacted]");
            }
            failure
        })
    }

    async fn exchange(
        &self,
        url: &str,
        body: &Bytes,
        key: Option<&str>,
        builder: &mut MessageBuilder,
        tx: &mut Sender,
    ) -> Result<(), Failure> {
        let api = builder.api();
        let client = self
            .client()
            .map_err(|error| Failure::fatal(ProviderErrorKind::Network, error.to_string()))?;
        self.opener.before_request().await;
        let mut request = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body.clone());
        for (name, value) in auth_headers(api, key) {
            request = request.header(name, value);
        }
        for (name, value) in &self.settings.headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request.send().await.map_err(|e| Failure::from_transport(&e))?;
        let status = response.status();
        if !status.is_success() {
            let headers = response.headers().clone();
            let text = response.text().await.unwrap_or_default();
            let mut failure = Failure::from_http(&self.settings.name, status, &headers, &text);
            if matches!(status.as_u16(), 400 | 422)
                && let Some(hint) =
                    compat::rejected_parameter_hint(&self.settings.name, builder.model_id(), &text)
            {
                // Sending the same parameter again cannot help: say which setting drops it.
                failure.message = format!("{}; {hint}", failure.message);
                failure.retryable = false;
            }
            return Err(failure);
        }
        let mut decoder = Decoder::new(api);
        if is_json(response.headers()) {
            // The server ignored `stream: true`: its one body is the whole reply.
            let text = response.text().await.map_err(|e| Failure::from_transport(&e))?;
            for (name, data) in whole_reply::events(api, &text)? {
                if feed(&mut decoder, &name, &data, builder, tx).await? {
                    return Ok(());
                }
            }
            return Err(unterminated());
        }
        let mut events = std::pin::pin!(sse_events(response.bytes_stream()));
        while let Some(event) = events.next().await {
            let event = event.map_err(|error| {
                Failure::transient(
                    ProviderErrorKind::Network,
                    format!("the stream broke: {}", error_chain(&error)),
                )
            })?;
            if feed(&mut decoder, &event.event, &event.data, builder, tx).await? {
                return Ok(());
            }
        }
        Err(unterminated())
    }

    /// The catalog's compatibility settings for `model`, with the configuration's overrides.
    fn compat(&self, model: &rein_protocol::model::ModelInfo) -> Compat {
        let catalog = compat::for_model(model);
        match self.settings.compat.get(&model.id) {
            Some(overrides) => catalog.with(overrides),
            None => catalog,
        }
    }

    fn api_key(&self) -> Result<Option<String>, Failure> {
        let Some(variable) = &self.settings.api_key_env else {
            return Ok(None);
        };
        match (self.environment)(variable) {
            Some(key) if !key.trim().is_empty() => Ok(Some(key.trim().to_string())),
            _ => Err(Failure::fatal(
                ProviderErrorKind::Auth,
                format!(
                    "provider `{}` needs an API key: set the environment variable `{variable}`",
                    self.settings.name
                ),
            )),
        }
    }
}

/// True when a response's content type says JSON rather than an event stream.
fn is_json(headers: &reqwest::header::HeaderMap) -> bool {
    headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("application/json"))
}

/// Decodes one event of a reply into `builder` and sends the deltas it made; true once the
/// reply is complete (whether the events came as a stream or as one JSON body).
async fn feed(
    decoder: &mut Decoder,
    name: &str,
    data: &str,
    builder: &mut MessageBuilder,
    tx: &mut Sender,
) -> Result<bool, Failure> {
    let step = decoder.on_event(name, data, builder)?;
    if step == Step::Done {
        builder.finish_open_tool_calls();
    }
    for delta in builder.take_deltas() {
        tx.send(AssistantMessageEvent::Delta(delta)).await.map_err(|_| aborted())?;
    }
    Ok(step == Step::Done)
}

fn aborted() -> Failure {
    Failure::fatal(ProviderErrorKind::Aborted, "the request was cancelled")
}

/// An error with its causes, `outer: inner: innermost` (reqwest's own text omits them); a
/// cause whose text the chain already holds is not repeated.
pub(crate) fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::uses_tls;

    #[test]
    fn only_plain_http_urls_skip_the_root_certificates() {
        assert!(!uses_tls("http://127.0.0.1:11434/v1"));
        assert!(!uses_tls("HTTP://localhost/v1"));
        assert!(uses_tls("https://api.anthropic.com/v1"));
        // Unclear or missing schemes keep the certificates: never less verification.
        assert!(uses_tls("api.openai.com/v1"));
        assert!(uses_tls("httpx://example.com"));
    }
}
