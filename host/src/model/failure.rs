//! The failure policy an app declares in `capstan.yaml` (issue 45): how
//! often and how soon the daemon tries a failed automatic operation again
//! ([`RetryPolicy`], with the backoff arithmetic [`RetryPolicy::delay`]),
//! and what a failed update leaves behind ([`OnFailure`]). Pure values;
//! the lifecycle acts on them.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// What a failed update leaves (`on_failure` in `capstan.yaml`, or `app
/// update --on-failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnFailure {
    /// Apply the version the update left again (the default, as Helm 4's
    /// `--rollback-on-failure` and Flux's `upgrade.remediation.strategy:
    /// rollback` do).
    #[default]
    Rollback,
    /// Leave the new version applied as far as it got, in `apply-failed`,
    /// for a person to look at; `app apply` or `app recover` tries it
    /// again, `app rollback` goes back.
    Keep,
}

impl fmt::Display for OnFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Rollback => "rollback",
            Self::Keep => "keep",
        })
    }
}

impl std::str::FromStr for OnFailure {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "rollback" => Ok(Self::Rollback),
            "keep" => Ok(Self::Keep),
            other => Err(format!("on_failure {other:?} is neither rollback nor keep")),
        }
    }
}

/// How many retries an app gets unless its `capstan.yaml` says otherwise.
pub const DEFAULT_RETRIES: u32 = 3;
/// The most retries an app may ask for.
pub const MAX_RETRIES: u32 = 20;
/// The first retry's delay unless `capstan.yaml` says otherwise.
pub const DEFAULT_RETRY_INTERVAL: Duration = Duration::from_secs(30);
/// The longest first delay an app may ask for.
pub const MAX_RETRY_INTERVAL: Duration = Duration::from_secs(3600);
/// The longest delay between two retries, however many came before.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(600);

/// How a failed automatic operation (an automatic re-apply, a drift
/// correction) is tried again: at most `retries` times, the first after
/// `interval`, each later one after twice the delay before (at most
/// [`MAX_RETRY_DELAY`]), each with up to a tenth more at random so that
/// apps failing together do not retry together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How many retries; 0 turns them off.
    pub retries: u32,
    /// The first retry's delay.
    pub interval: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            retries: DEFAULT_RETRIES,
            interval: DEFAULT_RETRY_INTERVAL,
        }
    }
}

impl RetryPolicy {
    /// The delay before retry `attempt` (1 for the first), without jitter:
    /// `interval * 2^(attempt-1)`, at most [`MAX_RETRY_DELAY`] (or the
    /// interval itself when it is longer).
    pub fn delay(&self, attempt: u32) -> Duration {
        let cap = MAX_RETRY_DELAY.max(self.interval);
        let doublings = attempt.saturating_sub(1).min(31);
        self.interval
            .checked_mul(1u32 << doublings)
            .map_or(cap, |d| d.min(cap))
    }

    /// [`RetryPolicy::delay`] plus `jitter` (0.0 to 1.0, clamped) of a
    /// tenth of it.
    pub fn delay_with_jitter(&self, attempt: u32, jitter: f64) -> Duration {
        let base = self.delay(attempt);
        base + base.mul_f64(jitter.clamp(0.0, 1.0) / 10.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_doubles_from_the_interval_up_to_the_cap() {
        let policy = RetryPolicy {
            retries: 20,
            interval: Duration::from_secs(30),
        };
        let secs: Vec<u64> = (1..=7).map(|a| policy.delay(a).as_secs()).collect();
        assert_eq!(secs, [30, 60, 120, 240, 480, 600, 600]);
        assert_eq!(policy.delay(u32::MAX), MAX_RETRY_DELAY);
        // An interval past the cap is kept, never doubled.
        let slow = RetryPolicy {
            retries: 2,
            interval: Duration::from_secs(1800),
        };
        assert_eq!(slow.delay(1), Duration::from_secs(1800));
        assert_eq!(slow.delay(5), Duration::from_secs(1800));
    }

    #[test]
    fn jitter_adds_at_most_a_tenth() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.delay_with_jitter(1, 0.0), Duration::from_secs(30));
        assert_eq!(policy.delay_with_jitter(1, 1.0), Duration::from_secs(33));
        assert_eq!(policy.delay_with_jitter(1, 7.0), Duration::from_secs(33));
        assert_eq!(policy.delay_with_jitter(1, -1.0), Duration::from_secs(30));
    }

    #[test]
    fn on_failure_reads_its_two_words() {
        assert_eq!("keep".parse::<OnFailure>(), Ok(OnFailure::Keep));
        assert_eq!("rollback".parse::<OnFailure>(), Ok(OnFailure::Rollback));
        assert!("uninstall".parse::<OnFailure>().is_err());
        assert_eq!(OnFailure::default(), OnFailure::Rollback);
    }
}
