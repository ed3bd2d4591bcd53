//! Tests of the code pool primitives: sealing, fingerprints, rings and placement.

use super::*;

fn sku(s: &str) -> Sku {
    Sku::parse(s).unwrap()
}

#[test]
fn codes_with_control_characters_or_padding_or_excess_length_are_refused() {
    assert!(check_code("GIFT-1234-ABCD").is_ok());
    assert!(check_code("").is_err());
    assert!(check_code("AB\u{0007}CD").is_err());
    assert!(check_code("AB\nCD").is_err());
    assert!(check_code(" ABCD").is_err());
    assert!(check_code(&"x".repeat(129)).is_err());
    assert!(check_code(&"é".repeat(128)).is_ok());
}

#[test]
fn a_mask_shows_at_most_the_last_four_characters() {
    assert_eq!(mask("GIFT-1234-ABCD"), "••••ABCD");
    assert_eq!(mask("SHORT123"), "••••");
    assert!(!mask("GIFT-1234-ABCD").contains("1234"));
}

#[test]
fn sealed_codes_open_under_their_key_only_for_their_sku_and_survive_a_rotation() {
    let old = Keyring::generate_secret("k1").unwrap();
    let ring = Keyring::parse(&[&old]).unwrap();
    let s = sku("VOUCHER");
    let c = ring.seal(&s, "GIFT-1234-ABCD").unwrap();
    assert_eq!(c.kid, "k1");
    assert!(!c.sealed.contains("GIFT"));
    assert_eq!(ring.open(&s, &c).unwrap(), "GIFT-1234-ABCD");
    assert!(ring.open(&sku("OTHER"), &c).is_err(), "the SKU is bound into the seal");
    // two seals of one code differ (fresh nonce) but share the fingerprint
    let c2 = ring.seal(&s, "GIFT-1234-ABCD").unwrap();
    assert_ne!(c.sealed, c2.sealed);
    assert_eq!(c.fingerprint, c2.fingerprint);
    assert_ne!(c.fingerprint, ring.fingerprint(&sku("OTHER"), "GIFT-1234-ABCD"));
    // rotation: a new key with the same fingerprint key seals; the old one still opens
    let mut j: serde_json::Value = serde_json::from_str(&old).unwrap();
    let fresh: serde_json::Value = serde_json::from_str(&Keyring::generate_secret("k2").unwrap()).unwrap();
    j["kid"] = "k2".into();
    j["key"] = fresh["key"].clone();
    let rotated = Keyring::parse(&[&j.to_string(), &old]).unwrap();
    assert_eq!(rotated.current_kid(), "k2");
    assert_eq!(rotated.open(&s, &c).unwrap(), "GIFT-1234-ABCD");
    assert_eq!(rotated.fingerprint(&s, "GIFT-1234-ABCD"), c.fingerprint);
    // a keyring whose keys disagree on the fingerprint key is refused
    assert!(Keyring::parse(&[&Keyring::generate_secret("k3").unwrap(), &old]).is_err());
    assert!(Keyring::parse(&[]).is_err());
    assert!(format!("{rotated:?}").contains("k2") && !format!("{rotated:?}").contains(j["key"].as_str().unwrap()));
}

#[test]
fn a_v2_code_is_bound_to_its_slot_and_fingerprint_and_v1_codes_still_open() {
    let ring = Keyring::parse(&[&Keyring::generate_secret("k1").unwrap()]).unwrap();
    let s = sku("VOUCHER");
    let c = ring.seal_at(&s, 3, 17, "GIFT-1234-ABCD").unwrap();
    assert!(c.sealed.starts_with("v2.3.17."), "the slot is written in front");
    assert!(!c.sealed.contains("GIFT"));
    assert_eq!(sealed_slot(&c), Some((3, 17)));
    let o = ring.open_at(&s, (3, 17), &c).unwrap();
    assert_eq!((o.code.as_str(), o.sealed_for, o.relocated), ("GIFT-1234-ABCD", Some((3, 17)), None));
    assert!(!format!("{o:?}").contains("GIFT"), "Debug never shows the code");
    // read at another slot: it opens, but only as relocated (the caller must justify it)
    assert_eq!(ring.open_at(&s, (3, 18), &c).unwrap().relocated, Some((3, 17)));
    // the slot in front cannot be rewritten, nor the SKU changed
    let moved = StoredCode { sealed: c.sealed.replacen("v2.3.17.", "v2.3.18.", 1), ..c.clone() };
    assert!(matches!(ring.open_at(&s, (3, 18), &moved), Err(SealError::DoesNotOpen(_))));
    assert!(matches!(ring.open_at(&sku("OTHER"), (3, 17), &c), Err(SealError::DoesNotOpen(_))));
    // another code's fingerprint beside these bytes: the v2 seal refuses it …
    let other = ring.seal_at(&s, 3, 18, "GIFT-9999-ZZZZ").unwrap();
    let swapped = StoredCode { fingerprint: other.fingerprint.clone(), ..c.clone() };
    assert!(matches!(ring.open_at(&s, (3, 17), &swapped), Err(SealError::DoesNotOpen(_))));
    // … and a v1 code's plaintext is checked against it
    let v1 = ring.seal(&s, "GIFT-1234-ABCD").unwrap();
    assert_eq!(sealed_slot(&v1), None);
    let o = ring.open_at(&s, (0, 5), &v1).unwrap();
    assert_eq!((o.code.as_str(), o.sealed_for, o.relocated), ("GIFT-1234-ABCD", None, None));
    let v1_swapped = StoredCode { fingerprint: other.fingerprint.clone(), ..v1.clone() };
    assert_eq!(ring.open_at(&s, (0, 5), &v1_swapped).unwrap_err(), SealError::FingerprintMismatch);
    assert_eq!(ring.open(&s, &v1).unwrap(), "GIFT-1234-ABCD");
    assert_eq!(ring.open(&s, &c).unwrap(), "GIFT-1234-ABCD");
    // garbage after the marker is malformed, not a panic
    let bad = StoredCode { sealed: "v2.x.1.AAAA".into(), ..c.clone() };
    assert!(matches!(ring.open_at(&s, (0, 1), &bad), Err(SealError::Malformed(_))));
}

