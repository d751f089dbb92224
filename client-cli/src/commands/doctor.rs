//! `rein doctor`: checks everything a prompt needs, each with a verdict and, when something is
//! wrong, the fix. Exits 0 only when nothing fails (warnings do not count).
//!
//! In order: the configuration file parses (`reind --check-config`), the daemon runs (started
//! when needed) and has the client's version, a default model exists, each provider in use
//! answers a models request and accepts its key, `REIN_HOME`, the socket and `auth.toml` are
//! private, there is free disk space, and the optional programs are found.

use crate::client::{Client, ClientError};
use crate::commands::exit;
use crate::launcher;
use rein_protocol::auth::auth_path;
use rein_protocol::method::{
    CheckVerdict, Empty, KeySource, ProviderStatus, ProvidersCheckParams, ProvidersCheckResult,
};
use rein_protocol::requests as rq;
use serde::Serialize;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The client's version, which the daemon's must match.
const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Free space below which sessions and logs cannot be trusted to be written.
const DISK_FAIL_BYTES: u64 = 100 * 1024 * 1024;
/// Free space below which a warning is given.
const DISK_WARN_BYTES: u64 = 1024 * 1024 * 1024;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// In order.
    Ok,
    /// Works, but worth a look.
    Warn,
    /// A prompt cannot work (or would not be safe) until this is fixed.
    Fail,
}

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: String,
    /// The verdict.
    pub verdict: Verdict,
    /// What was found.
    pub detail: String,
    /// What to do about it, when it is not in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

impl Check {
    fn ok(name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self { name: name.into(), verdict: Verdict::Ok, detail: detail.into(), fix: None }
    }

    fn warn(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        let (name, detail, fix) = (name.into(), detail.into(), Some(fix.into()));
        Self { name, verdict: Verdict::Warn, detail, fix }
    }

    fn fail(name: impl Into<String>, detail: impl Into<String>, fix: impl Into<String>) -> Self {
        let (name, detail, fix) = (name.into(), detail.into(), Some(fix.into()));
        Self { name, verdict: Verdict::Fail, detail, fix }
    }
}

/// Runs every check, prints the report, and returns 0 when none failed.
pub async fn run(socket: &Path, as_json: bool) -> Result<u8, ClientError> {
    let home = super::login::rein_home()?;
    let checks = checks(socket, &home).await;
    if as_json {
        let ok = !checks.iter().any(|check| check.verdict == Verdict::Fail);
        println!("{}", serde_json::json!({"ok": ok, "checks": checks}));
    } else {
        print!("{}", format_report(&checks));
    }
    Ok(if checks.iter().any(|check| check.verdict == Verdict::Fail) {
        exit::FAILURE
    } else {
        exit::OK
    })
}

async fn checks(socket: &Path, home: &Path) -> Vec<Check> {
    let mut checks = Vec::new();
    let config_ok = check_config(&mut checks);
    if config_ok {
        if let Some(mut client) = check_daemon(socket, &mut checks).await {
            check_providers(&mut client, &mut checks).await;
        }
    } else {
        checks.push(Check::fail(
            "daemon",
            "not started: the configuration must be fixed first",
            "fix config.toml as shown above; then `rein daemon stop` so the next command starts the daemon with it",
        ));
    }
    check_permissions(home, socket, &mut checks);
    checks.push(check_disk(home));
    for (program, purpose) in [
        ("bwrap", "bubblewrap, to sandbox tool processes"),
        ("git", "for the agent to read and record project history"),
        ("tmux", "to keep an interactive session open in the background"),
    ] {
        checks.push(match find_program(program) {
            Some(path) => Check::ok(program, path.display().to_string()),
            None => Check::warn(
                program,
                format!("not found on PATH (optional: {purpose})"),
                format!("install {program} with your package manager if you want it"),
            ),
        });
    }
    checks
}

