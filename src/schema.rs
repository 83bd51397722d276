//! `guild-hall schema <kind>`: the JSON Schema of each file a person writes, the artifacts'
//! ([`crate::artifact::schema`]) and a worker package's `worker.yaml`.

/// The kinds `guild-hall schema` prints.
pub const KINDS: [&str; 4] = ["commission", "meeting", "plan", "worker"];

/// The JSON Schema of `kind` (one of [`KINDS`]), pretty-printed.
pub fn schema(kind: &str) -> Option<String> {
    match kind {
        "worker" => serde_json::to_string_pretty(crate::worker::package::Manifest::schema()).ok(),
        _ => crate::artifact::schema::schema(kind),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_kind_has_a_schema() {
        for kind in super::KINDS {
            assert!(super::schema(kind).is_some(), "{kind}");
        }
        assert!(super::schema("nope").is_none());
    }
}
