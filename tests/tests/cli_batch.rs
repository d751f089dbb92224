//! End-to-end: `rein batch` on the bundled task set (`examples/batch/`, the worked example of
//! docs/batch.md) through the real `reind` and `rein`, each task's model played by its own
//! scripted fake provider. Checks every output against the source repositories (the patches
//! apply and make the tests pass), that the sources stay untouched, that a killed batch resumes
//! without redoing finished tasks and keeps the interrupted ones as partial, and that two shards
//! plus `rein batch merge` give the summary of one unsharded run.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failure should stop the test

use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{FakeOptions, FakeProvider};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const TASKS: [&str; 5] = ["calc", "greet", "maximum", "shout", "count"];

fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join("examples/batch")
}

/// A daemon whose provider `<task>` is a fake replaying `examples/batch/scripts/<task>.json`
/// in a loop; the tasks named in `slow` answer slowly.
struct BatchEnv {
    fakes: BTreeMap<String, FakeProvider>,
    daemon: DaemonFixture,
    work: tempfile::TempDir,
    // Last: the fakes are dropped inside it.
    _runtime: tokio::runtime::Runtime,
}

impl BatchEnv {
    fn start(slow: &[&str]) -> Self {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let mut fakes = BTreeMap::new();
        let mut config = String::from("model = \"calc/fake-model\"\n\n[retry]\nmax_retries = 0\n");
        for task in TASKS {
            let text = std::fs::read_to_string(example_dir().join(format!("scripts/{task}.json")))
                .unwrap();
            let script = FakeProvider::parse_script(&text).unwrap();
            let options = FakeOptions {
                loop_script: true,
                delay_ms: if slow.contains(&task) { 150 } else { 0 },
                ..FakeOptions::default()
            };
            let fake = runtime.block_on(FakeProvider::start_with(script, options)).unwrap();
            config.push_str(&format!(
                "\n[providers.{task}]\napi = \"openai-chat\"\nbase_url = \"{}\"\napi_key_env = \"\"\n\n[providers.{task}.models.\"fake-model\"]\ncontext_window = 32768\ncost = {{ input = 3.0, output = 15.0, cache_read = 0.3, cache_write = 3.75 }}\n",
                fake.base_url()
            ));
            fakes.insert(task.to_string(), fake);
        }
        let mut daemon = DaemonFixture::new();
        std::fs::write(daemon.home().join("config.toml"), config).unwrap();
        daemon.spawn();
        let work = tempfile::Builder::new().prefix("rein-batch-").tempdir().unwrap();
        Self { fakes, daemon, work, _runtime: runtime }
    }

    fn out(&self, name: &str) -> PathBuf {
        self.work.path().join(name)
    }

