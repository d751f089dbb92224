//! The progress display: on a terminal one status line redrawn in place (done, running,
//! failed, pass rate, cost, ETA); when stderr is piped, one plain line per finished task.

use super::outputs::{TaskResult, TaskStatus};
use std::io::Write;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Counts shown by the display.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Tasks this run will attempt.
    pub total: usize,
    /// Tasks done (finished or errored) in this run.
    pub done: usize,
    /// Tasks running now.
    pub running: usize,
    /// Tasks done that did not pass (errors included).
    pub failed: usize,
    /// Tasks done whose checks passed.
    pub passed: usize,
    /// Cost of the tasks done, in US dollars.
    pub cost: f64,
}

impl Counts {
    /// The status line; `elapsed` is the run's wall time so far.
    pub fn line(&self, elapsed: Duration) -> String {
        let rate = if self.done == 0 {
            "-".to_string()
        } else {
            format!("{:.0}%", 100.0 * self.passed as f64 / self.done as f64)
        };
        let eta = match self.total.saturating_sub(self.done) {
            0 => "0s".to_string(),
            _ if self.done == 0 => "?".to_string(),
            left => {
                let per_task = elapsed.as_secs_f64() / self.done as f64;
                format_duration(Duration::from_secs_f64(per_task * left as f64))
            }
        };
        format!(
            "batch: {}/{} done, {} running, {} failed, pass rate {rate}, cost ${:.4}, ETA {eta}",
            self.done, self.total, self.running, self.failed, self.cost
        )
    }
}

fn format_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m{:02}s", seconds / 60, seconds % 60),
        _ => format!("{}h{:02}m", seconds / 3600, (seconds % 3600) / 60),
    }
}

/// The display; shared by the workers.
#[derive(Debug)]
pub struct Progress {
    counts: Mutex<Counts>,
    started: Instant,
    terminal: bool,
}

impl Progress {
    /// A display for `total` tasks; `terminal` redraws a line in place.
    pub fn new(total: usize, terminal: bool) -> Self {
        Self {
            counts: Mutex::new(Counts { total, ..Counts::default() }),
            started: Instant::now(),
            terminal,
        }
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A task started.
    pub fn started(&self, id: &str) {
        self.counts().running += 1;
        if !self.terminal {
            eprintln!("batch: started {id}");
        }
        self.redraw();
    }

    /// A task ended (`None`: interrupted, it will run again).
    pub fn finished(&self, id: &str, result: Option<&TaskResult>) {
        let line = {
            let mut counts = self.counts();
            counts.running = counts.running.saturating_sub(1);
            if let Some(result) = result {
                counts.done += 1;
                counts.cost += result.cost_usd;
                if result.passed() {
                    counts.passed += 1;
                } else {
                    counts.failed += 1;
                }
            }
            counts.line(self.started.elapsed())
        };
        let what = match result {
            None => "interrupted (kept as partial; runs again next time)".to_string(),
            Some(result) if result.status == TaskStatus::Error => {
                format!("error: {}", result.error.as_deref().unwrap_or("unknown"))
            }
            Some(result) => format!(
                "{} ({}), ${:.4}, {:.1}s",
                json_name(&result.outcome),
                json_name(&result.end_reason),
                result.cost_usd,
                result.duration_ms as f64 / 1000.0
            ),
        };
        if self.terminal {
            eprint!("\r\x1b[2K{id}: {what}\n");
            self.redraw();
        } else {
            eprintln!("batch: {id}: {what}");
            eprintln!("{line}");
        }
    }

    /// Redraws the status line (terminal only); called on changes and once a second.
    pub fn redraw(&self) {
        if !self.terminal {
            return;
        }
        let line = self.counts().line(self.started.elapsed());
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K{line}");
        let _ = stderr.flush();
    }

    /// Ends the display with the final line.
    pub fn finish(&self) {
        let line = self.counts().line(self.started.elapsed());
        if self.terminal {
            eprint!("\r\x1b[2K{line}\n");
        } else {
            eprintln!("{line}");
        }
    }
}

fn json_name<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| "-".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_shows_rate_cost_and_eta() {
        let counts = Counts { total: 10, done: 4, running: 2, failed: 1, passed: 3, cost: 0.5 };
        assert_eq!(
            counts.line(Duration::from_secs(40)),
            "batch: 4/10 done, 2 running, 1 failed, pass rate 75%, cost $0.5000, ETA 1m00s"
        );
        let fresh = Counts { total: 3, ..Counts::default() };
        assert!(fresh.line(Duration::ZERO).ends_with("pass rate -, cost $0.0000, ETA ?"));
    }
}
