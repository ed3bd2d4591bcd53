//! The code key service (`ports::CodeKeyService`, docs/code-pools.md "Sealed under KMS"): KMS
//! (`GenerateDataKey` at upload, `Decrypt` at reveal, both with the SKU's encryption context),
//! an in-memory stand-in for unit tests, and a per-warm-Lambda cache in front of either, so a
//! burst of uploads or reveals of one SKU costs one KMS call per data key, not one per code.

use crate::domain::codes::aead::{random, Cipher};
use crate::domain::codes::{DataKey, KeyContext};
use crate::ports::CodeKeyService;
use async_trait::async_trait;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn key32(bytes: &[u8]) -> anyhow::Result<[u8; 32]> {
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("the key service returned a data key of {} bytes, not 32", bytes.len()))
}

/// KMS, with the key the template declares (`CODE_KMS_KEY_ID`). Access is the key policy's:
/// stock-api may `GenerateDataKey`, orders-api may `Decrypt`, both only with `purpose` in the
/// encryption context.
pub struct KmsKeys {
    client: aws_sdk_kms::Client,
    key_id: String,
}

impl KmsKeys {
    pub fn new(client: aws_sdk_kms::Client, key_id: impl Into<String>) -> Self {
        Self { client, key_id: key_id.into() }
    }
}

fn context_map(c: &KeyContext) -> HashMap<String, String> {
    c.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[async_trait]
impl CodeKeyService for KmsKeys {
    async fn generate_data_key(&self, context: &KeyContext) -> anyhow::Result<DataKey> {
        let out = self
            .client
            .generate_data_key()
            .key_id(&self.key_id)
            .key_spec(aws_sdk_kms::types::DataKeySpec::Aes256)
            .set_encryption_context(Some(context_map(context)))
            .send()
            .await
            .map_err(|e| anyhow::Error::new(e).context("KMS GenerateDataKey"))?;
        let plaintext = key32(out.plaintext().map(|b| b.as_ref()).unwrap_or_default())?;
        let encrypted = out.ciphertext_blob().map(|b| b.as_ref().to_vec()).unwrap_or_default();
        if encrypted.is_empty() {
            anyhow::bail!("KMS GenerateDataKey returned no encrypted data key");
        }
        Ok(DataKey { plaintext, encrypted })
    }

    async fn decrypt_data_key(&self, encrypted: &[u8], context: &KeyContext) -> anyhow::Result<Option<[u8; 32]>> {
        let out = self
            .client
            .decrypt()
            // named, so a data key made under any other key is refused rather than opened
            .key_id(&self.key_id)
            .ciphertext_blob(aws_sdk_kms::primitives::Blob::new(encrypted))
            .set_encryption_context(Some(context_map(context)))
            .send()
            .await;
        match out {
            Ok(out) => Ok(Some(key32(out.plaintext().map(|b| b.as_ref()).unwrap_or_default())?)),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_invalid_ciphertext_exception() || s.is_incorrect_key_exception()) =>
            {
                Ok(None)
            }
            Err(e) => Err(anyhow::Error::new(e).context("KMS Decrypt")),
        }
    }
}

/// The encryption context as bytes, in key order (the in-memory service's associated data).
fn context_bytes(c: &KeyContext) -> Vec<u8> {
    let mut out = Vec::new();
    for (k, v) in c {
        out.extend(k.as_bytes());
        out.push(0);
        out.extend(v.as_bytes());
        out.push(0);
    }
    out
}

/// An in-memory key service for unit tests and the benchmarks: a random master key per
/// instance; an encrypted data key is `nonce ‖ AES-256-GCM(master, key)` with the encryption
/// context as associated data, so it refuses another context exactly as KMS does. It counts
/// its calls.
pub struct MemoryKeyService {
    master: Cipher,
    pub generated: AtomicU64,
    pub decrypted: AtomicU64,
}

impl MemoryKeyService {
    /// A key service with a fresh random master key.
    pub fn new() -> anyhow::Result<Self> {
        Ok(Self { master: Cipher::new(&random()?), generated: 0.into(), decrypted: 0.into() })
    }
}

#[async_trait]
impl CodeKeyService for MemoryKeyService {
    async fn generate_data_key(&self, context: &KeyContext) -> anyhow::Result<DataKey> {
        self.generated.fetch_add(1, Ordering::Relaxed);
        let plaintext: [u8; 32] = random()?;
        let encrypted = self.master.seal(&plaintext, &context_bytes(context))?;
        Ok(DataKey { plaintext, encrypted })
    }

    async fn decrypt_data_key(&self, encrypted: &[u8], context: &KeyContext) -> anyhow::Result<Option<[u8; 32]>> {
        self.decrypted.fetch_add(1, Ordering::Relaxed);
        Ok(self.master.open(encrypted, &context_bytes(context)).and_then(|k| key32(&k).ok()))
    }
}

