//! What a working directory contributes to the prompt: instruction files, skills and the
//! project config file, filtered by trust, plus a cheap fingerprint to notice changes.
//!
//! The host loads a [`ProjectContext`] when a session starts and, before each request, compares
//! [`ContextSources::fingerprint`] (a few `stat` calls) with the one it loaded; only when they
//! differ does it load again and rebuild the system prompt.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rein_protocol::method::ExcludedFile;

use crate::instructions::{self, InstructionFile, Scope};
use crate::paths;
use crate::skills::{SKILL_FILE_NAME, SkillSet, skill_dirs};

/// Why a project file is left out when the project is not trusted.
pub const UNTRUSTED_REASON: &str = "project not trusted";

/// The skills directories inside a project directory, in order of precedence.
pub const PROJECT_SKILL_DIRS: [&str; 2] = [".rein/skills", ".agents/skills"];

/// The project's own config file, relative to a project directory.
pub const PROJECT_CONFIG_FILE: &str = ".rein/config.toml";

/// Where the context of one session comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextSources {
    /// The session's working directory.
    pub cwd: PathBuf,
    /// The global config directory (its `AGENTS.md` is always used).
    pub global_dir: Option<PathBuf>,
    /// The global skills directory (always used).
    pub global_skills_dir: Option<PathBuf>,
    /// Whether the user trusts the project; without it, the project's own files are left out.
    pub trusted: bool,
}

/// The instruction files, skills and config file that apply to a session, and what was left
/// out.
#[derive(Debug, Clone, PartialEq)]
pub struct ProjectContext {
    /// Instruction files in prompt order: global first, then outermost to innermost.
    pub instructions: Vec<InstructionFile>,
    /// Usable skills.
    pub skills: SkillSet,
    /// The project config files to apply (outermost first), when trusted.
    pub project_config: Vec<PathBuf>,
    /// Project files left out, with the reason.
    pub excluded: Vec<ExcludedFile>,
    /// The fingerprint taken just before loading.
    pub fingerprint: ContextFingerprint,
}

/// The state of every file the context depends on (path, modification time, size), and the
/// trust decision. Equal fingerprints mean the context need not be loaded again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextFingerprint {
    trusted: bool,
    files: Vec<(PathBuf, Option<FileState>)>,
}

/// A file's modification time (when the platform has one) and size.
type FileState = (Option<SystemTime>, u64);

/// Where a session's project files can be, from one walk up from the cwd (the walk probes each
/// directory above it for `.git`).
struct ProjectLayout {
    /// The directories searched for instruction files, outermost first.
    instruction_dirs: Vec<PathBuf>,
    /// The project directories (see [`ContextSources::project_dirs`]).
    project_dirs: Vec<PathBuf>,
}

impl ContextSources {
    /// The project directories: the repository root (or the cwd outside a repository) and the
    /// cwd, without repeats.
    pub fn project_dirs(&self) -> Vec<PathBuf> {
        self.layout().project_dirs
    }

    fn layout(&self) -> ProjectLayout {
        let root = instructions::repo_root(&self.cwd);
        let instruction_dirs = instructions::instruction_dirs(&self.cwd, root.as_deref());
        let mut project_dirs = vec![root.unwrap_or_else(|| self.cwd.clone())];
        if project_dirs[0] != self.cwd {
            project_dirs.push(self.cwd.clone());
        }
        ProjectLayout { instruction_dirs, project_dirs }
    }

    fn skill_roots(&self, layout: &ProjectLayout) -> Vec<(PathBuf, Scope)> {
        let project = layout
            .project_dirs
            .iter()
            .rev()
            .flat_map(|dir| PROJECT_SKILL_DIRS.map(|sub| (dir.join(sub), Scope::Project)));
        project.chain(self.global_skills_dir.iter().map(|d| (d.clone(), Scope::Global))).collect()
    }

    /// Takes the fingerprint: one `stat` per candidate instruction file, config file, skills
    /// directory, skill directory and `SKILL.md`.
    pub fn fingerprint(&self) -> ContextFingerprint {
        self.fingerprint_of(&self.layout())
    }

    fn fingerprint_of(&self, layout: &ProjectLayout) -> ContextFingerprint {
        let mut watched =
            instructions::candidate_paths(self.global_dir.as_deref(), &layout.instruction_dirs);
        watched.extend(layout.project_dirs.iter().map(|dir| dir.join(PROJECT_CONFIG_FILE)));
        for (root, _) in self.skill_roots(layout) {
            for skill in skill_dirs(&root) {
                watched.push(skill.join(SKILL_FILE_NAME));
                watched.push(skill);
            }
            watched.push(root);
        }
        let files = watched
            .into_iter()
            .map(|path| {
                let stamp = std::fs::metadata(&path).ok().map(|m| (m.modified().ok(), m.len()));
                (path, stamp)
            })
            .collect();
        ContextFingerprint { trusted: self.trusted, files }
    }

