//! Assembling the system prompt: pure functions from the tools, the project context, extra
//! sections from the config, the date and the working directory to one string.

use std::path::Path;
use std::sync::Arc;

use rein_agent::Tool;

use crate::project::ProjectContext;

/// The behaviour every session starts from.
pub const BASE_PROMPT: &str = "\
You are a coding agent working in the user's project through the tools below. You read and \
change files and run commands on the user's machine to get their task done.

How to work:
- Understand before you change. Look at the relevant code with grep, find, ls and read before \
editing; follow the conventions already in the project (style, structure, libraries, tests).
- Make the change the task needs, completely, and no more. Do not refactor, reformat or \
rename beyond it unless asked.
- Check your work. Build, run the tests or run the program where you can, read the output, \
and fix what you broke. Say so plainly when you could not verify something.
- Prefer small, exact edits with edit over rewriting files with write.
- Never guess at file contents, paths, APIs or command output: look them up.
- Be careful with anything destructive or hard to undo (deleting files, force-pushing, \
dropping data, touching files outside the project). Ask first unless the user clearly asked \
for it.
- If the task is unclear or a decision is the user's to make, ask a short question instead \
of guessing.

How to answer:
- Be brief and direct. Lead with the result; skip preamble and flattery.
- Refer to code as `path:line` so the user can find it.
- When you finish, summarize what you changed and anything left undone or uncertain.";

/// Everything the system prompt is made of.
pub struct PromptInputs<'a> {
    /// The behaviour text; normally [`BASE_PROMPT`].
    pub base: &'a str,
    /// The session's tools, in the order they are offered.
    pub tools: &'a [Arc<dyn Tool>],
    /// Instruction files and skills.
    pub context: &'a ProjectContext,
    /// Extra sections from the config, appended as they are.
    pub extra_sections: &'a [String],
    /// Today's date.
    pub date: time::Date,
    /// The working directory.
    pub cwd: &'a Path,
}

/// Today's date (UTC; a daemon's local time zone is often unknown or not the user's).
pub fn today() -> time::Date {
    time::OffsetDateTime::now_utc().date()
}

/// The system prompt for `inputs`. Sections with nothing to say are left out.
pub fn system_prompt(inputs: &PromptInputs<'_>) -> String {
    let mut sections = vec![inputs.base.trim().to_string()];
    sections.extend(tools_section(inputs.tools));
    sections.extend(instructions_section(inputs.context));
    sections.extend(skills_section(inputs.context));
    sections.extend(
        inputs.extra_sections.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).map(String::from),
    );
    sections.push(format!(
        "Current date: {}\nCurrent working directory: {}",
        inputs.date,
        inputs.cwd.display()
    ));
    let mut prompt = sections.join("\n\n");
    prompt.push('\n');
    prompt
}

fn tools_section(tools: &[Arc<dyn Tool>]) -> Option<String> {
    if tools.is_empty() {
        return None;
    }
    let mut text = String::from("# Tools\n\nYou can call these tools:");
    for tool in tools {
        text.push_str(&format!("\n- {}: {}", tool.name(), tool.description()));
    }
    let guidance: Vec<&str> = tools.iter().filter_map(|t| t.guidance()).collect();
    if !guidance.is_empty() {
        text.push_str("\n\nGuidelines:");
        for line in guidance {
            text.push_str(&format!("\n- {line}"));
        }
    }
    Some(text)
}

fn instructions_section(context: &ProjectContext) -> Option<String> {
    let files: Vec<_> =
        context.instructions.iter().filter(|f| !f.content.trim().is_empty()).collect();
    if files.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Project instructions\n\nThe user and the project gave these instructions. Follow \
         them; where they disagree, a file in a deeper directory overrides one above it, and a \
         direct request from the user overrides both.",
    );
    for file in files {
        text.push_str(&format!("\n\n## {}\n\n{}", file.path.display(), file.content.trim()));
    }
    Some(text)
}

