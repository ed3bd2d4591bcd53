//! The stock journal (docs/after-sale.md, "Stock journal"): why a SKU's counters changed.
//!
//! Every write that moves a counter of a product shard or a campaign quota shard also sets, on
//! that same item, the cause of the move ([`Cause`]: `ref`, `actor`, `why`). The stock table's
//! stream then carries the before and after image of every such write; [`entry`] turns one
//! stream record into one [`Entry`], purely. Nothing is added to the checkout path: the three
//! attributes ride on the item the transaction already updates.

use super::invariants::ShardCounts;
use super::plan::CounterMove;
use super::reservation::Reservation;
use super::{CampaignId, Sku};

/// The actor of writes no person asked for (consumers, sweeps, timeouts).
pub const SYSTEM: &str = "system";

/// What a counter write records about itself, on the shard item it updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Cause id: the reservation (= order) id, the adjustment id, `rebalance-v<version>`.
    pub reference: String,
    /// The admin's JWT `sub`, the buyer's user id, or [`SYSTEM`].
    pub actor: String,
    /// The move name (`freeze`, `sell`, `release`, `retake`, `adjust`, `rebalance`, …), and for
    /// an adjustment `adjust: <reason>`.
    pub why: String,
}

impl Cause {
    pub fn new(reference: impl Into<String>, actor: Option<&str>, why: impl Into<String>) -> Cause {
        Cause { reference: reference.into(), actor: actor.unwrap_or(SYSTEM).to_owned(), why: why.into() }
    }

    /// The cause of an admin adjustment: `why` carries the reason after the move name.
    pub fn adjustment(id: &str, actor: Option<&str>, reason: &str) -> Cause {
        Cause::new(id, actor, format!("adjust: {reason}"))
    }
}

/// The cause a lock move stamps on the shards it writes: the reservation (= order) id, the
/// buyer for a freeze, `system` for every later move (consumers, sweeps and callbacks make
/// them), and the move's name (any new [`CounterMove`] is named the same way).
pub fn move_cause(r: &Reservation, how: CounterMove) -> Cause {
    let actor = match how {
        CounterMove::Freeze => r.user.as_ref().map(|u| u.as_str()),
        _ => None,
    };
    Cause::new(r.id.as_str(), actor, format!("{how:?}").to_lowercase())
}

/// The move name of a `why` (before `": "`), and the reason after it, if any.
pub fn split_why(why: &str) -> (&str, Option<&str>) {
    match why.split_once(": ") {
        Some((m, r)) => (m, Some(r)),
        None => (why, None),
    }
}

/// Which counter item an image belongs to, from its key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counted {
    /// A product shard (its storage key is the adapter's: `adapters::dynamo::images`).
    Shard { sku: Sku, shard: u16 },
    /// A campaign item's quota shard.
    Quota { campaign: CampaignId, sku: Sku, shard: u16 },
}

impl Counted {
    pub fn sku(&self) -> &Sku {
        match self {
            Counted::Shard { sku, .. } | Counted::Quota { sku, .. } => sku,
        }
    }
}

/// One side of a stream record, decoded by the adapter: the counters and the cause stamped on
/// the item (absent on items written before the journal existed, or by a write that stamps
/// nothing, such as the creation of a shard).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Image {
    pub counts: ShardCounts,
    pub cause: Option<Cause>,
}

/// One journal entry: one write of one counter item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub sku: Sku,
    pub shard: u16,
    /// Set for a campaign quota shard.
    pub campaign: Option<CampaignId>,
    pub before: ShardCounts,
    pub after: ShardCounts,
    /// Units moved: the largest counter change.
    pub quantity: i64,
    /// Cause id (`ref`); empty for a shard's creation.
    pub cause: String,
    pub actor: String,
    /// Move name: `create` when the item did not exist before.
    pub why: String,
    /// The admin's reason, for adjustments.
    pub reason: Option<String>,
    /// When the write happened (the stream record's creation time).
    pub at_ms: i64,
    /// Sort key, unique per stream record and time-ordered: `<at_ms, 13 digits>.<sequence>` (URL-safe: it is the page cursor).
    /// A redelivered record gets the same key, so writing it again is idempotent.
    pub seq: String,
}

