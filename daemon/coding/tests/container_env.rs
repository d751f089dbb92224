//! The container environment against a real engine: commands run inside a container of the
//! session's own with the project mounted at the same path, a cancelled command dies inside
//! the container, and the container goes when the environment shuts down. Runs only where a
//! Docker- or Podman-compatible engine answers (image: `REIN_TEST_CONTAINER_IMAGE`, default
//! `debian:stable-slim`); elsewhere each test says it skipped. CI with an engine also runs the
//! tool tests inside a container: `REIN_TEST_SANDBOX=container cargo test -p rein-coding --lib
//! tools`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers outside #[test] fns

use std::process::Command;

use rein_coding::environment::{CommandCall, ContainerEnvironment, Environment, SandboxSettings};
use rein_coding::tools::CommandRequest;
use rein_coding::tools::spill::SpillLimits;
use tokio_util::sync::CancellationToken;

/// A container environment for `project`, or `None` (after saying so) without an engine.
fn container(project: &std::path::Path) -> Option<ContainerEnvironment> {
    let image = std::env::var("REIN_TEST_CONTAINER_IMAGE")
        .unwrap_or_else(|_| "debian:stable-slim".to_string());
    let settings = SandboxSettings { image: Some(image), ..SandboxSettings::default() };
    match ContainerEnvironment::new(project, &settings) {
        Ok(env) => Some(env),
        Err(err) => {
            eprintln!("skipped: no container engine here ({err})");
            None
        }
    }
}

fn request(project: &std::path::Path, command: &str, seconds: u64) -> CommandRequest {
    CommandRequest {
        command: command.into(),
        cwd: project.to_path_buf(),
        shell: None,
        timeout: std::time::Duration::from_secs(seconds),
        output_dir: project.join(".out"),
        spill: SpillLimits::default(),
        hidden_env: Vec::new(),
    }
}

/// Whether the engine lists a container of that name (running or not).
fn exists(env: &ContainerEnvironment) -> bool {
    let engine = std::env::var("REIN_TEST_CONTAINER_ENGINE").unwrap_or_else(|_| "docker".into());
    let output = Command::new(engine)
        .args(["ps", "-a", "-q", "--filter", &format!("name={}", env.name())])
        .output()
        .unwrap();
    !String::from_utf8_lossy(&output.stdout).trim().is_empty()
}

#[tokio::test]
async fn commands_run_in_the_container_on_the_mounted_project() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let project = dir.path().canonicalize().unwrap();
    let Some(env) = container(&project) else { return };
    let mut seen = String::new();
    let command =
        "echo made > inside.txt; test -f /.dockerenv -o -f /run/.containerenv && echo in-container";
    let (made, cancel) = (request(&project, command, 120), CancellationToken::new());
    let mut on_output = |chunk: &str| seen.push_str(chunk);
    let call = CommandCall { request: &made, on_output: &mut on_output, cancel: &cancel };
    let outcome = env.run(call).await.unwrap();
    assert!(outcome.succeeded(), "{}", outcome.output);
    assert_eq!(seen.trim(), "in-container");
    assert_eq!(std::fs::read_to_string(project.join("inside.txt")).unwrap(), "made\n");
    assert!(exists(&env));
    env.shutdown().await;
    assert!(!exists(&env), "the container outlived its session");
}

#[tokio::test]
async fn a_cancelled_command_dies_inside_the_container() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let project = dir.path().canonicalize().unwrap();
    let Some(env) = container(&project) else { return };
    let cancel = CancellationToken::new();
    let canceller = cancel.clone();
    let command = "echo started > started.txt; sleep 300; echo survived > survived.txt";
    let long = request(&project, command, 600);
    let mut ignore = |_: &str| {};
    let run = env.run(CommandCall { request: &long, on_output: &mut ignore, cancel: &cancel });
    let watch = async {
        while !project.join("started.txt").exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        canceller.cancel();
    };
    let (outcome, ()) = tokio::join!(run, watch);
    assert!(outcome.unwrap().cancelled);
    // No procps in slim images: look through /proc for a `sleep`.
    let scan = "for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = sleep ] && echo found; done; echo scanned";
    let probe = request(&project, scan, 60);
    let no_cancel = CancellationToken::new();
    let call = CommandCall { request: &probe, on_output: &mut ignore, cancel: &no_cancel };
    let check = env.run(call).await.unwrap();
    assert!(check.output.contains("scanned"), "{}", check.output);
    assert!(!check.output.contains("found"), "the command kept running in the container");
    env.shutdown().await;
}
