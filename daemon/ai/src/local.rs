//! Local model servers: found by asking the usual loopback ports for their models, and the
//! models request itself (`GET {base_url}/models`) used to list and check any provider.
//!
//! Detection only ever connects to `127.0.0.1`. The ports tried, in order, are Ollama (11434),
//! llama.cpp's server (8080), LM Studio (1234) and vLLM (8000); every port is asked at once
//! with a short timeout, and the first in that order that lists at least one model wins.
//! [`PORTS_VARIABLE`] replaces the list (tests point it at the scripted fake provider).

use crate::config::ProviderConfig;
use crate::http::error_chain;
use crate::wire::auth_headers;
use rein_protocol::method::LocalServer;
use rein_protocol::model::Api;
use serde::Deserialize;
use std::time::Duration;

/// A test and advanced knob: a comma-separated list of loopback ports to probe instead of the
/// usual ones (empty: probe none).
pub const PORTS_VARIABLE: &str = "REIN_LOCAL_PROBE_PORTS";

/// How long one port may take to list its models during detection.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(800);

/// One port to try and what a server there is usually.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Candidate {
    /// The loopback port.
    pub port: u16,
    /// What a server on this port usually is.
    pub server: &'static str,
    /// The provider name it is reached under.
    pub provider: &'static str,
}

/// The usual local servers, in the order they are preferred.
pub const KNOWN_SERVERS: [Candidate; 4] = [
    Candidate { port: 11434, server: "Ollama", provider: "ollama" },
    Candidate { port: 8080, server: "llama.cpp", provider: "llamacpp" },
    Candidate { port: 1234, server: "LM Studio", provider: "lmstudio" },
    Candidate { port: 8000, server: "vLLM", provider: "vllm" },
];

/// `REIN_LOCAL_PROBE_PORTS` is not a list of ports.
#[derive(Debug, thiserror::Error)]
#[error("{PORTS_VARIABLE} must be comma-separated port numbers, not `{0}`")]
pub struct PortsError(String);

/// The candidates to probe: [`KNOWN_SERVERS`], or the ports `value` (the variable's content)
/// lists. A listed port that is a usual one keeps its name; any other is a `local` provider.
pub fn candidates(value: Option<&str>) -> Result<Vec<Candidate>, PortsError> {
    let Some(value) = value else { return Ok(KNOWN_SERVERS.to_vec()) };
    value
        .split(',')
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .map(|part| {
            let port: u16 = part.parse().map_err(|_| PortsError(value.to_string()))?;
            Ok(KNOWN_SERVERS.iter().copied().find(|known| known.port == port).unwrap_or(
                Candidate { port, server: "an OpenAI-compatible server", provider: "local" },
            ))
        })
        .collect()
}

/// The base URL of a loopback port.
pub fn base_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/v1")
}

/// Asks every candidate at once and returns the first, in candidate order, that lists a model.
pub async fn detect(candidates: &[Candidate], timeout: Duration) -> Option<LocalServer> {
    let client =
        crate::tls::plain_http_client_builder().timeout(timeout).no_proxy().build().ok()?;
    let probes = candidates.iter().map(|candidate| {
        let client = client.clone();
        async move {
            let url = base_url(candidate.port);
            match list_models(&client, &url, Api::OpenAiChat, None, &[]).await {
                Ok(models) if !models.is_empty() => Some((*candidate, url, models)),
                Ok(_) => {
                    tracing::info!(port = candidate.port, "local server lists no model");
                    None
                }
                Err(error) => {
                    tracing::debug!(port = candidate.port, %error, "no local server");
                    None
                }
            }
        }
    });
    let answers = futures::future::join_all(probes).await;
    let (candidate, url, models) = answers.into_iter().flatten().next()?;
    Some(LocalServer {
        server: candidate.server.to_string(),
        provider: candidate.provider.to_string(),
        base_url: url,
        model: format!("{}/{}", candidate.provider, models[0]),
        models,
    })
}

/// The provider table that reaches a detected server: Chat Completions, no key.
pub fn provider_config(server: &LocalServer) -> ProviderConfig {
    ProviderConfig {
        api: Some(Api::OpenAiChat),
        base_url: Some(server.base_url.clone()),
        api_key_env: Some(String::new()),
        ..ProviderConfig::default()
    }
}