impl Entry {
    /// `after − before` of each counter.
    pub fn delta(&self) -> ShardCounts {
        ShardCounts {
            available: self.after.available - self.before.available,
            locked: self.after.locked - self.before.locked,
            sold: self.after.sold - self.before.sold,
        }
    }
}

/// The sort key of the entry of a stream record.
pub fn entry_key(at_ms: i64, sequence: &str) -> String {
    format!("{:013}.{sequence}", at_ms.max(0))
}

/// The partitions one SKU's journal is spread over (docs/after-sale.md, "Where entries live"):
/// an entry lives in partition `shard % JOURNAL_PARTITIONS` of its SKU. One partition per SKU
/// took at most about 1,000 entries a second (DynamoDB's write limit per partition, and a
/// time-ordered sort key that a split for heat cannot spread), a twentieth of what a 40-shard
/// flash sale writes; one per shard takes what its shard takes.
pub const JOURNAL_PARTITIONS: u16 = super::allocation::MAX_SHARDS;

/// The partition of an entry of `shard` (a product or a quota shard).
pub fn partition(shard: u16) -> u16 {
    shard % JOURNAL_PARTITIONS
}

/// How many partitions hold the entries of shards `0..shards`: what a read of those shards
/// passes as its spread (every entry of a shard below it is read; others may be).
pub fn spread(shards: u16) -> u16 {
    shards.clamp(1, JOURNAL_PARTITIONS)
}

/// Whether `s` is a well-formed entry key (a page cursor is one).
pub fn is_entry_key(s: &str) -> bool {
    match s.split_once('.') {
        Some((t, q)) => {
            t.len() == 13
                && t.bytes().all(|b| b.is_ascii_digit())
                && !q.is_empty()
                && q.len() <= 64
                && q.bytes().all(|b| b.is_ascii_alphanumeric())
        }
        None => false,
    }
}

/// The entry one stream record makes, or `None` when no counter changed (a stop-sale flag, a
/// window copy) and the item is not new. A new item (no old image) always makes an entry, so
/// the journal of a shard created after the journal existed starts from zero: that is what
/// makes it complete (see [`check`]).
pub fn entry(item: &Counted, old: Option<&Image>, new: Option<&Image>, at_ms: i64, sequence: &str) -> Option<Entry> {
    let before = old.map(|i| i.counts).unwrap_or_default();
    let after = new.map(|i| i.counts).unwrap_or_default();
    if old.is_some() && before == after {
        return None;
    }
    // every counter write stamps its cause, so the new image's stamp is this write's
    let cause = new.and_then(|i| i.cause.as_ref());
    let (why, reason) = match (cause, old) {
        (Some(c), _) => {
            let (m, r) = split_why(&c.why);
            (m.to_owned(), r.map(str::to_owned))
        }
        (None, None) => ("create".to_owned(), None),
        (None, Some(_)) => ("unknown".to_owned(), None),
    };
    let d = [after.available - before.available, after.locked - before.locked, after.sold - before.sold];
    let (sku, shard, campaign) = match item {
        Counted::Shard { sku, shard } => (sku.clone(), *shard, None),
        Counted::Quota { campaign, sku, shard } => (sku.clone(), *shard, Some(campaign.clone())),
    };
    Some(Entry {
        sku,
        shard,
        campaign,
        before,
        after,
        quantity: d.iter().map(|x| x.abs()).max().unwrap_or(0),
        cause: cause.map(|c| c.reference.clone()).unwrap_or_default(),
        actor: cause.map(|c| c.actor.clone()).unwrap_or_else(|| SYSTEM.to_owned()),
        why,
        reason,
        at_ms,
        seq: entry_key(at_ms, sequence),
    })
}

/// What the journal of one SKU's product shards says against its current counters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// For every counter, Σ(after − before) over the entries equals the current value.
    Holds,
    /// Some shard's oldest entry does not start from zero (or it has none): the shard held
    /// units before the journal existed (or its first entry was lost), so the sums cannot be
    /// expected to hold. Not checked.
    Incomplete,
    /// The newest entry of some shard does not show its current counters: the stream has not
    /// been processed up to the last write yet. Check again later.
    Behind,
    /// The sums differ from the counters although the journal is complete and caught up: an
    /// entry is missing or doubled.
    Broken { journal: ShardCounts, counters: ShardCounts },
}