/// How long a warm Lambda keeps a data key: the one it seals a SKU's uploads with, and those it
/// opened for reveals. KMS is asked again after it (and a disabled key stops working within it).
pub const DATA_KEY_CACHE: Duration = Duration::from_secs(300);
/// Most opened data keys kept (each a few dozen bytes; a reveal needs one per upload batch).
const MAX_OPENED: usize = 1024;

type Opened = HashMap<([u8; 32], Vec<u8>), (Instant, [u8; 32])>;

/// A cache in front of a key service: one data key per SKU (encryption context) for
/// [`DATA_KEY_CACHE`] at upload, and each opened data key for as long at reveal. A refusal is
/// never cached.
pub struct CachedKeys {
    inner: Arc<dyn CodeKeyService>,
    made: Mutex<HashMap<Vec<u8>, (Instant, DataKey)>>,
    opened: Mutex<Opened>,
}

impl CachedKeys {
    pub fn new(inner: Arc<dyn CodeKeyService>) -> Self {
        Self { inner, made: Mutex::new(HashMap::new()), opened: Mutex::new(HashMap::new()) }
    }
}

#[async_trait]
impl CodeKeyService for CachedKeys {
    async fn generate_data_key(&self, context: &KeyContext) -> anyhow::Result<DataKey> {
        let id = context_bytes(context);
        if let Some((at, k)) = self.made.lock().ok().and_then(|m| m.get(&id).cloned()) {
            if at.elapsed() < DATA_KEY_CACHE {
                return Ok(k);
            }
        }
        let k = self.inner.generate_data_key(context).await?;
        if let Ok(mut m) = self.made.lock() {
            if m.len() >= MAX_OPENED {
                m.clear();
            }
            m.insert(id, (Instant::now(), k.clone()));
        }
        Ok(k)
    }

    async fn decrypt_data_key(&self, encrypted: &[u8], context: &KeyContext) -> anyhow::Result<Option<[u8; 32]>> {
        let id: ([u8; 32], Vec<u8>) = (Sha256::digest(encrypted).into(), context_bytes(context));
        if let Some((at, k)) = self.opened.lock().ok().and_then(|m| m.get(&id).copied()) {
            if at.elapsed() < DATA_KEY_CACHE {
                return Ok(Some(k));
            }
        }
        let k = self.inner.decrypt_data_key(encrypted, context).await?;
        if let (Some(k), Ok(mut m)) = (k, self.opened.lock()) {
            if m.len() >= MAX_OPENED {
                m.clear();
            }
            m.insert(id, (Instant::now(), k));
        }
        Ok(k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::codes::key_context;
    use crate::domain::Sku;

    #[tokio::test]
    async fn the_memory_key_service_refuses_another_context_and_the_cache_asks_once_per_data_key() {
        let mem = Arc::new(MemoryKeyService::new().unwrap());
        let (a, b) = (key_context(&Sku::parse("A").unwrap()), key_context(&Sku::parse("B").unwrap()));
        let dk = mem.generate_data_key(&a).await.unwrap();
        assert_eq!(mem.decrypt_data_key(&dk.encrypted, &a).await.unwrap(), Some(dk.plaintext));
        assert_eq!(mem.decrypt_data_key(&dk.encrypted, &b).await.unwrap(), None, "another SKU's context");
        assert_eq!(mem.decrypt_data_key(b"short", &a).await.unwrap(), None);
        let mut flipped = dk.encrypted.clone();
        flipped[20] ^= 1;
        assert_eq!(mem.decrypt_data_key(&flipped, &a).await.unwrap(), None);
        // through the cache: one data key per SKU, each opened once
        let cached = CachedKeys::new(mem.clone());
        let (g0, d0) = (mem.generated.load(Ordering::Relaxed), mem.decrypted.load(Ordering::Relaxed));
        let k1 = cached.generate_data_key(&a).await.unwrap();
        let k2 = cached.generate_data_key(&a).await.unwrap();
        let k3 = cached.generate_data_key(&b).await.unwrap();
        assert_eq!(k1.encrypted, k2.encrypted);
        assert_ne!(k1.encrypted, k3.encrypted);
        assert_eq!(mem.generated.load(Ordering::Relaxed) - g0, 2);
        for _ in 0..3 {
            assert_eq!(cached.decrypt_data_key(&k1.encrypted, &a).await.unwrap(), Some(k1.plaintext));
        }
        // a refusal is not cached, and an opened key is not served for another context
        assert_eq!(cached.decrypt_data_key(&k1.encrypted, &b).await.unwrap(), None);
        assert_eq!(cached.decrypt_data_key(&k1.encrypted, &b).await.unwrap(), None);
        assert_eq!(mem.decrypted.load(Ordering::Relaxed) - d0, 3);
    }
}
