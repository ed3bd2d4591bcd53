//! Code pools: vouchers and gift cards, each code handed out exactly once (docs/code-pools.md).
//!
//! A `CODE_POOL` SKU keeps the usual sharded counters, and each shard also keeps a **ring**:
//! codes sit at increasing positions, `head` is the next one to hand out and `tail` the next
//! free position. A freeze takes `q` codes from a shard by moving its head from `h` to `h + q`
//! in the same conditional write that moves the counters (`head = h` is the condition), so two
//! freezes can never take the same position, and the lock line records `h`. A release appends
//! the line's codes at the tail again (new positions, same sealed codes); a position is never
//! reused. Codes are sealed with AES-256-GCM under a key named by its id, so keys can rotate; the
//! associated data is the SKU, the slot the code was uploaded to and its fingerprint (v2; a v1
//! code, sealed before, is bound to its SKU only and still opens — [`Keyring::open_at`]). Codes
//! uploaded where a KMS key is configured are sealed *v3*: the same AEAD and associated data, under
//! a data key KMS made for the SKU (envelope encryption; the encrypted data key travels with the
//! sealed code — [`Keyring::seal_kms`], [`Keyring::open_at_with`]). Duplicates are found by an HMAC
//! fingerprint under a separate, stable key. Nothing here logs or displays a code in clear:
//! [`mask`] is the only display.

use super::Sku;
pub mod aead;
pub mod lifecycle;
use aead::Cipher;
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use hmac::{Hmac, KeyInit as MacKeyInit, Mac};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Most codes in one uploaded batch.
pub const MAX_BATCH: usize = 1000;
/// Longest code, in characters.
pub const MAX_CODE_LEN: usize = 128;
/// Most codes one order line may take (a release writes one item per code back to the ring,
/// and a transaction holds at most 100 items).
pub const MAX_CODES_PER_LINE: u32 = 20;

/// Why one uploaded code is refused before anything is written.
pub fn check_code(code: &str) -> Result<(), &'static str> {
    if code.is_empty() {
        return Err("is empty");
    }
    if code.chars().count() > MAX_CODE_LEN {
        return Err("is longer than 128 characters");
    }
    if code.chars().any(char::is_control) {
        return Err("contains a control character");
    }
    if code.trim() != code {
        return Err("starts or ends with whitespace");
    }
    Ok(())
}

/// How a code is shown anywhere but to its paid owner: its last four characters at most, and
/// nothing of a short code.
pub fn mask(code: &str) -> String {
    let n = code.chars().count();
    if n <= 8 {
        return "••••".into();
    }
    let tail: String = code.chars().skip(n - 4).collect();
    format!("••••{tail}")
}

/// One shard's ring: codes at positions `head..tail` are in the pool; `uploaded` counts the
/// codes uploaded into this shard (releases append again, uploads only once).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ring {
    pub head: u64,
    pub tail: u64,
    pub uploaded: u64,
    /// When the head last moved (epoch ms), and the position below which every claimed
    /// position has been seen bound or given back (reconcile's orphan repair).
    pub claimed_at_ms: i64,
    pub checked: u64,
    /// Codes of this shard retired unsold because they expired (docs/code-pools.md, "Expiry"):
    /// `uploaded − expired` is what the shard was stocked with.
    pub expired: u64,
    /// Whether a batch with an expire time was ever uploaded here: only then does a claim
    /// read the codes it took to retire the expired ones.
    pub expiring: bool,
}

impl Ring {
    pub fn available(&self) -> i64 {
        i64::try_from(self.tail.saturating_sub(self.head)).unwrap_or(i64::MAX)
    }
}

/// Consecutive positions as ranges of one shard.
pub fn ranges_of(shard: u16, positions: &[u64]) -> Vec<super::reservation::CodeRange> {
    let mut out: Vec<super::reservation::CodeRange> = Vec::new();
    for &p in positions {
        match out.last_mut() {
            Some(g) if g.from + u64::from(g.count) == p => g.count += 1,
            _ => out.push(super::reservation::CodeRange { shard, from: p, count: 1 }),
        }
    }
    out
}

