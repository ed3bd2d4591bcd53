//! The DynamoDB stream event Lambda delivers (DynamoDB JSON images) and its partial batch
//! response. Images are converted to SDK attribute values so one decoder serves table reads
//! and stream records alike.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamEvent {
    #[serde(rename = "Records", default)]
    pub records: Vec<StreamRecord>,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamRecord {
    #[serde(rename = "eventID", default)]
    pub event_id: String,
    #[serde(rename = "eventName")]
    pub event_name: String,
    #[serde(rename = "eventSource", default)]
    pub event_source: String,
    #[serde(rename = "eventSourceARN", default)]
    pub event_source_arn: String,
    pub dynamodb: StreamChange,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StreamChange {
    #[serde(rename = "Keys", default)]
    pub keys: Map<String, Value>,
    #[serde(rename = "NewImage", default, skip_serializing_if = "Option::is_none")]
    pub new_image: Option<Map<String, Value>>,
    #[serde(rename = "OldImage", default, skip_serializing_if = "Option::is_none")]
    pub old_image: Option<Map<String, Value>>,
    #[serde(rename = "SequenceNumber")]
    pub sequence_number: String,
    #[serde(rename = "StreamViewType", default)]
    pub stream_view_type: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamBatchResponse {
    #[serde(rename = "batchItemFailures")]
    pub batch_item_failures: Vec<StreamItemFailure>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamItemFailure {
    #[serde(rename = "itemIdentifier")]
    pub item_identifier: String,
}
