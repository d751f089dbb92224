//! End-to-end: no process the model starts can read the provider key. The real `reind` is
//! started with a canary key in its environment, the real `rein run --json` drives a session
//! whose model (the scripted fake) has `bash` try every way to the key: its own environment,
//! the daemon's `/proc/PID/environ`, and the daemon's memory through `/proc/PID/maps` and
//! `/proc/PID/mem`. The key must still reach the provider, and none of the attempts may find
//! it.
//!
//! Same-user protection is what is tested, so when the tests run as root (who may read any
//! process) the daemon and the client run as user `nobody` (65534) instead.

#![allow(clippy::unwrap_used)] // test helpers: a failed unwrap is a failed test

use rein_testkit::background::BackgroundFake;
use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::Reply;
use serde_json::json;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

const CANARY: &str = "sk-canary-3d9e1b7a5c2f4e60-keep-out";
const NOBODY: u32 = 65534;

/// Runs `command` as `nobody` when the tests run as root; as ourselves otherwise.
fn as_test_user(command: &mut Command) {
    if nix::unistd::geteuid().is_root() {
        command.uid(NOBODY).gid(NOBODY);
    }
}

/// Gives `path` (and everything below it) to the test user.
fn hand_over(path: &std::path::Path) {
    if nix::unistd::geteuid().is_root() {
        let status = Command::new("chown").arg("-R").arg("65534:65534").arg(path).status();
        assert!(status.is_ok_and(|s| s.success()), "cannot chown {}", path.display());
    }
}

