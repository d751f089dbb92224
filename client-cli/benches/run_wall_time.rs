//! Wall time of `rein run` for a one-turn prompt answered by the scripted fake provider:
//! with the daemon already up (target: under 20 ms) and with a cold daemon that `rein` has to
//! start. Plain `Instant` timing of the real release binaries; prints a Markdown table.
//!
//! Run with `cargo bench -p rein-cli --bench run_wall_time`.

use rein_testkit::daemon::DaemonFixture;
use rein_testkit::fake_provider::{FakeOptions, FakeProvider, Reply};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const WARM_RUNS: usize = 50;
const COLD_RUNS: usize = 10;

fn main() {
    let runtime =
        match tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build() {
            Ok(runtime) => runtime,
            Err(error) => return eprintln!("cannot start a runtime: {error}"),
        };
    let options = FakeOptions { loop_script: true, ..FakeOptions::default() };
    let fake = match runtime.block_on(FakeProvider::start_with(vec![Reply::text("ok")], options)) {
        Ok(fake) => fake,
        Err(error) => return eprintln!("cannot start the fake provider: {error}"),
    };
    let mut daemon = DaemonFixture::new();
    let config = format!(
        "model = \"fake/test-model\"\n[providers.fake]\napi = \"openai-chat\"\nbase_url = \"{}\"\n\
         api_key_env = \"\"\n",
        fake.base_url()
    );
    if let Err(error) = std::fs::write(daemon.home().join("config.toml"), config) {
        return eprintln!("cannot write the configuration: {error}");
    }
    let project = std::env::temp_dir();

    daemon.spawn();
    for _ in 0..5 {
        run_once(&daemon, &project);
    }
    let warm: Vec<Duration> = (0..WARM_RUNS).map(|_| run_once(&daemon, &project)).collect();
    daemon.kill();
    // The floor: the same request posted by a minimal client, plus one process spawn.
    let Some(body) = fake.requests().last().and_then(|r| serde_json::to_vec(&r.body).ok()) else {
        return eprintln!("the fake provider recorded no request");
    };
    let floor: Vec<Duration> = (0..WARM_RUNS)
        .map(|_| {
            let start = Instant::now();
            let spawned = Command::new("sh").args(["-c", "true"]).status();
            let posted = rein_testkit::floor::post(&fake.base_url(), "/v1/chat/completions", &body);
            assert!(spawned.is_ok_and(|s| s.success()) && posted.is_ok(), "the floor failed");
            start.elapsed()
        })
        .collect();

    let mut cold = Vec::new();
    for _ in 0..COLD_RUNS {
        // The fixture's daemon is gone; `rein` starts a detached one, stopped after timing.
        cold.push(run_once(&daemon, &project));
        let _ = daemon.rein().args(["daemon", "stop"]).stdout(Stdio::null()).status();
    }

    println!("| scenario | runs | min | median | p90 | mean |");
    println!("| --- | --- | --- | --- | --- | --- |");
    print_row("floor: spawn + the same request", &floor);
    print_row("daemon up", &warm);
    print_row("cold daemon", &cold);
    let median = |samples: &[Duration]| {
        let mut sorted = samples.to_vec();
        sorted.sort();
        sorted[sorted.len() / 2].as_secs_f64()
    };
    println!(
        "\nmedians as ratios: daemon up {:.2}x the floor, cold daemon {:.2}x the floor and {:.2}x \
         daemon up",
        median(&warm) / median(&floor),
        median(&cold) / median(&floor),
        median(&cold) / median(&warm)
    );
}

/// One timed `rein run`; panics if it fails, since a failed run measures nothing.
fn run_once(daemon: &DaemonFixture, project: &std::path::Path) -> Duration {
    let mut command: Command = daemon.rein();
    command
        .args(["run", "--approve", "yolo", "say ok"])
        .current_dir(project)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let start = Instant::now();
    let status = command.status();
    let elapsed = start.elapsed();
    assert!(status.is_ok_and(|s| s.success()), "rein run failed");
    elapsed
}

fn print_row(name: &str, samples: &[Duration]) {
    let mut sorted = samples.to_vec();
    sorted.sort();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
    let mean = sorted.iter().sum::<Duration>() / sorted.len().max(1) as u32;
    println!(
        "| {name} | {} | {} | {} | {} | {} |",
        sorted.len(),
        ms(sorted[0]),
        ms(at(0.5)),
        ms(at(0.9)),
        ms(mean)
    );
}
