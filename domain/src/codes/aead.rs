//! AES-256-GCM as every sealed code and wrapped data key is written: `nonce (12 bytes) ‖
//! ciphertext ‖ tag (16 bytes)`, on ring, the one crypto provider of every binary
//! (docs/architecture.md, "How a function is wired"). The layout is the standard one, which the
//! aes-gcm crate wrote before: codes sealed then still open (the tests hold this module to a
//! vector made by another implementation).
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use ring::rand::{SecureRandom, SystemRandom};

/// The bytes sealing adds: the nonce in front, the tag behind.
pub const OVERHEAD: usize = NONCE_LEN + 16;

/// One AES-256 key.
#[derive(Clone)]
pub struct Cipher(LessSafeKey);

impl Cipher {
    pub fn new(key: &[u8; 32]) -> Cipher {
        match UnboundKey::new(&AES_256_GCM, key) {
            Ok(k) => Cipher(LessSafeKey::new(k)),
            Err(_) => unreachable!("ring takes any 32-byte key for AES-256-GCM"),
        }
    }

    /// `msg` sealed with `aad` under a fresh random nonce: `nonce ‖ ciphertext ‖ tag`.
    pub fn seal(&self, msg: &[u8], aad: &[u8]) -> anyhow::Result<Vec<u8>> {
        let nonce: [u8; NONCE_LEN] = random()?;
        let mut body = msg.to_vec();
        self.0
            .seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), &mut body)
            .map_err(|_| anyhow::anyhow!("sealing failed"))?;
        let mut out = nonce.to_vec();
        out.extend(body);
        Ok(out)
    }

    /// What [`Cipher::seal`] sealed with `aad`; `None` if it does not open (another key, other
    /// associated data, changed bytes, too short).
    pub fn open(&self, sealed: &[u8], aad: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < OVERHEAD {
            return None;
        }
        let (nonce, ct) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = ct.to_vec();
        let plain = self.0.open_in_place(nonce, Aad::from(aad), &mut body).ok()?;
        Some(plain.to_vec())
    }
}

/// `N` bytes from the system's secure random source.
pub fn random<const N: usize>() -> anyhow::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    SystemRandom::new().fill(&mut bytes).map_err(|_| anyhow::anyhow!("no secure random source"))?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AES-256-GCM of "CODE-0042" under key 00 01 … 1f, nonce 07 × 12 and associated data
    /// "holdfast-kat", made by Python's `cryptography` (OpenSSL), as stored: nonce ‖ ct ‖ tag.
    const KAT: &str = "0707070707070707070707074c25e219423fe7c0f4d8064e1f06d39abc4af6ce979858699c";

    fn key() -> [u8; 32] {
        std::array::from_fn(|i| i as u8)
    }

    #[test]
    fn opens_what_another_implementation_sealed_and_nothing_altered() {
        let sealed = hex::decode(KAT).unwrap();
        let c = Cipher::new(&key());
        assert_eq!(c.open(&sealed, b"holdfast-kat").unwrap(), b"CODE-0042");
        assert!(c.open(&sealed, b"holdfast-kaT").is_none(), "other associated data");
        assert!(Cipher::new(&[9; 32]).open(&sealed, b"holdfast-kat").is_none(), "another key");
        let mut flipped = sealed.clone();
        flipped[14] ^= 1;
        assert!(c.open(&flipped, b"holdfast-kat").is_none(), "a changed byte");
        assert!(c.open(&sealed[..OVERHEAD - 1], b"").is_none(), "too short");
    }

    #[test]
    fn seals_with_a_fresh_nonce_each_time_and_opens_its_own() {
        let c = Cipher::new(&key());
        let (a, b) = (c.seal(b"x", b"ad").unwrap(), c.seal(b"x", b"ad").unwrap());
        assert_ne!(a[..NONCE_LEN], b[..NONCE_LEN]);
        assert_eq!(a.len(), 1 + OVERHEAD);
        assert_eq!(c.open(&a, b"ad").unwrap(), b"x");
        assert_eq!(c.open(&b, b"ad").unwrap(), b"x");
    }
}
