//! `models/list` and `providers/check`: what the providers offer and whether they answer.

use crate::rpc_error::RpcError;
use crate::server::dispatch::ConnectionContext;
use rein_ai::local::{self, ListError};
use rein_protocol::method::{
    CheckVerdict, Empty, KeySource, ModelsResult, ProviderCheck, ProviderStatus,
    ProvidersCheckParams, ProvidersCheckResult,
};
use rein_protocol::model::ModelRef;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// How long a local server may take to list its models for `models/list`.
const LOCAL_LIST_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a provider may take to answer the models request of `providers/check`.
const CHECK_TIMEOUT: Duration = Duration::from_secs(15);

/// `models/list`: the catalog's and the configuration's models, plus every model a provider
/// on this machine (a detected server, Ollama, a configured loopback URL) lists right now.
pub(super) async fn models(
    _: Empty,
    connection: Arc<ConnectionContext>,
) -> Result<ModelsResult, RpcError> {
    let daemon = &connection.daemon;
    let env = daemon.hub.env();
    let registry = &env.registry;
    let mut models = registry.models();
    let mut seen: BTreeSet<String> =
        models.iter().map(|model| model.reference().to_string()).collect();
    let client = http_client(LOCAL_LIST_TIMEOUT)?;
    let local_providers: Vec<&str> = registry
        .provider_names()
        .into_iter()
        .filter(|name| {
            registry.provider_settings(name).is_some_and(|(_, s)| local::is_loopback(&s.base_url))
        })
        .collect();
    let lists = futures::future::join_all(local_providers.iter().map(|name| {
        let client = client.clone();
        async move {
            let (api, settings) = registry.provider_settings(name)?;
            let key = settings.api_key_env.as_deref().and_then(|v| registry.read_variable(v));
            let listed =
                local::list_models(&client, &settings.base_url, api, key.as_deref(), &[]).await;
            Some((*name, listed.ok()?))
        }
    }))
    .await;
    for (provider, ids) in lists.into_iter().flatten() {
        for id in ids {
            let reference = format!("{provider}/{id}");
            if seen.insert(reference.clone())
                && let Ok(info) = registry.model_info(&reference)
            {
                models.push(info);
            }
        }
    }
    Ok(ModelsResult { default_model: registry.effective_default_model(), models })
}

/// `providers/check`: every provider, where its key comes from, and (with `probe`) whether the
/// ones in use answer a models request and accept their key.
pub(super) async fn check(
    params: ProvidersCheckParams,
    connection: Arc<ConnectionContext>,
) -> Result<ProvidersCheckResult, RpcError> {
    let daemon = &connection.daemon;
    // The registry in force: a configuration reload replaces the one the daemon started with.
    let env = daemon.hub.env();
    let registry = &env.registry;
    let default_model = registry.effective_default_model();
    let default_provider =
        default_model.as_deref().and_then(ModelRef::parse).map(|reference| reference.provider);
    let client = http_client(CHECK_TIMEOUT)?;
    let statuses = registry.provider_names().into_iter().filter_map(|name| {
        let (api, settings) = registry.provider_settings(name)?;
        let key = daemon.keys.source(name, settings.api_key_env.as_deref());
        let in_use = default_provider.as_deref() == Some(name)
            || daemon.config.providers.contains_key(name)
            || daemon.local_server.as_ref().is_some_and(|server| server.provider == name)
            || matches!(key, KeySource::Environment { .. } | KeySource::AuthFile { .. });
        let client = client.clone();
        Some(async move {
            let check = if params.probe && in_use {
                Some(match &key {
                    KeySource::Missing { variable } => ProviderCheck {
                        verdict: CheckVerdict::Skipped,
                        status: None,
                        message: format!("not asked: no API key (`{variable}` is not set)"),
                        models: 0,
                    },
                    _ => {
                        let value =
                            settings.api_key_env.as_deref().and_then(|v| registry.read_variable(v));
                        let headers = settings.headers.clone();
                        let listed = local::list_models(
                            &client,
                            &settings.base_url,
                            api,
                            value.as_deref(),
                            &headers,
                        )
                        .await;
                        verdict(listed)
                    }
                })
            } else {
                None
            };
            ProviderStatus {
                name: name.to_string(),
                api,
                base_url: settings.base_url.clone(),
                key,
                in_use,
                check,
            }
        })
    });
    let providers = futures::future::join_all(statuses).await;
    Ok(ProvidersCheckResult { default_model, providers })
}

/// The verdict of one models request.
fn verdict(listed: Result<Vec<String>, ListError>) -> ProviderCheck {
    match listed {
        Ok(models) => ProviderCheck {
            verdict: CheckVerdict::Ok,
            status: Some(200),
            message: format!("listed {} models", models.len()),
            models: models.len() as u64,
        },
        Err(error @ ListError::Unreachable { .. }) => ProviderCheck {
            verdict: CheckVerdict::Unreachable,
            status: None,
            message: error.to_string(),
            models: 0,
        },
        Err(ListError::Status { status, ref url, ref message }) => ProviderCheck {
            verdict: if matches!(status, 401 | 403) {
                CheckVerdict::KeyRejected
            } else {
                CheckVerdict::Error
            },
            status: Some(status),
            message: format!("{url} answered HTTP {status}: {message}"),
            models: 0,
        },
        Err(error @ ListError::Invalid { .. }) => ProviderCheck {
            verdict: CheckVerdict::Error,
            status: Some(200),
            message: error.to_string(),
            models: 0,
        },
    }
}

fn http_client(timeout: Duration) -> Result<reqwest::Client, RpcError> {
    rein_ai::tls::client_builder().timeout(timeout).build().map_err(|error| {
        RpcError::new(
            rein_protocol::error::ErrorKind::Internal,
            format!("cannot build an HTTP client: {error}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejected_keys_and_silence_get_their_own_verdicts() {
        let rejected = verdict(Err(ListError::Status {
            url: "u".into(),
            status: 401,
            message: "invalid x-api-key".into(),
        }));
        assert_eq!(rejected.verdict, CheckVerdict::KeyRejected);
        let failing =
            verdict(Err(ListError::Status { url: "u".into(), status: 500, message: "".into() }));
        assert_eq!(failing.verdict, CheckVerdict::Error);
        let silent =
            verdict(Err(ListError::Unreachable { url: "u".into(), reason: "refused".into() }));
        assert_eq!(silent.verdict, CheckVerdict::Unreachable);
        let ok = verdict(Ok(vec!["a".into(), "b".into()]));
        assert_eq!((ok.verdict, ok.models), (CheckVerdict::Ok, 2));
    }
}
