//! Sections of the crate documentation (`lib.rs`), quoted in the reference so the two say the
//! same thing.

/// The crate root's source, whose `//!` lines are the crate documentation.
const LIB_SOURCE: &str = include_str!("../../protocol/src/lib.rs");

/// The body of the crate documentation section under `# <heading>`, as markdown paragraphs
/// (lines of one paragraph joined with spaces, paragraphs separated by a blank line). Empty
/// when the crate documentation has no such heading.
pub(crate) fn section(heading: &str) -> String {
    section_of(LIB_SOURCE, heading)
}

fn section_of(source: &str, heading: &str) -> String {
    let title = format!("# {heading}");
    let doc_lines = source.lines().map_while(|line| line.strip_prefix("//!"));
    let mut inside = false;
    let mut paragraphs: Vec<Vec<&str>> = vec![Vec::new()];
    for line in doc_lines {
        let line = line.trim();
        if line.starts_with('#') {
            if inside {
                break;
            }
            inside = line == title;
            continue;
        }
        if !inside {
            continue;
        }
        if line.is_empty() {
            paragraphs.push(Vec::new());
        } else if let Some(last) = paragraphs.last_mut() {
            last.push(line);
        }
    }
    paragraphs
        .iter()
        .filter(|lines| !lines.is_empty())
        .map(|lines| lines.join(" "))
        .collect::<Vec<_>>()
        .join("\n\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extracts_one_section_and_joins_its_lines() {
        let source = "//! Intro.\n//!\n//! # First\n//!\n//! One\n//! two.\n//!\n//! Three.\n\
                      //!\n//! # Second\n//!\n//! Other.\nuse x;\n";
        assert_eq!(section_of(source, "First"), "One two.\n\nThree.");
        assert_eq!(section_of(source, "Second"), "Other.");
        assert_eq!(section_of(source, "Missing"), "");
    }

    #[test]
    fn the_forward_compatibility_rule_is_found() {
        assert!(section("Forward compatibility").contains("major version"));
    }
}
