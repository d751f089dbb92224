//! `rein batch merge SHARD_DIR... --out DIR`: copies the task directories of every shard into
//! one directory and writes the summary over the whole task file, the same one an unsharded
//! run writes.

use super::outputs::{self, MANIFEST_FILE, TaskDir, WORKSPACE_DIR};
use super::shard::Shard;
use super::summary::{self, Manifest};
use crate::commands::exit;
use std::path::{Path, PathBuf};

/// Merges `shards` into `out`; returns the exit code.
pub fn run(shards: &[PathBuf], out: &Path) -> u8 {
    match merge(shards, out) {
        Ok(summary) => {
            eprintln!(
                "batch merge: {} tasks, {} passed ({:.1}%), {} errors, {} not run, cost ${:.4}",
                summary.tasks,
                summary.passed,
                summary.pass_rate * 100.0,
                summary.errors,
                summary.not_run,
                summary.cost_usd
            );
            exit::OK
        }
        Err(error) => {
            eprintln!("rein batch merge: {error}");
            exit::USAGE
        }
    }
}

/// Checks that the shards belong to one task file and cover it exactly once, then merges.
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<summary::Summary, String> {
    let manifests = shards.iter().map(|dir| Manifest::read(dir)).collect::<Result<Vec<_>, _>>()?;
    let first = manifests.first().ok_or("no shard directories given")?;
    let count = first.shard.count;
    let mut seen = vec![false; count];
    for (manifest, dir) in manifests.iter().zip(shards) {
        if manifest.tasks_sha256 != first.tasks_sha256 || manifest.task_ids != first.task_ids {
            return Err(format!(
                "{} ran another task file than {}",
                dir.display(),
                shards[0].display()
            ));
        }
        if manifest.shard.count != count {
            return Err(format!(
                "{} is shard {}, not one of {count}",
                dir.display(),
                manifest.shard
            ));
        }
        if std::mem::replace(&mut seen[manifest.shard.index], true) {
            return Err(format!("shard {} is given twice", manifest.shard));
        }
    }
    let missing: Vec<String> = (0..count)
        .filter(|index| !seen[*index])
        .map(|index| Shard { index, count }.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(format!("missing shards: {}", missing.join(", ")));
    }
    std::fs::create_dir_all(out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    for (manifest, dir) in manifests.iter().zip(shards) {
        for id in manifest.shard_ids() {
            let from = TaskDir::new(dir, &id);
            if !from.root().is_dir() {
                continue;
            }
            let to = TaskDir::new(out, &id);
            if to.root().exists() {
                std::fs::remove_dir_all(to.root())
                    .map_err(|e| format!("cannot replace {}: {e}", to.root().display()))?;
            }
            outputs::copy_tree(from.root(), to.root(), &[WORKSPACE_DIR])
                .map_err(|e| format!("cannot copy {}: {e}", from.root().display()))?;
        }
    }
    let merged = Manifest { shard: Shard::ALL, ..first.clone() };
    outputs::write_json(&out.join(MANIFEST_FILE), &merged)
        .map_err(|e| format!("cannot write {}: {e}", out.join(MANIFEST_FILE).display()))?;
    summary::write(out, &merged.task_ids).map_err(|e| format!("cannot write the summary: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard_dir(root: &Path, name: &str, shard: Shard, sha: &str) -> std::io::Result<PathBuf> {
        let dir = root.join(name);
        std::fs::create_dir_all(&dir)?;
        let manifest = Manifest {
            tasks_file: "tasks.jsonl".into(),
            tasks_sha256: sha.into(),
            task_ids: vec!["a".into(), "b".into(), "c".into()],
            shard,
        };
        outputs::write_json(&dir.join(MANIFEST_FILE), &manifest)?;
        Ok(dir)
    }

    #[test]
    fn shards_must_cover_one_task_file_exactly_once() -> std::io::Result<()> {
        let root = tempfile::tempdir()?;
        let zero = shard_dir(root.path(), "s0", Shard { index: 0, count: 2 }, "x")?;
        let one = shard_dir(root.path(), "s1", Shard { index: 1, count: 2 }, "x")?;
        let other = shard_dir(root.path(), "o1", Shard { index: 1, count: 2 }, "y")?;
        let out = root.path().join("merged");
        let error = |dirs: &[PathBuf]| merge(dirs, &out).err().unwrap_or_default();
        assert!(error(std::slice::from_ref(&zero)).contains("missing shards: 1/2"));
        assert!(error(&[zero.clone(), zero.clone()]).contains("given twice"));
        assert!(error(&[zero.clone(), other]).contains("another task file"));
        std::fs::create_dir_all(one.join("b/workspace"))?;
        std::fs::write(one.join("b/patch.diff"), "p")?;
        let summary = merge(&[zero, one], &out).map_err(std::io::Error::other)?;
        assert_eq!(summary.tasks, 3);
        assert!(out.join("b/patch.diff").exists());
        assert!(!out.join("b/workspace").exists(), "workspaces are not copied");
        Ok(())
    }
}