#[test]
fn a_v3_code_opens_only_with_its_data_key_for_its_sku_slot_and_fingerprint() {
    let ring = Keyring::parse(&[&Keyring::generate_secret("k1").unwrap()]).unwrap();
    let s = sku("VOUCHER");
    let dk = DataKey { plaintext: [7; 32], encrypted: b"wrapped-by-kms".to_vec() };
    assert!(!format!("{dk:?}").contains('7'), "Debug never shows the data key");
    let c = ring.seal_kms(&dk, &s, 2, 9, "GIFT-1234-ABCD").unwrap();
    assert_eq!(c.kid, KMS_KID);
    assert!(c.sealed.starts_with("v3.2.9."), "{}", c.sealed);
    assert!(!c.sealed.contains("GIFT"));
    assert_eq!(c.fingerprint, ring.fingerprint(&s, "GIFT-1234-ABCD"), "the keyring's fingerprint");
    assert_eq!(wrapped_key(&c).unwrap(), Some(b"wrapped-by-kms".to_vec()));
    assert_eq!(sealed_slot(&c), Some((2, 9)));
    // without the data key it does not open; with it, at its slot
    assert_eq!(ring.open_at(&s, (2, 9), &c).unwrap_err(), SealError::NeedsDataKey);
    let o = ring.open_at_with(&s, (2, 9), &c, Some(&dk.plaintext)).unwrap();
    assert_eq!((o.code.as_str(), o.sealed_for, o.relocated), ("GIFT-1234-ABCD", Some((2, 9)), None));
    assert_eq!(ring.open_at_with(&s, (2, 10), &c, Some(&dk.plaintext)).unwrap().relocated, Some((2, 9)));
    // another data key, another SKU, a rewritten slot or fingerprint: the tag fails
    assert!(matches!(ring.open_at_with(&s, (2, 9), &c, Some(&[8; 32])), Err(SealError::DoesNotOpen(_))));
    assert!(matches!(
        ring.open_at_with(&sku("OTHER"), (2, 9), &c, Some(&dk.plaintext)),
        Err(SealError::DoesNotOpen(_))
    ));
    let moved = StoredCode { sealed: c.sealed.replacen("v3.2.9.", "v3.2.10.", 1), ..c.clone() };
    assert!(matches!(ring.open_at_with(&s, (2, 10), &moved, Some(&dk.plaintext)), Err(SealError::DoesNotOpen(_))));
    let other = ring.seal_kms(&dk, &s, 2, 10, "GIFT-9999-ZZZZ").unwrap();
    let swapped = StoredCode { fingerprint: other.fingerprint.clone(), ..c.clone() };
    assert!(matches!(ring.open_at_with(&s, (2, 9), &swapped, Some(&dk.plaintext)), Err(SealError::DoesNotOpen(_))));
    // a v3 body relabelled v2 (and given a keyring kid) does not open either
    let body = c.sealed.rsplit('.').next().unwrap();
    let relabelled = StoredCode { sealed: format!("v2.2.9.{body}"), kid: "k1".into(), ..c.clone() };
    assert!(ring.open_at_with(&s, (2, 9), &relabelled, Some(&dk.plaintext)).is_err());
    // v1 and v2 codes still open through the same call (the rotation path)
    let v2 = ring.seal_at(&s, 2, 11, "GIFT-2222").unwrap();
    assert_eq!(ring.open_at_with(&s, (2, 11), &v2, None).unwrap().code, "GIFT-2222");
    assert_eq!(wrapped_key(&v2).unwrap(), None);
    let v1 = ring.seal(&s, "GIFT-1111").unwrap();
    assert_eq!(ring.open_at_with(&s, (0, 0), &v1, Some(&dk.plaintext)).unwrap().code, "GIFT-1111");
    // malformed v3: no data key part, or a data key that is not base64
    for bad in ["v3.2.9.", "v3.2.9..AAAA", "v3.2.9.!!.AAAA"] {
        let b = StoredCode { sealed: bad.into(), ..c.clone() };
        assert!(
            matches!(
                wrapped_key(&b).and_then(|_| ring.open_at_with(&s, (2, 9), &b, Some(&dk.plaintext))),
                Err(SealError::Malformed(_))
            ),
            "{bad}"
        );
    }
}

#[test]
fn new_codes_fill_the_emptiest_shards_first() {
    let rings = [
        Ring { head: 0, tail: 3, uploaded: 3, ..Ring::default() },
        Ring::default(),
        Ring { head: 5, tail: 6, uploaded: 6, ..Ring::default() },
    ];
    assert_eq!(placement(4, &rings), vec![1, 1, 2, 1]);
    assert_eq!(placement(0, &rings), Vec::<u16>::new());
    assert_eq!(Ring { head: 4, tail: 9, uploaded: 9, ..Ring::default() }.available(), 5);
    let g = ranges_of(2, &[3, 4, 5, 9, 11, 12]);
    assert_eq!(
        g.iter().map(|g| (g.shard, g.from, g.count)).collect::<Vec<_>>(),
        vec![(2, 3, 3), (2, 9, 1), (2, 11, 2)]
    );
}
