//! The DynamoDB stream event Lambda delivers and its partial batch response: the types of
//! `aws_lambda_events` (images as `serde_dynamo::Item`), converted to SDK attribute values so
//! one decoder serves table reads and stream records alike.

use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub use aws_lambda_events::dynamodb::{Event as StreamEvent, EventRecord as StreamRecord};
pub use aws_lambda_events::streams::{
    DynamoDbBatchItemFailure as StreamItemFailure, DynamoDbEventResponse as StreamBatchResponse,
};

/// A stream image as the item the table adapters decode (`None`: the record has no such image).
pub fn image(item: &serde_dynamo::Item) -> Option<HashMap<String, AttributeValue>> {
    (!item.is_empty()).then(|| item.clone().into())
}

/// The record's sequence number: its item identifier in a partial batch response.
pub fn sequence_number(r: &StreamRecord) -> &str {
    r.change.sequence_number.as_deref().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lambda_stream_record_decodes_to_sdk_attribute_values() {
        let ev: StreamEvent = serde_json::from_value(serde_json::json!({"Records": [{
            "awsRegion": "eu-west-1", "eventID": "1", "eventName": "MODIFY",
            "dynamodb": {
                "Keys": {"pk": {"S": "ORD#o1"}},
                "NewImage": {"pk": {"S": "ORD#o1"}, "v": {"N": "2"}, "l": {"L": [{"BOOL": true}]}},
                "SequenceNumber": "7", "SizeBytes": 10, "StreamViewType": "NEW_AND_OLD_IMAGES",
                "ApproximateCreationDateTime": 1_700_000_000.0
            }
        }]}))
        .unwrap();
        let r = &ev.records[0];
        assert_eq!(sequence_number(r), "7");
        let new = image(&r.change.new_image).unwrap();
        assert_eq!(new["v"], AttributeValue::N("2".into()));
        assert_eq!(new["l"], AttributeValue::L(vec![AttributeValue::Bool(true)]));
        assert!(image(&r.change.old_image).is_none(), "an absent image is no image");
    }
}