/// `reind --check-config`: the same parse a start does.
fn check_config(checks: &mut Vec<Check>) -> bool {
    let binary = launcher::daemon_binary();
    let output = match std::process::Command::new(&binary).arg("--check-config").output() {
        Ok(output) => output,
        Err(error) => {
            checks.push(Check::fail(
                "config",
                format!("cannot run {} to check it: {error}", binary.display()),
                "install reind next to rein (or on PATH), or point REIN_DAEMON_BIN at it",
            ));
            return false;
        }
    };
    let stdout = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    if output.status.success() {
        checks.push(Check::ok("config", stdout));
        true
    } else {
        let detail = stderr.trim_start_matches("reind: ").to_string();
        checks.push(Check::fail(
            "config",
            detail,
            "correct the setting named above (docs/config.md lists every key), then run rein doctor again",
        ));
        false
    }
}

/// Connects (starting the daemon when needed) and compares versions.
async fn check_daemon(socket: &Path, checks: &mut Vec<Check>) -> Option<Client> {
    let was_running = Client::connect(socket).await.is_ok();
    let mut client = match Client::connect_or_start(socket).await {
        Ok(client) => client,
        Err(error) => {
            checks.push(Check::fail(
                "daemon",
                format!("does not start: {error}"),
                "see $REIN_HOME/logs/reind.log, or run `reind --foreground` to watch it start",
            ));
            return None;
        }
    };
    let answered = match client.initialize(false).await {
        Ok(started) => client.request::<rq::DaemonInfo>(Empty {}).await.map(|info| (started, info)),
        Err(error) => Err(error),
    };
    match answered {
        Ok((started, info)) if started.daemon_version == CLIENT_VERSION => {
            let how = if was_running { "running" } else { "started" };
            checks.push(Check::ok(
                "daemon",
                format!("{how}: reind {} (pid {}) on {}", info.version, info.pid, info.socket_path),
            ));
            if let Some(local) = &info.local_server {
                checks.push(Check::ok(
                    "local server",
                    format!(
                        "{} at {} is the default (model {}), as nothing else is set up",
                        local.server, local.base_url, local.model
                    ),
                ));
            }
            Some(client)
        }
        Ok((started, _)) => {
            checks.push(Check::fail(
                "daemon",
                format!(
                    "reind {} is running but this rein is {CLIENT_VERSION}",
                    started.daemon_version
                ),
                "rein daemon stop (the next command starts the reind installed with this rein)",
            ));
            None
        }
        Err(error) => {
            checks.push(Check::fail(
                "daemon",
                format!("does not answer properly: {error}"),
                "rein daemon stop, then run rein doctor again",
            ));
            None
        }
    }
}

/// Asks the daemon to try every provider in use.
async fn check_providers(client: &mut Client, checks: &mut Vec<Check>) {
    let result: ProvidersCheckResult =
        match client.request::<rq::ProvidersCheck>(ProvidersCheckParams { probe: true }).await {
            Ok(result) => result,
            Err(error) => {
                checks.push(Check::fail(
                    "providers",
                    format!("the daemon could not check them: {error}"),
                    "rein daemon stop (an older daemon may not know providers/check), then retry",
                ));
                return;
            }
        };
    checks.extend(provider_checks(&result));
}

/// The verdicts for the default model and each provider in use.
pub fn provider_checks(result: &ProvidersCheckResult) -> Vec<Check> {
    let mut checks = Vec::new();
    let default_provider = result
        .default_model
        .as_deref()
        .and_then(rein_protocol::model::ModelRef::parse)
        .map(|reference| reference.provider);
    match &result.default_model {
        Some(model) => checks.push(Check::ok("model", format!("default {model}"))),
        None => checks.push(Check::fail(
            "model",
            "no model: no `model` in config.toml, no provider API key, and no local model server found",
            "rein login anthropic (or export ANTHROPIC_API_KEY / OPENAI_API_KEY / OPENROUTER_API_KEY), or start a local server (Ollama, llama.cpp, LM Studio, vLLM) and run rein daemon stop, or set model = \"provider/model\" in config.toml",
        )),
    }
    for provider in result.providers.iter().filter(|provider| provider.in_use) {
        let needed = default_provider.as_deref() == Some(provider.name.as_str());
        checks.push(provider_check(provider, needed));
    }
    checks
}