fn skills_section(context: &ProjectContext) -> Option<String> {
    let skills = &context.skills.skills;
    if skills.is_empty() {
        return None;
    }
    let mut text = String::from(
        "# Skills\n\nSkills are instructions for particular tasks. When a task matches a \
         skill's description, read its file with the read tool before you start, and follow \
         it. Paths in a skill are relative to the skill's directory.\n",
    );
    for skill in skills {
        text.push_str(&format!(
            "\n- {}: {}\n  file: {}",
            skill.name,
            skill.description,
            skill.path.display()
        ));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file_locks::FileLocks;
    use crate::instructions::{InstructionFile, Scope};
    use crate::project::ContextSources;
    use crate::skills::{Skill, SkillSet};
    use crate::tools::{ToolContext, coding_tools};
    use std::path::PathBuf;

    fn context(instructions: Vec<InstructionFile>, skills: Vec<Skill>) -> ProjectContext {
        let temp = tempfile::tempdir().unwrap();
        let mut context = ContextSources {
            cwd: temp.path().to_path_buf(),
            global_dir: None,
            global_skills_dir: None,
            trusted: true,
        }
        .load();
        context.instructions = instructions;
        context.skills = SkillSet { skills, skipped: vec![] };
        context
    }

    fn date() -> time::Date {
        time::Date::from_calendar_date(2026, time::Month::November, 30).unwrap()
    }

    #[test]
    fn every_part_appears_in_order() {
        let tools = coding_tools(ToolContext::new("/p", FileLocks::new(), "/tmp/out"));
        let context = context(
            vec![
                InstructionFile {
                    path: PathBuf::from("/home/u/.config/rein/AGENTS.md"),
                    scope: Scope::Global,
                    content: "Answer in English.\n".into(),
                },
                InstructionFile {
                    path: PathBuf::from("/p/AGENTS.md"),
                    scope: Scope::Project,
                    content: "Run `make check` before finishing.".into(),
                },
            ],
            vec![Skill {
                name: "release".into(),
                description: "Cut a release.".into(),
                path: PathBuf::from("/p/.rein/skills/release/SKILL.md"),
                scope: Scope::Project,
            }],
        );
        let extra = vec!["# Team\n\nWe use conventional commits.".to_string(), "  ".to_string()];
        let prompt = system_prompt(&PromptInputs {
            base: BASE_PROMPT,
            tools: &tools,
            context: &context,
            extra_sections: &extra,
            date: date(),
            cwd: Path::new("/p"),
        });
        let order = [
            "You are a coding agent",
            "# Tools",
            "- read: Read a file.",
            "- ls: List",
            "Guidelines:",
            "# Project instructions",
            "## /home/u/.config/rein/AGENTS.md\n\nAnswer in English.",
            "## /p/AGENTS.md\n\nRun `make check` before finishing.",
            "# Skills",
            "- release: Cut a release.\n  file: /p/.rein/skills/release/SKILL.md",
            "# Team\n\nWe use conventional commits.",
            "Current date: 2026-11-30\nCurrent working directory: /p\n",
        ];
        let mut from = 0;
        for part in order {
            let at = prompt[from..].find(part).unwrap_or_else(|| panic!("{part:?} in\n{prompt}"));
            from += at + part.len();
        }
        assert!(prompt.ends_with("Current working directory: /p\n"));
        for tool in &tools {
            assert!(prompt.contains(tool.guidance().unwrap()), "{}", tool.name());
        }
    }

    #[test]
    fn project_files_reach_the_prompt_only_when_trusted() {
        let temp = tempfile::tempdir().unwrap();
        let base = temp.path().canonicalize().unwrap();
        let (global, repo) = (base.join("global"), base.join("repo"));
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(&global).unwrap();
        std::fs::write(global.join("AGENTS.md"), "GLOBAL-RULE").unwrap();
        std::fs::write(repo.join("AGENTS.md"), "PROJECT-RULE").unwrap();
        let skill = repo.join(".agents/skills/bump");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(skill.join("SKILL.md"), "---\nname: bump\ndescription: BUMP-SKILL\n---\n")
            .unwrap();
        let prompt_for = |trusted: bool| {
            let context = ContextSources {
                cwd: repo.clone(),
                global_dir: Some(global.clone()),
                global_skills_dir: None,
                trusted,
            }
            .load();
            system_prompt(&PromptInputs {
                base: BASE_PROMPT,
                tools: &[],
                context: &context,
                extra_sections: &[],
                date: date(),
                cwd: &repo,
            })
        };
        let untrusted = prompt_for(false);
        assert!(untrusted.contains("GLOBAL-RULE"));
        assert!(!untrusted.contains("PROJECT-RULE"));
        assert!(!untrusted.contains("BUMP-SKILL"));
        let trusted = prompt_for(true);
        assert!(trusted.contains("GLOBAL-RULE"));
        assert!(trusted.contains("PROJECT-RULE"));
        assert!(trusted.contains("- bump: BUMP-SKILL"));
    }

    #[test]
    fn empty_sections_are_left_out() {
        let context = context(vec![], vec![]);
        let prompt = system_prompt(&PromptInputs {
            base: "Base.",
            tools: &[],
            context: &context,
            extra_sections: &[],
            date: date(),
            cwd: Path::new("/w"),
        });
        assert_eq!(prompt, "Base.\n\nCurrent date: 2026-11-30\nCurrent working directory: /w\n");
    }
}
