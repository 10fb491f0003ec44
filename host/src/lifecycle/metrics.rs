//! Counters the daemon exposes at `/metrics`, in the Prometheus text
//! format: operations by kind and outcome, plugin call durations, and
//! plugin faults by kind.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the plugin call duration histogram.
const DURATION_BUCKETS: [f64; 9] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0, 2.5];

#[derive(Debug, Default)]
struct Histogram {
    buckets: [u64; DURATION_BUCKETS.len()],
    count: u64,
    sum: f64,
}

#[derive(Debug, Default)]
struct Counters {
    operations: BTreeMap<(String, String), u64>,
    plugin_calls: BTreeMap<String, Histogram>,
    plugin_faults: BTreeMap<String, u64>,
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
}
