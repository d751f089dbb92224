//! rein side by side with other coding agents, all against the same scripted fake provider on
//! 127.0.0.1: one task (write a file with a shell command, then answer), run once from a cold
//! start. For each agent: whether it finished the task, wall time, peak memory (from
//! `/usr/bin/time`), the number of requests and the size of its first request (system prompt
//! plus tool definitions).
//!
//! Ignored by default: the other agents have to be installed first, which
//! `scripts/peers.sh` does (npm and PyPI) before running
//! `cargo test --release -p rein-testkit --test stress_peers -- --ignored --nocapture`.
//! `REIN_PEERS_DIR` names the install directory; `REIN_PEERS_PROBE=1` only prints the tools
//! each agent offers (how the scripts below were written). Each agent's own network calls at
//! start (update checks, model lists) are turned off where it has a switch for it.
//!
//! mini-swe-agent is not run: it asks for non-streamed completions and the fake provider
//! only streams (see `docs/benchmarks.md`).

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::daemon::{DaemonFixture, binary};
use rein_testkit::fake_provider::{FakeOptions, FakeProvider, RecordedRequest, Reply};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

const PROMPT: &str = "Create hello.txt containing the word hi, then tell me you are done.";
const SHELL_COMMAND: &str = "echo hi > hello.txt";

/// The fake provider on a runtime of its own, in loop mode (agents differ in how many side
/// requests they make, such as titles).
struct Fake {
    fake: FakeProvider,
    _runtime: tokio::runtime::Runtime,
}

impl Fake {
    fn start(script: Vec<Reply>) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let options = FakeOptions { loop_script: true, ..FakeOptions::default() };
        let fake = runtime.block_on(FakeProvider::start_with(script, options)).unwrap();
        Self { fake, _runtime: runtime }
    }
}

/// One agent's run: the command, its environment and the replies its tools need.
struct Peer {
    name: &'static str,
    command: Vec<String>,
    env: Vec<(String, String)>,
    script: Vec<Reply>,
}

fn peers_dir() -> PathBuf {
    std::env::var_os("REIN_PEERS_DIR").map(PathBuf::from).unwrap_or_else(|| "/tmp/peers".into())
}

fn answer() -> Reply {
    Reply::text("Done: hello.txt now contains hi.")
}

