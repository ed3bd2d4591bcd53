//! Request bodies from bytes to types. Bytes that are not JSON are a 400 `malformed_json`;
//! JSON of the wrong shape or out of bounds is a 422 `validation_failed` whose `field` points
//! at the offending value (`items[1].quantity`). Every struct is read as a JSON object only.

use crate::http::Problem;
use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::error::Category;
use std::fmt;
use std::marker::PhantomData;

/// A struct read from a JSON object and nothing else. serde's derived structs also accept an
/// array of their fields in order (`["SKU-1", 2]` for `{"sku","quantity"}`), which the contract
/// does not allow; this wrapper asks the format for a map.
#[derive(Debug, Clone, PartialEq)]
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(V(PhantomData)).map(Object)
    }
}

/// Parses a request body into `T`.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, Problem> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Problem::malformed("body is empty"));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match serde_path_to_error::deserialize::<_, Object<T>>(&mut de) {
        Ok(Object(v)) => {
            de.end().map_err(|e| Problem::malformed(e.to_string()))?;
            Ok(v)
        }
        Err(e) => {
            let path = e.path().to_string();
            let inner = e.into_inner();
            if inner.classify() != Category::Data {
                return Err(Problem::malformed(inner.to_string()));
            }
            // The typed reader stops at the first value of the wrong shape; whether the rest is
            // JSON at all decides between 400 and 422. Only failed requests pay for this pass.
            if let Err(syntax) = serde_json::from_slice::<serde_json::Value>(bytes) {
                return Err(Problem::malformed(syntax.to_string()));
            }
            let p = Problem::validation(if path == "." { inner.to_string() } else { format!("{path}: {inner}") });
            Err(if path == "." { p } else { p.field(path) })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Code;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Line {
        sku: String,
        quantity: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Body {
        lines: Vec<Object<Line>>,
    }

    fn err(b: &str) -> (Code, Option<String>) {
        let p = parse::<Body>(b.as_bytes()).unwrap_err();
        (p.code, p.field)
    }

    #[test]
    fn a_well_formed_body_parses() {
        let b = parse::<Body>(br#" {"lines":[{"sku":"A","quantity":2}]} "#).unwrap();
        assert_eq!(b.lines, vec![Object(Line { sku: "A".into(), quantity: 2 })]);
    }

    #[test]
    fn bytes_that_are_not_json_are_malformed() {
        for b in ["", "  ", "{", "{\"lines\":", "{} x", "{\"lines\":[]}}", "{\"lines\":[1,]}", "nul"] {
            assert_eq!(err(b).0, Code::MalformedJson, "{b:?}");
        }
        // a value of the wrong shape early does not hide broken JSON later
        assert_eq!(err("{\"lines\":5, oops").0, Code::MalformedJson);
        let deep = format!("{}1{}", "[".repeat(5000), "]".repeat(5000));
        assert_eq!(err(&deep).0, Code::MalformedJson);
    }

    #[test]
    fn json_of_the_wrong_shape_names_the_field() {
        assert_eq!(err("[]"), (Code::ValidationFailed, None));
        assert_eq!(err("null"), (Code::ValidationFailed, None));
        assert_eq!(err("{}"), (Code::ValidationFailed, None));
        assert_eq!(err("{\"lines\":{}}"), (Code::ValidationFailed, Some("lines".into())));
        assert_eq!(err("{\"lines\":[],\"x\":1}"), (Code::ValidationFailed, Some("x".into())));
        assert_eq!(err("{\"lines\":[{\"sku\":\"A\",\"quantity\":\"1\"}]}").1.as_deref(), Some("lines[0].quantity"));
        assert_eq!(err("{\"lines\":[{\"sku\":\"A\",\"quantity\":-1}]}").1.as_deref(), Some("lines[0].quantity"));
        assert_eq!(err("{\"lines\":[{\"sku\":\"A\",\"quantity\":1,\"p\":0}]}").1.as_deref(), Some("lines[0].p"));
    }

    #[test]
    fn a_struct_written_as_an_array_is_refused() {
        assert_eq!(err("[[{\"sku\":\"A\",\"quantity\":1}]]").0, Code::ValidationFailed);
        assert_eq!(err("{\"lines\":[[\"A\",1]]}"), (Code::ValidationFailed, Some("lines[0]".into())));
    }
}
