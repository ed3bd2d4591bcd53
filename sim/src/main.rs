//! Deterministic simulator (docs/simulator.md): a seeded scheduler drives the real services over
//! the in-memory ports with a virtual clock, runs several actors at once interleaved at every
//! port call, delivers the event pipeline and the delay queues itself (late, twice, reordered,
//! lost-then-redelivered), injects crashes at the fault points, and checks the invariants after
//! every step and at quiescence. A failing schedule is shrunk before it is printed.
//!
//! `holdfast-sim --seeds A..B --steps N` or `--seed n --steps N [--skip 3,7-9]`.

mod checks;
mod shop;
mod sometimes;
mod waitlist;
mod world;

use holdfast::clock;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use world::{Sim, Stats};

const TRACE_TAIL: usize = 40;

#[derive(Clone)]
struct Opts {
    strict: bool,
    interleave: bool,
    /// Print each passing seed's whole trace.
    trace: bool,
}

struct Failure {
    step: u64,
    violations: Vec<String>,
    trace: Vec<String>,
}

impl Failure {
    /// The first violation's name: a shrunk schedule must fail the same way.
    fn kind(&self) -> String {
        let v = self.violations.first().map(String::as_str).unwrap_or("");
        v.split([' ', '{', '(']).next().unwrap_or("").to_owned()
    }
}

/// Runs one seed; `Err` = a violation.
async fn run_seed(
    seed: u64,
    steps: u64,
    o: &Opts,
    skip: &HashSet<u64>,
    stats: &mut Stats,
) -> anyhow::Result<Result<(), Failure>> {
    let mut sim = Sim::new(seed, o.interleave).await?;
    sim.strict = o.strict;
    sim.skip = skip.clone();
    let fail = |sim: &Sim, step, violations| Failure { step, violations, trace: sim.trace.clone() };
    for step in 0..steps {
        sim.step(step).await;
        sim.collect();
        sim.stats.steps += 1;
        let mut v = checks::check(&sim, false);
        holdfast::adapters::memory::set_interleaving(false);
        v.extend(checks::queue(&sim).await);
        v.extend(checks::waitlist(&sim, false).await);
        holdfast::adapters::memory::set_interleaving(o.interleave);
        if !v.is_empty() {
            merge(stats, &sim.stats);
            return Ok(Err(fail(&sim, step, v)));
        }
    }
    holdfast::adapters::memory::set_interleaving(false);
    sim.quiesce().await;
    merge(stats, &sim.stats);
    let mut v = checks::check(&sim, true);
    v.extend(checks::queue(&sim).await);
    v.extend(checks::waitlist(&sim, true).await);
    if !v.is_empty() {
        return Ok(Err(fail(&sim, steps, v)));
    }
    if o.trace {
        println!("seed={seed} trace:");
        for t in &sim.trace {
            println!("  {t}");
        }
    }
    Ok(Ok(()))
}

/// Shrinks a failing schedule: first the fewest steps that still fail the same way, then drops
/// chunks of steps (drawn, not run) while it still does. Bounded by `budget` of wall time.
fn shrink(
    rt: &tokio::runtime::Runtime,
    seed: u64,
    steps: u64,
    o: &Opts,
    first: Failure,
    budget: Duration,
) -> anyhow::Result<(u64, HashSet<u64>, Failure)> {
    let started = Instant::now();
    let kind = first.kind();
    let mut scratch = Stats::default();
    let mut fails = |n: u64, skip: &HashSet<u64>| -> anyhow::Result<Option<Failure>> {
        Ok(rt.block_on(run_seed(seed, n, o, skip, &mut scratch))?.err().filter(|f| f.kind() == kind))
    };
    let mut best = first;
    // a violation at step k needs only k + 1 steps
    let mut n = if best.step < steps { best.step + 1 } else { steps };
    let mut skip = HashSet::new();
    while n > 1 && started.elapsed() < budget {
        match fails(n / 2, &skip)? {
            Some(f) => {
                n = if f.step < n / 2 { f.step + 1 } else { n / 2 };
                best = f;
            }
            None => break,
        }
    }
    let mut chunk = (n / 4).max(1);
    loop {
        let mut start = 0;
        while start < n && started.elapsed() < budget {
            let mut trial = skip.clone();
            trial.extend(start..(start + chunk).min(n));
            if trial.len() > skip.len() {
                if let Some(f) = fails(n, &trial)? {
                    skip = trial;
                    best = f;
                }
            }
            start += chunk;
        }
        if chunk == 1 || started.elapsed() >= budget {
            break;
        }
        chunk /= 2;
    }
    Ok((n, skip, best))
}