/// Sets up agent `name` in `home` for `project` against `base_url`.
fn peer(name: &'static str, home: &Path, project: &Path, base_url: &str, probe: bool) -> Peer {
    let dir = peers_dir();
    let npm_bin = |tool: &str| dir.join("npm/node_modules/.bin").join(tool).display().to_string();
    let home_env = ("HOME".to_string(), home.display().to_string());
    let key = ("FAKE_API_KEY".to_string(), "fake-key".to_string());
    let shell = |name: &str, arguments: Value| {
        if probe { Reply::text("ok") } else { Reply::tool_call(name, arguments) }
    };
    match name {
        "pi" => {
            let config = home.join("pi");
            std::fs::create_dir_all(&config).unwrap();
            let models = json!({"providers": {"fake": {
                "baseUrl": base_url, "api": "openai-completions", "apiKey": "fake-key",
                "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
                "models": [{"id": "test-model"}]}}});
            std::fs::write(config.join("models.json"), models.to_string()).unwrap();
            Peer {
                name,
                command: vec![
                    npm_bin("pi"),
                    "-p".into(),
                    "--provider".into(),
                    "fake".into(),
                    "--model".into(),
                    "test-model".into(),
                    PROMPT.into(),
                ],
                env: vec![
                    home_env,
                    ("PI_CODING_AGENT_DIR".into(), config.display().to_string()),
                    ("PI_OFFLINE".into(), "1".into()),
                ],
                script: vec![shell("bash", json!({"command": SHELL_COMMAND})), answer()],
            }
        }
        "codex" => {
            let config = home.join("codex");
            std::fs::create_dir_all(&config).unwrap();
            let toml = format!(
                "model = \"test-model\"\nmodel_provider = \"fake\"\n\
                 check_for_update_on_startup = false\n\n[model_providers.fake]\n\
                 name = \"fake\"\nbase_url = \"{base_url}\"\nwire_api = \"responses\"\n\
                 env_key = \"FAKE_API_KEY\"\n"
            );
            std::fs::write(config.join("config.toml"), toml).unwrap();
            Peer {
                name,
                command: vec![
                    npm_bin("codex"),
                    "exec".into(),
                    "--skip-git-repo-check".into(),
                    "--dangerously-bypass-approvals-and-sandbox".into(),
                    "-C".into(),
                    project.display().to_string(),
                    PROMPT.into(),
                ],
                env: vec![home_env, key, ("CODEX_HOME".into(), config.display().to_string())],
                script: vec![shell("exec_command", json!({"cmd": SHELL_COMMAND})), answer()],
            }
        }
        "opencode" => {
            let config = json!({
                "$schema": "https://opencode.ai/config.json",
                "model": "fake/test-model",
                "small_model": "fake/test-model",
                "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "fake",
                    "options": {"baseURL": base_url, "apiKey": "fake-key"},
                    "models": {"test-model": {"name": "test-model"}}}},
                "permission": {"edit": "allow", "bash": "allow"}
            });
            std::fs::write(project.join("opencode.json"), config.to_string()).unwrap();
            Peer {
                name,
                command: vec![
                    npm_bin("opencode"),
                    "run".into(),
                    "--print-logs".into(),
                    // A given title spares the separate title request.
                    "--title".into(),
                    "side by side".into(),
                    "--model".into(),
                    "fake/test-model".into(),
                    PROMPT.into(),
                ],
                env: vec![
                    home_env,
                    ("OPENCODE_DISABLE_MODELS_FETCH".into(), "true".into()),
                    ("OPENCODE_DISABLE_AUTOUPDATE".into(), "true".into()),
                ],
                script: vec![
                    shell(
                        "bash",
                        json!({"command": SHELL_COMMAND, "description": "Write hello.txt"}),
                    ),
                    answer(),
                ],
            }
        }
        other => panic!("unknown peer {other}"),
    }
}

/// The tool names (with required arguments) a request offers.
fn tools_offered(request: &RecordedRequest) -> Vec<String> {
    request.body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tool| {
            let function = if tool.get("function").is_some() { &tool["function"] } else { tool };
            let name = function["name"].as_str().or(tool["type"].as_str()).unwrap_or("?");
            let required = function["parameters"]["required"].to_string();
            format!("{name}{required}")
        })
        .collect()
}

/// Runs `command` under `/usr/bin/time` in `project`; returns (success, wall s, max RSS KiB).
fn timed(command: &[String], env: &[(String, String)], project: &Path) -> (bool, f64, u64, String) {
    let report = project.join(".time-report");
    let started = Instant::now();
    let output = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%e %M")
        .arg("-o")
        .arg(&report)
        .arg("timeout")
        .arg("180")
        .args(command)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(project)
        // Some agents read the directory from PWD rather than from the process.
        .env("PWD", project)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let wall = started.elapsed().as_secs_f64();
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let rss = text.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    let _ = std::fs::remove_file(&report);
    let tail: String = String::from_utf8_lossy(&output.stdout)
        .chars()
        .chain(String::from_utf8_lossy(&output.stderr).chars())
        .collect();
    let errors: Vec<&str> = tail.lines().filter(|l| l.contains("ERROR")).take(3).collect();
    let last: String = tail.chars().rev().take(400).collect::<String>().chars().rev().collect();
    let tail = format!("{} {last}", errors.join(" / "));
    (output.status.success(), wall, rss, tail)
}