/// A code as stored: its fingerprint and its sealed bytes, its expire time (set per upload
/// batch, it travels with the code when a release re-appends it) and when it was redeemed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoredCode {
    /// Hex HMAC-SHA-256 of (sku, code) under the fingerprint key.
    pub fingerprint: String,
    /// The id of the key that sealed it.
    pub kid: String,
    /// Base64 of nonce (12 bytes) ‖ AES-256-GCM ciphertext and tag.
    pub sealed: String,
    /// Epoch ms from which the code is no longer sold nor redeemable (docs/code-pools.md, "Expiry").
    pub expires_at_ms: Option<i64>,
    /// Epoch ms the merchant redeemed it (docs/code-pools.md, "Redemption"); set once.
    pub redeemed_at_ms: Option<i64>,
}

/// Codes a release (or an upload) appends to one shard's ring, at `tail` onwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeAppend {
    pub cell: Sku,
    pub shard: u16,
    pub tail: u64,
    pub codes: Vec<StoredCode>,
}

/// Codes added to a pool: an adjustment of `+codes` whose shard pieces also append the sealed
/// codes to their rings and register their fingerprints under `batch_id` (docs/code-pools.md).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeUpload {
    pub adjustment: super::stock_changes::Adjustment,
    pub batch_id: String,
    /// One per shard piece of the adjustment, codes in ring order.
    pub appends: Vec<CodeAppend>,
}

/// Claimed, unbound codes of one shard retired because they expired (docs/code-pools.md,
/// "Expiry"): an adjustment of `−positions.len()` on the shard whose slots are marked expired.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeRetire {
    pub adjustment: super::stock_changes::Adjustment,
    pub shard: u16,
    pub positions: Vec<u64>,
    /// The time the expiry is judged at (each code's expire time must be at or before it).
    pub now_ms: i64,
}

/// The key id stored beside a v3 code (sealed under a KMS data key, not a keyring key).
pub const KMS_KID: &str = "kms";

/// A data key from the key service (KMS `GenerateDataKey`): the AES-256 key in clear, used in
/// memory only, and the key service's encryption of it, stored with every code it seals.
#[derive(Clone)]
pub struct DataKey {
    pub plaintext: [u8; 32],
    pub encrypted: Vec<u8>,
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey")
            .field("plaintext", &"<redacted>")
            .field("encrypted_len", &self.encrypted.len())
            .finish()
    }
}

/// The encryption context a code data key is made and opened with: the key service binds it into
/// the encrypted data key, so a data key made for one SKU is refused for another (and the key
/// policy can require `purpose`). CloudTrail logs it with every `Decrypt`.
pub type KeyContext = std::collections::BTreeMap<String, String>;

/// The encryption context of `sku`'s code data keys.
pub fn key_context(sku: &Sku) -> KeyContext {
    [("purpose".to_owned(), KEY_PURPOSE.to_owned()), ("sku".to_owned(), sku.as_str().to_owned())].into()
}

/// `purpose` in every code data key's encryption context (the template's key policy requires it).
pub const KEY_PURPOSE: &str = "holdfast-code";

/// One key of the keyring, as the secret holds it: `{"kid","key","fingerprint_key"}` with both
/// keys 32 bytes in base64.
#[derive(Clone, Deserialize, Serialize)]
struct KeyJson {
    kid: String,
    key: String,
    fingerprint_key: String,
}

#[derive(Clone)]
struct Key {
    kid: String,
    cipher: Cipher,
    fingerprint_key: [u8; 32],
}

/// The code keys: the first seals, every one opens (a rotation keeps the previous one).
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<Key>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
        f.debug_struct("Keyring").field("kids", &kids).finish()
    }
}

fn key32(b64: &str, what: &str) -> anyhow::Result<[u8; 32]> {
    let bytes = B64.decode(b64.trim()).map_err(|_| anyhow::anyhow!("the code {what} is not base64"))?;
    bytes.try_into().map_err(|_| anyhow::anyhow!("the code {what} must be 32 bytes"))
}

impl Keyring {
    /// From secret strings, current first (each a JSON `{"kid","key","fingerprint_key"}`).
    /// Every key must carry the same fingerprint key: fingerprints must not change with a rotation.
    pub fn parse(secrets: &[&str]) -> anyhow::Result<Keyring> {
        let mut keys = Vec::new();
        for s in secrets.iter().filter(|s| !s.trim().is_empty()) {
            let j: KeyJson = serde_json::from_str(s).map_err(|_| anyhow::anyhow!("the code key is not valid JSON"))?;
            if j.kid.is_empty() || j.kid.len() > 32 {
                anyhow::bail!("the code key id must be 1..=32 characters");
            }
            let cipher = Cipher::new(&key32(&j.key, "key")?);
            keys.push(Key { kid: j.kid, cipher, fingerprint_key: key32(&j.fingerprint_key, "fingerprint key")? });
        }
        let Some(first) = keys.first() else { anyhow::bail!("no code key is configured") };
        if keys.iter().any(|k| k.fingerprint_key != first.fingerprint_key) {
            anyhow::bail!("every code key must share one fingerprint key");
        }
        Ok(Keyring { keys })
    }