/// `3,7-9` for {3, 7, 8, 9}.
fn ranges(skip: &HashSet<u64>) -> String {
    let mut v: Vec<u64> = skip.iter().copied().collect();
    v.sort_unstable();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let mut j = i;
        while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
            j += 1;
        }
        out.push(if i == j { v[i].to_string() } else { format!("{}-{}", v[i], v[j]) });
        i = j + 1;
    }
    out.join(",")
}

fn parse_ranges(s: &str) -> anyhow::Result<HashSet<u64>> {
    let mut out = HashSet::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => out.extend(a.parse::<u64>()?..=b.parse::<u64>()?),
            None => {
                out.insert(part.parse()?);
            }
        }
    }
    Ok(out)
}

fn merge(into: &mut Stats, s: &Stats) {
    into.steps += s.steps;
    into.concurrent_steps += s.concurrent_steps;
    for (k, n) in &s.statuses {
        *into.statuses.entry(k.clone()).or_default() += n;
    }
    for (k, n) in &s.faults_hit {
        *into.faults_hit.entry(k).or_default() += n;
    }
    into.sometimes.merge(&s.sometimes);
}

/// The deterministic simulator (docs/simulator.md): seeds of random steps against the memory
/// world, invariants checked after every step and at quiescence.
#[derive(clap::Parser)]
#[command(about)]
struct Cli {
    /// Seeds to run, `A..B` (end exclusive).
    #[arg(long, value_parser = seed_range, default_value = "0..20", conflicts_with = "seed")]
    seeds: std::ops::Range<u64>,
    /// One seed (replay).
    #[arg(long)]
    seed: Option<u64>,
    /// Steps per seed.
    #[arg(long, default_value_t = 300)]
    steps: u64,
    /// Stop starting seeds after this many seconds of wall time.
    #[arg(long)]
    seconds: Option<u64>,
    /// Steps to skip, `3,7-9` (what shrinking prints).
    #[arg(long, value_parser = skip_list, default_value = "")]
    skip: HashSet<u64>,
    /// Print the statistics of the run.
    #[arg(long)]
    stats: bool,
    /// Go on after a failing seed.
    #[arg(long)]
    keep_going: bool,
    /// Report a failure as found, without shrinking it.
    #[arg(long)]
    no_shrink: bool,
    /// Run every step alone (no concurrent steps).
    #[arg(long)]
    no_interleave: bool,
    /// Check the strict invariants as well.
    #[arg(long)]
    strict: bool,
    /// Print the whole trace of every seed that passes.
    #[arg(long)]
    trace: bool,
}

fn seed_range(v: &str) -> Result<std::ops::Range<u64>, String> {
    let bad = || format!("{v:?} is not a seed range A..B");
    let (x, y) = v.split_once("..").ok_or_else(bad)?;
    Ok(x.parse().map_err(|_| bad())?..y.parse().map_err(|_| bad())?)
}

fn skip_list(v: &str) -> Result<HashSet<u64>, String> {
    parse_ranges(v).map_err(|e| format!("{e:#}"))
}

struct Args {
    seeds: std::ops::Range<u64>,
    steps: u64,
    seconds: Option<u64>,
    verbose: bool,
    keep_going: bool,
    shrink: bool,
    skip: HashSet<u64>,
    opts: Opts,
}

fn args() -> Args {
    let c = <Cli as clap::Parser>::parse();
    Args {
        seeds: c.seed.map_or(c.seeds, |n| n..n + 1),
        steps: c.steps,
        seconds: c.seconds,
        verbose: c.stats,
        keep_going: c.keep_going,
        shrink: !c.no_shrink,
        skip: c.skip,
        opts: Opts { strict: c.strict, interleave: !c.no_interleave, trace: c.trace },
    }
}

