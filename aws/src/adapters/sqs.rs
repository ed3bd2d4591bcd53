//! Messages over SQS: payment timeouts, reservation checks and reconcile work items each have
//! their queue.

use crate::ports::{Message, Messages};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_sqs::Client;

#[derive(Clone)]
pub struct SqsMessages {
    client: Client,
    payment_timeout_url: String,
    reservation_check_url: String,
    reconcile_work_url: String,
}

impl SqsMessages {
    pub fn new(
        client: Client,
        payment_timeout_url: String,
        reservation_check_url: String,
        reconcile_work_url: String,
    ) -> Self {
        Self { client, payment_timeout_url, reservation_check_url, reconcile_work_url }
    }
}

#[async_trait]
impl Messages for SqsMessages {
    async fn send(&self, msg: &Message, delay_s: u32) -> anyhow::Result<()> {
        let url = match msg {
            Message::PaymentTimeout { .. } | Message::SupplierPoll { .. } | Message::SupplierIssue { .. } => {
                &self.payment_timeout_url
            }
            Message::ReservationCheck { .. } | Message::RecordedCheckout { .. } => &self.reservation_check_url,
            Message::ReconcileWork { .. } => &self.reconcile_work_url,
        };
        self.client
            .send_message()
            .queue_url(url)
            .message_body(serde_json::to_string(msg)?)
            .delay_seconds(delay_s.min(900) as i32)
            .send()
            .await
            .with_context(|| format!("SendMessage to {url}"))?;
        Ok(())
    }

    async fn reconcile_backlog(&self) -> anyhow::Result<u64> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        const COUNTED: [A; 3] = [
            A::ApproximateNumberOfMessages,
            A::ApproximateNumberOfMessagesNotVisible,
            A::ApproximateNumberOfMessagesDelayed,
        ];
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(&self.reconcile_work_url)
            .set_attribute_names(Some(COUNTED.to_vec()))
            .send()
            .await
            .with_context(|| format!("GetQueueAttributes of {}", self.reconcile_work_url))?;
        let attrs = out.attributes().cloned().unwrap_or_default();
        Ok(COUNTED.iter().filter_map(|a| attrs.get(a)?.parse::<u64>().ok()).sum())
    }

    /// The three queues this adapter sends to (their dead-letter queues are watched by the
    /// template's alarms; docs/operations.md, "Machinery").
    async fn queue_depths(&self) -> anyhow::Result<Vec<crate::ports::QueueDepth>> {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let urls = [&self.payment_timeout_url, &self.reservation_check_url, &self.reconcile_work_url];
        let mut out = Vec::new();
        for url in urls.into_iter().filter(|u| !u.is_empty()) {
            let r = self
                .client
                .get_queue_attributes()
                .queue_url(url)
                .set_attribute_names(Some(vec![
                    A::ApproximateNumberOfMessages,
                    A::ApproximateNumberOfMessagesNotVisible,
                    A::ApproximateNumberOfMessagesDelayed,
                ]))
                .send()
                .await
                .with_context(|| format!("GetQueueAttributes of {url}"))?;
            let attrs = r.attributes().cloned().unwrap_or_default();
            let get = |a: A| attrs.get(&a).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
            out.push(crate::ports::QueueDepth {
                name: url.rsplit('/').next().unwrap_or(url).to_owned(),
                visible: get(A::ApproximateNumberOfMessages),
                in_flight: get(A::ApproximateNumberOfMessagesNotVisible),
                delayed: get(A::ApproximateNumberOfMessagesDelayed),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}