/// Waits until the daemon `child` (started by this test, maybe as another user) has made its
/// socket. Not `DaemonFixture::wait_until_answering`: a daemon of another user refuses this
/// process's connections.
fn wait_for_socket(daemon: &DaemonFixture, child: &mut std::process::Child) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !daemon.socket().exists() {
        assert!(std::time::Instant::now() < deadline, "the daemon did not start");
        assert!(child.try_wait().unwrap().is_none(), "the daemon exited");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// What the model's bash runs: each way to the key, printing how many times the key's prefix
/// was found (never the key itself) and the errors on the way.
fn attempts(pid: u32) -> String {
    format!(
        r#"echo "own-env: $(env | grep -c sk-canary)"
echo "handover-var: $(env | grep -c REIN_SECRETS_FD)"
echo "daemon-environ: $(tr '\0' '\n' < /proc/{pid}/environ | grep -c sk-canary)"
found=0
while read -r range perms rest; do
  case "$perms" in r*)
    start=$((0x${{range%-*}})); end=$((0x${{range#*-}}))
    n=$(dd if=/proc/{pid}/mem bs=4096 skip=$((start / 4096)) count=$(((end - start) / 4096)) 2>/dev/null | grep -a -c sk-canary)
    found=$((found + n));;
  esac
done < /proc/{pid}/maps
echo "daemon-memory: $found"
echo "mem-open: $(head -c 1 /proc/{pid}/mem 2>&1 >/dev/null)"
echo attempts-done"#
    )
}

#[test]
fn the_models_bash_cannot_read_the_key_from_anywhere() {
    let fake = BackgroundFake::start(Vec::new());
    let daemon = DaemonFixture::new();
    let config = format!(
        "model = \"local/test-model\"\napproval_policy = \"yolo\"\n\n[providers.local]\n\
         api = \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"REIN_CANARY_KEY\"\n\n\
         [retry]\nmax_retries = 0\n",
        fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    let project = tempfile::tempdir().unwrap();
    hand_over(daemon.home());
    hand_over(project.path());

    let mut reind = daemon.reind();
    reind
        .arg("--foreground")
        .env("REIN_CANARY_KEY", CANARY)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    as_test_user(&mut reind);
    let mut child = reind.spawn().unwrap();
    let pid = child.id();
    wait_for_socket(&daemon, &mut child);

    // The daemon re-executed itself without the key and is not dumpable: its /proc entries
    // belong to root, and the environment the kernel shows holds no key.
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let text = String::from_utf8_lossy(&environ);
    assert!(!text.contains(CANARY), "the key is still in the daemon's environment");
    if nix::unistd::geteuid().is_root() {
        assert!(text.contains("REIN_SECRETS_FD"), "the daemon did not re-execute: {text}");
        let owner = std::fs::metadata(format!("/proc/{pid}/mem")).unwrap().uid();
        assert_eq!(owner, 0, "the daemon is still dumpable (its /proc/PID/mem is not root's)");
    }

    fake.push(Reply::tool_call("bash", json!({"command": attempts(pid)})));
    fake.push(Reply::text("no key for me"));
    let mut rein = daemon.rein();
    rein.current_dir(project.path())
        .args(["run", "--json", "find the API key"])
        .env("REIN_CANARY_KEY", CANARY)
        .stdin(Stdio::null());
    as_test_user(&mut rein);
    let output = rein.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let _ = child.kill();
    let _ = child.wait();

    let requests = fake.requests();
    assert!(
        requests.iter().any(|r| r.header("authorization") == Some(&format!("Bearer {CANARY}"))),
        "the key did not reach the provider, so this test proves nothing"
    );
    assert!(!stdout.contains(CANARY), "the key reached the client");
    let result = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|event| event["event"]["kind"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("no tool result in {stdout}"));
    let shown = result["event"]["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(shown.contains("attempts-done"), "the attempts did not run: {shown}");
    for line in ["own-env: 0", "handover-var: 0", "daemon-environ: 0", "daemon-memory: 0"] {
        assert!(shown.contains(line), "expected {line:?} in {shown}");
    }
    assert!(
        shown.matches("Permission denied").count() >= 2,
        "reading the daemon's environ and memory was not refused: {shown}"
    );
}

/// What a daemon showed after a `rein run` through it: its info, and the environment the
/// kernel shows for it (empty unless the tests run as root: only root may read a
/// non-dumpable process's).
struct Observed {
    info: serde_json::Value,
    environ: String,
}

/// A home whose model's provider reads the key variable `model_key` and whose second provider
/// reads `other_key`, both served by `fake`.
fn home_with_two_keys(fake: &BackgroundFake, model_key: &str, other_key: &str) -> DaemonFixture {
    let daemon = DaemonFixture::new();
    let config = format!(
        "model = \"local/test-model\"\napproval_policy = \"yolo\"\n\n[providers.local]\n\
         api = \"openai-chat\"\nbase_url = \"{url}\"\napi_key_env = \"{model_key}\"\n\n\
         [providers.other]\napi = \"openai-chat\"\nbase_url = \"{url}\"\n\
         api_key_env = \"{other_key}\"\n\n[retry]\nmax_retries = 0\n",
        url = fake.base_url()
    );
    std::fs::write(daemon.home().join("config.toml"), config).unwrap();
    hand_over(daemon.home());
    daemon
}

/// Runs `rein run` with `variables` in its environment (starting the daemon when none runs),
/// reads the daemon's info and environment, stops it, and checks the canary reached the
/// provider and is not in the daemon's environment.
fn run_and_observe(
    daemon: &DaemonFixture,
    fake: &BackgroundFake,
    variables: &[(&str, &str)],
) -> Observed {
    let project = tempfile::tempdir().unwrap();
    hand_over(project.path());
    fake.push(Reply::text("hello"));
    let mut rein = daemon.rein();
    rein.current_dir(project.path()).args(["run", "--json", "say hello"]).stdin(Stdio::null());
    rein.envs(variables.iter().copied());
    as_test_user(&mut rein);
    let output = rein.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(output.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&output.stderr));

    // Asked as the daemon's user: it refuses connections from any other.
    let mut status = daemon.rein();
    status.args(["daemon", "status", "--json"]);
    as_test_user(&mut status);
    let status = status.output().unwrap();
    let info: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap_or_default();
    let pid = info["pid"].as_u64().unwrap_or_default();
    let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
    let mut stop = daemon.rein();
    stop.args(["daemon", "stop"]).stdout(Stdio::null()).stderr(Stdio::null());
    as_test_user(&mut stop);
    let stopped = stop.status().unwrap();
    assert!(stopped.success(), "rein daemon stop failed");
    assert!(pid > 0, "no pid in {info}");
    assert!(
        fake.requests()
            .iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {CANARY}"))),
        "the key did not reach the provider"
    );
    let environ = String::from_utf8_lossy(&environ).to_string();
    assert!(!environ.contains(CANARY), "the key is in the daemon's environment");
    Observed { info, environ }
}

/// The `REIN_SECRETS_FD=` entries of an environment.
fn handover_entries(environ: &str) -> Vec<&str> {
    environ.split('\0').filter(|entry| entry.starts_with("REIN_SECRETS_FD=")).collect()
}

/// Whether the daemon holds a key for each of `names` (`daemon/info`'s `key_variables`).
fn holds_keys(info: &serde_json::Value, names: &[&str]) -> bool {
    let held = info["key_variables"].as_array().cloned().unwrap_or_default();
    names.iter().all(|name| held.contains(&json!(name)))
}

/// The usual start: `rein` finds no daemon and starts one, with the keys exported in the
/// user's shell, one named `*_API_KEY` and one named only by the configuration. The launcher
/// hands both over on the daemon's stdin, so the daemon never holds them in its environment
/// and needs no re-execution of its own (one exec less on a cold start).
#[test]
fn a_daemon_started_by_rein_gets_the_keys_on_a_pipe_not_in_its_environment() {
    let fake = BackgroundFake::start(Vec::new());
    let daemon = home_with_two_keys(&fake, "REIN_CANARY_TOKEN", "REIN_OTHER_API_KEY");
    let variables = [("REIN_CANARY_TOKEN", CANARY), ("REIN_OTHER_API_KEY", "sk-other")];
    let observed = run_and_observe(&daemon, &fake, &variables);
    let names = ["REIN_CANARY_TOKEN", "REIN_OTHER_API_KEY"];
    assert!(holds_keys(&observed.info, &names), "{}", observed.info);
    if nix::unistd::geteuid().is_root() {
        // Descriptor 0 is the launcher's pipe; a re-executed daemon names a descriptor of its
        // own above the standard three.
        let environ = &observed.environ;
        assert_eq!(handover_entries(environ), ["REIN_SECRETS_FD=0"], "{environ}");
        assert!(names.iter().all(|name| !environ.contains(name)), "{environ}");
    }
}

/// A starter that handed some keys over but left another in the environment (here the test
/// plays that starter, with the launcher's pipe on stdin): the daemon re-executes itself
/// without the one left, carrying it together with those handed over.
#[test]
fn keys_left_in_the_environment_are_moved_by_the_daemon_with_those_handed_over() {
    use std::io::Write;
    let fake = BackgroundFake::start(Vec::new());
    let daemon = home_with_two_keys(&fake, "REIN_CANARY_TOKEN", "REIN_OTHER_API_KEY");
    let (reader, writer) = std::io::pipe().unwrap();
    let payload = rein_launch::key_handover::encode([("REIN_OTHER_API_KEY", "sk-other")]);
    (&writer).write_all(&payload).unwrap();
    drop(writer);
    if nix::unistd::geteuid().is_root() {
        // The daemon reopens the pipe through /proc/self/fd/0, which needs the pipe to be its
        // user's, as it is when a starter of that user made it.
        let nobody = Some(nix::unistd::Uid::from_raw(NOBODY));
        nix::unistd::fchown(&reader, nobody, Some(nix::unistd::Gid::from_raw(NOBODY))).unwrap();
    }
    let mut reind = daemon.reind();
    reind
        .arg("--foreground")
        .env("REIN_SECRETS_FD", "0")
        .env("REIN_CANARY_TOKEN", CANARY)
        .stdin(reader)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    as_test_user(&mut reind);
    let mut child = reind.spawn().unwrap();
    wait_for_socket(&daemon, &mut child);
    let observed = run_and_observe(&daemon, &fake, &[]);
    let names = ["REIN_CANARY_TOKEN", "REIN_OTHER_API_KEY"];
    assert!(holds_keys(&observed.info, &names), "{}", observed.info);
    if nix::unistd::geteuid().is_root() {
        let environ = &observed.environ;
        let handover = handover_entries(environ);
        assert_eq!(handover.len(), 1, "{environ}");
        assert_ne!(handover, ["REIN_SECRETS_FD=0"], "the daemon did not re-execute: {environ}");
        assert!(names.iter().all(|name| !environ.contains(name)), "{environ}");
    }
    let _ = child.kill();
    let _ = child.wait();
}