fn report(seed: u64, steps: u64, skip: &HashSet<u64>, o: &Opts, f: &Failure) {
    println!("seed={seed}");
    let at = if f.step >= steps { "quiescence".to_owned() } else { format!("step {}", f.step) };
    println!("violation at {at} of {steps} steps:");
    for v in &f.violations {
        println!("  {v}");
    }
    let tail = if std::env::var_os("SIM_FULL_TRACE").is_some() { 0 } else { f.trace.len().saturating_sub(TRACE_TAIL) };
    println!("trace ({} lines, last {} shown; SIM_FULL_TRACE=1 for all):", f.trace.len(), f.trace.len() - tail);
    for t in &f.trace[tail..] {
        println!("  {t}");
    }
    let mut flags = String::new();
    if !skip.is_empty() {
        flags += &format!(" --skip {}", ranges(skip));
    }
    if o.strict {
        flags += " --strict";
    }
    if !o.interleave {
        flags += " --no-interleave";
    }
    println!("replay: cargo run -p holdfast-sim -- --seed {seed} --steps {steps}{flags}");
}

fn main() -> anyhow::Result<()> {
    let a = args();
    // the services' EMF metric lines would drown the trace
    std::env::set_var("HOLDFAST_QUIET_METRICS", "1");
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?;
    let started = Instant::now();
    let counters_before = holdfast::telemetry::snapshot();
    let mut stats = Stats::default();
    let mut seeds = 0u64;
    let mut failed = 0u64;
    let mut seed = a.seeds.start;
    loop {
        let more = match a.seconds {
            Some(s) => started.elapsed().as_secs() < s,
            None => seed < a.seeds.end,
        };
        if !more {
            break;
        }
        if let Err(f) = rt.block_on(run_seed(seed, a.steps, &a.opts, &a.skip, &mut stats))? {
            let (steps, skip, f) = if a.shrink {
                let (n, skip, small) = shrink(&rt, seed, a.steps, &a.opts, f, Duration::from_secs(60))?;
                let mut all = a.skip.clone();
                all.extend(skip);
                (n, all, small)
            } else {
                (a.steps, a.skip.clone(), f)
            };
            report(seed, steps, &skip, &a.opts, &f);
            if !a.keep_going {
                std::process::exit(1);
            }
            failed += 1;
        }
        seeds += 1;
        seed += 1;
    }
    clock::set_virtual_ms(None);
    let secs = started.elapsed().as_secs_f64();
    if a.verbose {
        let mut st: Vec<_> = stats.statuses.iter().collect();
        st.sort();
        let mut fp: Vec<_> = stats.faults_hit.iter().collect();
        fp.sort();
        eprintln!("order statuses reached: {} of {}: {st:?}", st.len(), holdfast::domain::order::ALL_STATUSES.len());
        eprintln!("fault points armed: {} of {}: {fp:?}", fp.len(), holdfast::faults::ALL.len());
        eprintln!("concurrent steps: {} of {}", stats.concurrent_steps, stats.steps);
        eprintln!(
            "{:.1} s, {:.0} steps/s, {:.0} seeds/min",
            secs,
            stats.steps as f64 / secs,
            seeds as f64 * 60.0 / secs
        );
    }
    // the rare paths of a multi-seed run; one as large as `make sim`'s must reach each listed one
    let mut never = Vec::new();
    if seeds > 1 {
        stats.sometimes.metrics(&counters_before, &holdfast::telemetry::snapshot());
        let gate = seeds >= sometimes::MIN_SEEDS && a.steps >= sometimes::MIN_STEPS;
        never = sometimes::report(&stats.sometimes, gate);
        for p in &never {
            println!("sometimes: never reached: {p}");
        }
    }
    let rare = if never.is_empty() { String::new() } else { format!(", {} rare paths never reached", never.len()) };
    println!("sim: {seeds} seeds, {} steps, {failed} violations{rare}", stats.steps);
    if failed > 0 || !never.is_empty() {
        std::process::exit(1);
    }
    Ok(())
}