    /// A fresh key secret (for `make run` and tests), from the system's secure random source.
    pub fn generate_secret(kid: &str) -> anyhow::Result<String> {
        let (k, f) = (aead::random::<32>()?, aead::random::<32>()?);
        Ok(serde_json::json!({"kid": kid, "key": B64.encode(k), "fingerprint_key": B64.encode(f)}).to_string())
    }

    pub fn current_kid(&self) -> &str {
        &self.keys[0].kid
    }

    pub fn fingerprint(&self, sku: &Sku, code: &str) -> String {
        let mut m = match <Hmac<Sha256> as MacKeyInit>::new_from_slice(&self.keys[0].fingerprint_key) {
            Ok(m) => m,
            Err(_) => unreachable!("HMAC takes a key of any length"),
        };
        m.update(sku.as_str().as_bytes());
        m.update(&[0]);
        m.update(code.as_bytes());
        hex::encode(&m.finalize().into_bytes()[..16])
    }

    /// Seals `code` of `sku` under the current key, the v1 way (the SKU alone is the
    /// associated data). Kept for the tests that show v1 codes still open; uploads use
    /// [`Keyring::seal_at`].
    pub fn seal(&self, sku: &Sku, code: &str) -> anyhow::Result<StoredCode> {
        let fingerprint = self.fingerprint(sku, code);
        let (kid, sealed) = self.encrypt(code, sku.as_str().as_bytes())?;
        Ok(StoredCode { fingerprint, kid, sealed, ..StoredCode::default() })
    }

    /// Seals `code` of `sku` for its upload slot (v2, security review L6): the associated data
    /// binds the SKU, the slot (`shard`, `pos`) and the fingerprint, and the slot is written in
    /// front of the sealed bytes (`v2.<shard>.<pos>.<base64>`) so a release that re-appends the
    /// code elsewhere (without the key) still knows which slot it was sealed for.
    pub fn seal_at(&self, sku: &Sku, shard: u16, pos: u64, code: &str) -> anyhow::Result<StoredCode> {
        let fingerprint = self.fingerprint(sku, code);
        let (kid, sealed) = self.encrypt(code, &aad_v2(sku, shard, pos, &fingerprint))?;
        Ok(StoredCode { fingerprint, kid, sealed: format!("{V2}{shard}.{pos}.{sealed}"), ..StoredCode::default() })
    }

    /// Seals `code` of `sku` for its upload slot under a KMS data key (v3): the associated data
    /// binds the SKU, the slot and the fingerprint as in v2, the data key was made for the SKU's
    /// encryption context ([`key_context`]), and the encrypted data key is written with the slot
    /// in front of the sealed bytes: `v3.<shard>.<pos>.<base64 data key>.<base64 nonce ‖ ct>`.
    /// The fingerprint is still the keyring's HMAC (duplicates are found across key rotations).
    pub fn seal_kms(&self, dk: &DataKey, sku: &Sku, shard: u16, pos: u64, code: &str) -> anyhow::Result<StoredCode> {
        let fingerprint = self.fingerprint(sku, code);
        let body = Cipher::new(&dk.plaintext)
            .seal(code.as_bytes(), &aad_v3(sku, shard, pos, &fingerprint))
            .map_err(|e| anyhow::anyhow!("sealing a code failed: {e}"))?;
        let sealed = format!("{V3}{shard}.{pos}.{}.{}", B64.encode(&dk.encrypted), B64.encode(body));
        Ok(StoredCode { fingerprint, kid: KMS_KID.to_owned(), sealed, ..StoredCode::default() })
    }

    fn encrypt(&self, code: &str, aad: &[u8]) -> anyhow::Result<(String, String)> {
        let k = &self.keys[0];
        let out = k.cipher.seal(code.as_bytes(), aad).map_err(|e| anyhow::anyhow!("sealing a code failed: {e}"))?;
        Ok((k.kid.clone(), B64.encode(out)))
    }