    fn batch(&self, args: &[&str]) -> Command {
        let mut command = self.daemon.rein();
        command.arg("batch").args(args).stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> Output {
        self.batch(args).output().unwrap()
    }

    fn requests(&self) -> BTreeMap<String, usize> {
        self.fakes.iter().map(|(task, fake)| (task.clone(), fake.requests().len())).collect()
    }
}

fn tasks_file() -> String {
    example_dir().join("tasks.jsonl").display().to_string()
}

fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

fn json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(next) = stack.pop() {
        for entry in std::fs::read_dir(&next).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push((path.clone(), std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

fn run_sh(dir: &Path, script: &str) -> Output {
    Command::new("sh").args(["-c", script]).current_dir(dir).output().unwrap()
}

/// Applies a task's `patch.diff` to a fresh copy of its source repository with `git apply`
/// and runs the task's test there.
fn patch_makes_the_test_pass(task: &str, patch: &Path, scratch: &Path) {
    std::fs::create_dir_all(scratch).unwrap();
    let copy = scratch.join(format!("apply-{task}"));
    let source = example_dir().join("repos").join(task);
    let copied = Command::new("cp").arg("-r").arg(&source).arg(&copy).status().unwrap();
    assert!(copied.success());
    assert!(!run_sh(&copy, "sh test.sh").status.success(), "{task}: the test passes unpatched");
    let applied = Command::new("git").arg("apply").arg(patch).current_dir(&copy).output().unwrap();
    assert!(applied.status.success(), "{task}: {}", String::from_utf8_lossy(&applied.stderr));
    let test = run_sh(&copy, "sh test.sh");
    assert!(test.status.success(), "{task}: {}", String::from_utf8_lossy(&test.stdout));
}

/// Checks every output of a finished, verified task.
fn check_task_outputs(out: &Path, task: &str, scratch: &Path) -> Value {
    let dir = out.join(task);
    let result = json(&dir.join("result.json"));
    assert_eq!(result["id"], task);
    assert_eq!(result["status"], "finished", "{result}");
    assert_eq!(result["end_reason"], "completed", "{result}");
    assert_eq!(result["outcome"], "verified", "{result}");
    assert_eq!(result["model"], format!("{task}/fake-model"));
    assert!(result["cost_usd"].as_f64().unwrap() > 0.0, "{result}");
    assert!(result["tokens"]["total"].as_u64().unwrap() > 0, "{result}");
    assert!(result["turns"].as_u64().unwrap() >= 2, "{result}");
    assert!(result["duration_ms"].is_u64());
    assert_eq!(result["verification"]["passed"], true);
    assert_eq!(result["verification"]["checks"][0]["command"], "sh test.sh");
    assert!(!dir.join("attempt.json").exists());

    let session = json_lines(&dir.join("session.jsonl"));
    let info = session.iter().find(|line| line["type"] == "run_info").expect("a run_info line");
    assert_eq!(info["session_id"], result["session_id"]);
    assert_eq!(info["end_reason"], "completed");
    assert!(session.iter().any(|line| line["type"] == "verification" && line["passed"] == true));

    let atif = json(&dir.join("trajectory.atif.json"));
    assert_eq!(atif["schema_version"], "ATIF-v1.4");
    assert_eq!(atif["session_id"], result["session_id"]);
    assert_eq!(atif["agent"]["name"], "rein");
    let steps = atif["steps"].as_array().unwrap();
    assert_eq!(steps[0]["source"], "user");
    let instruction = std::fs::read_to_string(example_dir().join("tasks.jsonl"))
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|t| t["id"] == task)
        .unwrap()["instruction"]
        .clone();
    assert_eq!(steps[0]["message"], instruction);
    for (index, step) in steps.iter().enumerate() {
        assert_eq!(step["step_id"], index + 1);
    }
    let calls: Vec<&Value> = steps.iter().filter(|s| s["tool_calls"].is_array()).collect();
    assert!(!calls.is_empty());
    let call_id = &calls[0]["tool_calls"][0]["tool_call_id"];
    assert_eq!(calls[0]["observation"]["results"][0]["source_call_id"], *call_id);
    let cost = atif["final_metrics"]["total_cost_usd"].as_f64().unwrap();
    assert!((cost - result["cost_usd"].as_f64().unwrap()).abs() < 1e-9, "{atif}");
    assert_eq!(atif["extra"]["rein"]["partial"], false);
    assert_eq!(atif["extra"]["rein"]["outcome"], "verified");

    patch_makes_the_test_pass(task, &dir.join("patch.diff"), scratch);
    result
}

fn without_timing(mut summary: Value) -> Value {
    let object = summary.as_object_mut().unwrap();
    object.remove("duration_ms");
    object.remove("slowest");
    summary
}

#[test]
fn the_bundled_task_set_runs_resumes_and_shards_into_the_same_summary() {
    let env = BatchEnv::start(&[]);
    let sources = snapshot(&example_dir().join("repos"));
    let out = env.out("all");
    let out_text = out.display().to_string();
    let output = env.run(&[&tasks_file(), "--out", &out_text, "--workers", "3"]);
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("batch: calc:"), "plain progress lines when piped: {stderr}");
    assert!(stderr.contains("5/5 done"), "{stderr}");

    let mut total_cost = 0.0;
    for task in TASKS {
        let result = check_task_outputs(&out, task, env.work.path());
        total_cost += result["cost_usd"].as_f64().unwrap();
    }
    assert_eq!(snapshot(&example_dir().join("repos")), sources, "a source repository changed");
    assert!(out.join("count/setup.log").exists(), "setup ran for `count`");

    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["tasks"], 5);
    assert_eq!(summary["passed"], 5);
    assert_eq!(summary["pass_rate"], 1.0);
    assert_eq!(summary["outcomes"], serde_json::json!({"verified": 5}));
    assert_eq!(summary["end_reasons"], serde_json::json!({"completed": 5}));
    assert!((summary["cost_usd"].as_f64().unwrap() - total_cost).abs() < 1e-9);
    assert_eq!(summary["slowest"].as_array().unwrap().len(), 5);
    let markdown = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(markdown.contains("Pass rate: 100.0%"), "{markdown}");
    assert!(markdown.contains("## Slowest tasks"), "{markdown}");
    let predictions = json_lines(&out.join("predictions.jsonl"));
    let ids: Vec<&str> = predictions.iter().map(|p| p["instance_id"].as_str().unwrap()).collect();
    assert_eq!(ids, TASKS);
    for prediction in &predictions {
        let task = prediction["instance_id"].as_str().unwrap();
        let patch = std::fs::read_to_string(out.join(task).join("patch.diff")).unwrap();
        assert_eq!(prediction["model_patch"], patch);
        assert_eq!(prediction["model_name_or_path"], format!("rein/{task}/fake-model"));
    }

    // Running it again redoes nothing: no model request goes out.
    let before = env.requests();
    let again = env.run(&[&tasks_file(), "--out", &out_text, "--workers", "3"]);
    assert_exit(&again, 0);
    assert!(String::from_utf8_lossy(&again.stderr).contains("5 of 5 tasks already finished"));
    assert_eq!(env.requests(), before);
    assert_eq!(json(&out.join("summary.json")), summary);

    // Two shard processes at once, then the merge.
    let shards: Vec<PathBuf> = (0..2).map(|i| env.out(&format!("shard-{i}"))).collect();
    let children: Vec<std::process::Child> = shards
        .iter()
        .enumerate()
        .map(|(index, dir)| {
            env.batch(&[&tasks_file(), "--out", &dir.display().to_string(), "--workers", "2"])
                .args(["--shard", &format!("{index}/2")])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        assert_exit(&child.wait_with_output().unwrap(), 0);
    }
    let owned: Vec<BTreeSet<String>> = shards
        .iter()
        .map(|dir| {
            TASKS
                .iter()
                .filter(|t| dir.join(t).join("result.json").exists())
                .map(|t| t.to_string())
                .collect()
        })
        .collect();
    assert!(owned[0].is_disjoint(&owned[1]), "{owned:?}");
    let union: BTreeSet<String> = owned[0].union(&owned[1]).cloned().collect();
    assert_eq!(union, TASKS.iter().map(|t| t.to_string()).collect(), "every task exactly once");
    assert_eq!(json(&shards[0].join("summary.json"))["tasks"], 3);
    assert_eq!(json(&shards[1].join("summary.json"))["tasks"], 2);

    let merged = env.out("merged");
    let mut merge = vec!["merge".to_string()];
    merge.extend(shards.iter().map(|dir| dir.display().to_string()));
    merge.extend(["--out".to_string(), merged.display().to_string()]);
    let merge: Vec<&str> = merge.iter().map(String::as_str).collect();
    assert_exit(&env.run(&merge), 0);
    assert_eq!(without_timing(json(&merged.join("summary.json"))), without_timing(summary));
    assert_eq!(
        std::fs::read_to_string(merged.join("predictions.jsonl")).unwrap(),
        std::fs::read_to_string(out.join("predictions.jsonl")).unwrap()
    );
    for task in TASKS {
        check_task_outputs(&merged, task, &env.work.path().join("merged-apply"));
    }

    // A merge with a shard missing says which.
    let partial = env.run(&[
        "merge",
        &shards[0].display().to_string(),
        "--out",
        &env.out("bad").display().to_string(),
    ]);
    assert_exit(&partial, 2);
    assert!(String::from_utf8_lossy(&partial.stderr).contains("missing shards: 1/2"));
}

/// Waits until at least one task has a session running, then returns the tasks in flight.
fn wait_for_a_running_task(out: &Path, child: &mut std::process::Child, also_done: bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let done = TASKS.iter().any(|t| out.join(t).join("result.json").exists());
        let running = TASKS.iter().any(|t| in_flight(out, t));
        if running && (done || !also_done) {
            return;
        }
        assert!(Instant::now() < deadline, "the batch never reached the awaited state");
        assert!(child.try_wait().unwrap().is_none(), "the batch ended too early");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a task has a session and no result.
fn in_flight(out: &Path, task: &str) -> bool {
    !out.join(task).join("result.json").exists()
        && std::fs::read(out.join(task).join("attempt.json"))
            .ok()
            .and_then(|text| serde_json::from_slice::<Value>(&text).ok())
            .is_some_and(|attempt| attempt["session_id"].is_string())
}

#[test]
fn ctrl_c_cancels_the_running_tasks_keeps_them_as_partial_and_a_rerun_finishes() {
    interrupt_and_resume(nix::sys::signal::Signal::SIGINT);
}

#[test]
fn sigterm_stops_a_batch_like_ctrl_c() {
    interrupt_and_resume(nix::sys::signal::Signal::SIGTERM);
}

/// Sends `signal` to a batch with tasks running; checks the exit code, the partial attempts
/// and their cancelled sessions, then that a re-run finishes everything.
fn interrupt_and_resume(signal: nix::sys::signal::Signal) {
    let env = BatchEnv::start(&TASKS);
    let out = env.out("interrupted");
    let out_text = out.display().to_string();
    let mut child = env
        .batch(&[&tasks_file(), "--out", &out_text, "--workers", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_a_running_task(&out, &mut child, false);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap());
    nix::sys::signal::kill(pid, signal).unwrap();
    let output = child.wait_with_output().unwrap();
    assert_exit(&output, 130);

    let partial: Vec<&str> =
        TASKS.iter().copied().filter(|t| out.join(t).join("partial/attempt-1").exists()).collect();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!partial.is_empty(), "{stderr}");
    let mut with_session = 0;
    for task in &partial {
        let dir = out.join(task);
        assert!(!dir.join("attempt.json").exists());
        assert!(!dir.join("result.json").exists());
        let marker = json(&dir.join("partial/attempt-1/partial.json"));
        assert_eq!(marker["partial"], true);
        assert!(marker["reason"].as_str().unwrap().contains("interrupted"));
        // A task the other worker was still preparing (its workspace, before its session)
        // keeps no trajectory: there is no session to take it from.
        let Some(session) = marker["session_id"].as_str() else {
            assert!(!dir.join("partial/attempt-1/trajectory.atif.json").exists());
            continue;
        };
        with_session += 1;
        let atif = json(&dir.join("partial/attempt-1/trajectory.atif.json"));
        assert_eq!(atif["extra"]["rein"]["partial"], true);
        // The run was cancelled in the daemon, not left going.
        let state = env.daemon.connect().call(
            1,
            "session/state",
            serde_json::json!({"session_id": session}),
        );
        assert_eq!(state["result"]["running"], false, "{state}");
    }
    // The task awaited above was running with its session.
    assert!(with_session > 0, "{partial:?}\n{stderr}");
    let summary = json(&out.join("summary.json"));
    assert!(summary["not_run"].as_u64().unwrap() >= partial.len() as u64, "{summary}");

    let rerun = env.run(&[&tasks_file(), "--out", &out_text, "--workers", "3"]);
    assert_exit(&rerun, 0);
    for task in &partial {
        assert_eq!(json(&out.join(task).join("result.json"))["attempt"], 2);
    }
    assert_eq!(json(&out.join("summary.json"))["passed"], 5);
}

#[test]
fn a_task_asking_for_a_sandbox_the_daemon_cannot_give_fails_clearly() {
    let env = BatchEnv::start(&[]);
    let tasks = env.work.path().join("sandboxed.jsonl");
    let repo = example_dir().join("repos/calc");
    let task = serde_json::json!({
        "id": "boxed", "instruction": "Fix add.sh.", "repo": repo.display().to_string(),
        "verify": ["sh test.sh"], "model": "calc/fake-model", "sandbox": "workspace-write",
    });
    std::fs::write(&tasks, format!("{task}\n")).unwrap();
    let out = env.out("sandboxed");
    let output = env.run(&[&tasks.display().to_string(), "--out", &out.display().to_string()]);
    let result = json(&out.join("boxed/result.json"));
    // A daemon that ignores `sandbox`, or cannot give it, makes the task an error naming it;
    // one that gives it runs the task in it. It never runs silently unconfined.
    if result["status"] == "error" {
        assert_exit(&output, 1);
        assert!(result["error"].as_str().unwrap().contains("sandbox"), "{result}");
        assert_eq!(env.requests()["calc"], 0, "no model request without the sandbox");
        let sessions = env.daemon.connect().call(1, "session/list", serde_json::json!({}));
        assert_eq!(sessions["result"]["sessions"], serde_json::json!([]), "{sessions}");
    } else {
        assert_exit(&output, 0);
        assert_eq!(result["outcome"], "verified", "{result}");
    }
}

#[test]
fn a_killed_batch_resumes_without_redoing_finished_tasks() {
    let env = BatchEnv::start(&["maximum", "shout", "count"]);
    let out = env.out("killed");
    let out_text = out.display().to_string();
    let mut child = env
        .batch(&[&tasks_file(), "--out", &out_text, "--workers", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let finished = |task: &&str| out.join(task).join("result.json").exists();
    let in_flight = |task: &&str| {
        !finished(task)
            && std::fs::read(out.join(task).join("attempt.json"))
                .ok()
                .and_then(|text| serde_json::from_slice::<Value>(&text).ok())
                .is_some_and(|attempt| attempt["session_id"].is_string())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if TASKS.iter().any(finished) && TASKS.iter().any(in_flight) {
            break;
        }
        assert!(Instant::now() < deadline, "the batch never had a task done and one running");
        assert!(child.try_wait().unwrap().is_none(), "the batch ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();

    let done: Vec<&str> = TASKS.iter().copied().filter(|t| finished(t)).collect();
    let interrupted: Vec<&str> = TASKS.iter().copied().filter(|t| in_flight(t)).collect();
    assert!(!done.is_empty() && !interrupted.is_empty(), "done {done:?}, running {interrupted:?}");
    let kept: Vec<Vec<u8>> =
        done.iter().map(|t| std::fs::read(out.join(t).join("result.json")).unwrap()).collect();
    let requests_then = env.requests();

    let output = env.run(&[&tasks_file(), "--out", &out_text, "--workers", "3"]);
    assert_exit(&output, 0);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("{} of 5 tasks already finished", done.len())), "{stderr}");
    for (task, bytes) in done.iter().zip(&kept) {
        assert_eq!(
            &std::fs::read(out.join(task).join("result.json")).unwrap(),
            bytes,
            "{task} was redone"
        );
        assert_eq!(env.requests()[*task], requests_then[*task], "{task} asked the model again");
    }
    for task in &interrupted {
        let attempt = out.join(task).join("partial/attempt-1");
        let marker = json(&attempt.join("partial.json"));
        assert_eq!(marker["partial"], true);
        let atif = json(&attempt.join("trajectory.atif.json"));
        assert_eq!(atif["extra"]["rein"]["partial"], true);
        assert!(atif["notes"].as_str().unwrap().contains("Partial"));
        assert_eq!(atif["steps"][0]["source"], "user");
        assert!(attempt.join("session.jsonl").exists());
        let result = json(&out.join(task).join("result.json"));
        assert_eq!(result["attempt"], 2);
        assert_ne!(result["session_id"], marker["session_id"]);
    }
    for task in TASKS {
        check_task_outputs(&out, task, env.work.path());
    }
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["passed"], 5);
    assert_eq!(summary["not_run"], 0);
}

#[test]
fn the_cost_budgets_stop_tasks_and_the_batch() {
    let env = BatchEnv::start(&[]);
    // One worker, so the order is the file's: `calc` (3 replies, $0.01755) fits in the
    // budget; `greet` starts with $0.00245 left as its own limit and its first reply
    // ($0.00585) passes it; then the budget is spent and the rest do not start.
    let out = env.out("budget");
    let output = env.run(&[
        &tasks_file(),
        "--out",
        &out.display().to_string(),
        "--workers",
        "1",
        "--max-cost",
        "0.02",
    ]);
    assert_exit(&output, 4);
    assert_eq!(json(&out.join("calc/result.json"))["end_reason"], "completed");
    let greet = json(&out.join("greet/result.json"));
    assert_eq!(greet["end_reason"], "cost_limit", "{greet}");
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["not_run"], 3, "{summary}");
    assert_eq!(summary["end_reasons"], serde_json::json!({"completed": 1, "cost_limit": 1}));
    assert_eq!(env.requests()["maximum"], 0, "no task starts once the budget is spent");

    // A per-task limit stops each task after its first reply; the batch still runs them all.
    let out = env.out("per-task");
    let output = env.run(&[
        &tasks_file(),
        "--out",
        &out.display().to_string(),
        "--workers",
        "3",
        "--max-task-cost",
        "0.001",
    ]);
    assert_exit(&output, 0);
    let summary = json(&out.join("summary.json"));
    assert_eq!(summary["end_reasons"], serde_json::json!({"cost_limit": 5}), "{summary}");
    assert_eq!(summary["passed"], 0);
}

#[test]
fn a_terminal_gets_one_status_line_redrawn_in_place() {
    let env = BatchEnv::start(&[]);
    let out = env.out("tty");
    let rein = env.batch(&[]);
    let mut line = format!("'{}' batch", rein.get_program().to_string_lossy());
    for arg in
        [tasks_file(), "--out".into(), out.display().to_string(), "--workers".into(), "3".into()]
    {
        line.push_str(&format!(" '{}'", arg.replace('\'', "'\\''")));
    }
    // util-linux `script` gives the batch a pseudo-terminal.
    let mut command = Command::new("script");
    command.args(["-q", "-e", "-c", &line, "/dev/null"]).stdin(Stdio::null());
    for (key, value) in rein.get_envs() {
        match value {
            Some(value) => command.env(key, value),
            None => command.env_remove(key),
        };
    }
    let output = command.output().unwrap();
    assert_exit(&output, 0);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("\r\x1b[2Kbatch: 5/5 done, 0 running, 0 failed, pass rate 100%"),
        "{text:?}"
    );
    assert!(!text.contains("batch: started"), "no plain lines on a terminal: {text:?}");
    assert!(text.contains("calc: verified (completed)"), "{text:?}");
}
