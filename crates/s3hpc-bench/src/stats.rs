//! Measurements: HDR latency histograms per operation, and the serialisable result model
//! written to JSON/CSV and read back by `bench compare`.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Highest latency recorded exactly (1 hour, in nanoseconds); longer ones saturate.
const MAX_NS: u64 = 3_600_000_000_000;

fn hist() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_NS, 3).expect("valid histogram bounds")
}

/// Counters and histograms of one operation type.
#[derive(Clone)]
pub struct OpStats {
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub lat: Histogram<u64>,
    pub ttfb: Option<Histogram<u64>>,
}

impl Default for OpStats {
    fn default() -> Self {
        OpStats { ops: 0, bytes: 0, errors: 0, lat: hist(), ttfb: None }
    }
}

impl OpStats {
    pub fn record(&mut self, lat: Duration, bytes: u64, ttfb: Option<Duration>) {
        self.ops += 1;
        self.bytes += bytes;
        self.lat.saturating_record((lat.as_nanos() as u64).max(1));
        if let Some(t) = ttfb {
            self.ttfb.get_or_insert_with(hist).saturating_record((t.as_nanos() as u64).max(1));
        }
    }

    pub fn merge(&mut self, o: &OpStats) {
        self.ops += o.ops;
        self.bytes += o.bytes;
        self.errors += o.errors;
        let _ = self.lat.add(&o.lat);
        if let Some(t) = &o.ttfb {
            let _ = self.ttfb.get_or_insert_with(hist).add(t);
        }
    }
}

/// Per-operation statistics of one worker or one phase, keyed by operation name.
#[derive(Default, Clone)]
pub struct Recorder {
    pub ops: BTreeMap<&'static str, OpStats>,
}

impl Recorder {
    pub fn op(&mut self, name: &'static str) -> &mut OpStats {
        self.ops.entry(name).or_default()
    }
    pub fn merge(&mut self, o: &Recorder) {
        for (k, v) in &o.ops {
            self.op(k).merge(v);
        }
    }
}

/// Latency summary in microseconds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Lat {
    pub min_us: f64,
    pub q1_us: f64,
    pub p50_us: f64,
    pub q3_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

impl Lat {
    pub fn from_hist(h: &Histogram<u64>) -> Option<Lat> {
        if h.is_empty() {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Some(Lat {
            min_us: us(h.min()),
            q1_us: us(h.value_at_quantile(0.25)),
            p50_us: us(h.value_at_quantile(0.5)),
            q3_us: us(h.value_at_quantile(0.75)),
            p90_us: us(h.value_at_quantile(0.9)),
            p99_us: us(h.value_at_quantile(0.99)),
            p999_us: us(h.value_at_quantile(0.999)),
            max_us: us(h.max()),
            mean_us: h.mean() / 1000.0,
        })
    }
}

/// One measured operation type of one phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Phase {
    /// Phase name, unique within a workload result (e.g. `put`, `ior-easy-write`, `round3-get`).
    pub name: String,
    /// The S3 operation measured: `put`, `get`, `head`, `delete`, `list`, `create-bucket`, ...
    pub op: String,
    /// Object size in bytes (0 where it does not apply).
    pub object_size: u64,
    pub concurrency: usize,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// Wall time of the phase (all ranks: the slowest).
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub mib_per_sec: f64,
    pub latency: Option<Lat>,
    /// Time to first byte of GETs.
    pub ttfb: Option<Lat>,
}

impl Phase {
    pub fn from_stats(name: &str, op: &str, size: u64, concurrency: usize, s: &OpStats, seconds: f64) -> Phase {
        let secs = seconds.max(1e-9);
        Phase {
            name: name.to_string(),
            op: op.to_string(),
            object_size: size,
            concurrency,
            ops: s.ops,
            bytes: s.bytes,
            errors: s.errors,
            seconds,
            ops_per_sec: s.ops as f64 / secs,
            mib_per_sec: s.bytes as f64 / secs / (1024.0 * 1024.0),
            latency: Lat::from_hist(&s.lat),
            ttfb: s.ttfb.as_ref().and_then(Lat::from_hist),
        }
    }
}

/// Everything one workload measured on one target.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TargetResult {
    pub target: String,
    pub workload: String,
    pub phases: Vec<Phase>,
    /// Workload-level figures: io500 scores, speedtest best, OSSperf times, ...
    pub summary: BTreeMap<String, f64>,
    /// Total failed operations (also counted per phase).
    pub errors: u64,
    /// The first few error messages, naming target and operation.
    pub error_samples: Vec<String>,
    /// Set when the workload stopped early on an error (without `--keep-going`).
    pub aborted: Option<String>,
}

/// A whole `s3hpc bench` invocation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct BenchRun {
    pub tool: String,
    pub version: String,
    /// Seconds since the Unix epoch at the start.
    pub started_unix: u64,
    pub command: String,
    pub workload: String,
    pub results: Vec<TargetResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_merge() {
        let mut a = OpStats::default();
        let mut b = OpStats::default();
        for i in 1..=100u64 {
            a.record(Duration::from_micros(i), 10, None);
            b.record(Duration::from_micros(1000 + i), 0, Some(Duration::from_micros(5)));
        }
        a.merge(&b);
        assert_eq!(a.ops, 200);
        assert_eq!(a.bytes, 1000);
        let l = Lat::from_hist(&a.lat).unwrap();
        assert!((l.min_us - 1.0).abs() < 0.01);
        assert!(l.p50_us >= 99.0 && l.p50_us <= 101.0, "{}", l.p50_us);
        assert!(l.max_us >= 1099.0 && l.max_us <= 1101.0, "{}", l.max_us);
        assert!(l.q1_us < l.p50_us && l.p50_us < l.q3_us && l.q3_us <= l.p90_us && l.p99_us <= l.max_us);
        assert!(a.ttfb.is_some());
        let p = Phase::from_stats("x", "put", 10, 1, &a, 2.0);
        assert_eq!(p.ops_per_sec, 100.0);
    }
}
