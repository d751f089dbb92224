//! Whole-number arguments of at least 1 (`limit`, `read`'s `offset`), checked where the
//! arguments are parsed.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer};

/// Defines a whole-number argument that is at least 1: its parse refuses 0 with a message
/// naming the argument, and its schema says `"minimum": 1`, so the two cannot disagree.
macro_rules! at_least_one {
    ($(#[$doc:meta])* $name:ident, $argument:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name(u64);

        impl $name {
            /// The number as given.
            pub fn get(self) -> u64 {
                self.0
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                match u64::deserialize(deserializer)? {
                    0 => Err(serde::de::Error::custom(concat!($argument, " must be at least 1"))),
                    n => Ok(Self(n)),
                }
            }
        }

        impl JsonSchema for $name {
            fn schema_name() -> Cow<'static, str> {
                stringify!($name).into()
            }

            fn inline_schema() -> bool {
                true
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({ "type": "integer", "minimum": 1 })
            }
        }
    };
}

at_least_one!(
    /// How many results (lines, matches, entries, paths) a call asks for; never 0.
    Limit,
    "limit"
);

at_least_one!(
    /// A 1-based line number (`read`'s `offset`); never 0.
    LineNumber,
    "offset"
);

impl Limit {
    /// The count asked for, or `default` when the call gave none.
    pub fn or(limit: Option<Self>, default: usize) -> usize {
        limit.map_or(default, |Self(n)| usize::try_from(n).unwrap_or(usize::MAX))
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
        let err = serde_json::from_value::<LineNumber>(serde_json::json!(0)).unwrap_err();
        assert_eq!(err.to_string(), "offset must be at least 1");
    }
}