fn provider_check(provider: &ProviderStatus, needed: bool) -> Check {
    let name = format!("provider {}", provider.name);
    let key_note = match &provider.key {
        KeySource::Environment { variable } => format!("key from ${variable}"),
        KeySource::AuthFile { .. } => "key from auth.toml".to_string(),
        KeySource::NotNeeded => "no key needed".to_string(),
        KeySource::Missing { variable } => format!("no key (${variable} unset)"),
        KeySource::Unknown => "key source unknown".to_string(),
    };
    let problem = |detail: String, fix: String| {
        if needed { Check::fail(&name, detail, fix) } else { Check::warn(&name, detail, fix) }
    };
    if let KeySource::Missing { variable } = &provider.key {
        return problem(
            format!("{key_note}: requests to {} would be refused", provider.base_url),
            format!("rein login {} (or export {variable} before the daemon starts)", provider.name),
        );
    }
    let Some(check) = &provider.check else {
        return Check::ok(&name, format!("{}, {key_note} (not asked)", provider.base_url));
    };
    match check.verdict {
        CheckVerdict::Ok => Check::ok(
            &name,
            format!("{} answers, {key_note}, {} models listed", provider.base_url, check.models),
        ),
        CheckVerdict::Unreachable => problem(
            format!("unreachable: {}", check.message),
            format!(
                "start the server at {} or correct base_url in [providers.{}] of config.toml",
                provider.base_url, provider.name
            ),
        ),
        CheckVerdict::KeyRejected => {
            let fix = match &provider.key {
                KeySource::Environment { variable } => format!(
                    "the key in ${variable} was refused: correct it in the daemon's environment, then rein daemon stop"
                ),
                _ => format!(
                    "the stored key was refused: rein login {} with a valid key",
                    provider.name
                ),
            };
            problem(format!("key rejected: {}", check.message), fix)
        }
        CheckVerdict::Skipped | CheckVerdict::Error | CheckVerdict::Unknown => Check::warn(
            &name,
            format!("answers, but not with a model list: {}", check.message),
            format!("check that base_url {} is the API's versioned root", provider.base_url),
        ),
    }
}

/// `REIN_HOME`, the socket and `auth.toml` must be yours and closed to others.
fn check_permissions(home: &Path, socket: &Path, checks: &mut Vec<Check>) {
    let me = nix::unistd::getuid().as_raw();
    let mut private = |what: &str, path: &Path, loose_is_fail: bool, mode_fix: &str| {
        let Ok(meta) = std::fs::metadata(path) else { return };
        let mode = meta.permissions().mode() & 0o777;
        let shown = path.display();
        if meta.uid() != me {
            checks.push(Check::fail(
                what,
                format!("{shown} belongs to uid {}, not you (uid {me})", meta.uid()),
                format!("chown {} {shown}", me),
            ));
        } else if mode & 0o022 != 0 || (loose_is_fail && mode & 0o077 != 0) {
            checks.push(Check::fail(
                what,
                format!("{shown} has mode {mode:o}: others can reach it"),
                format!("chmod {mode_fix} {shown}"),
            ));
        } else if mode & 0o077 != 0 {
            checks.push(Check::warn(
                what,
                format!("{shown} has mode {mode:o}: others can read it"),
                format!("chmod {mode_fix} {shown}"),
            ));
        } else {
            checks.push(Check::ok(what, format!("{shown} (mode {mode:o})")));
        }
    };
    private("REIN_HOME", home, false, "700");
    private("socket", socket, true, "600");
    private("auth.toml", &auth_path(home), true, "600");
}

