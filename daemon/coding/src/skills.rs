//! Skills in the Agent Skills layout: `<skills dir>/<skill-name>/SKILL.md`, whose YAML front
//! matter gives `name` and `description`.
//!
//! Only the index (name, description, path) goes into the system prompt; the model reads a
//! skill's file with `read` when a task calls for it. A skill that cannot be used is skipped
//! with a reason, never an error that stops the session.

use std::path::{Path, PathBuf};

use crate::instructions::Scope;

/// The file that defines a skill inside its directory.
pub const SKILL_FILE_NAME: &str = "SKILL.md";
/// The longest skill name allowed.
const MAX_NAME_CHARS: usize = 64;
/// The longest description allowed.
const MAX_DESCRIPTION_CHARS: usize = 1024;

/// A usable skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (equal to its directory's name).
    pub name: String,
    /// When to use it, for the model.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: PathBuf,
    /// Where it comes from.
    pub scope: Scope,
}

/// A skill that was left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedSkill {
    /// Its `SKILL.md` (or its directory, when the file is missing).
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

/// The skills found in some skills directories.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    /// Usable skills, in directory order, each name once.
    pub skills: Vec<Skill>,
    /// Skills left out, with the reason.
    pub skipped: Vec<SkippedSkill>,
}

impl SkillSet {
    /// Adds the skills of `dir` (a directory whose subdirectories are skills). A name already
    /// present is skipped, so directories added first take precedence. A missing `dir` adds
    /// nothing.
    pub fn add_dir(&mut self, dir: &Path, scope: Scope) {
        for skill_dir in skill_dirs(dir) {
            let file = skill_dir.join(SKILL_FILE_NAME);
            match load_skill(&skill_dir, scope) {
                Ok(skill) => match self.skills.iter().find(|s| s.name == skill.name) {
                    Some(existing) => self.skipped.push(SkippedSkill {
                        path: file,
                        reason: format!(
                            "a skill named {} is already loaded from {}",
                            skill.name,
                            existing.path.display()
                        ),
                    }),
                    None => self.skills.push(skill),
                },
                Err(reason) => {
                    tracing::debug!(path = %file.display(), %reason, "skill skipped");
                    self.skipped.push(SkippedSkill { path: file, reason });
                }
            }
        }
    }
}

/// The subdirectories of a skills directory, sorted by name. Hidden ones are ignored.
pub fn skill_dirs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

/// Loads the skill in `skill_dir`, or says why it cannot be used.
pub fn load_skill(skill_dir: &Path, scope: Scope) -> Result<Skill, String> {
    let path = skill_dir.join(SKILL_FILE_NAME);
    let text = std::fs::read_to_string(&path).map_err(|err| match err.kind() {
        std::io::ErrorKind::NotFound => format!("no {SKILL_FILE_NAME} in the skill directory"),
        _ => format!("cannot read {SKILL_FILE_NAME}: {err}"),
    })?;
    let front = FrontMatter::parse(&text)?;
    let name = front.name.ok_or("the front matter has no name")?;
    let description = front.description.ok_or("the front matter has no description")?;
    validate_name(&name)?;
    let dir_name = skill_dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if dir_name.as_deref() != Some(name.as_str()) {
        return Err(format!(
            "the name {name} differs from the directory name {}",
            dir_name.unwrap_or_default()
        ));
    }
    if description.is_empty() {
        return Err("the description is empty".to_string());
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!("the description is longer than {MAX_DESCRIPTION_CHARS} characters"));
    }
    Ok(Skill { name, description, path, scope })
}

/// Skill names: 1 to 64 lowercase letters, digits and hyphens, no hyphen at either end and no
/// two in a row.
fn validate_name(name: &str) -> Result<(), String> {
    let valid_chars =
        name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if name.is_empty()
        || name.chars().count() > MAX_NAME_CHARS
        || !valid_chars
        || name.starts_with('-')
        || name.ends_with('-')
        || name.contains("--")
    {
        return Err(format!(
            "the name {name:?} is not 1-{MAX_NAME_CHARS} lowercase letters, digits and single \
             hyphens"
        ));
    }
    Ok(())
}

/// The two front matter fields a skill index needs.
///
/// Only the YAML subset skill files use for these is understood: `key: value` lines, values
/// optionally in single or double quotes, and folded (`>`) or literal (`|`) block scalars and
/// plain values continued on indented lines. Other keys are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// The `name` field.
    pub name: Option<String>,
    /// The `description` field.
    pub description: Option<String>,
}

impl FrontMatter {
    /// Parses the front matter at the start of `text` (between `---` lines).
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines = text.lines();
        if lines.next().map(str::trim_end) != Some("---") {
            return Err("the file does not start with front matter (---)".to_string());
        }
        let mut block = Vec::new();
        let mut closed = false;
        for line in lines {
            if line.trim_end() == "---" {
                closed = true;
                break;
            }
            block.push(line);
        }
        if !closed {
            return Err("the front matter is not closed with ---".to_string());
        }
        let mut front = Self::default();
        let mut i = 0;
        while i < block.len() {
            let line = block[i];
            i += 1;
            if line.starts_with([' ', '\t']) || line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(format!("front matter line is not `key: value`: {line}"));
            };
            let mut continuation = Vec::new();
            while i < block.len()
                && (block[i].starts_with([' ', '\t']) || block[i].trim().is_empty())
            {
                continuation.push(block[i]);
                i += 1;
            }
            let value = scalar(value.trim(), &continuation)?;
            match key.trim() {
                "name" => front.name = Some(value),
                "description" => front.description = Some(value),
                _ => {}
            }
        }
        Ok(front)
    }
}