    /// Loads `context` again if any file it depends on changed since it was loaded (or trust
    /// changed); answers whether it did, so the host knows to rebuild the system prompt.
    pub fn refresh(&self, context: &mut ProjectContext) -> bool {
        if self.fingerprint() == context.fingerprint {
            return false;
        }
        *context = self.load();
        true
    }

    /// Loads the context. Unreadable files are logged and left out rather than failing.
    pub fn load(&self) -> ProjectContext {
        let layout = self.layout();
        let fingerprint = self.fingerprint_of(&layout);
        let mut excluded = Vec::new();
        let mut instructions = Vec::new();
        let mut seen = Vec::new();

        let global = self.global_dir.as_deref().and_then(instructions::instruction_file_in);
        let project =
            layout.instruction_dirs.iter().filter_map(|dir| instructions::instruction_file_in(dir));
        let candidates = global
            .map(|path| (path, Scope::Global))
            .into_iter()
            .chain(project.map(|p| (p, Scope::Project)));
        for (path, scope) in candidates {
            let key = paths::canonical_key(&path);
            if seen.contains(&key) {
                continue;
            }
            seen.push(key);
            if scope == Scope::Project && !self.trusted {
                excluded.push(untrusted(&path));
                continue;
            }
            match std::fs::read_to_string(&path) {
                Ok(content) => instructions.push(InstructionFile { path, scope, content }),
                Err(err) => {
                    tracing::warn!(path = %path.display(), error = %err, "instruction file unreadable");
                    excluded.push(ExcludedFile {
                        path: path.display().to_string(),
                        reason: format!("unreadable: {err}"),
                    });
                }
            }
        }

        let mut skills = SkillSet::default();
        for (root, scope) in self.skill_roots(&layout) {
            if scope == Scope::Project && !self.trusted {
                excluded.extend(
                    skill_dirs(&root)
                        .into_iter()
                        .map(|dir| dir.join(SKILL_FILE_NAME))
                        .filter(|file| file.is_file())
                        .map(|file| untrusted(&file)),
                );
                continue;
            }
            skills.add_dir(&root, scope);
        }

        let mut project_config = Vec::new();
        for file in layout.project_dirs.iter().map(|dir| dir.join(PROJECT_CONFIG_FILE)) {
            if !file.is_file() {
                continue;
            }
            if self.trusted {
                project_config.push(file);
            } else {
                excluded.push(untrusted(&file));
            }
        }

        ProjectContext { instructions, skills, project_config, excluded, fingerprint }
    }
}