    /// Opens a stored code of `sku` read at slot `at` = (shard, position), with the key it
    /// names, and checks the opened code's fingerprint against the stored one. A v2 code
    /// sealed for another slot opens only as [`Opened::relocated`]: the caller must then show
    /// the code legitimately left its sealed slot (a release or a give-back) before using it.
    pub fn open_at(&self, sku: &Sku, at: (u16, u64), c: &StoredCode) -> Result<Opened, SealError> {
        self.open_at_with(sku, at, c, None)
    }

    /// [`Keyring::open_at`] for any version: a v3 code needs its data key in clear (`data_key`,
    /// from the key service's `Decrypt` of [`wrapped_key`] under [`key_context`]); v1 and v2
    /// codes open with the keyring and ignore it.
    pub fn open_at_with(
        &self,
        sku: &Sku,
        at: (u16, u64),
        c: &StoredCode,
        data_key: Option<&[u8; 32]>,
    ) -> Result<Opened, SealError> {
        let (sealed_for, code) = match parse_sealed(&c.sealed)? {
            Sealed::V1(body) => (None, self.decrypt(&c.kid, body, sku.as_str().as_bytes())?),
            Sealed::V2 { shard, pos, body } => {
                (Some((shard, pos)), self.decrypt(&c.kid, body, &aad_v2(sku, shard, pos, &c.fingerprint))?)
            }
            Sealed::V3 { shard, pos, body, .. } => {
                let dk = data_key.ok_or(SealError::NeedsDataKey)?;
                let cipher = Cipher::new(dk);
                (Some((shard, pos)), open_body(&cipher, KMS_KID, body, &aad_v3(sku, shard, pos, &c.fingerprint))?)
            }
        };
        if self.fingerprint(sku, &code) != c.fingerprint {
            return Err(SealError::FingerprintMismatch);
        }
        let relocated = sealed_for.filter(|s| *s != at);
        Ok(Opened { code, sealed_for, relocated })
    }

    /// Opens a stored code of `sku` (either version) without a slot check; the fingerprint
    /// is still checked.
    pub fn open(&self, sku: &Sku, c: &StoredCode) -> anyhow::Result<String> {
        let at = match parse_sealed(&c.sealed)? {
            Sealed::V2 { shard, pos, .. } | Sealed::V3 { shard, pos, .. } => (shard, pos),
            Sealed::V1(_) => (0, 0),
        };
        Ok(self.open_at(sku, at, c)?.code)
    }

    fn decrypt(&self, kid: &str, body: &str, aad: &[u8]) -> Result<String, SealError> {
        let k = self.keys.iter().find(|k| k.kid == kid).ok_or_else(|| SealError::UnknownKey(kid.to_owned()))?;
        open_body(&k.cipher, kid, body, aad)
    }
}

/// Opens base64 `nonce ‖ ciphertext ‖ tag` under `cipher` (named `kid` in errors).
fn open_body(cipher: &Cipher, kid: &str, body: &str, aad: &[u8]) -> Result<String, SealError> {
    let bytes = B64.decode(body).map_err(|_| SealError::Malformed("not base64"))?;
    if bytes.len() < aead::OVERHEAD {
        return Err(SealError::Malformed("too short"));
    }
    let plain = cipher.open(&bytes, aad).ok_or_else(|| SealError::DoesNotOpen(kid.to_owned()))?;
    String::from_utf8(plain).map_err(|_| SealError::Malformed("not text"))
}

/// The marker of a v2 (slot-bound) sealed code. v1 codes are bare base64, which has no `.`.
const V2: &str = "v2.";
/// The marker of a v3 code: slot-bound, sealed under a KMS data key stored beside it.
const V3: &str = "v3.";

/// v2 associated data: a domain tag, the SKU, the slot the code was sealed for and its
/// fingerprint (so neither the slot in front of the bytes nor the stored fingerprint can be
/// changed without the seal failing).
fn aad_v2(sku: &Sku, shard: u16, pos: u64, fingerprint: &str) -> Vec<u8> {
    let mut a = b"holdfast-code-v2\0".to_vec();
    a.extend(sku.as_str().as_bytes());
    a.push(0);
    a.extend(shard.to_be_bytes());
    a.extend(pos.to_be_bytes());
    a.extend(fingerprint.as_bytes());
    a
}

/// v3 associated data: as v2's, under its own domain tag (a v2 body relabelled v3, or the
/// reverse, fails the tag).
fn aad_v3(sku: &Sku, shard: u16, pos: u64, fingerprint: &str) -> Vec<u8> {
    let mut a = aad_v2(sku, shard, pos, fingerprint);
    a[..16].copy_from_slice(b"holdfast-code-v3");
    a
}

