//! A status vocabulary declared once ([`vocabulary!`]): the enum, each state's spelling, `ALL`,
//! `as_str`/`parse`, Display and FromStr, serde and JSON Schema, and the "expected one of …"
//! error text derived from the same list, so a state added is spelled everywhere at once.

/// Declare a status vocabulary: `label` names it in the error text ("unknown {label} "x"
/// (expected one of: …)"); each variant is given with its spelling.
macro_rules! vocabulary {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident ($label:literal) {
            $($(#[$vmeta:meta])* $variant:ident = $text:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        $vis enum $name {
            $($(#[$vmeta])* #[serde(rename = $text)] $variant,)+
        }

        impl $name {
            /// Every state, in the order declared.
            pub const ALL: [$name; [$($text),+].len()] = [$($name::$variant),+];

            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }

            pub fn parse(s: &str) -> Option<$name> {
                $name::ALL.into_iter().find(|st| st.as_str() == s)
            }

            #[cfg(test)]
            /// Why `s` is not one of these states, with every one of them.
            pub(crate) fn unknown(s: &str) -> String {
                $crate::artifact::vocabulary::UnknownState { label: $label, given: s.to_string(), expected: &[$($text),+] }.to_string()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl std::str::FromStr for $name {
            type Err = $crate::artifact::vocabulary::UnknownState;
            fn from_str(s: &str) -> Result<$name, $crate::artifact::vocabulary::UnknownState> {
                $name::parse(s).ok_or_else(|| $crate::artifact::vocabulary::UnknownState {
                    label: $label,
                    given: s.to_string(),
                    expected: &[$($text),+],
                })
            }
        }
    };
}

pub(crate) use vocabulary;

/// A state's text that is none of its vocabulary's: `label` names the vocabulary (`status`),
/// `expected` lists every state.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {label} {given:?} (expected one of: {})", .expected.join(", "))]
pub struct UnknownState {
    pub(crate) label: &'static str,
    pub(crate) given: String,
    pub(crate) expected: &'static [&'static str],
}

/// The frontmatter's `status:` as one of `S`'s states: `None` when absent, a problem (through
/// `bad`) when it is not a string or not one of them. Every artifact parser reads it so.
pub(crate) fn status_field<S: std::str::FromStr<Err = UnknownState>>(
    value: Option<&serde_yaml_ng::Value>,
    bad: &mut dyn FnMut(&str, String),
) -> Option<S> {
    match value {
        None | Some(serde_yaml_ng::Value::Null) => None,
        Some(serde_yaml_ng::Value::String(s)) => s.parse().map_err(|why: UnknownState| bad("status", why.to_string())).ok(),
        Some(_) => {
            bad("status", "status must be a string".into());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::artifact::plan::PlanStatus;
    use crate::artifact::{MeetingStatus, Status};

    /// The texts people see, as they were written by hand before.
    #[test]
    fn the_error_texts_are_derived_from_the_states() {
        assert_eq!(
            Status::unknown("x"),
            "unknown status \"x\" (expected one of: draft, pending, blocked, dispatched, in_progress, review, completed, failed, cancelled, abandoned)"
        );
        assert_eq!(MeetingStatus::unknown("x"), "unknown meeting status \"x\" (expected one of: requested, open, closed, declined)");
        assert_eq!(
            PlanStatus::unknown("x"),
            "unknown plan status \"x\" (expected one of: draft, pending, running, verifying, completed, halted, failed, cancelled)"
        );
        assert!(crate::plan::decide::TaskState::unknown("x").starts_with("unknown task state \"x\" (expected one of: queued, "));
        for s in Status::ALL {
            assert_eq!(s.to_string().parse::<Status>(), Ok(s));
            assert_eq!(serde_json::to_value(s).expect("json"), serde_json::Value::from(s.as_str()));
        }
    }
}
