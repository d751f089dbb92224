//! The batch's totals: `summary.json`, `summary.md` and `predictions.jsonl` (SWE-bench's
//! `instance_id`, `model_name_or_path`, `model_patch`), always computed from the task
//! directories in task-file order, so a merged set of shards gives the same totals as one run.

use super::outputs::{self, MANIFEST_FILE, PATCH_FILE, TaskDir, TaskResult, TaskStatus, Tokens};
use super::shard::Shard;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// `batch.json`: which task file and which part of it an output directory holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The task file as given.
    pub tasks_file: String,
    /// SHA-256 of the task file.
    pub tasks_sha256: String,
    /// Every task id of the file, in order.
    pub task_ids: Vec<String>,
    /// The shard this directory holds (`0/1`: all of it).
    pub shard: Shard,
}

impl Manifest {
    /// The ids of this directory's shard, in file order.
    pub fn shard_ids(&self) -> Vec<String> {
        self.task_ids
            .iter()
            .enumerate()
            .filter(|(position, _)| self.shard.contains(*position))
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Reads `DIR/batch.json`.
    pub fn read(dir: &Path) -> Result<Self, String> {
        let path = dir.join(MANIFEST_FILE);
        let text =
            std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_slice(&text)
            .map_err(|e| format!("{} is not a batch manifest: {e}", path.display()))
    }
}

/// One task's line in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskLine {
    /// The task.
    pub id: String,
    /// `finished`, `error` or `not_run`.
    pub state: String,
    /// `verified`, `verify_failed` or `unverified` (finished tasks).
    pub outcome: Option<String>,
    /// Why the run ended (finished tasks).
    pub end_reason: Option<String>,
    /// What it cost, in US dollars.
    pub cost_usd: f64,
}

/// A slow task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowTask {
    /// The task.
    pub id: String,
    /// Its wall time in milliseconds.
    pub duration_ms: u64,
}

/// `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Tasks covered.
    pub tasks: usize,
    /// Tasks whose run ended.
    pub finished: usize,
    /// Tasks that could not run (workspace, setup, daemon).
    pub errors: usize,
    /// Tasks not run yet (interrupted batch, or the cost budget ran out).
    pub not_run: usize,
    /// Tasks whose checks passed (`verified`).
    pub passed: usize,
    /// `passed / tasks` (0 with no tasks).
    pub pass_rate: f64,
    /// Finished tasks by outcome.
    pub outcomes: BTreeMap<String, usize>,
    /// Finished tasks by end reason.
    pub end_reasons: BTreeMap<String, usize>,
    /// Total cost in US dollars.
    pub cost_usd: f64,
    /// Total tokens.
    pub tokens: Tokens,
    /// Total model requests.
    pub turns: u64,
    /// Summed wall time of the tasks, in milliseconds.
    pub duration_ms: u64,
    /// The five slowest tasks, slowest first.
    pub slowest: Vec<SlowTask>,
    /// Every task in file order.
    pub results: Vec<TaskLine>,
}

/// How many tasks `slowest` lists.
const SLOWEST: usize = 5;

fn name<T: Serialize>(value: &T) -> Option<String> {
    serde_json::to_value(value).ok()?.as_str().map(str::to_string)
}

