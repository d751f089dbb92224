//! The protocol version and the compatibility check made at `initialize`.

use serde::{Deserialize, Serialize};

/// The protocol version this crate describes, as `major.minor`.
///
/// The major number changes only when something is removed or changes meaning; the minor number
/// changes when something is added. See the crate documentation for the rule clients follow.
pub const PROTOCOL_VERSION: ProtocolVersion = ProtocolVersion { major: 1, minor: 0 };

/// A `major.minor` protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProtocolVersion {
    /// Incremented on breaking changes.
    pub major: u32,
    /// Incremented on additions.
    pub minor: u32,
}

impl ProtocolVersion {
    /// Parses `"1.0"` (a bare `"1"` means `1.0`).
    pub fn parse(text: &str) -> Option<Self> {
        let mut parts = text.trim().splitn(2, '.');
        let major = parts.next()?.parse().ok()?;
        let minor = match parts.next() {
            Some(minor) => minor.parse().ok()?,
            None => 0,
        };
        Some(Self { major, minor })
    }

    /// Whether a peer speaking `other` can talk to a peer speaking `self`: same major version.
    pub fn is_compatible_with(self, other: ProtocolVersion) -> bool {
        self.major == other.major
    }
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for ProtocolVersion {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ProtocolVersion {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Self::parse(&text).ok_or_else(|| {
            serde::de::Error::custom(format!("invalid protocol version {text:?}, want MAJOR.MINOR"))
        })
    }
}

impl schemars::JsonSchema for ProtocolVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ProtocolVersion".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9]+(\\.[0-9]+)?$",
            "description": "A MAJOR.MINOR protocol version."
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        assert_eq!(ProtocolVersion::parse("1.4"), Some(ProtocolVersion { major: 1, minor: 4 }));
        assert_eq!(ProtocolVersion::parse("2"), Some(ProtocolVersion { major: 2, minor: 0 }));
        assert_eq!(ProtocolVersion::parse("x.1"), None);
        assert_eq!(PROTOCOL_VERSION.to_string(), "1.0");
    }

    #[test]
    fn compatibility_is_by_major_version() {
        let v = ProtocolVersion { major: 1, minor: 0 };
        assert!(v.is_compatible_with(ProtocolVersion { major: 1, minor: 7 }));
        assert!(!v.is_compatible_with(ProtocolVersion { major: 2, minor: 0 }));
    }

    #[test]
    fn round_trips_as_a_string() {
        let json = serde_json::to_string(&PROTOCOL_VERSION).unwrap_or_default();
        assert_eq!(json, "\"1.0\"");
        let back: ProtocolVersion =
            serde_json::from_str(&json).unwrap_or(ProtocolVersion { major: 0, minor: 0 });
        assert_eq!(back, PROTOCOL_VERSION);
    }
}