/// Checks the journal of a SKU's product shards `0..shards.len()` (entries of any order;
/// quota entries are ignored) against the shards' current counters.
pub fn check(entries: &[Entry], shards: &[ShardCounts]) -> Verdict {
    let mut sums = vec![ShardCounts::default(); shards.len()];
    let mut oldest: Vec<Option<&Entry>> = vec![None; shards.len()];
    let mut newest: Vec<Option<&Entry>> = vec![None; shards.len()];
    for e in entries.iter().filter(|e| e.campaign.is_none()) {
        let i = usize::from(e.shard);
        if i >= shards.len() {
            return Verdict::Incomplete;
        }
        let d = e.delta();
        sums[i].available += d.available;
        sums[i].locked += d.locked;
        sums[i].sold += d.sold;
        if newest[i].is_none_or(|n| n.seq < e.seq) {
            newest[i] = Some(e);
        }
        if oldest[i].is_none_or(|o| o.seq > e.seq) {
            oldest[i] = Some(e);
        }
    }
    // complete: every shard's journal starts from zero (its creation, or its first write
    // while it was still empty), so the sums start where the counters did
    if oldest.iter().any(|o| o.is_none_or(|e| e.before != ShardCounts::default())) {
        return Verdict::Incomplete;
    }
    if newest.iter().zip(shards).any(|(n, s)| n.map(|e| e.after) != Some(*s)) {
        return Verdict::Behind;
    }
    let total = |v: &[ShardCounts]| {
        v.iter().fold(ShardCounts::default(), |a, c| ShardCounts {
            available: a.available + c.available,
            locked: a.locked + c.locked,
            sold: a.sold + c.sold,
        })
    };
    if sums.iter().zip(shards).all(|(a, b)| a == b) {
        Verdict::Holds
    } else {
        Verdict::Broken { journal: total(&sums), counters: total(shards) }
    }
}

/// How far the reconcile check has read one SKU's journal (review protocol-2 #7): per product
/// shard, the last entry applied and the running sums, so a check reads only the entries written
/// since. Stored next to the journal (one item per SKU), written conditionally on `version`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Checkpoint {
    /// Incremented on every write; a write is conditional on the version read.
    #[serde(default)]
    pub version: u64,
    /// Shard `i`'s mark at index `i`.
    #[serde(default)]
    pub shards: Vec<ShardMark>,
}

/// One product shard's place in its journal.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShardMark {
    /// An entry of this shard has been seen (the sums below mean something).
    #[serde(default)]
    pub started: bool,
    /// The first entry seen started from zero: Σ deltas must equal the counters.
    #[serde(default)]
    pub complete: bool,
    /// Every entry of this shard with a key up to here is in `sum` (or nets to zero).
    #[serde(default)]
    pub seq: String,
    /// Σ(after − before) of the entries applied.
    #[serde(default, with = "counts")]
    pub sum: ShardCounts,
    /// The `after` of the last entry applied: the next one must start from it.
    #[serde(default, with = "counts")]
    pub last: ShardCounts,
}

mod counts {
    use super::ShardCounts;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(c: &ShardCounts, s: S) -> Result<S::Ok, S::Error> {
        [c.available, c.locked, c.sold].serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ShardCounts, D::Error> {
        let [available, locked, sold] = <[i64; 3]>::deserialize(d)?;
        Ok(ShardCounts { available, locked, sold })
    }
}

/// An entry whose `before` does not continue its shard's last `after` (a gap: an entry not yet
/// written, or lost) is waited for this long; older, it is taken as lost: applied, and the
/// sums no longer meet the counters (reported `Broken` from then on).
pub const GAP_GRACE_MS: i64 = 15 * 60 * 1000;
/// Margin for stream timestamps (rounded to the second) and clock skew.
pub const SETTLE_MS: i64 = 5_000;

impl Checkpoint {
    /// Where the next read starts: after the oldest mark of the shards that have one (`None`:
    /// from the first entry). A shard seen for the first time later is judged from that entry.
    pub fn read_from(&self) -> Option<&str> {
        self.shards.iter().filter(|m| m.started).map(|m| m.seq.as_str()).min()
    }

