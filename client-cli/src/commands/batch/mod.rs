//! `rein batch`: many tasks, each in a fresh workspace and its own session, run by a pool of
//! workers against the daemon; per-task outputs, resumable, with a summary. `--shard I/N` runs
//! one part of the task file (for a Kubernetes Indexed Job); `rein batch merge` combines the
//! parts. See docs/batch.md.

pub mod atif;
pub mod merge;
pub mod outputs;
pub mod progress;
pub mod runner;
pub mod shard;
pub mod summary;
pub mod task;
pub mod workspace;

use crate::client::ClientError;
use crate::commands::exit;
use crate::interrupt::Interrupts;
use crate::session::ApproveArg;
use clap::{Args, Subcommand};
use outputs::{MANIFEST_FILE, TaskDir, TaskStatus};
use progress::Progress;
use rein_protocol::method::ApprovalPolicy;
use runner::{Budget, RunSettings};
use shard::Shard;
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;
use summary::Manifest;
use task::{Task, TaskFile};
use tokio::sync::watch;

/// `rein batch` arguments: a run, or `merge`.
#[derive(Debug, Clone, Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct BatchArgs {
    /// `merge`: combine shard outputs.
    #[command(subcommand)]
    pub command: Option<BatchCommand>,
    /// The run's options.
    #[command(flatten)]
    pub run: RunBatchArgs,
}

/// `rein batch` subcommands.
#[derive(Debug, Clone, Subcommand)]
pub enum BatchCommand {
    /// Combine the output directories of shards into one, with one summary.
    Merge {
        /// The shards' output directories.
        #[arg(value_name = "SHARD_DIR", required = true)]
        shards: Vec<PathBuf>,
        /// The directory to write the merged outputs and summary to.
        #[arg(long, value_name = "DIR", required = true)]
        out: PathBuf,
    },
}

/// Options of a batch run.
#[derive(Debug, Clone, Args)]
pub struct RunBatchArgs {
    /// The task file: one JSON task per line.
    #[arg(value_name = "TASKS.jsonl", required = true)]
    pub tasks: Option<PathBuf>,
    /// The output directory (`DIR/<id>/` per task, summaries at the top).
    #[arg(long, value_name = "DIR", required = true)]
    pub out: Option<PathBuf>,
    /// Tasks run at once.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub workers: u32,
    /// Run only the I-th of N shards of the task file (I from 0).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
    /// The model of tasks that name none (default: the daemon's configured model).
    #[arg(long, value_name = "PROVIDER/MODEL")]
    pub model: Option<String>,
    /// The batch's cost budget in US dollars: no task starts once it is spent (resumed runs
    /// count what earlier runs spent).
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_cost: Option<f64>,
    /// The most one task may cost, in US dollars (a task's own `limits.max_cost` may be lower).
    #[arg(long, value_name = "USD", value_parser = parse_cost)]
    pub max_task_cost: Option<f64>,
    /// The approval policy of the tasks' sessions (nobody is there to answer).
    #[arg(long, value_enum, value_name = "POLICY", default_value = "yolo")]
    pub approve: ApproveArg,
}

fn parse_cost(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(cost) if cost.is_finite() && cost >= 0.0 => Ok(cost),
        _ => Err(format!("`{text}` is not a cost in US dollars (e.g. 2.50)")),
    }
}

/// Runs `rein batch` and returns the exit code.
pub async fn run(socket: &Path, args: BatchArgs) -> Result<u8, ClientError> {
    match args.command {
        Some(BatchCommand::Merge { shards, out }) => Ok(merge::run(&shards, &out)),
        None => run_batch(socket, args.run).await,
    }
}