fn check_disk(home: &Path) -> Check {
    let existing = home.ancestors().find(|dir| dir.exists()).unwrap_or(Path::new("/"));
    match nix::sys::statvfs::statvfs(existing) {
        Ok(stats) => {
            // The field types differ between platforms (u32 on some, u64 here).
            #[allow(clippy::unnecessary_cast)]
            let free =
                (stats.blocks_available() as u64).saturating_mul(stats.fragment_size() as u64);
            let shown = format!("{} MiB free under {}", free / (1024 * 1024), existing.display());
            if free < DISK_FAIL_BYTES {
                Check::fail("disk", shown, "free some space: sessions and logs are written there")
            } else if free < DISK_WARN_BYTES {
                Check::warn("disk", shown, "free some space before long sessions")
            } else {
                Check::ok("disk", shown)
            }
        }
        Err(error) => Check::warn(
            "disk",
            format!("cannot tell the free space of {}: {error}", existing.display()),
            "check with df",
        ),
    }
}

/// The first executable file named `program` on `PATH`. (Ten lines did not justify a crate.)
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join(program)).find(|candidate| {
        std::fs::metadata(candidate)
            .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    })
}

/// The report for people: one line per check, the fix indented below a problem.
pub fn format_report(checks: &[Check]) -> String {
    let mut text = String::new();
    for check in checks {
        let tag = match check.verdict {
            Verdict::Ok => "ok  ",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
        };
        text.push_str(&format!("{tag}  {:<16} {}\n", check.name, check.detail));
        if let Some(fix) = &check.fix {
            text.push_str(&format!("      {:<16} fix: {fix}\n", ""));
        }
    }
    let failed = checks.iter().filter(|check| check.verdict == Verdict::Fail).count();
    if failed == 0 {
        text.push_str("everything a prompt needs is in order\n");
    } else {
        text.push_str(&format!("{failed} problem(s) to fix before a prompt can work\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::method::ProviderCheck;
    use rein_protocol::model::Api;

    fn status(name: &str, key: KeySource, check: Option<ProviderCheck>) -> ProviderStatus {
        ProviderStatus {
            name: name.into(),
            api: Api::OpenAiChat,
            base_url: "http://127.0.0.1:9/v1".into(),
            key,
            in_use: true,
            check,
        }
    }

    #[test]
    fn only_the_default_providers_problems_fail() {
        let result = ProvidersCheckResult {
            default_model: Some("main/m".into()),
            providers: vec![
                status("main", KeySource::Missing { variable: "MAIN_KEY".into() }, None),
                status(
                    "spare",
                    KeySource::NotNeeded,
                    Some(ProviderCheck {
                        verdict: CheckVerdict::Unreachable,
                        status: None,
                        message: "refused".into(),
                        models: 0,
                    }),
                ),
            ],
        };
        let checks = provider_checks(&result);
        assert_eq!(checks[0].verdict, Verdict::Ok);
        assert_eq!(checks[1].verdict, Verdict::Fail);
        assert!(checks[1].fix.as_deref().unwrap().contains("rein login main"));
        assert_eq!(checks[2].verdict, Verdict::Warn);
        assert!(checks[2].fix.as_deref().unwrap().contains("base_url"));
        let none = provider_checks(&ProvidersCheckResult::default());
        assert_eq!(none[0].verdict, Verdict::Fail);
        assert!(format_report(&none).contains("1 problem(s)"));
    }

    #[test]
    fn a_rejected_environment_key_is_fixed_in_the_environment() {
        let rejected = ProviderCheck {
            verdict: CheckVerdict::KeyRejected,
            status: Some(401),
            message: "HTTP 401".into(),
            models: 0,
        };
        let env = KeySource::Environment { variable: "K".into() };
        let check = provider_check(&status("p", env, Some(rejected.clone())), true);
        assert!(check.fix.unwrap().contains("$K"));
        let stored = KeySource::AuthFile { variable: "K".into() };
        let check = provider_check(&status("p", stored, Some(rejected)), true);
        assert!(check.fix.unwrap().contains("rein login p"));
    }

    #[test]
    fn programs_are_found_on_path() {
        assert!(find_program("sh").is_some());
        assert!(find_program("surely-not-a-program-rein").is_none());
    }
}
