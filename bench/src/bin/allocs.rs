//! Heap allocations per create-order request (`make bench` runs it; `bench/REPORT.md`,
//! "Allocations"): the handler end to end over in-memory ports, as the criterion benchmark runs
//! it, under a global allocator that counts. A third of create-order's CPU is the allocator (a
//! `perf` profile, README "Benchmarks"), so this count is the lever the CPU figure moves with,
//! and unlike a time it is the same on a slow day as on a fast one.
//!
//! The in-memory ports allocate too (they stand for AWS calls): the count is of the whole
//! request, ports included, and is compared run to run, not read as the Lambda's own.
//!
//! `cargo run --release -p holdfast-bench --bin allocs -- [--requests N]`

use holdfast::domain::{IdempotencyKey, Quantity, UserId};
use holdfast::handlers;
use holdfast::service::orders;
use holdfast::service::stock::LineRequest;
use holdfast_bench::{app, create_order_request, quiet_metrics, runtime, sku, stock};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

/// The system allocator, counting calls and bytes (a `realloc` counts as one allocation of its
/// new size, as it is one call into the allocator).
struct Counting;

static CALLS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call is forwarded unchanged to `System`; the counters are side effects only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(layout.size() as u64, Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CALLS.fetch_add(1, Ordering::Relaxed);
        BYTES.fetch_add(new_size as u64, Ordering::Relaxed);
        // SAFETY: as for `dealloc`, and `new_size` is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

const USER: &str = "auth0|bench-user";

fn main() -> anyhow::Result<()> {
    quiet_metrics();
    let args: Vec<String> = std::env::args().collect();
    let requests: u64 = match args.iter().position(|a| a == "--requests") {
        Some(i) => args.get(i + 1).map(|n| n.parse()).transpose()?.unwrap_or(1_000),
        None => 1_000,
    };
    let rt = runtime();
    let (app, w) = app("create-order");
    stock(&w, "HOT", 8, None);
    // one checkout first: the lazily built parts (the route table, the config's caches) are
    // the cold start's, not a request's
    let warm = rt
        .block_on(handlers::http("create-order", &app, create_order_request(USER, "warm")))
        .ok_or_else(|| anyhow::anyhow!("create-order does not serve POST /orders"))?;
    anyhow::ensure!(warm.status_code == 201, "warm-up checkout answered {}", warm.status_code);
    let (mut calls, mut bytes) = (0, 0);
    for n in 0..requests {
        let req = create_order_request(USER, &format!("key-{n}"));
        let (c0, b0) = (CALLS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
        let res = rt
            .block_on(handlers::http("create-order", &app, req))
            .ok_or_else(|| anyhow::anyhow!("create-order does not serve POST /orders"))?;
        calls += CALLS.load(Ordering::Relaxed) - c0;
        bytes += BYTES.load(Ordering::Relaxed) - b0;
        anyhow::ensure!(res.status_code == 201, "checkout {n} answered {}", res.status_code);
    }
    println!(
        "create-order: {:.1} allocations and {:.0} bytes allocated per request ({requests} requests)",
        calls as f64 / requests as f64,
        bytes as f64 / requests as f64
    );
    // the same checkouts through the order service alone: what the handler's HTTP layer
    // (routing, the body's parse, the problem or the order's JSON, logs) adds is the difference
    let user = UserId::parse(USER)?;
    let (mut calls, mut bytes) = (0, 0);
    for n in 0..requests {
        let key = IdempotencyKey::parse(&format!("service-{n}"))?;
        let lines = vec![LineRequest::plain(sku("HOT"), Quantity::new(1)?)];
        let (c0, b0) = (CALLS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
        let created = rt.block_on(orders::create(&app, &user, &key, lines));
        calls += CALLS.load(Ordering::Relaxed) - c0;
        bytes += BYTES.load(Ordering::Relaxed) - b0;
        anyhow::ensure!(created.is_ok(), "service checkout {n} refused");
    }
    println!(
        "  of which the order service: {:.1} allocations and {:.0} bytes per checkout",
        calls as f64 / requests as f64,
        bytes as f64 / requests as f64
    );
    Ok(())
}
