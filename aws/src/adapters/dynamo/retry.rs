//! How a batch read asks again for its unprocessed keys (the part of a `BatchGetItem` DynamoDB
//! throttled): a bounded number of rounds with a growing pause, never a tight loop. The policy is
//! pure, so its bound and schedule are unit-tested here; [`Retries`] applies it.

use std::time::Duration;

/// The bound and the pause schedule of the unprocessed-keys retry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RetryPolicy {
    /// Retries after the first request; one more round of unprocessed keys is an error.
    pub max_retries: u32,
    /// The pause before retry `n` is `n × step` (at least 1 ms).
    pub step: Duration,
}

impl RetryPolicy {
    /// Every batch read of the stock and order tables: 8 retries, 20…160 ms apart (≈ 0.7 s of
    /// pauses in all, inside every function's SDK budget).
    pub(crate) const BATCH_READS: RetryPolicy = RetryPolicy { max_retries: 8, step: Duration::from_millis(20) };

    /// The pause before retry `retry` (1-based), or `None`: past the bound, give up.
    pub(crate) fn pause(&self, retry: u32) -> Option<Duration> {
        (1..=self.max_retries).contains(&retry).then(|| self.step.max(Duration::from_millis(1)) * retry)
    }
}

/// The retries of one batch read so far.
#[derive(Debug)]
pub(crate) struct Retries {
    policy: RetryPolicy,
    done: u32,
}

impl Retries {
    pub(crate) fn new(policy: RetryPolicy) -> Retries {
        Retries { policy, done: 0 }
    }

    /// Keys came back unprocessed: waits out the next pause before they are asked again, or
    /// fails once the policy's retries are spent.
    pub(crate) async fn wait(&mut self, what: &str) -> anyhow::Result<()> {
        self.done += 1;
        match self.policy.pause(self.done) {
            Some(pause) => {
                tokio::time::sleep(pause).await;
                Ok(())
            }
            None => anyhow::bail!("{what} kept returning unprocessed keys after {} retries", self.policy.max_retries),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schedule(p: RetryPolicy) -> Vec<Duration> {
        (1..).map_while(|n| p.pause(n)).collect()
    }

    #[test]
    fn the_batch_read_policy_retries_eight_times_with_growing_pauses() {
        let s = schedule(RetryPolicy::BATCH_READS);
        assert_eq!(s.len(), 8);
        assert_eq!(s.first(), Some(&Duration::from_millis(20)));
        assert_eq!(s.last(), Some(&Duration::from_millis(160)));
        assert!(s.windows(2).all(|w| w[0] < w[1]), "pauses must grow: {s:?}");
        assert_eq!(s.iter().sum::<Duration>(), Duration::from_millis(720));
    }

    #[test]
    fn no_pause_is_zero_and_the_bound_holds_for_any_policy() {
        for max_retries in [0, 1, 3, 8] {
            for step in [Duration::ZERO, Duration::from_millis(1), Duration::from_millis(50)] {
                let p = RetryPolicy { max_retries, step };
                let s = schedule(p);
                assert_eq!(s.len(), max_retries as usize, "{p:?}");
                assert!(s.iter().all(|d| !d.is_zero()), "{p:?}: {s:?}");
                assert!(s.windows(2).all(|w| w[0] < w[1]), "{p:?}: {s:?}");
                assert_eq!(p.pause(0), None);
                assert_eq!(p.pause(max_retries + 1), None);
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn retries_stop_after_the_bound_having_slept_the_schedule() {
        let mut r = Retries::new(RetryPolicy::BATCH_READS);
        let start = tokio::time::Instant::now();
        for _ in 0..8 {
            r.wait("BatchGetItem orders").await.expect("within the bound");
        }
        assert_eq!(start.elapsed(), Duration::from_millis(720));
        let e = r.wait("BatchGetItem orders").await.expect_err("past the bound");
        assert!(e.to_string().contains("after 8 retries"), "{e}");
        assert_eq!(start.elapsed(), Duration::from_millis(720), "no pause before giving up");
    }
}
