//! `rein login [PROVIDER]` and `rein logout [PROVIDER]`: API keys stored once in
//! `REIN_HOME/auth.toml` (mode 0600), which the daemon reads at each request, so a running
//! daemon uses a new key without a restart. A key in the provider's environment variable still
//! wins; both commands say so when it is the case.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use rein_protocol::auth::{AuthFile, auth_path};
use rein_protocol::method::{KeySource, ProvidersCheckParams, ProvidersCheckResult};
use rein_protocol::paths;
use rein_protocol::requests as rq;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;

/// Providers offered when `rein login` is run without one on a terminal.
const SUGGESTED: &str = "anthropic, openai, openrouter, groq, deepseek";

/// Reads a key (terminal without echo, or stdin) and stores it for `provider`.
pub async fn login(socket: &Path, provider: Option<String>) -> Result<u8, ClientError> {
    let on_terminal = std::io::stdin().is_terminal();
    let provider = match provider {
        Some(provider) => provider,
        None if on_terminal => ask_line(&format!("provider ({SUGGESTED}, or a configured one): "))?,
        None => {
            eprintln!("rein: name the provider: rein login PROVIDER (the key is read from stdin)");
            return Ok(exit::USAGE);
        }
    };
    let provider = provider.trim().to_string();
    if !valid_provider_name(&provider) {
        eprintln!("rein: `{provider}` is not a provider name (letters, digits, - _ .)");
        return Ok(exit::USAGE);
    }
    let key = if on_terminal {
        let prompt = format!("API key for {provider} (input is not shown): ");
        rpassword::prompt_password(prompt)?
    } else {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text)?;
        text
    };
    let key = key.trim();
    if key.is_empty() {
        eprintln!("rein: no key given; nothing stored");
        return Ok(exit::USAGE);
    }
    if key.chars().any(|c| c.is_whitespace() || c.is_control()) {
        eprintln!("rein: a key is one word without spaces; nothing stored");
        return Ok(exit::USAGE);
    }
    let path = auth_path(&rein_home()?);
    let mut file = match AuthFile::load(&path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("rein: {error}");
            return Ok(exit::FAILURE);
        }
    };
    file.set(&provider, key);
    if let Err(error) = file.save(&path) {
        eprintln!("rein: {error}");
        return Ok(exit::FAILURE);
    }
    println!("stored the key for {provider} in {} (readable by you only)", path.display());
    report_precedence(socket, &provider, true).await;
    Ok(exit::OK)
}

/// Forgets `provider`'s stored key, or every stored key when `None`.
pub async fn logout(socket: &Path, provider: Option<String>) -> Result<u8, ClientError> {
    let path = auth_path(&rein_home()?);
    let mut file = match AuthFile::load(&path) {
        Ok(file) => file,
        // A broken file is what `logout` (of everything) clears.
        Err(_) if provider.is_none() => AuthFile::default(),
        Err(error) => {
            eprintln!("rein: {error}");
            return Ok(exit::FAILURE);
        }
    };
    let removed: Vec<String> = match &provider {
        Some(name) => {
            if !file.remove(name) {
                println!("no key stored for {name}");
                report_precedence(socket, name, false).await;
                return Ok(exit::OK);
            }
            vec![name.clone()]
        }
        None => {
            let all: Vec<String> = file.providers().into_iter().map(str::to_string).collect();
            for name in &all {
                file.remove(name);
            }
            all
        }
    };
    if let Err(error) = file.save(&path) {
        eprintln!("rein: {error}");
        return Ok(exit::FAILURE);
    }
    if removed.is_empty() {
        println!("no keys were stored");
    }
    for name in &removed {
        println!("removed the stored key for {name}");
        report_precedence(socket, name, false).await;
    }
    Ok(exit::OK)
}

/// Says where the daemon now gets `provider`'s key from (or that it does not know it).
async fn report_precedence(socket: &Path, provider: &str, stored: bool) {
    let status = match provider_status(socket).await {
        Ok(status) => status,
        Err(error) => {
            eprintln!("note: could not ask the daemon how it sees this key: {error}");
            return;
        }
    };
    let Some(found) = status.providers.iter().find(|p| p.name == provider) else {
        eprintln!(
            "note: the daemon knows no provider named `{provider}`; the built-in ones are {SUGGESTED}, others need a [providers.{provider}] table in config.toml"
        );
        return;
    };
    match &found.key {
        KeySource::Environment { variable } => eprintln!(
            "note: the daemon has {variable} set in its environment; that key wins over the stored one"
        ),
        KeySource::AuthFile { .. } if stored => {
            eprintln!("the daemon uses it from the next request on (no restart needed)")
        }
        KeySource::NotNeeded => eprintln!(
            "note: provider `{provider}` is configured to send no key (`api_key_env = \"\"`)"
        ),
        KeySource::Missing { variable } if !stored => {
            eprintln!("{provider} has no key now (set {variable} or run rein login {provider})")
        }
        _ => {}
    }
}

async fn provider_status(socket: &Path) -> Result<ProvidersCheckResult, ClientError> {
    let mut client = Client::connect_or_start(socket).await?;
    client.request::<rq::ProvidersCheck>(ProvidersCheckParams { probe: false }).await
}

/// `REIN_HOME`, as a client error when it cannot be found.
pub(crate) fn rein_home() -> Result<std::path::PathBuf, ClientError> {
    paths::rein_home().map_err(|error| ClientError::Io(std::io::Error::other(error)))
}

fn valid_provider_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

fn ask_line(prompt: &str) -> std::io::Result<String> {
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_names_are_plain_words() {
        assert!(valid_provider_name("anthropic"));
        assert!(valid_provider_name("my-server_2.local"));
        assert!(!valid_provider_name(""));
        assert!(!valid_provider_name("a b"));
        assert!(!valid_provider_name("x]\n[y"));
    }
}
