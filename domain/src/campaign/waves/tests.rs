use super::*;
use crate::campaign::{CampaignSpec, SpecError};
use crate::Sku;

fn wave(starts_at: i64, ends_at: i64, quota: i64) -> Wave {
    Wave { starts_at, ends_at, quota, rolled_in: 0, rolled_out: 0 }
}

fn waved(shards: u16, unsold: Unsold, list: Vec<Wave>) -> CampaignItem {
    CampaignItem {
        sku: Sku::parse("A").unwrap(),
        price: None,
        per_user_limit: None,
        shards,
        quota: list.iter().map(|w| w.quota).sum(),
        admission_rate: None,
        reserve: false,
        waves: Some(Waves { unsold, list }),
    }
}

fn three() -> Vec<Wave> {
    vec![wave(100, 200, 10), wave(200, 300, 20), wave(400, 500, 30)]
}

fn spec(item: CampaignItem) -> CampaignSpec {
    CampaignSpec { name: "Drop".into(), starts_at: 100, ends_at: 500, items: vec![item], end_grace_s: 0, queue: None }
}

#[test]
fn waves_inside_the_window_ordered_and_positive_are_accepted() {
    assert_eq!(spec(waved(2, Unsold::Roll, three())).validate(), Ok(()));
}

#[test]
fn bad_waves_are_refused_naming_the_waves_field() {
    let cases = [
        vec![],
        vec![wave(50, 200, 10)],                     // before the campaign
        vec![wave(100, 600, 10)],                    // past the campaign
        vec![wave(100, 100, 10)],                    // empty window
        vec![wave(100, 200, 0)],                     // no quota
        vec![wave(100, 250, 10), wave(200, 300, 5)], // overlapping
        vec![wave(300, 400, 10), wave(100, 200, 5)], // unordered
    ];
    for list in cases {
        let err = spec(waved(1, Unsold::Return, list.clone())).validate().unwrap_err();
        assert!(matches!(err, SpecError::Waves(..)), "{list:?}: {err:?}");
        assert_eq!(err.field(), "items.waves");
    }
    let too_many = (0..=MAX_WAVES as i64).map(|i| wave(100 + i, 101 + i, 1)).collect();
    assert_eq!(spec(waved(1, Unsold::Return, too_many)).validate().unwrap_err().field(), "items.waves");
    // more than MAX_QUOTA in all: the waves' own check, whatever the item's quota says
    let total = vec![wave(100, 200, crate::campaign::MAX_QUOTA), wave(200, 300, 1)];
    let over = CampaignItem { quota: 5, ..waved(1, Unsold::Return, total) };
    assert_eq!(spec(over).validate().unwrap_err().field(), "items.waves");
    let mut wrong_sum = waved(1, Unsold::Return, three());
    wrong_sum.quota += 1;
    assert_eq!(spec(wrong_sum).validate().unwrap_err().field(), "items.waves");
}

#[test]
fn waves_times_shards_count_against_the_campaigns_shard_budget() {
    // 3 waves x 32 shards = 96: exactly the budget a pause can write in one transaction
    assert_eq!(spec(waved(32, Unsold::Roll, three())).validate(), Ok(()));
    assert_eq!(spec(waved(33, Unsold::Roll, three())).validate(), Err(SpecError::TooManyShards));
}

#[test]
fn each_wave_owns_its_own_shards_carrying_its_own_window() {
    let i = waved(2, Unsold::Roll, three());
    assert_eq!((i.wave_count(), i.quota_shards()), (3, 6));
    assert_eq!(i.wave_shards(1), 2..4);
    assert_eq!(
        i.shard_layout((100, 500)),
        vec![(100, 200, 5), (100, 200, 5), (200, 300, 10), (200, 300, 10), (400, 500, 15), (400, 500, 15)]
    );
    // without waves: the campaign's window on `shards` shards, as before waves
    let plain = CampaignItem { waves: None, quota: 7, ..i };
    assert_eq!(plain.shard_layout((100, 500)), vec![(100, 500, 4), (100, 500, 3)]);
    assert_eq!(plain.quota_shards(), 2);
}

