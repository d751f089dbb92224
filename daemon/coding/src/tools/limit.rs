//! `limit` arguments: a count of at least 1, checked where the arguments are parsed.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

/// How many results (lines, matches, entries, paths) a call asks for; never 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limit(u64);

impl Limit {
    /// The count asked for, or `default` when the call gave none.
    pub fn or(limit: Option<Self>, default: usize) -> usize {
        limit.map_or(default, |Self(n)| usize::try_from(n).unwrap_or(usize::MAX))
    }

    /// The count as given.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl<'de> Deserialize<'de> for Limit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match u64::deserialize(deserializer)? {
            0 => Err(serde::de::Error::custom("limit must be at least 1")),
            n => Ok(Self(n)),
        }
    }
}

impl JsonSchema for Limit {
    fn schema_name() -> Cow<'static, str> {
        "Limit".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "integer", "minimum": 1 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_is_refused_with_a_plain_message() {
        let err = serde_json::from_value::<Limit>(serde_json::json!(0)).unwrap_err();
        assert_eq!(err.to_string(), "limit must be at least 1");
        let limit: Limit = serde_json::from_value(serde_json::json!(7)).unwrap();
        assert_eq!((limit.get(), Limit::or(Some(limit), 3), Limit::or(None, 3)), (7, 7, 3));
    }
}