/// Whether `base_url` points at this machine (`127.0.0.1`, `localhost`, `[::1]`).
pub fn is_loopback(base_url: &str) -> bool {
    let Ok(url) = reqwest::Url::parse(base_url) else { return false };
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Why a models request failed. Never carries the key.
#[derive(Debug, thiserror::Error)]
pub enum ListError {
    /// No HTTP answer: refused, DNS, TLS or timed out.
    #[error("no answer from {url}: {reason}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// An HTTP error status.
    #[error("{url} answered HTTP {status}: {message}")]
    Status {
        /// The URL asked.
        url: String,
        /// The status code.
        status: u16,
        /// The start of the body.
        message: String,
    },
    /// A 2xx answer that is not a model list.
    #[error("{url} did not answer with a model list: {reason}")]
    Invalid {
        /// The URL asked.
        url: String,
        /// What was wrong.
        reason: String,
    },
}

#[derive(Deserialize)]
struct ModelList {
    data: Vec<ListedModel>,
}

#[derive(Deserialize)]
struct ListedModel {
    id: String,
}

/// `GET {base_url}/models` with the API's auth headers: the ids listed (OpenAI and Anthropic
/// both answer `{"data": [{"id": ...}, ...]}`).
pub async fn list_models(
    client: &reqwest::Client,
    base_url: &str,
    api: Api,
    key: Option<&str>,
    headers: &[(String, String)],
) -> Result<Vec<String>, ListError> {
    let url = format!("{}/models", base_url.trim_end_matches('/'));
    let mut request = client.get(&url);
    for (name, value) in auth_headers(api, key) {
        request = request.header(name, value);
    }
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let redact = |text: String| match key {
        Some(key) if !key.is_empty() => text.replace(key, "[redacted]"),
        _ => text,
    };
    let unreachable = |error: reqwest::Error| ListError::Unreachable {
        url: url.clone(),
        reason: redact(error_chain(&error.without_url())),
    };
    let response = request.send().await.map_err(unreachable)?;
    let status = response.status();
    let body = response.text().await.map_err(unreachable)?;
    if !status.is_success() {
        let message: String = redact(body).chars().take(200).collect();
        return Err(ListError::Status { url, status: status.as_u16(), message });
    }
    let list: ModelList = serde_json::from_str(&body)
        .map_err(|error| ListError::Invalid { url: url.clone(), reason: error.to_string() })?;
    Ok(list.data.into_iter().map(|model| model.id).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_list_can_be_replaced() {
        assert_eq!(candidates(None).unwrap(), KNOWN_SERVERS.to_vec());
        assert!(candidates(Some("")).unwrap().is_empty());
        let listed = candidates(Some("4242, 1234")).unwrap();
        assert_eq!(
            listed[0],
            Candidate { port: 4242, server: "an OpenAI-compatible server", provider: "local" }
        );
        assert_eq!(listed[1].provider, "lmstudio");
        assert!(candidates(Some("80,x")).is_err());
        assert!(candidates(Some("70000")).is_err());
    }

    #[test]
    fn only_this_machine_counts_as_local() {
        assert!(is_loopback("http://127.0.0.1:8080/v1"));
        assert!(is_loopback("http://localhost:11434/v1"));
        assert!(is_loopback("http://[::1]:8000/v1"));
        assert!(!is_loopback("https://api.openai.com/v1"));
        assert!(!is_loopback("http://10.0.0.2:8080/v1"));
        assert!(!is_loopback("not a url"));
    }

    #[test]
    fn a_detected_server_is_the_default_only_until_a_key_is_there() {
        use crate::registry::{Environment, Registry};
        use std::sync::{Arc, Mutex};
        let server = LocalServer {
            server: "Ollama".into(),
            provider: "ollama".into(),
            base_url: base_url(11434),
            model: "ollama/qwen3".into(),
            models: vec!["qwen3".into()],
        };
        let mut config = crate::ProvidersConfig::default();
        config.providers.insert(server.provider.clone(), provider_config(&server));
        let key: Arc<Mutex<Option<String>>> = Arc::default();
        let seen = Arc::clone(&key);
        let environment: Environment = Arc::new(move |name| {
            (name == "ANTHROPIC_API_KEY").then(|| seen.lock().ok()?.clone()).flatten()
        });
        let registry = Registry::with_environment(config, environment)
            .unwrap()
            .with_local_default(server.model.clone());
        assert_eq!(registry.effective_default_model().as_deref(), Some("ollama/qwen3"));
        let resolved = registry.resolve(None).unwrap();
        assert_eq!(
            (resolved.info.provider.as_str(), resolved.info.api),
            ("ollama", Api::OpenAiChat)
        );
        *key.lock().unwrap() = Some("k".into());
        assert_eq!(
            registry.effective_default_model().as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
    }

    #[tokio::test]
    async fn a_closed_port_is_unreachable_and_detection_finds_nothing() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let client = crate::tls::client_builder().build().unwrap();
        let error =
            list_models(&client, &base_url(port), Api::OpenAiChat, None, &[]).await.unwrap_err();
        assert!(matches!(error, ListError::Unreachable { .. }), "{error}");
        assert!(error.to_string().contains("refused"), "{error}");
        let candidate =
            Candidate { port, server: "an OpenAI-compatible server", provider: "local" };
        assert_eq!(detect(&[candidate], PROBE_TIMEOUT).await, None);
    }
}