/// Totals over `ids` (in file order) of the task directories under `out`.
pub fn compute(out: &Path, ids: &[String]) -> Summary {
    let mut summary = Summary {
        tasks: ids.len(),
        finished: 0,
        errors: 0,
        not_run: 0,
        passed: 0,
        pass_rate: 0.0,
        outcomes: BTreeMap::new(),
        end_reasons: BTreeMap::new(),
        cost_usd: 0.0,
        tokens: Tokens::default(),
        turns: 0,
        duration_ms: 0,
        slowest: Vec::new(),
        results: Vec::new(),
    };
    let mut durations = Vec::new();
    for id in ids {
        let result = TaskDir::new(out, id).result();
        let Some(result) = result else {
            summary.not_run += 1;
            summary.results.push(TaskLine {
                id: id.clone(),
                state: "not_run".into(),
                outcome: None,
                end_reason: None,
                cost_usd: 0.0,
            });
            continue;
        };
        let outcome = result.outcome.as_ref().and_then(name);
        let end_reason = result.end_reason.as_ref().and_then(name);
        match result.status {
            TaskStatus::Finished => {
                summary.finished += 1;
                *summary.outcomes.entry(outcome.clone().unwrap_or_default()).or_default() += 1;
                *summary.end_reasons.entry(end_reason.clone().unwrap_or_default()).or_default() +=
                    1;
            }
            TaskStatus::Error => summary.errors += 1,
        }
        summary.passed += usize::from(result.passed());
        summary.cost_usd += result.cost_usd;
        summary.tokens.add(&result.tokens);
        summary.turns += u64::from(result.turns);
        summary.duration_ms += result.duration_ms;
        durations.push(SlowTask { id: id.clone(), duration_ms: result.duration_ms });
        summary.results.push(TaskLine {
            id: id.clone(),
            state: name(&result.status).unwrap_or_default(),
            outcome,
            end_reason,
            cost_usd: result.cost_usd,
        });
    }
    if summary.tasks > 0 {
        summary.pass_rate = summary.passed as f64 / summary.tasks as f64;
    }
    durations.sort_by(|a, b| b.duration_ms.cmp(&a.duration_ms).then_with(|| a.id.cmp(&b.id)));
    durations.truncate(SLOWEST);
    summary.slowest = durations;
    summary
}

/// The Markdown form of a summary.
pub fn markdown(summary: &Summary) -> String {
    let mut text = String::from("# Batch summary\n\n");
    let _ = writeln!(
        text,
        "**Pass rate: {:.1}%** ({} of {} tasks verified)\n",
        summary.pass_rate * 100.0,
        summary.passed,
        summary.tasks
    );
    text.push_str("| | |\n| --- | --- |\n");
    let _ = writeln!(text, "| finished | {} |", summary.finished);
    let _ = writeln!(text, "| errors | {} |", summary.errors);
    let _ = writeln!(text, "| not run | {} |", summary.not_run);
    let _ = writeln!(text, "| cost | ${:.4} |", summary.cost_usd);
    let t = &summary.tokens;
    let _ = writeln!(
        text,
        "| tokens | {} ({} in, {} out, {} cache read, {} cache write) |",
        t.total, t.input, t.output, t.cache_read, t.cache_write
    );
    let _ = writeln!(text, "| turns | {} |", summary.turns);
    let _ = writeln!(text, "| task time | {:.1} s |", summary.duration_ms as f64 / 1000.0);
    for (title, counts) in [("Outcomes", &summary.outcomes), ("End reasons", &summary.end_reasons)]
    {
        let _ = writeln!(text, "\n## {title}\n\n| | tasks |\n| --- | --- |");
        for (key, count) in counts {
            let _ = writeln!(text, "| {key} | {count} |");
        }
    }
    text.push_str("\n## Slowest tasks\n\n| task | time |\n| --- | --- |\n");
    for slow in &summary.slowest {
        let _ = writeln!(text, "| {} | {:.1} s |", slow.id, slow.duration_ms as f64 / 1000.0);
    }
    text.push_str("\n## Tasks\n\n| task | state | outcome | end reason | cost |\n| --- | --- | --- | --- | --- |\n");
    for line in &summary.results {
        let _ = writeln!(
            text,
            "| {} | {} | {} | {} | ${:.4} |",
            line.id,
            line.state,
            line.outcome.as_deref().unwrap_or("-"),
            line.end_reason.as_deref().unwrap_or("-"),
            line.cost_usd
        );
    }
    text
}

