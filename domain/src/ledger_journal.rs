//! The stock journal against the counters, for the daily ledger report (docs/operations.md,
//! "Daily ledger report"). Each counter cell (a product shard, a campaign quota shard) has its
//! journal: one entry per write, each with the counters before and after it. From the last
//! entry before the day (the day's opening state) to now, every entry must start where the
//! previous one ended (else an entry is missing: `journal_gap`), and the last one must leave
//! what the counters hold now (else a write was never journaled, or the counters were changed
//! behind the journal's back: `journal_counter_mismatch`). With both, the day's entries sum
//! exactly to the counters' movement over the day.

use super::invariants::ShardCounts;
use super::journal::Entry;
use super::ledger::{Difference, JournalTotals, Window};
use super::{CampaignId, Sku};

/// What was read of one SKU's journal: its entries, newest first, from now back to the last
/// entry before the day of each of its cells (or to the journal's first entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalRead {
    pub sku: Sku,
    pub newest_first: Vec<Entry>,
    /// The reader stopped at its cap before every cell was anchored: the SKU is not checked.
    pub capped: bool,
}

/// How far a stream record's time may trail the moment the report read the counters.
pub const READ_SLACK_MS: i64 = 2_000;

/// One counter cell of a SKU and what it holds now: (campaign for a quota shard, shard, counts).
pub type Cell = (Option<CampaignId>, u16, ShardCounts);

/// Whether reading (newest first) may stop: every cell has an entry older than the day.
pub fn anchored(cells: &[Cell], newest_first: &[Entry], w: Window) -> bool {
    cells
        .iter()
        .all(|(c, shard, _)| newest_first.iter().any(|e| e.at_ms < w.from_ms && &e.campaign == c && e.shard == *shard))
}

/// Compares one SKU's journal with its cells' counters now, adding the day's entries to `t`.
/// `since_ms`: when the counters were read; a counter cell may also show the state an entry
/// written since then left (the store kept moving while the report read it).
pub fn check_journal(
    read: &JournalRead,
    cells: &[Cell],
    w: Window,
    since_ms: i64,
    t: &mut JournalTotals,
) -> Vec<Difference> {
    if read.capped {
        t.skus_unchecked += 1;
        return Vec::new();
    }
    t.skus_checked += 1;
    let mut out = Vec::new();
    for (campaign, shard, now) in cells {
        let mut es: Vec<&Entry> =
            read.newest_first.iter().filter(|e| &e.campaign == campaign && e.shard == *shard).collect();
        es.sort_by(|a, b| a.seq.cmp(&b.seq));
        // from the day's opening entry (the last one before it) on
        let open = es.iter().rposition(|e| e.at_ms < w.from_ms).unwrap_or(0);
        let chain = &es[open..];
        if campaign.is_none() {
            for e in chain.iter().filter(|e| w.holds(e.at_ms)) {
                let d = e.delta();
                t.entries += 1;
                t.available += d.available;
                t.frozen += d.locked;
                t.sold += d.sold;
            }
        }
        let cell = match campaign {
            Some(c) => format!("campaign {c} quota shard {shard}"),
            None => format!("shard {shard}"),
        };
        for pair in chain.windows(2) {
            if let [a, b] = pair {
                if a.after != b.before {
                    let (name, x, y) = first_difference(a.after, b.before);
                    out.push(Difference::new("journal_gap", read.sku.as_str(), Some(x), Some(y)).detail(format!(
                        "{cell}: entry {} ends with {name} = {x}, the next ({}) starts from {y}: an entry is missing",
                        a.seq, b.seq
                    )));
                }
            }
        }
        let Some(last) = chain.last() else { continue };
        // the counters were read at `since_ms`: they show the state the last entry before then
        // left, or (the store kept moving) one written since; stream times may lag the reader's
        // clock by up to READ_SLACK_MS
        let from = chain.iter().rposition(|e| e.at_ms < since_ms - READ_SLACK_MS).unwrap_or(0);
        let explained = chain[from..].iter().any(|e| e.after == *now);
        if !explained {
            let (name, x, y) = first_difference(last.after, *now);
            out.push(Difference::new("journal_counter_mismatch", read.sku.as_str(), Some(x), Some(y)).detail(format!(
                "{cell}: the journal's last entry ({}) leaves {name} = {x}, the counter holds {y}",
                last.seq
            )));
        }
    }
    out
}

/// The first counter of `a` and `b` that differs: (name, a's, b's).
fn first_difference(a: ShardCounts, b: ShardCounts) -> (&'static str, i64, i64) {
    if a.available != b.available {
        ("available", a.available, b.available)
    } else if a.locked != b.locked {
        ("frozen", a.locked, b.locked)
    } else {
        ("sold", a.sold, b.sold)
    }
}