async fn run_batch(socket: &Path, args: RunBatchArgs) -> Result<u8, ClientError> {
    let (Some(tasks_path), Some(out)) = (args.tasks.clone(), args.out.clone()) else {
        eprintln!("rein batch: give a task file and --out DIR");
        return Ok(exit::USAGE);
    };
    let file = match TaskFile::load(&tasks_path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("rein batch: {error}");
            return Ok(exit::USAGE);
        }
    };
    std::fs::create_dir_all(&out)?;
    let out = std::fs::canonicalize(&out)?;
    let shard = args.shard.unwrap_or(Shard::ALL);
    let manifest = Manifest {
        tasks_file: tasks_path.display().to_string(),
        tasks_sha256: file.sha256.clone(),
        task_ids: file.ids(),
        shard,
    };
    if let Ok(existing) = Manifest::read(&out)
        && (existing.tasks_sha256 != manifest.tasks_sha256 || existing.shard != manifest.shard)
    {
        eprintln!(
            "rein batch: {} holds another batch ({} shard {}); use a new --out directory",
            out.display(),
            existing.tasks_file,
            existing.shard
        );
        return Ok(exit::USAGE);
    }
    outputs::write_json(&out.join(MANIFEST_FILE), &manifest)?;

    let ids = manifest.shard_ids();
    let mine: Vec<&Task> =
        file.tasks.iter().enumerate().filter(|(i, _)| shard.contains(*i)).map(|(_, t)| t).collect();
    let done = |task: &&Task| {
        TaskDir::new(&out, &task.id).result().is_some_and(|r| r.status == TaskStatus::Finished)
    };
    let spent: f64 =
        ids.iter().filter_map(|id| TaskDir::new(&out, id).result()).map(|r| r.cost_usd).sum();
    let pending: VecDeque<Task> = mine.iter().filter(|t| !done(t)).map(|t| (*t).clone()).collect();
    let skipped = mine.len() - pending.len();
    if skipped > 0 {
        eprintln!("batch: {skipped} of {} tasks already finished; skipping them", mine.len());
    }

    let settings = RunSettings {
        socket: socket.to_path_buf(),
        out: out.clone(),
        base_dir: file.base_dir.clone(),
        default_model: args.model.clone(),
        approval: ApprovalPolicy::from(args.approve),
        task_max_cost: args.max_task_cost,
    };
    let budget = Budget::new(args.max_cost, spent);
    let progress = Progress::new(pending.len(), std::io::stderr().is_terminal());
    let queue = Mutex::new(pending);
    let (interrupt_tx, interrupt_rx) = watch::channel(false);
    let mut interrupts = Interrupts::catch()?;
    // Kubernetes stops a pod with SIGTERM: treated like a first Ctrl-C.
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let workers = futures::future::join_all(
        (0..args.workers)
            .map(|_| worker(&settings, &queue, &budget, &progress, interrupt_rx.clone())),
    );
    tokio::pin!(workers);
    let mut ticker = tokio::time::interval(Duration::from_secs(1));
    let mut interrupted = false;
    loop {
        tokio::select! {
            _ = &mut workers => break,
            _ = ticker.tick() => progress.redraw(),
            Some(()) = terminate.recv(), if !interrupted => {
                interrupted = true;
                eprintln!("\nrein batch: terminated: cancelling the running tasks");
                let _ = interrupt_tx.send(true);
            }
            () = interrupts.next() => {
                if interrupted {
                    eprintln!("\nrein batch: interrupted again; leaving at once (running sessions go on in the daemon; re-run to resume)");
                    return Ok(exit::CANCELLED);
                }
                interrupted = true;
                eprintln!("\nrein batch: interrupting: cancelling the running tasks (Ctrl-C again to leave at once)");
                let _ = interrupt_tx.send(true);
            }
        }
    }
    progress.finish();
    let summary = summary::write(&out, &ids)?;
    eprintln!(
        "batch: {} of {} passed ({:.1}%), {} errors, {} not run, cost ${:.4}; see {}",
        summary.passed,
        summary.tasks,
        summary.pass_rate * 100.0,
        summary.errors,
        summary.not_run,
        summary.cost_usd,
        out.join("summary.md").display()
    );
    Ok(if interrupted {
        exit::CANCELLED
    } else if summary.errors > 0 {
        exit::FAILURE
    } else if summary.not_run > 0 {
        eprintln!("batch: the cost budget ran out before every task ran");
        exit::COST_LIMIT
    } else {
        exit::OK
    })
}

/// Takes tasks from the queue until it is empty, the budget is spent or the batch is
/// interrupted.
async fn worker(
    settings: &RunSettings,
    queue: &Mutex<VecDeque<Task>>,
    budget: &Budget,
    progress: &Progress,
    interrupt: watch::Receiver<bool>,
) {
    loop {
        if *interrupt.borrow() || budget.exhausted() {
            return;
        }
        let next = queue.lock().unwrap_or_else(std::sync::PoisonError::into_inner).pop_front();
        let Some(task) = next else { return };
        progress.started(&task.id);
        let result = runner::run_task(settings, &task, budget, &interrupt).await;
        progress.finished(&task.id, result.as_ref());
    }
}