/// The value of a scalar whose first line is `first` and whose indented continuation lines
/// follow.
fn scalar(first: &str, continuation: &[&str]) -> Result<String, String> {
    let more = || continuation.iter().map(|l| l.trim()).filter(|l| !l.is_empty());
    match first.chars().next() {
        Some('|') => {
            let indent = continuation
                .iter()
                .filter(|l| !l.trim().is_empty())
                .map(|l| l.len() - l.trim_start().len())
                .min()
                .unwrap_or(0);
            let lines: Vec<&str> =
                continuation.iter().map(|l| l.get(indent..).unwrap_or("").trim_end()).collect();
            Ok(lines.join("\n").trim_end().to_string())
        }
        Some('>') => Ok(more().collect::<Vec<_>>().join(" ")),
        Some(quote @ ('"' | '\'')) => {
            let joined: Vec<&str> = std::iter::once(first).chain(more()).collect();
            let joined = joined.join(" ");
            let inner = joined
                .strip_prefix(quote)
                .and_then(|rest| rest.strip_suffix(quote))
                .ok_or_else(|| format!("unterminated quoted value: {first}"))?;
            Ok(if quote == '"' {
                inner.replace("\\\"", "\"").replace("\\\\", "\\")
            } else {
                inner.replace("''", "'")
            })
        }
        _ => Ok(std::iter::once(first)
            .chain(more())
            .collect::<Vec<_>>()
            .join(" ")
            .trim()
            .to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_skill(root: &Path, dir: &str, text: &str) {
        std::fs::create_dir_all(root.join(dir)).unwrap();
        std::fs::write(root.join(dir).join(SKILL_FILE_NAME), text).unwrap();
    }

    #[test]
    fn front_matter_forms() {
        let front = FrontMatter::parse(
            "---\nname: pdf-tools\ndescription: \"Fill PDF forms: \\\"quoted\\\"\"\nlicense: MIT\n---\nbody",
        )
        .unwrap();
        assert_eq!(front.name.as_deref(), Some("pdf-tools"));
        assert_eq!(front.description.as_deref(), Some("Fill PDF forms: \"quoted\""));

        let folded =
            FrontMatter::parse("---\nname: x\ndescription: >\n  Use when\n  the user asks.\n---\n")
                .unwrap();
        assert_eq!(folded.description.as_deref(), Some("Use when the user asks."));

        let plain =
            FrontMatter::parse("---\ndescription: Use this\n  on long lines\n---\n").unwrap();
        assert_eq!(plain.description.as_deref(), Some("Use this on long lines"));

        let literal = FrontMatter::parse("---\ndescription: |\n  one\n    two\n---\n").unwrap();
        assert_eq!(literal.description.as_deref(), Some("one\n  two"));

        let single = FrontMatter::parse("---\nname: 'it''s'\n---\n").unwrap();
        assert_eq!(single.name.as_deref(), Some("it's"));
    }

    #[test]
    fn front_matter_errors() {
        assert!(FrontMatter::parse("# no front matter").is_err());
        assert!(FrontMatter::parse("---\nname: x\n").unwrap_err().contains("not closed"));
        assert!(FrontMatter::parse("---\njust text\n---\n").is_err());
        assert!(FrontMatter::parse("---\nname: \"open\n---\n").is_err());
    }

    #[test]
    fn valid_skills_are_indexed_and_invalid_ones_skipped_with_a_reason() {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path();
        write_skill(root, "deploy", "---\nname: deploy\ndescription: Ship a release.\n---\nSteps");
        write_skill(root, "Bad_Name", "---\nname: Bad_Name\ndescription: x\n---\n");
        write_skill(root, "other", "---\nname: mismatch\ndescription: x\n---\n");
        write_skill(root, "nodesc", "---\nname: nodesc\n---\n");
        std::fs::create_dir_all(root.join("empty")).unwrap();
        std::fs::create_dir_all(root.join(".hidden")).unwrap();
        std::fs::write(root.join("README.md"), "not a skill").unwrap();

        let mut set = SkillSet::default();
        set.add_dir(root, Scope::Global);
        assert_eq!(set.skills.len(), 1);
        assert_eq!(set.skills[0].name, "deploy");
        assert_eq!(set.skills[0].description, "Ship a release.");
        assert_eq!(set.skills[0].path, root.join("deploy/SKILL.md"));
        let reasons: Vec<(String, String)> = set
            .skipped
            .iter()
            .map(|s| {
                (
                    s.path.parent().unwrap().file_name().unwrap().to_string_lossy().into(),
                    s.reason.clone(),
                )
            })
            .collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(reasons[0].0 == "Bad_Name" && reasons[0].1.contains("lowercase"));
        assert!(reasons[1].0 == "empty" && reasons[1].1.contains("no SKILL.md"));
        assert!(reasons[2].0 == "nodesc" && reasons[2].1.contains("no description"));
        assert!(reasons[3].0 == "other" && reasons[3].1.contains("differs from the directory"));
    }

    #[test]
    fn the_first_directory_wins_a_name() {
        let temp = tempfile::tempdir().unwrap();
        let (a, b) = (temp.path().join("a"), temp.path().join("b"));
        write_skill(&a, "lint", "---\nname: lint\ndescription: project lint\n---\n");
        write_skill(&b, "lint", "---\nname: lint\ndescription: global lint\n---\n");
        let mut set = SkillSet::default();
        set.add_dir(&a, Scope::Project);
        set.add_dir(&b, Scope::Global);
        set.add_dir(&temp.path().join("missing"), Scope::Global);
        assert_eq!(set.skills.len(), 1);
        assert_eq!(set.skills[0].description, "project lint");
        assert!(set.skipped[0].reason.contains("already loaded"));
    }

    #[test]
    fn names_are_checked() {
        assert!(validate_name("a-b-3").is_ok());
        for bad in ["", "-a", "a-", "a--b", "A", "a b", &"a".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }
}
