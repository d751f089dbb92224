//! Reading TOML configuration strictly: every table is parsed with unknown keys denied, and a
//! misspelled key or value is reported with the closest valid one ("did you mean").
//!
//! Both the user's `config.toml` (read by the daemon) and a project's `.rein/config.toml`
//! ([`crate::project_config`]) go through [`parse_strict`], so a typo is never silently
//! ignored anywhere.

use serde::de::DeserializeOwned;

/// A configuration document that cannot be used, with a hint when a name was misspelled.
#[derive(Debug, thiserror::Error)]
#[error("{error}{}", hint_text(.hint))]
pub struct ConfigParseError {
    /// What the TOML parser said (with the line and the key). Shown as part of this error's
    /// text rather than as its source, so error chains do not print it twice.
    pub error: Box<toml::de::Error>,
    /// The closest valid name, when the error was an unknown key or value.
    pub hint: Option<Hint>,
}

/// An unknown name and the valid one it most resembles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// The name written.
    pub unknown: String,
    /// The closest valid name.
    pub closest: String,
}

fn hint_text(hint: &Option<Hint>) -> String {
    match hint {
        Some(hint) => format!("did you mean `{}` instead of `{}`?", hint.closest, hint.unknown),
        None => String::new(),
    }
}

/// Parses `text` into `T`, whose tables deny unknown keys; errors carry a "did you mean" hint.
pub fn parse_strict<T: DeserializeOwned>(text: &str) -> Result<T, ConfigParseError> {
    toml::from_str(text).map_err(|source| {
        let hint = hint_for(source.message());
        ConfigParseError { error: Box::new(source), hint }
    })
}

/// The hint for serde's "unknown field `x`, expected one of `a`, `b`" (or "unknown variant")
/// message: the expected name closest to the unknown one, when one is close enough.
pub fn hint_for(message: &str) -> Option<Hint> {
    let rest = ["unknown field `", "unknown variant `"]
        .iter()
        .find_map(|lead| message.find(lead).map(|at| &message[at + lead.len()..]))?;
    let end = rest.find('`')?;
    let unknown = &rest[..end];
    let expected = &rest[end + 1..];
    let expected = &expected[expected.find("expected")?..];
    let candidates = expected.split('`').skip(1).step_by(2);
    closest(unknown, candidates)
        .map(|closest| Hint { unknown: unknown.to_string(), closest: closest.to_string() })
}

/// The candidate nearest to `unknown` by edit distance (case-insensitive), if it is near
/// enough to be a likely typo: at most a third of the longer name's length, at least 2, or one
/// name containing the other.
pub fn closest<'a>(unknown: &str, candidates: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let lower = unknown.to_lowercase();
    candidates
        .filter(|candidate| !candidate.is_empty())
        .map(|candidate| {
            let other = candidate.to_lowercase();
            let distance = strsim::levenshtein(&lower, &other);
            let limit = (lower.len().max(other.len()) / 3).max(2);
            let related = lower.contains(&other) || other.contains(&lower);
            (candidate, distance, distance <= limit || related)
        })
        .filter(|(_, _, near)| *near)
        .min_by_key(|(_, distance, _)| *distance)
        .map(|(candidate, _, _)| candidate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Doc {
        #[serde(default)]
        limits: Option<Limits>,
        #[serde(default)]
        approval_policy: Option<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Limits {
        max_cost: Option<f64>,
    }

    #[test]
    fn a_misspelled_table_or_key_names_the_closest_valid_one() {
        let err = parse_strict::<Doc>("[limit]\nmax_cost = 1.0\n").unwrap_err();
        assert_eq!(err.hint, Some(Hint { unknown: "limit".into(), closest: "limits".into() }));
        let text = err.to_string();
        assert!(text.contains("line 1"), "{text}");
        assert!(text.contains("did you mean `limits` instead of `limit`?"), "{text}");
        let err = parse_strict::<Doc>("approval_polcy = \"ask\"\n").unwrap_err();
        assert_eq!(err.hint.unwrap().closest, "approval_policy");
        let err = parse_strict::<Doc>("[limits]\nmax_cots = 1.0\n").unwrap_err();
        assert_eq!(err.hint.unwrap().closest, "max_cost");
    }

    #[test]
    fn nothing_close_gives_no_hint() {
        let err = parse_strict::<Doc>("zzzzzzzzzz = 1\n").unwrap_err();
        assert!(err.hint.is_none());
        assert!(err.to_string().contains("zzzzzzzzzz"), "{err}");
        assert_eq!(closest("abc", ["xyz"].into_iter()), None);
    }
}
