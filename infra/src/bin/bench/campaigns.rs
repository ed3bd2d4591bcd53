//! The campaign section: paid campaign vs plain orders, public read cost, and the ceiling with quota shards.

use super::*;

/// The campaign part of the report: paid campaign vs plain orders, public read cost, and the
/// ceiling with quota shards.
pub(crate) async fn campaign_section(endpoint: &str, n: usize) -> anyhow::Result<(Value, String)> {
    eprintln!("bench: {n} paid plain and {n} paid campaign lifecycles …");
    let plain = paid_lifecycles_of(endpoint, n, false, "5").await?;
    let uncapped = paid_lifecycles_of(endpoint, n, false, "0").await?;
    let camp = paid_lifecycles_of(endpoint, n, true, "5").await?;
    eprintln!("bench: public reads at steady polling …");
    let reads = public_reads(endpoint, 400, 5).await?;
    let ceilings: Vec<(u32, f64)> =
        [1, 2, 4, 8, 16, 32, 40, 48, 64].iter().map(|q| (*q, campaign_ceiling(64, *q))).collect();
    let v = json!({"plain_order": plain, "plain_order_no_pending_cap": uncapped, "campaign_order": camp, "public_reads": reads, "campaign_ceiling_points": ceilings});
    let mut md = String::new();
    let w = |v: &Value| v["usage"]["write_units"].as_f64().unwrap_or(0.0);
    let r = |v: &Value| v["usage"]["read_units"].as_f64().unwrap_or(0.0);
    let t = |v: &Value| v["usage"]["total_usd"].as_f64().unwrap_or(0.0);
    let _ = writeln!(md, "## Campaign orders (measured)

{n} paid single-line lifecycles each, same method as above (the pending-checkout cap, on by default, writes its counter in the freeze and in the confirm transaction).

| | WRU | RRU | cost per paid order |
|---|---|---|---|");
    let _ = writeln!(md, "| plain order | {:.2} | {:.2} | {} |", w(&plain), r(&plain), usd(t(&plain)));
    let _ = writeln!(
        md,
        "| plain order, pending cap off (`HOLDFAST_MAX_PENDING_PER_USER=0`) | {:.2} | {:.2} | {} |",
        w(&uncapped),
        r(&uncapped),
        usd(t(&uncapped))
    );
    let _ = writeln!(
        md,
        "| campaign order (quota shard in the same transaction) | {:.2} | {:.2} | {} |",
        w(&camp),
        r(&camp),
        usd(t(&camp))
    );
    let _ = writeln!(
        md,
        "
## Public reads at steady polling (measured)

400 reads/s for 5 s (20 waves a second) against one warm stock-api: eventually consistent reads, 1 s per-Lambda cache, one refresh at a time. A Lambda instance serves one request at a time, so in AWS the figure per instance is `refresh RRU × 100 / (reads per second per instance × TTL s)` (a refresh of a 4-shard SKU view is 5 eventually consistent item reads).

| read | reads | RRU | RRU per 100 reads |
|---|---|---|---|"
    );
    for (k, x) in reads.as_object().into_iter().flatten() {
        let _ = writeln!(
            md,
            "| {k} | {} | {:.2} | {:.3} |",
            x["reads"],
            x["read_units"].as_f64().unwrap_or(0.0),
            x["read_units_per_100_reads"].as_f64().unwrap_or(0.0)
        );
    }
    let _ = writeln!(md, "
## Campaign ceiling (**model**)

A campaign freeze writes a product shard and a quota shard (2 WCU each, transactional) on different partitions; each caps at 500 freezes/s per shard. With 64 product shards:

| quota shards | freezes/s |
|---|---|");
    for (q, c) in &ceilings {
        let _ = writeln!(md, "| {q} | {c:.0} |");
    }
    Ok((v, md))
}

/// Freezes/s one campaign item sustains with `product` product shards and `quota` quota shards.
pub(crate) fn campaign_ceiling(product: u32, quota: u32) -> f64 {
    ceiling(product).min(ceiling(quota))
}
