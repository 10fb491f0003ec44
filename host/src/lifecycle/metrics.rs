//! Counters the daemon exposes at `/metrics`, in the Prometheus text
//! format: operations by kind and outcome, operation durations, plugin
//! call durations, and plugin faults by kind. The status page draws its
//! chart of operation durations from [`Metrics::operation_durations`],
//! the numbers `/metrics` prints.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the plugin call duration histogram.
const DURATION_BUCKETS: [f64; 9] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5];

/// Upper bounds (seconds) of the operation duration histogram: an
/// operation runs from a fraction of a second (a directory target) to
/// minutes (a cluster that waits for readiness).
pub const OPERATION_BUCKETS: [f64; 10] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

/// One operation kind's durations, as `/metrics` prints them.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationHistogram {
    /// The operation (`apply`, `remove`, `update`, ...).
    pub operation: String,
    /// `(upper bound in seconds, operations that took at most that)`,
    /// cumulative as in Prometheus, bounds from [`OPERATION_BUCKETS`].
    pub buckets: Vec<(f64, u64)>,
    /// How many finished.
    pub count: u64,
    /// Their durations added up, in seconds.
    pub sum: f64,
}

#[derive(Debug, Default)]
struct OperationHistogram {
    buckets: [u64; OPERATION_BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; DURATION_BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Counters {
    operations: BTreeMap<(String, String), u64>,
    operation_durations: BTreeMap<String, OperationHistogram>,
    plugin_calls: BTreeMap<String, Histogram>,
    plugin_faults: BTreeMap<String, u64>,
    reapply_needed: u64,
    drifted_objects: BTreeMap<String, u64>,
    drift_detected: u64,
    drift_corrections: u64,
    automatic_retries: u64,
    automatic_retries_exhausted: u64,
}

/// The daemon's metrics; cheap to update from any thread.
#[derive(Debug, Default)]
pub struct Metrics {
    counters: Mutex<Counters>,
}

impl Metrics {
    /// Counts one finished operation.
    pub fn operation(&self, operation: &str, outcome: &str) {
        let mut c = self.lock();
        *c.operations
            .entry((operation.to_owned(), outcome.to_owned()))
            .or_default() += 1;
    }

    /// Records how long one operation that ran in the background
    /// (apply, remove, update, rollback, recover) took, begin to finish.
    pub fn operation_took(&self, operation: &str, took: Duration) {
        let mut c = self.lock();
        let h = c
            .operation_durations
            .entry(operation.to_owned())
            .or_default();
        let secs = took.as_secs_f64();
        for (bucket, bound) in h.buckets.iter_mut().zip(OPERATION_BUCKETS) {
            if secs <= bound {
                *bucket += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// The operation duration histograms, by operation: the numbers of
    /// `capstan_operation_duration_seconds`.
    pub fn operation_durations(&self) -> Vec<DurationHistogram> {
        self.lock()
            .operation_durations
            .iter()
            .map(|(operation, h)| DurationHistogram {
                operation: operation.clone(),
                buckets: OPERATION_BUCKETS.iter().copied().zip(h.buckets).collect(),
                count: h.count,
                sum: h.sum,
            })
            .collect()
    }

    /// Records one plugin call of `function` that took `took`.
    pub fn plugin_call(&self, function: &str, took: Duration) {
        let mut c = self.lock();
        let h = c.plugin_calls.entry(function.to_owned()).or_default();
        let secs = took.as_secs_f64();
        for (bucket, bound) in h.buckets.iter_mut().zip(DURATION_BUCKETS) {
            if secs <= bound {
                *bucket += 1;
            }
        }
        h.count += 1;
        h.sum += secs;
    }

    /// Counts one plugin fault of `kind` (see `sandbox::Error::kind`).
    pub fn plugin_fault(&self, kind: &str) {
        *self
            .lock()
            .plugin_faults
            .entry(kind.to_owned())
            .or_default() += 1;
    }

    /// Counts one app that re-evaluation marked `reapply-needed`.
    pub fn reapply_needed(&self) {
        self.lock().reapply_needed += 1;
    }

    /// Sets how many of `app`'s objects have drifted now (0 removes it).
    pub fn drifted(&self, app: &str, objects: usize) {
        let mut c = self.lock();
        if objects == 0 {
            c.drifted_objects.remove(app);
        } else {
            c.drifted_objects
                .insert(app.to_string(), u64::try_from(objects).unwrap_or(u64::MAX));
        }
    }

    /// Counts one app found drifted (it was not a moment before).
    pub fn drift_detected(&self) {
        self.lock().drift_detected += 1;
    }

    /// Counts one drift correction started.
    pub fn drift_corrected(&self) {
        self.lock().drift_corrections += 1;
    }

    /// Counts one retry of a failed automatic operation started
    /// (module `lifecycle::retry`).
    pub fn automatic_retry(&self) {
        self.lock().automatic_retries += 1;
    }

    /// Counts one app whose automatic operation failed with no retry
    /// left.
    pub fn automatic_retries_exhausted(&self) {
        self.lock().automatic_retries_exhausted += 1;
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let c = self.lock();
        let mut out = String::new();
        out.push_str(
            "# HELP capstan_operations_total Finished app operations by kind and outcome.\n",
        );
        out.push_str("# TYPE capstan_operations_total counter\n");
        for ((operation, outcome), n) in &c.operations {
            let _ = writeln!(
                out,
                "capstan_operations_total{{operation=\"{operation}\",outcome=\"{outcome}\"}} {n}"
            );
        }
        out.push_str(
            "# HELP capstan_operation_duration_seconds App operations that ran in the background, by kind, begin to finish.\n",
        );
        out.push_str("# TYPE capstan_operation_duration_seconds histogram\n");
        for (operation, h) in &c.operation_durations {
            for (bound, n) in OPERATION_BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(
                    out,
                    "capstan_operation_duration_seconds_bucket{{operation=\"{operation}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "capstan_operation_duration_seconds_bucket{{operation=\"{operation}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "capstan_operation_duration_seconds_sum{{operation=\"{operation}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "capstan_operation_duration_seconds_count{{operation=\"{operation}\"}} {}",
                h.count
            );
        }
        out.push_str(
            "# HELP capstan_plugin_call_duration_seconds Plugin calls by exported function.\n",
        );
        out.push_str("# TYPE capstan_plugin_call_duration_seconds histogram\n");
        for (function, h) in &c.plugin_calls {
            for (bound, n) in DURATION_BUCKETS.iter().zip(h.buckets) {
                let _ = writeln!(
                    out,
                    "capstan_plugin_call_duration_seconds_bucket{{function=\"{function}\",le=\"{bound}\"}} {n}"
                );
            }
            let _ = writeln!(
                out,
                "capstan_plugin_call_duration_seconds_bucket{{function=\"{function}\",le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "capstan_plugin_call_duration_seconds_sum{{function=\"{function}\"}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "capstan_plugin_call_duration_seconds_count{{function=\"{function}\"}} {}",
                h.count
            );
        }
        out.push_str(
            "# HELP capstan_plugin_faults_total Plugin calls that ended in a fault, by kind.\n",
        );
        out.push_str("# TYPE capstan_plugin_faults_total counter\n");
        for (kind, n) in &c.plugin_faults {
            let _ = writeln!(out, "capstan_plugin_faults_total{{kind=\"{kind}\"}} {n}");
        }
        out.push_str(
            "# HELP capstan_reapply_needed_total Applied apps that a re-evaluation found would change.\n",
        );
        out.push_str("# TYPE capstan_reapply_needed_total counter\n");
        let _ = writeln!(out, "capstan_reapply_needed_total {}", c.reapply_needed);
        out.push_str(
            "# HELP capstan_app_drifted_objects Objects of an applied app that another manager changed or deleted, as the drift watch sees them now.\n",
        );
        out.push_str("# TYPE capstan_app_drifted_objects gauge\n");
        for (app, n) in &c.drifted_objects {
            let _ = writeln!(out, "capstan_app_drifted_objects{{app=\"{app}\"}} {n}");
        }
        out.push_str(
            "# HELP capstan_drift_detected_total Times an applied app was found drifted.\n",
        );
        out.push_str("# TYPE capstan_drift_detected_total counter\n");
        let _ = writeln!(out, "capstan_drift_detected_total {}", c.drift_detected);
        out.push_str(
            "# HELP capstan_drift_corrections_total Re-applies the daemon started to correct drift (drift: correct).\n",
        );
        out.push_str("# TYPE capstan_drift_corrections_total counter\n");
        let _ = writeln!(
            out,
            "capstan_drift_corrections_total {}",
            c.drift_corrections
        );
        out.push_str(
            "# HELP capstan_automatic_retries_total Retries the daemon started of failed automatic operations (retries, retry_interval).\n",
        );
        out.push_str("# TYPE capstan_automatic_retries_total counter\n");
        let _ = writeln!(
            out,
            "capstan_automatic_retries_total {}",
            c.automatic_retries
        );
        out.push_str(
            "# HELP capstan_automatic_retries_exhausted_total Failed automatic operations left failed with no retry left.\n",
        );
        out.push_str("# TYPE capstan_automatic_retries_exhausted_total counter\n");
        let _ = writeln!(
            out,
            "capstan_automatic_retries_exhausted_total {}",
            c.automatic_retries_exhausted
        );
        out
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Counters> {
        // A panic while holding the lock leaves counters that are still
        // valid numbers; keep counting.
        self.counters
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_and_cumulative_buckets() {
        let m = Metrics::default();
        m.operation("apply", "succeeded");
        m.operation("apply", "succeeded");
        m.operation("apply", "failed");
        m.plugin_call("overrides", Duration::from_millis(3));
        m.plugin_call("overrides", Duration::from_millis(200));
        m.plugin_fault("timeout");
        let text = m.render();
        assert!(
            text.contains(
                "capstan_operations_total{operation=\"apply\",outcome=\"succeeded\"} 2\n"
            )
        );
        assert!(
            text.contains("capstan_operations_total{operation=\"apply\",outcome=\"failed\"} 1\n")
        );
        assert!(text.contains("function=\"overrides\",le=\"0.001\"} 0\n"));
        assert!(text.contains("function=\"overrides\",le=\"0.005\"} 1\n"));
        assert!(text.contains("function=\"overrides\",le=\"0.25\"} 2\n"));
        assert!(
            text.contains("capstan_plugin_call_duration_seconds_count{function=\"overrides\"} 2\n")
        );
        assert!(text.contains("capstan_plugin_faults_total{kind=\"timeout\"} 1\n"));
    }

    #[test]
    fn operation_durations_are_a_histogram_by_kind() {
        let m = Metrics::default();
        assert!(m.operation_durations().is_empty());
        m.operation_took("apply", Duration::from_millis(300));
        m.operation_took("apply", Duration::from_secs(4));
        m.operation_took("remove", Duration::from_millis(50));
        let text = m.render();
        assert!(text.contains("# TYPE capstan_operation_duration_seconds histogram\n"));
        assert!(text.contains(
            "capstan_operation_duration_seconds_bucket{operation=\"apply\",le=\"0.25\"} 0\n"
        ));
        assert!(text.contains(
            "capstan_operation_duration_seconds_bucket{operation=\"apply\",le=\"0.5\"} 1\n"
        ));
        assert!(text.contains(
            "capstan_operation_duration_seconds_bucket{operation=\"apply\",le=\"5\"} 2\n"
        ));
        assert!(text.contains(
            "capstan_operation_duration_seconds_bucket{operation=\"apply\",le=\"+Inf\"} 2\n"
        ));
        assert!(text.contains("capstan_operation_duration_seconds_sum{operation=\"apply\"} 4.3\n"));
        assert!(
            text.contains("capstan_operation_duration_seconds_count{operation=\"remove\"} 1\n")
        );
        let durations = m.operation_durations();
        assert_eq!(durations.len(), 2);
        let apply = &durations[0];
        assert_eq!(apply.operation, "apply");
        assert_eq!(apply.count, 2);
        assert!((apply.sum - 4.3).abs() < 1e-9);
        assert_eq!(apply.buckets.len(), OPERATION_BUCKETS.len());
        assert_eq!(apply.buckets[2], (0.5, 1));
        assert_eq!(apply.buckets[5], (5.0, 2));
    }
}