fn untrusted(path: &Path) -> ExcludedFile {
    ExcludedFile { path: path.display().to_string(), reason: UNTRUSTED_REASON.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Layout {
        _temp: tempfile::TempDir,
        global: PathBuf,
        global_skills: PathBuf,
        repo: PathBuf,
        cwd: PathBuf,
    }

    fn layout() -> Layout {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let repo = base.join("repo");
        let cwd = repo.join("crates/core");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let global = base.join("config");
        std::fs::create_dir_all(&global).unwrap();
        Layout { _temp: temp, global_skills: global.join("skills"), global, repo, cwd }
    }

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn sources(l: &Layout, trusted: bool) -> ContextSources {
        ContextSources {
            cwd: l.cwd.clone(),
            global_dir: Some(l.global.clone()),
            global_skills_dir: Some(l.global_skills.clone()),
            trusted,
        }
    }

    fn skill(root: &Path, name: &str, description: &str) {
        write(
            &root.join(name).join(SKILL_FILE_NAME),
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
        );
    }

    #[test]
    fn nested_instructions_come_outermost_first_after_the_global_file() {
        let l = layout();
        write(&l.global.join("AGENTS.md"), "global rules");
        write(&l.repo.join("AGENTS.md"), "repo rules");
        write(&l.repo.join("crates/CLAUDE.md"), "crates rules");
        write(&l.cwd.join("AGENTS.md"), "core rules");
        write(&l.cwd.join("CLAUDE.md"), "ignored: AGENTS.md is here");
        write(&l.repo.parent().unwrap().join("AGENTS.md"), "above the repo root");
        let context = sources(&l, true).load();
        let texts: Vec<&str> = context.instructions.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(texts, ["global rules", "repo rules", "crates rules", "core rules"]);
        assert_eq!(context.instructions[0].scope, Scope::Global);
        assert_eq!(context.instructions[1].scope, Scope::Project);
        assert!(context.excluded.is_empty());
    }

    #[test]
    fn untrusted_projects_leave_their_files_out_and_say_so() {
        let l = layout();
        write(&l.global.join("AGENTS.md"), "global rules");
        write(&l.repo.join("AGENTS.md"), "repo rules");
        write(&l.repo.join(PROJECT_CONFIG_FILE), "model = \"x\"");
        skill(&l.repo.join(".rein/skills"), "release", "Cut a release.");
        skill(&l.global_skills, "review", "Review a change.");

        let context = sources(&l, false).load();
        let texts: Vec<&str> = context.instructions.iter().map(|f| f.content.as_str()).collect();
        assert_eq!(texts, ["global rules"]);
        let names: Vec<&str> = context.skills.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["review"]);
        assert!(context.project_config.is_empty());
        let excluded: Vec<(String, &str)> =
            context.excluded.iter().map(|e| (e.path.clone(), e.reason.as_str())).collect();
        assert_eq!(
            excluded,
            [
                (l.repo.join("AGENTS.md").display().to_string(), UNTRUSTED_REASON),
                (
                    l.repo.join(".rein/skills/release/SKILL.md").display().to_string(),
                    UNTRUSTED_REASON
                ),
                (l.repo.join(PROJECT_CONFIG_FILE).display().to_string(), UNTRUSTED_REASON),
            ]
        );

        let trusted = sources(&l, true).load();
        assert_eq!(trusted.instructions.len(), 2);
        let names: Vec<&str> = trusted.skills.skills.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["release", "review"]);
        assert_eq!(trusted.project_config, [l.repo.join(PROJECT_CONFIG_FILE)]);
        assert!(trusted.excluded.is_empty());
    }

    #[test]
    fn skills_come_from_both_project_dirs_and_the_global_dir() {
        let l = layout();
        skill(&l.repo.join(".agents/skills"), "alpha", "From .agents.");
        skill(&l.cwd.join(".rein/skills"), "beta", "From the cwd.");
        skill(&l.global_skills, "alpha", "Shadowed by the project.");
        write(&l.global_skills.join("broken/SKILL.md"), "no front matter");
        let context = sources(&l, true).load();
        let index: Vec<(&str, &str)> = context
            .skills
            .skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(index, [("beta", "From the cwd."), ("alpha", "From .agents.")]);
        assert_eq!(context.skills.skipped.len(), 2);
    }

    #[test]
    fn the_fingerprint_changes_when_an_instruction_file_does() {
        let l = layout();
        let src = sources(&l, true);
        write(&l.repo.join("AGENTS.md"), "first");
        let before = src.fingerprint();
        assert_eq!(before, src.fingerprint(), "stable while nothing changes");

        write(&l.repo.join("AGENTS.md"), "second, longer");
        let after_edit = src.fingerprint();
        assert_ne!(before, after_edit);
        assert_eq!(src.load().instructions[0].content, "second, longer");

        write(&l.cwd.join("CLAUDE.md"), "new file");
        let after_new = src.fingerprint();
        assert_ne!(after_edit, after_new);

        skill(&l.global_skills, "new-skill", "Appeared.");
        assert_ne!(after_new, src.fingerprint());

        let untrusted = ContextSources { trusted: false, ..src.clone() };
        assert_ne!(src.fingerprint(), untrusted.fingerprint());
    }

    #[test]
    fn refresh_reloads_only_after_a_change() {
        let l = layout();
        let src = sources(&l, true);
        write(&l.cwd.join("AGENTS.md"), "v1");
        let mut context = src.load();
        assert!(!src.refresh(&mut context));
        write(&l.cwd.join("AGENTS.md"), "version 2");
        assert!(src.refresh(&mut context));
        assert_eq!(context.instructions[0].content, "version 2");
        assert!(!src.refresh(&mut context));
        std::fs::remove_file(l.cwd.join("AGENTS.md")).unwrap();
        assert!(src.refresh(&mut context));
        assert!(context.instructions.is_empty());
    }

    #[test]
    fn outside_a_repository_the_cwd_is_the_project() {
        let temp = tempfile::tempdir().unwrap();
        let cwd = temp.path().canonicalize().unwrap().join("plain");
        std::fs::create_dir_all(&cwd).unwrap();
        write(&cwd.join("AGENTS.md"), "plain rules");
        let src = ContextSources {
            cwd: cwd.clone(),
            global_dir: None,
            global_skills_dir: None,
            trusted: true,
        };
        assert_eq!(src.project_dirs(), std::slice::from_ref(&cwd));
        let context = src.load();
        assert_eq!(context.instructions.last().map(|f| f.content.as_str()), Some("plain rules"));
    }
}
