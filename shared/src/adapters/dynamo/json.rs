//! DynamoDB JSON (`{"S": "x"}`, `{"N": "1"}`, …) ⇄ SDK attribute values. Lambda delivers stream
//! images in this form; the local runner produces it from the Streams API.

use aws_sdk_dynamodb::primitives::Blob;
use aws_sdk_dynamodb::types::AttributeValue;
use base64::Engine;
use serde_json::{json, Map, Value};
use std::collections::HashMap;

pub fn to_json(v: &AttributeValue) -> Value {
    let b64 = |b: &Blob| base64::engine::general_purpose::STANDARD.encode(b.as_ref());
    match v {
        AttributeValue::S(s) => json!({ "S": s }),
        AttributeValue::N(n) => json!({ "N": n }),
        AttributeValue::Bool(b) => json!({ "BOOL": b }),
        AttributeValue::Null(_) => json!({ "NULL": true }),
        AttributeValue::B(b) => json!({ "B": b64(b) }),
        AttributeValue::Ss(v) => json!({ "SS": v }),
        AttributeValue::Ns(v) => json!({ "NS": v }),
        AttributeValue::Bs(v) => json!({ "BS": v.iter().map(b64).collect::<Vec<_>>() }),
        AttributeValue::L(v) => json!({ "L": v.iter().map(to_json).collect::<Vec<_>>() }),
        AttributeValue::M(m) => json!({ "M": item_to_json(m) }),
        _ => json!({ "NULL": true }),
    }
}

pub fn item_to_json(m: &HashMap<String, AttributeValue>) -> Map<String, Value> {
    m.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()
}

pub fn from_json(v: &Value) -> Option<AttributeValue> {
    let o = v.as_object()?;
    let (t, v) = o.iter().next()?;
    let strings =
        |v: &Value| -> Option<Vec<String>> { v.as_array()?.iter().map(|x| x.as_str().map(str::to_owned)).collect() };
    let blob = |v: &Value| -> Option<Blob> {
        base64::engine::general_purpose::STANDARD.decode(v.as_str()?).ok().map(Blob::new)
    };
    Some(match t.as_str() {
        "S" => AttributeValue::S(v.as_str()?.to_owned()),
        "N" => AttributeValue::N(v.as_str()?.to_owned()),
        "BOOL" => AttributeValue::Bool(v.as_bool()?),
        "NULL" => AttributeValue::Null(true),
        "B" => AttributeValue::B(blob(v)?),
        "SS" => AttributeValue::Ss(strings(v)?),
        "NS" => AttributeValue::Ns(strings(v)?),
        "BS" => AttributeValue::Bs(v.as_array()?.iter().map(blob).collect::<Option<_>>()?),
        "L" => AttributeValue::L(v.as_array()?.iter().map(from_json).collect::<Option<_>>()?),
        "M" => AttributeValue::M(item_from_json(v.as_object()?)?),
        _ => return None,
    })
}

pub fn item_from_json(m: &Map<String, Value>) -> Option<HashMap<String, AttributeValue>> {
    m.iter().map(|(k, v)| from_json(v).map(|a| (k.clone(), a))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_values_round_trip_through_dynamodb_json() {
        let item: HashMap<String, AttributeValue> = HashMap::from([
            ("s".into(), AttributeValue::S("x".into())),
            ("n".into(), AttributeValue::N("12".into())),
            ("b".into(), AttributeValue::Bool(true)),
            ("l".into(), AttributeValue::L(vec![AttributeValue::N("1".into())])),
            ("m".into(), AttributeValue::M(HashMap::from([("k".into(), AttributeValue::S("v".into()))]))),
            ("ss".into(), AttributeValue::Ss(vec!["a".into()])),
            ("bin".into(), AttributeValue::B(Blob::new(vec![0u8, 1, 2]))),
        ]);
        let j = item_to_json(&item);
        assert_eq!(item_from_json(&j).unwrap(), item);
        assert!(from_json(&json!({"X": 1})).is_none());
    }
}
