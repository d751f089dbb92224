//! What checkpoints cost on a 10,000-file project: the first snapshot of a session (every
//! file hashed into the private store), a snapshot when nothing changed (the per-turn cost of
//! a read-only turn), a snapshot after a turn changed ten files, and undoing those ten files.
//!
//! Run with `cargo bench -p rein-coding --bench checkpoint_bench` (add `--profile dev` to
//! skip the release build: the time is spent in `git` processes and file I/O, not in rein's
//! code). Each case reports the median of several runs.

use std::path::Path;
use std::time::{Duration, Instant};

use rein_coding::checkpoint::{CheckpointSettings, CheckpointStore};

const FILES: usize = 10_000;
const RUNS: usize = 7;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn report(name: &str, samples: Vec<Duration>) {
    println!("{name:<52} median {:>10.1} ms", median(samples).as_secs_f64() * 1e3);
}

/// 10,000 files of about 1.5 KB in 100 directories, plus an ignored build directory.
fn generate(root: &Path) -> std::io::Result<u64> {
    let mut bytes = 0;
    std::fs::write(root.join(".gitignore"), "target/\n")?;
    for i in 0..FILES {
        let dir = root.join(format!("src/module_{:03}", i % 100));
        std::fs::create_dir_all(&dir)?;
        let text: String =
            (0..30).map(|line| format!("// file {i} line {line} of generated text\n")).collect();
        bytes += text.len() as u64;
        std::fs::write(dir.join(format!("file_{i:05}.rs")), text)?;
    }
    std::fs::create_dir_all(root.join("target"))?;
    std::fs::write(root.join("target/big.bin"), vec![0_u8; 1 << 20])?;
    Ok(bytes)
}

fn touch_ten(root: &Path, round: usize) -> std::io::Result<()> {
    for i in 0..10 {
        let file = i * 997 % FILES;
        let path = root.join(format!("src/module_{:03}/file_{file:05}.rs", file % 100));
        std::fs::write(path, format!("// changed in round {round}\n"))?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async {
        let home = tempfile::tempdir()?;
        let project = tempfile::tempdir()?;
        let bytes = generate(project.path())?;
        println!("project: {FILES} files, {} KiB (plus an ignored 1 MiB file)", bytes / 1024);
        let settings = CheckpointSettings {
            root: Some(home.path().join("checkpoints")),
            ..CheckpointSettings::default()
        };

        let mut first = Vec::new();
        for run in 0..RUNS {
            // A new session: a fresh index, every file hashed (objects already stored after
            // the first run are not written again).
            let store = CheckpointStore::open(&settings, project.path(), &format!("first-{run}"))
                .await?
                .ok_or("checkpoints off")?;
            let start = Instant::now();
            store.snapshot().await?;
            first.push(start.elapsed());
        }
        report("first snapshot of a session (10,000 files)", first);

        let store = CheckpointStore::open(&settings, project.path(), "steady")
            .await?
            .ok_or("checkpoints off")?;
        let base = store.snapshot().await?;
        let mut unchanged = Vec::new();
        for _ in 0..RUNS {
            let start = Instant::now();
            store.snapshot().await?;
            unchanged.push(start.elapsed());
        }
        report("snapshot, nothing changed", unchanged);

        let mut changed = Vec::new();
        let mut undo = Vec::new();
        for round in 0..RUNS {
            touch_ten(project.path(), round)?;
            let start = Instant::now();
            let current = store.snapshot().await?;
            changed.push(start.elapsed());
            let start = Instant::now();
            let done = store.restore(&base.tree, &current.tree).await?;
            undo.push(start.elapsed());
            assert_eq!(done.restored.len(), 10);
            store.snapshot().await?;
        }
        report("snapshot after a turn changed 10 files", changed);
        report("restore those 10 files (undo, after its snapshot)", undo);
        let size = dir_size(&home.path().join("checkpoints"))?;
        println!("store size after the runs: {} KiB", size / 1024);
        Ok::<(), Box<dyn std::error::Error>>(())
    })
}

fn dir_size(path: &Path) -> std::io::Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(path)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() { dir_size(&entry.path())? } else { meta.len() };
    }
    Ok(total)
}
