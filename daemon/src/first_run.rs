//! Building the provider registry at start-up, with a local model server as the default when
//! nothing else is set up (no `model` in the configuration, no provider key in the environment
//! or the auth file). See [`rein_ai::local`] for which ports are asked.

use crate::keys::KeyStore;
use rein_ai::local::{self, Candidate};
use rein_ai::{ConfigError, ProvidersConfig, Registry};
use rein_protocol::method::LocalServer;
use std::sync::Arc;

/// The registry the daemon serves, and the local server it chose, if it had to.
pub async fn build_registry(
    config: &ProvidersConfig,
    keys: &Arc<KeyStore>,
) -> Result<(Registry, Option<LocalServer>), ConfigError> {
    let registry = Registry::with_environment(config.clone(), keys.environment())?;
    keys.learn(&registry);
    if let Some(model) = registry.effective_default_model() {
        tracing::debug!(%model, "default model");
        return Ok((registry, None));
    }
    let ports = std::env::var(local::PORTS_VARIABLE).ok();
    let candidates = match local::candidates(ports.as_deref()) {
        Ok(candidates) => candidates,
        Err(error) => {
            tracing::warn!(%error, "not looking for a local model server");
            Vec::new()
        }
    };
    let candidates: Vec<Candidate> = candidates
        .into_iter()
        .filter(|candidate| usable_name(config, candidate.provider))
        .collect();
    let Some(server) = local::detect(&candidates, local::PROBE_TIMEOUT).await else {
        tracing::info!("no model configured, no provider key and no local model server found");
        return Ok((registry, None));
    };
    tracing::info!(
        server = %server.server,
        base_url = %server.base_url,
        model = %server.model,
        "no model configured and no provider key: using a local model server"
    );
    let registry = with_local_server(config, keys, &server)?;
    Ok((registry, Some(server)))
}

/// The registry for `config` when `server` was chosen at start-up: while the configuration
/// names no model and no provider has a key, the local server stays the default (also after
/// a configuration reload).
pub fn with_local_server(
    config: &ProvidersConfig,
    keys: &Arc<KeyStore>,
    server: &LocalServer,
) -> Result<Registry, ConfigError> {
    let plain = Registry::with_environment(config.clone(), keys.environment())?;
    keys.learn(&plain);
    if plain.effective_default_model().is_some() || !usable_name(config, server.provider.as_str()) {
        return Ok(plain);
    }
    let mut with_local = config.clone();
    with_local.providers.insert(server.provider.clone(), local::provider_config(server));
    let registry = Registry::with_environment(with_local, keys.environment())?
        .with_local_default(server.model.clone());
    keys.learn(&registry);
    Ok(registry)
}

/// A provider table the user wrote under the same name is theirs: that candidate is skipped
/// rather than redirected.
fn usable_name(config: &ProvidersConfig, provider: &str) -> bool {
    let taken = config.providers.contains_key(provider);
    if taken {
        tracing::debug!(provider, "configured by the user; not probed");
    }
    !taken
}