/// `predictions.jsonl`: one line per finished task, in file order.
pub fn predictions(out: &Path, ids: &[String]) -> String {
    let mut text = String::new();
    for id in ids {
        let dir = TaskDir::new(out, id);
        let Some(result) = dir.result().filter(|r| r.status == TaskStatus::Finished) else {
            continue;
        };
        let patch = std::fs::read_to_string(dir.file(PATCH_FILE)).unwrap_or_default();
        let line = json!({
            "instance_id": id,
            "model_name_or_path": model_name(&result),
            "model_patch": patch,
        });
        text.push_str(&line.to_string());
        text.push('\n');
    }
    text
}

fn model_name(result: &TaskResult) -> String {
    result.model.clone().map_or_else(|| "rein".to_string(), |model| format!("rein/{model}"))
}

/// Writes `summary.json`, `summary.md` and `predictions.jsonl` for `ids` into `out`; returns
/// the summary.
pub fn write(out: &Path, ids: &[String]) -> std::io::Result<Summary> {
    let summary = compute(out, ids);
    outputs::write_json(&out.join("summary.json"), &summary)?;
    outputs::write_atomic(&out.join("summary.md"), markdown(&summary).as_bytes())?;
    outputs::write_atomic(&out.join("predictions.jsonl"), predictions(out, ids).as_bytes())?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rein_protocol::event::EndReason;
    use rein_protocol::verify::RunOutcome;

    fn result(id: &str, outcome: RunOutcome, cost: f64, ms: u64) -> TaskResult {
        TaskResult {
            id: id.into(),
            status: TaskStatus::Finished,
            end_reason: Some(EndReason::Completed),
            outcome: Some(outcome),
            error: None,
            cost_usd: cost,
            tokens: Tokens { input: 10, output: 5, cache_read: 0, cache_write: 0, total: 15 },
            turns: 2,
            duration_ms: ms,
            session_id: Some("s".into()),
            model: Some("fake/m".into()),
            base_commit: None,
            verification: None,
            attempt: 1,
            started_at: String::new(),
            finished_at: String::new(),
        }
    }

    #[test]
    fn totals_cover_every_task() -> std::io::Result<()> {
        let out = tempfile::tempdir()?;
        for (task, outcome, cost, ms) in
            [("a", RunOutcome::Verified, 0.25, 100), ("b", RunOutcome::VerifyFailed, 0.5, 300)]
        {
            let dir = TaskDir::new(out.path(), task);
            std::fs::create_dir_all(dir.root())?;
            outputs::write_json(&dir.file("result.json"), &result(task, outcome, cost, ms))?;
            std::fs::write(dir.file(PATCH_FILE), format!("patch of {task}\n"))?;
        }
        let ids: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        let summary = write(out.path(), &ids)?;
        assert_eq!(
            (summary.tasks, summary.finished, summary.not_run, summary.passed),
            (3, 2, 1, 1)
        );
        assert!((summary.pass_rate - 1.0 / 3.0).abs() < 1e-9);
        assert_eq!(summary.outcomes.get("verified"), Some(&1));
        assert_eq!(summary.outcomes.get("verify_failed"), Some(&1));
        assert_eq!(summary.end_reasons.get("completed"), Some(&2));
        assert_eq!(summary.cost_usd, 0.75);
        assert_eq!(summary.tokens.total, 30);
        assert_eq!(summary.slowest[0].id, "b");
        assert_eq!(summary.results[2].state, "not_run");
        let md = std::fs::read_to_string(out.path().join("summary.md"))?;
        assert!(md.contains("Pass rate: 33.3%"), "{md}");
        let predictions = std::fs::read_to_string(out.path().join("predictions.jsonl"))?;
        let lines: Vec<serde_json::Value> =
            predictions.lines().filter_map(|l| serde_json::from_str(l).ok()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["instance_id"], "a");
        assert_eq!(lines[0]["model_name_or_path"], "rein/fake/m");
        assert_eq!(lines[1]["model_patch"], "patch of b\n");
        Ok(())
    }
}