enum Sealed<'a> {
    V1(&'a str),
    V2 { shard: u16, pos: u64, body: &'a str },
    V3 { shard: u16, pos: u64, data_key: &'a str, body: &'a str },
}

fn parse_sealed(s: &str) -> Result<Sealed<'_>, SealError> {
    if let Some(rest) = s.strip_prefix(V3) {
        let mut parts = rest.splitn(4, '.');
        let bad = || SealError::Malformed("bad v3 slot or data key");
        let shard = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let pos = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
        let data_key = parts.next().filter(|k| !k.is_empty()).ok_or_else(bad)?;
        let body = parts.next().ok_or_else(bad)?;
        return Ok(Sealed::V3 { shard, pos, data_key, body });
    }
    let Some(rest) = s.strip_prefix(V2) else { return Ok(Sealed::V1(s)) };
    let mut parts = rest.splitn(3, '.');
    let bad = || SealError::Malformed("bad v2 slot");
    let shard = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let pos = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
    let body = parts.next().ok_or_else(bad)?;
    Ok(Sealed::V2 { shard, pos, body })
}

/// The encrypted data key a v3 code was sealed under (to be opened by the key service under the
/// SKU's [`key_context`]); `None` for v1 and v2 codes, which the keyring opens.
pub fn wrapped_key(c: &StoredCode) -> Result<Option<Vec<u8>>, SealError> {
    match parse_sealed(&c.sealed)? {
        Sealed::V3 { data_key, .. } => {
            B64.decode(data_key).map(Some).map_err(|_| SealError::Malformed("data key not base64"))
        }
        _ => Ok(None),
    }
}

/// The slot (shard, position) a stored code was sealed for: `None` for a v1 code (SKU-only
/// associated data) or one that cannot be read.
pub fn sealed_slot(c: &StoredCode) -> Option<(u16, u64)> {
    match parse_sealed(&c.sealed) {
        Ok(Sealed::V2 { shard, pos, .. } | Sealed::V3 { shard, pos, .. }) => Some((shard, pos)),
        _ => None,
    }
}

/// An opened code: never logged, never displayed but to its paid owner.
pub struct Opened {
    pub code: String,
    /// The slot a v2 code was sealed for (`None`: a v1 code, bound to its SKU only).
    pub sealed_for: Option<(u16, u64)>,
    /// Set when a v2 code is read at another slot than the one it was sealed for: a
    /// re-appended code (released or given back), or a copy (security review L6).
    pub relocated: Option<(u16, u64)>,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened").field("sealed_for", &self.sealed_for).field("relocated", &self.relocated).finish()
    }
}

/// Why a stored code does not open. Never carries the code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("code key {0} is not in the keyring")]
    UnknownKey(String),
    #[error("a stored code is malformed ({0})")]
    Malformed(&'static str),
    #[error("a stored code does not open under key {0} for its SKU and slot")]
    DoesNotOpen(String),
    #[error("a stored code's fingerprint does not match the code it opens to")]
    FingerprintMismatch,
    /// A v3 code was opened without its data key (the caller must ask the key service first).
    #[error("a stored code is sealed under a KMS data key that was not provided")]
    NeedsDataKey,
}

/// What one batch upload did (kept under the batch id, so a replay answers the same).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchResult {
    pub added: u32,
    pub duplicates: u32,
    /// Hash of the batch's codes (a replay with other codes is refused).
    pub hash: String,
    /// The duplicates, masked (for the admin who uploaded them).
    #[serde(default)]
    pub duplicate_codes: Vec<String>,
}

/// A canonical hash of a batch's fingerprints, in upload order.
pub fn batch_hash(fingerprints: &[String]) -> String {
    let mut h = Sha256::new();
    for f in fingerprints {
        h.update(f.as_bytes());
        h.update(b"\n");
    }
    hex::encode(&h.finalize()[..16])
}

/// Which shard each of `n` new codes goes to: spread evenly over the shards, the emptiest first,
/// so a flash sale finds codes on every shard.
pub fn placement(n: usize, rings: &[Ring]) -> Vec<u16> {
    let mut avail: Vec<(i64, u16)> = rings.iter().enumerate().map(|(i, r)| (r.available(), i as u16)).collect();
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let Some(min) = avail.iter_mut().min_by_key(|(a, i)| (*a, *i)) else { break };
        out.push(min.1);
        min.0 += 1;
    }
    out
}

#[cfg(test)]
mod tests;