    /// Applies entries read after [`Checkpoint::read_from`] (oldest first; quota entries and
    /// entries a shard already applied are skipped). Within one shard each write's old image
    /// is the previous write's new image, so an entry that does not continue its shard's last
    /// `after` means one is missing: the shard stops there until the gap is filled or is older
    /// than [`GAP_GRACE_MS`]. Returns whether anything moved.
    pub fn apply(&mut self, entries: &[Entry], slots: usize, now_ms: i64) -> bool {
        if self.shards.len() < slots {
            self.shards.resize(slots, ShardMark::default());
        }
        let mut blocked = vec![false; self.shards.len()];
        let mut moved = false;
        for e in entries.iter().filter(|e| e.campaign.is_none()) {
            let i = usize::from(e.shard);
            if i >= self.shards.len() {
                self.shards.resize(i + 1, ShardMark::default());
                blocked.resize(i + 1, false);
            }
            let m = &mut self.shards[i];
            if blocked[i] || (m.started && e.seq.as_str() <= m.seq.as_str()) {
                continue;
            }
            if !m.started {
                *m = ShardMark { started: true, complete: e.before == ShardCounts::default(), ..Default::default() };
                m.last = e.before;
            } else if e.before != m.last && now_ms - e.at_ms < GAP_GRACE_MS {
                blocked[i] = true;
                continue;
            }
            let d = e.delta();
            m.sum = ShardCounts {
                available: m.sum.available + d.available,
                locked: m.sum.locked + d.locked,
                sold: m.sum.sold + d.sold,
            };
            m.last = e.after;
            m.seq = e.seq.clone();
            moved = true;
        }
        moved
    }

    /// After a read whose counters were taken at `read_ms` (before the entries were read): a
    /// shard whose last `after` shows its counters has nothing pending from before then that
    /// changes its sums (any entry still on its way nets to zero), so its mark may move up to
    /// `read_ms − SETTLE_MS` and stop holding the next read back.
    ///
    /// Nothing settles while a shard of `0..counters.len()` has not started (review protocol-3
    /// N11): a new shard's creation entry may reach the journal late (stream lag), and a mark
    /// moved past it would skip it for good, leaving the SKU `Incomplete` from then on.
    pub fn settle(&mut self, counters: &[ShardCounts], read_ms: i64) {
        if (0..counters.len()).any(|i| self.shards.get(i).is_none_or(|m| !m.started)) {
            return;
        }
        let key = entry_key(read_ms - SETTLE_MS, "");
        for (m, c) in self.shards.iter_mut().zip(counters) {
            if m.started && m.last == *c && m.seq < key {
                m.seq = key.clone();
            }
        }
    }

