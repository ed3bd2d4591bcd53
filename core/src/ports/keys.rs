//! The key service code pool codes are sealed under (docs/code-pools.md, "Sealed under KMS"):
//! KMS in AWS and on the local stack (`adapters::kms::KmsKeys`), an in-memory key service in unit
//! tests (`adapters::kms::MemoryKeyService`). Envelope encryption: the service makes a data key
//! for an encryption context and later opens its encrypted form only for the same context.

use crate::domain::codes::{DataKey, KeyContext};
use async_trait::async_trait;

#[async_trait]
pub trait CodeKeyService: Send + Sync {
    /// A fresh AES-256 data key bound to `context` (KMS `GenerateDataKey`).
    async fn generate_data_key(&self, context: &KeyContext) -> anyhow::Result<DataKey>;

    /// The data key `encrypted` stands for (KMS `Decrypt`), or `None` when the key service
    /// refuses it: made for another encryption context, under another key, or not a data key
    /// at all (KMS `InvalidCiphertextException`). The outer error is the service failing.
    async fn decrypt_data_key(&self, encrypted: &[u8], context: &KeyContext) -> anyhow::Result<Option<[u8; 32]>>;
}