#[test]
fn the_wave_containing_now_sells_and_gaps_are_not_started() {
    let i = waved(1, Unsold::Return, three());
    assert_eq!(i.wave_at(99), Err(GateRefusal::NotStarted));
    assert_eq!(i.wave_at(100), Ok(0));
    assert_eq!(i.wave_at(199), Ok(0));
    assert_eq!(i.wave_at(200), Ok(1));
    assert_eq!(i.wave_at(350), Err(GateRefusal::NotStarted), "between two waves");
    assert_eq!(i.wave_at(499), Ok(2));
    assert_eq!(i.wave_at(500), Err(GateRefusal::Ended));
    assert_eq!(CampaignItem { waves: None, ..i.clone() }.wave_at(12345), Ok(0));
    assert_eq!((i.adjusted_wave(150), i.adjusted_wave(350), i.adjusted_wave(900)), (0, 2, 2));
}

#[test]
fn a_split_in_a_wave_stays_on_its_shards() {
    let i = waved(2, Unsold::Return, three());
    let available = [5, 5, 0, 3, 9, 9];
    let p = i.split_in_wave(1, &available, 0, 3).unwrap();
    assert_eq!(p, vec![Piece { shard: 3, quantity: 3 }]);
    assert_eq!(i.split_in_wave(1, &available, 0, 4).unwrap_err().available, 3, "wave 2's 18 units do not help");
}

#[test]
fn a_roll_moves_exactly_the_ended_waves_remainder_into_the_next() {
    let i = waved(2, Unsold::Roll, three());
    let available = [3, 0, 10, 10, 15, 15];
    assert_eq!(next_roll(&i, &available, 150), None, "wave 1 still sells");
    let r = next_roll(&i, &available, 200).unwrap();
    assert_eq!((r.from, r.units), (0, 3));
    assert_eq!(r.pieces, vec![(0, -3), (2, 2), (3, 1)]);
    assert_eq!(r.pieces.iter().map(|p| p.1).sum::<i64>(), 0, "a roll neither makes nor loses units");
    let after = rolled(&i, &r);
    let ws = &after.waves.as_ref().unwrap().list;
    assert_eq!((ws[0].net(), ws[1].net()), (7, 23));
    assert_eq!(after.quota, i.quota, "the item's quota is unchanged");
    // done (wave 1 empty): nothing until wave 2 ends; the last wave never rolls
    assert_eq!(next_roll(&after, &[0, 0, 12, 11, 15, 15], 250), None);
    assert_eq!(next_roll(&after, &[0, 0, 0, 0, 15, 15], 900), None);
    // a unit released into wave 1 after its roll rolls on the next pass
    assert_eq!(next_roll(&after, &[1, 0, 0, 0, 15, 15], 900).map(|r| (r.from, r.units)), Some((0, 1)));
}

#[test]
fn return_waves_never_roll() {
    let i = waved(1, Unsold::Return, three());
    assert_eq!(next_roll(&i, &[10, 20, 30], 1000), None);
}

#[test]
fn a_roll_of_a_wide_wave_stays_within_one_transaction() {
    let list = vec![wave(100, 200, 640), wave(200, 300, 1)];
    let i = waved(64, Unsold::Roll, list);
    let mut available = vec![10; 64];
    available.extend([0; 64]);
    let r = next_roll(&i, &available, 200).unwrap();
    assert!(r.pieces.len() + 2 <= 100, "{} items", r.pieces.len() + 2);
    assert_eq!(r.units, 640);
}

#[test]
fn the_quota_identity_holds_per_wave_and_a_unit_in_the_wrong_wave_is_found() {
    use crate::invariants::{check_quota_identity, CampaignItemSnapshot, ShardCounts};
    let c = crate::CampaignId::parse("c").unwrap();
    let i = rolled(&waved(1, Unsold::Roll, three()), &Roll { from: 0, units: 4, pieces: vec![] });
    let at = |v: [i64; 3]| move |n: u16| ShardCounts { available: v[usize::from(n)], locked: 0, sold: 0 };
    // wave 1 rolled 4 of its 10 into wave 2: 6, 24, 30
    assert!(check_quota_identity(&[CampaignItemSnapshot::of(&c, &i, at([6, 24, 30]))]).is_empty());
    // the item's sum still holds, but one unit sits in wave 1 that wave 2 owns
    let broken = check_quota_identity(&[CampaignItemSnapshot::of(&c, &i, at([7, 23, 30]))]);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(format!("{broken:?}").contains("wave 0"), "{broken:?}");
}