    /// The verdict on shards `0..counters.len()` (as [`check`] gives it on the whole journal).
    pub fn verdict(&self, counters: &[ShardCounts]) -> Verdict {
        let marks: Vec<Option<&ShardMark>> = (0..counters.len()).map(|i| self.shards.get(i)).collect();
        if marks.iter().any(|m| m.is_none_or(|m| !m.started || !m.complete)) {
            return Verdict::Incomplete;
        }
        let marks: Vec<&ShardMark> = marks.into_iter().flatten().collect();
        if marks.iter().zip(counters).any(|(m, c)| m.last != *c) {
            return Verdict::Behind;
        }
        if marks.iter().zip(counters).all(|(m, c)| m.sum == *c) {
            return Verdict::Holds;
        }
        let total = |v: &mut dyn Iterator<Item = ShardCounts>| {
            v.fold(ShardCounts::default(), |a, c| ShardCounts {
                available: a.available + c.available,
                locked: a.locked + c.locked,
                sold: a.sold + c.sold,
            })
        };
        Verdict::Broken {
            journal: total(&mut marks.iter().map(|m| m.sum)),
            counters: total(&mut counters.iter().copied()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(available: i64, locked: i64, sold: i64) -> ShardCounts {
        ShardCounts { available, locked, sold }
    }

    fn img(counts: ShardCounts, cause: Option<Cause>) -> Image {
        Image { counts, cause }
    }

    fn shard0() -> Counted {
        Counted::Shard { sku: Sku::parse("A-1").unwrap(), shard: 0 }
    }

    #[test]
    fn a_freeze_record_becomes_an_entry_with_its_cause_and_quantity() {
        let old = img(c(10, 0, 0), Some(Cause::adjustment("adj-1", Some("admin-1"), "restock")));
        let new = img(c(7, 3, 0), Some(Cause::new("ord-1", Some("u1"), "freeze")));
        let e = entry(&shard0(), Some(&old), Some(&new), 1_700_000_000_123, "42").unwrap();
        assert_eq!((e.before, e.after, e.quantity), (c(10, 0, 0), c(7, 3, 0), 3));
        assert_eq!((e.cause.as_str(), e.actor.as_str(), e.why.as_str(), e.reason), ("ord-1", "u1", "freeze", None));
        assert_eq!(e.seq, "1700000000123.42");
        assert!(is_entry_key(&e.seq));
    }

    #[test]
    fn an_adjustment_keeps_its_reason_and_a_new_shard_is_a_create_entry() {
        let new = img(c(5, 0, 0), Some(Cause::adjustment("adj-1", Some("admin-1"), "count: 5 found")));
        let e = entry(&shard0(), Some(&img(c(0, 0, 0), None)), Some(&new), 1, "1").unwrap();
        assert_eq!(
            (e.why.as_str(), e.reason.as_deref(), e.actor.as_str()),
            ("adjust", Some("count: 5 found"), "admin-1")
        );
        let created = entry(&shard0(), None, Some(&img(c(0, 0, 0), None)), 1, "2").unwrap();
        assert_eq!((created.why.as_str(), created.quantity, created.actor.as_str()), ("create", 0, SYSTEM));
    }

    #[test]
    fn a_write_that_changes_no_counter_makes_no_entry() {
        let cause = Some(Cause::new("ord-1", None, "sell"));
        assert!(
            entry(&shard0(), Some(&img(c(1, 0, 2), cause.clone())), Some(&img(c(1, 0, 2), cause)), 1, "3").is_none()
        );
    }

    #[test]
    fn a_counter_write_without_a_stamp_is_unknown() {
        let e = entry(&shard0(), Some(&img(c(1, 0, 2), None)), Some(&img(c(4, 0, 2), None)), 1, "4").unwrap();
        assert_eq!((e.why.as_str(), e.cause.as_str(), e.quantity), ("unknown", "", 3));
    }

    fn e(shard: u16, before: ShardCounts, after: ShardCounts, why: &str, seq: &str) -> Entry {
        Entry {
            sku: Sku::parse("A-1").unwrap(),
            shard,
            campaign: None,
            before,
            after,
            quantity: 0,
            cause: String::new(),
            actor: SYSTEM.into(),
            why: why.into(),
            reason: None,
            at_ms: 0,
            seq: seq.into(),
        }
    }

    #[test]
    fn the_check_holds_on_a_complete_caught_up_journal_and_says_why_otherwise() {
        let journal = vec![
            e(0, c(0, 0, 0), c(0, 0, 0), "create", "0000000000001.1"),
            e(0, c(0, 0, 0), c(10, 0, 0), "adjust", "0000000000002.2"),
            e(0, c(10, 0, 0), c(8, 2, 0), "freeze", "0000000000003.3"),
            e(0, c(8, 2, 0), c(8, 0, 2), "sell", "0000000000004.4"),
        ];
        assert_eq!(check(&journal, &[c(8, 0, 2)]), Verdict::Holds);
        assert_eq!(check(&journal, &[c(6, 2, 2)]), Verdict::Behind);
        // a shard that was empty when its journal began counts from zero as well
        assert_eq!(check(&journal[1..], &[c(8, 0, 2)]), Verdict::Holds);
        // one that held units before the journal existed cannot be summed
        assert_eq!(check(&journal[2..], &[c(8, 0, 2)]), Verdict::Incomplete);
        assert_eq!(check(&journal, &[c(8, 0, 2), c(0, 0, 0)]), Verdict::Incomplete, "shard 1 has no entries");
        // an entry lost in the middle: the newest still shows the counters, the sums do not
        let mut lost = journal.clone();
        lost.remove(2);
        assert_eq!(check(&lost, &[c(8, 0, 2)]), Verdict::Broken { journal: c(10, -2, 2), counters: c(8, 0, 2) });
    }

    #[test]
    fn a_checkpoint_sums_what_it_read_waits_at_a_young_gap_and_takes_an_old_one_as_lost() {
        let mut journal = vec![
            e(0, c(0, 0, 0), c(0, 0, 0), "create", "0000000000001.1"),
            e(0, c(0, 0, 0), c(10, 0, 0), "adjust", "0000000000002.2"),
            e(0, c(10, 0, 0), c(8, 2, 0), "freeze", "0000000000003.3"),
            e(0, c(8, 2, 0), c(8, 0, 2), "sell", "0000000000004.4"),
        ];
        for (i, x) in journal.iter_mut().enumerate() {
            x.at_ms = 1_000 * (i as i64 + 1);
        }
        // read in two parts, the same verdict as the whole journal
        let mut cp = Checkpoint::default();
        assert!(cp.apply(&journal[..2], 1, 10_000));
        assert_eq!(cp.verdict(&[c(10, 0, 0)]), Verdict::Holds);
        assert_eq!(cp.read_from(), Some("0000000000002.2"));
        assert!(cp.apply(&journal[2..], 1, 10_000));
        assert_eq!(cp.verdict(&[c(8, 0, 2)]), check(&journal, &[c(8, 0, 2)]));
        assert!(!cp.apply(&journal, 1, 10_000), "entries already applied are skipped");
        // a second shard whose creation entry has not arrived (stream lag): nothing settles,
        // or its creation would be read past for good (review protocol-3 N11)
        let mut waiting = cp.clone();
        waiting.settle(&[c(8, 0, 2), c(0, 0, 0)], 60_000);
        assert_eq!(waiting.read_from(), Some("0000000000004.4"), "held back for the new shard");
        // nothing new and caught up: the mark settles to the counters' read time
        cp.settle(&[c(8, 0, 2)], 60_000);
        assert_eq!(cp.read_from(), Some("0000000055000."));
        // a gap (the freeze's entry not written yet): waited for while young…
        let mut cp = Checkpoint::default();
        let gapped = [journal[0].clone(), journal[1].clone(), journal[3].clone()];
        cp.apply(&gapped, 1, 10_000);
        assert_eq!(cp.verdict(&[c(8, 0, 2)]), Verdict::Behind);
        assert_eq!(cp.read_from(), Some("0000000000002.2"), "not read past");
        cp.settle(&[c(8, 0, 2)], 10_000);
        assert_eq!(cp.read_from(), Some("0000000000002.2"), "a shard short of its counters does not settle");
        // …and taken as lost once older than the grace: the sums no longer meet the counters
        cp.apply(&gapped, 1, 4_000 + GAP_GRACE_MS);
        assert_eq!(cp.verdict(&[c(8, 0, 2)]), Verdict::Broken { journal: c(10, -2, 2), counters: c(8, 0, 2) });
        // a shard with no entry, or one starting above zero, is not summed
        assert_eq!(Checkpoint::default().verdict(&[c(0, 0, 0)]), Verdict::Incomplete);
        let mut cp = Checkpoint::default();
        cp.apply(&journal[2..], 1, 10_000);
        assert_eq!(cp.verdict(&[c(8, 0, 2)]), Verdict::Incomplete);
        let json = serde_json::to_string(&cp).unwrap();
        assert_eq!(serde_json::from_str::<Checkpoint>(&json).unwrap(), cp);
    }

    #[test]
    fn a_read_of_a_skus_shards_covers_the_partitions_their_entries_live_in() {
        // a product shard is always below the spread of its SKU's shard count
        for shards in 1..=JOURNAL_PARTITIONS {
            assert!((0..shards).all(|s| partition(s) < spread(shards)));
        }
        // quota shards (up to shards x waves) wrap: every partition is below the largest spread
        assert_eq!(partition(JOURNAL_PARTITIONS), 0);
        assert_eq!(partition(95), 31);
        assert_eq!(spread(0), 1);
        assert_eq!(spread(96), JOURNAL_PARTITIONS);
    }
}