fn row(name: &str, fake: &FakeProvider, project: &Path, run: (bool, f64, u64, String)) {
    let (exited_ok, wall, rss, tail) = run;
    let requests = fake.requests();
    let file_ok =
        std::fs::read_to_string(project.join("hello.txt")).is_ok_and(|text| text.trim() == "hi");
    let first = requests.first().map(|r| r.body.to_string().len()).unwrap_or(0);
    let tools = requests.first().map(|r| tools_offered(r).len()).unwrap_or(0);
    println!(
        "| {name} | {} | {wall:.2} s | {:.0} MiB | {} | {:.1} KB, {tools} tools |",
        if exited_ok && file_ok {
            "yes"
        } else if file_ok {
            "file written, bad exit"
        } else {
            "no"
        },
        rss as f64 / 1024.0,
        requests.len(),
        first as f64 / 1000.0
    );
    if !(exited_ok && file_ok) {
        println!("    {name} output tail: {}", tail.replace('\n', " / "));
    }
}

fn rein_row(probe: bool) {
    let script = if probe {
        vec![Reply::text("ok")]
    } else {
        vec![Reply::tool_call("bash", json!({"command": SHELL_COMMAND})), answer()]
    };
    let fake = Fake::start(script);
    let daemon = DaemonFixture::new();
    let config = format!(
        "model = \"local/test-model\"\napproval_policy = \"yolo\"\n\n[providers.local]\n\
         api = \"openai-chat\"\nbase_url = \"{}\"\n",
        fake.fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    let project = tempfile::tempdir().unwrap();
    let env = vec![
        ("REIN_HOME".to_string(), daemon.home().display().to_string()),
        ("REIN_SOCKET".to_string(), daemon.socket().display().to_string()),
        ("REIN_DAEMON_BIN".to_string(), binary("reind").display().to_string()),
    ];
    let command = vec![binary("rein").display().to_string(), "run".into(), PROMPT.into()];
    // Cold: `rein run` starts the daemon itself.
    let run = timed(&command, &env, project.path());
    if probe {
        let requests = fake.fake.requests();
        println!("rein tools: {:?}", requests.first().map(tools_offered));
    }
    row("rein (cold: starts reind)", &fake.fake, project.path(), run);
    // The daemon that `rein run` started is still up: peak memory of the daemon itself.
    let mut client = rein_testkit::daemon::RawConnection::connect(daemon.socket());
    let info = client.call_ok(1, "daemon/info", json!({}));
    let pid = info["pid"].as_u64().unwrap_or(0);
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let peak = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap_or("VmHWM: ?").to_string();
    println!("    reind peak memory after the run: {peak}");
    let _ = client.call(2, "daemon/shutdown", json!({}));
}

#[test]
#[ignore = "needs the other agents installed: scripts/peers.sh"]
fn side_by_side_against_one_fake_provider() {
    let probe = std::env::var_os("REIN_PEERS_PROBE").is_some();
    println!("| agent | task done | wall | peak RSS | requests | first request |");
    println!("| --- | --- | --- | --- | --- | --- |");
    rein_row(probe);
    let wanted = std::env::var("REIN_PEERS").unwrap_or_else(|_| "pi,codex,opencode".to_string());
    for name in wanted.split(',').filter(|n| !n.is_empty()) {
        let name: &'static str = Box::leak(name.to_string().into_boxed_str());
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        // The fake must know the script before it starts; the base URL is only known after,
        // so the agent is set up twice: once to get its script, once with the real URL.
        let script = peer(name, home.path(), project.path(), "http://127.0.0.1:1/v1", probe).script;
        let fake = Fake::start(script);
        let spec = peer(name, home.path(), project.path(), &fake.fake.base_url(), probe);
        let run = timed(&spec.command, &spec.env, project.path());
        if probe {
            for (i, request) in fake.fake.requests().iter().enumerate().take(3) {
                println!(
                    "{} request {i} {}: {:?}",
                    spec.name,
                    request.path,
                    tools_offered(request)
                );
            }
        }
        row(spec.name, &fake.fake, project.path(), run);
    }
}
