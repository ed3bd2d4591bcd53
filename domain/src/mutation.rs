//! Planted protocol bugs for the deterministic simulator (`sim/`, docs/simulator.md). Compiled in
//! only with the `sim-mutations` feature, which only `holdfast-sim --features mutations` enables:
//! without it, [`mutant!`] expands to `false` and no mutation reaches any other build.
//!
//! `HOLDFAST_MUTATION=<name>` picks at most one, read once per process.

/// Every planted bug the simulator must catch within `make sim-mutants`'s seed range (the gate:
/// the script fails if one goes uncaught); see docs/simulator.md for what each one breaks.
pub const ALL: &[&str] = &[
    "freeze-skip-available",
    "lock-move-ignores-status",
    "release-keeps-allowance",
    "paytime-sells-locked",
    "payment-ignores-deadline",
    "paid-event-releases",
    // protocol-2 findings the lifecycle seam fixed, re-planted one by one
    "p2-1-shown-code-resold",
    "p2-3-ship-lost-stock",
    "p2-4-refund-keeps-booking",
    "p2-6-refund-after-reveal",
    "l2-oversell-unchecked",
    // the notify-me waitlist tells one buyer more than units came back (docs/waitlist.md)
    "waitlist-tells-one-more",
];

/// Planted bugs the simulator does not catch yet, each for a reason docs/simulator.md gives
/// (a fence against a Lambda slower than a queue delay; a backstop behind a retry that already
/// repairs). `make sim-mutants` runs them too and reports them without failing.
pub const UNCAUGHT: &[&str] = &[
    "retake-oversold",
    "check-skips-void",
    "order-put-over-void",
    "give-back-twice",
    "p2-9-sweep-skips-restock",
    "p2-11-mark-any-lock",
];

#[cfg(feature = "sim-mutations")]
pub fn active(name: &str) -> bool {
    static ON: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    ON.get_or_init(|| std::env::var("HOLDFAST_MUTATION").ok().filter(|m| !m.is_empty())).as_deref() == Some(name)
}

/// `mutant!("name")`: true when that planted bug is active; always false without the feature.
#[macro_export]
macro_rules! mutant {
    ($name:expr) => {{
        #[cfg(feature = "sim-mutations")]
        {
            $crate::mutation::active($name)
        }
        #[cfg(not(feature = "sim-mutations"))]
        {
            false
        }
    }};
}
