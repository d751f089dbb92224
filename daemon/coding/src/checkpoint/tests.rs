use super::*;
use std::fs;

struct Fixture {
    _home: tempfile::TempDir,
    project: tempfile::TempDir,
    settings: CheckpointSettings,
}

fn fixture() -> Fixture {
    let home = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    let settings = CheckpointSettings {
        root: Some(home.path().join("checkpoints")),
        ..CheckpointSettings::default()
    };
    Fixture { _home: home, project, settings }
}

impl Fixture {
    fn path(&self, name: &str) -> PathBuf {
        self.project.path().join(name)
    }

    fn write(&self, name: &str, text: &str) {
        let path = self.path(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn read(&self, name: &str) -> Option<String> {
        fs::read_to_string(self.path(name)).ok()
    }

    async fn store(&self) -> CheckpointStore {
        CheckpointStore::open(&self.settings, self.project.path(), "s-1").await.unwrap().unwrap()
    }
}

#[tokio::test]
async fn off_when_no_root_or_disabled() {
    let f = fixture();
    let mut settings = f.settings.clone();
    settings.enabled = false;
    assert!(CheckpointStore::open(&settings, f.project.path(), "s").await.unwrap().is_none());
    settings = CheckpointSettings::default();
    assert!(CheckpointStore::open(&settings, f.project.path(), "s").await.unwrap().is_none());
}

#[tokio::test]
async fn restore_undoes_edits_creations_and_deletions_in_a_plain_directory() {
    let f = fixture();
    f.write("a.txt", "alpha\n");
    f.write("src/b.rs", "fn b() {}\n");
    f.write("gone.txt", "keep me\n");
    let store = f.store().await;
    let before = store.snapshot().await.unwrap();

    f.write("a.txt", "changed\n");
    fs::remove_file(f.path("gone.txt")).unwrap();
    f.write("new/dir/c.txt", "created\n");
    let current = store.snapshot().await.unwrap();
    let mut changes = store.changes(&before.tree, &current.tree).await.unwrap();
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(
        changes,
        vec![
            FileChange { path: "a.txt".into(), change: FileChangeKind::Modified },
            FileChange { path: "gone.txt".into(), change: FileChangeKind::Deleted },
            FileChange { path: "new/dir/c.txt".into(), change: FileChangeKind::Added },
        ]
    );
    let patch = store.patch(&before.tree, &current.tree).await.unwrap();
    assert!(patch.contains("-alpha\n+changed"), "{patch}");

    let done = store.restore(&before.tree, &current.tree).await.unwrap();
    assert_eq!(done.removed, vec!["new/dir/c.txt".to_string()]);
    assert_eq!(f.read("a.txt").as_deref(), Some("alpha\n"));
    assert_eq!(f.read("gone.txt").as_deref(), Some("keep me\n"));
    assert!(!f.path("new").exists(), "emptied directories go too");
    assert_eq!(store.snapshot().await.unwrap().tree, before.tree);
    // The project never became a git repository.
    assert!(!f.path(".git").exists());
}

#[tokio::test]
async fn ignored_files_are_neither_snapshotted_nor_removed() {
    let f = fixture();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("main.rs", "fn main() {}\n");
    let store = f.store().await;
    let before = store.snapshot().await.unwrap();
    f.write("target/debug/app", "binary");
    f.write("run.log", "log");
    let current = store.snapshot().await.unwrap();
    assert_eq!(before.tree, current.tree);
    store.restore(&before.tree, &current.tree).await.unwrap();
    assert_eq!(f.read("run.log").as_deref(), Some("log"));
}

#[tokio::test]
async fn the_users_repository_and_index_are_untouched() {
    let f = fixture();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(f.project.path())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    git(&["init", "-q"]);
    f.write("tracked.txt", "one\n");
    git(&["add", "tracked.txt"]);
    git(&["commit", "-q", "-m", "first"]);
    let index_before = fs::read(f.path(".git/index")).unwrap();
    let store = f.store().await;
    let before = store.snapshot().await.unwrap();
    f.write("tracked.txt", "two\n");
    f.write("untracked.txt", "new\n");
    let current = store.snapshot().await.unwrap();
    store.restore(&before.tree, &current.tree).await.unwrap();
    assert_eq!(f.read("tracked.txt").as_deref(), Some("one\n"));
    assert!(!f.path("untracked.txt").exists());
    assert_eq!(fs::read(f.path(".git/index")).unwrap(), index_before);
    assert_eq!(git(&["rev-list", "--count", "HEAD"]).trim(), "1");
    assert_eq!(git(&["status", "--porcelain"]).trim(), "");
}

#[tokio::test]
async fn oversized_files_are_reported_and_a_snapshot_over_the_cap_is_refused() {
    let mut f = fixture();
    f.settings.max_file_bytes = 10;
    f.write("small.txt", "tiny");
    f.write("big.bin", "this is more than ten bytes");
    let store = f.store().await;
    let snapshot = store.snapshot().await.unwrap();
    assert_eq!(snapshot.skipped, vec![SkippedFile { path: "big.bin".into(), bytes: 27 }]);
    let tree = store.git.run(&["ls-tree", "-r", "--name-only", &snapshot.tree], &[]).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&tree).trim(), "small.txt");

    f.settings.max_file_bytes = DEFAULT_MAX_FILE_BYTES;
    f.settings.max_snapshot_bytes = 20;
    let capped =
        CheckpointStore::open(&f.settings, f.project.path(), "s-2").await.unwrap().unwrap();
    match capped.snapshot().await {
        Err(CheckpointError::TooLarge { bytes: 31, cap: 20 }) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn modes_and_symlinks_come_back() {
    use std::os::unix::fs::PermissionsExt;
    let f = fixture();
    f.write("run.sh", "#!/bin/sh\n");
    fs::set_permissions(f.path("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("run.sh", f.path("link")).unwrap();
    let store = f.store().await;
    let before = store.snapshot().await.unwrap();
    fs::set_permissions(f.path("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::remove_file(f.path("link")).unwrap();
    let current = store.snapshot().await.unwrap();
    store.restore(&before.tree, &current.tree).await.unwrap();
    let mode = fs::metadata(f.path("run.sh")).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0o111, "{mode:o}");
    assert_eq!(fs::read_link(f.path("link")).unwrap(), PathBuf::from("run.sh"));
}

#[tokio::test]
async fn a_lock_left_by_a_killed_git_does_not_block_later_snapshots() {
    let f = fixture();
    f.write("a.txt", "a");
    let store = f.store().await;
    store.snapshot().await.unwrap();
    let mut lock = store.git.index.clone().into_os_string();
    lock.push(".lock");
    fs::write(&lock, "").unwrap();
    f.write("a.txt", "b");
    store.snapshot().await.unwrap();
}

#[test]
fn stores_are_per_directory() {
    let root = Path::new("/r");
    assert_ne!(store_dir(root, Path::new("/a")), store_dir(root, Path::new("/b")));
    assert_eq!(store_dir(root, Path::new("/a")), store_dir(root, Path::new("/a")));
}
