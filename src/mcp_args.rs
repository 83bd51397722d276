//! Arguments of our MCP tools (the toolbox and `mcp --manager`): typed, with the typed schema
//! in `tools/list`, and arguments that do not fit (a wrong type, an unknown key) answered with a
//! JSON-RPC invalid-params error (-32602) naming the problem, as MCP clients expect of a server
//! whose schema they did not follow. (rmcp would turn them into an `isError` tool result.)

use std::borrow::Cow;

use rmcp::ErrorData;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

/// `T`, or why the arguments were not a `T`.
pub struct Checked<T>(Result<T, String>);

impl<T> Checked<T> {
    /// The arguments, or the invalid-params error to answer with.
    pub fn get(self) -> Result<T, ErrorData> {
        self.0.map_err(|why| ErrorData::invalid_params(format!("invalid arguments: {why}"), None))
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        Ok(Checked(serde_json::from_value(value).map_err(|e| e.to_string())))
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        T::json_schema(generator)
    }
    fn inline_schema() -> bool {
        T::inline_schema()
    }
}

/// How our MCP servers introduce themselves: guild-hall and its version, not the library's.
pub fn implementation() -> rmcp::model::Implementation {
    let mut i = rmcp::model::Implementation::from_build_env();
    i.name = env!("CARGO_PKG_NAME").to_string();
    i.version = env!("CARGO_PKG_VERSION").to_string();
    i.title = Some("guild-hall".to_string());
    i
}
