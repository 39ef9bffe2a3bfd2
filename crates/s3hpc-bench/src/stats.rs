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
    /// Number of samples (with several ranks: of the histogram merged across ranks).
    #[serde(default)]
    pub count: u64,
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
            count: h.len(),
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
    /// With several ranks: each rank's own figures (its ops over its own phase time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_rank: Vec<RankFig>,
    /// With several ranks: min / mean / max of the per-rank figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balance: Option<Balance>,
}

/// One rank's share of a phase.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankFig {
    pub rank: usize,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    /// This rank's own phase time.
    pub seconds: f64,
    pub ops_per_sec: f64,
    pub mib_per_sec: f64,
}

/// Balance of a phase across ranks.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Balance {
    pub ranks: usize,
    pub ops_min: u64,
    pub ops_max: u64,
    pub ops_mean: f64,
    pub ops_per_sec_min: f64,
    pub ops_per_sec_max: f64,
    pub ops_per_sec_mean: f64,
    pub mib_per_sec_min: f64,
    pub mib_per_sec_max: f64,
    pub mib_per_sec_mean: f64,
}

impl Balance {
    pub fn of(per_rank: &[RankFig]) -> Option<Balance> {
        if per_rank.is_empty() {
            return None;
        }
        let n = per_rank.len() as f64;
        let mm = |f: fn(&RankFig) -> f64| {
            let v: Vec<f64> = per_rank.iter().map(f).collect();
            (
                v.iter().copied().fold(f64::INFINITY, f64::min),
                v.iter().copied().fold(0.0, f64::max),
                v.iter().sum::<f64>() / n,
            )
        };
        let (ops_min, ops_max, ops_mean) = mm(|r| r.ops as f64);
        let (a, b, c) = mm(|r| r.ops_per_sec);
        let (d, e, f) = mm(|r| r.mib_per_sec);
        Some(Balance {
            ranks: per_rank.len(),
            ops_min: ops_min as u64,
            ops_max: ops_max as u64,
            ops_mean,
            ops_per_sec_min: a,
            ops_per_sec_max: b,
            ops_per_sec_mean: c,
            mib_per_sec_min: d,
            mib_per_sec_max: e,
            mib_per_sec_mean: f,
        })
    }
}

/// One rank's measurements of one phase, as exchanged between ranks (histograms in the
/// HdrHistogram V2 encoding, so rank 0 merges the full latency distributions).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RankPhase {
    /// Wall-clock start and end (seconds since the Unix epoch).
    pub start: f64,
    pub end: f64,
    /// Set when this rank stopped the phase on an error.
    pub abort: Option<String>,
    pub ops: Vec<WireOp>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WireOp {
    pub op: String,
    pub ops: u64,
    pub bytes: u64,
    pub errors: u64,
    pub lat: Vec<u8>,
    pub ttfb: Option<Vec<u8>>,
}

fn encode_hist(h: &Histogram<u64>) -> Vec<u8> {
    let mut v = Vec::new();
    use hdrhistogram::serialization::Serializer as _;
    hdrhistogram::serialization::V2Serializer::new().serialize(h, &mut v).expect("in-memory serialisation");
    v
}

fn decode_hist(b: &[u8]) -> anyhow::Result<Histogram<u64>> {
    let h: Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
        .deserialize(&mut &b[..])
        .map_err(|e| anyhow::anyhow!("bad latency histogram from a rank: {e:?}"))?;
    let mut out = hist();
    out.add(&h).map_err(|e| anyhow::anyhow!("latency histogram from a rank does not fit: {e:?}"))?;
    Ok(out)
}

/// Operation names live as `&'static str` in a [`Recorder`]; names received from other ranks are
/// interned once each.
fn intern(s: &str) -> &'static str {
    static NAMES: std::sync::Mutex<std::collections::BTreeSet<&'static str>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    let mut n = NAMES.lock().unwrap();
    if let Some(v) = n.get(s) {
        return v;
    }
    let v: &'static str = Box::leak(s.to_string().into_boxed_str());
    n.insert(v);
    v
}

impl Recorder {
    pub fn to_wire(&self) -> Vec<WireOp> {
        self.ops
            .iter()
            .map(|(k, v)| WireOp {
                op: k.to_string(),
                ops: v.ops,
                bytes: v.bytes,
                errors: v.errors,
                lat: encode_hist(&v.lat),
                ttfb: v.ttfb.as_ref().map(encode_hist),
            })
            .collect()
    }

    pub fn from_wire(w: &[WireOp]) -> anyhow::Result<Recorder> {
        let mut r = Recorder::default();
        for o in w {
            let st = OpStats {
                ops: o.ops,
                bytes: o.bytes,
                errors: o.errors,
                lat: decode_hist(&o.lat)?,
                ttfb: o.ttfb.as_deref().map(decode_hist).transpose()?,
            };
            r.op(intern(&o.op)).merge(&st);
        }
        Ok(r)
    }
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
            per_rank: Vec::new(),
            balance: None,
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
    /// With several ranks: who ran where (launcher, endpoint each rank used).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankInfo>,
}

/// One rank of a multi-rank run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RankInfo {
    pub rank: usize,
    /// `procs` or `mpi`.
    pub launcher: String,
    pub pid: u32,
    /// The endpoint of the target list this rank used (see `--spread`).
    pub endpoint: String,
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
        assert_eq!(p.latency.as_ref().unwrap().count, 200);
        // Through the wire encoding and back: the same distribution.
        let mut rec = Recorder::default();
        rec.op("put").merge(&a);
        let back = Recorder::from_wire(&rec.to_wire()).unwrap();
        let b2 = &back.ops["put"];
        assert_eq!((b2.ops, b2.bytes, b2.lat.len()), (200, 1000, 200));
        assert_eq!(Lat::from_hist(&b2.lat), Lat::from_hist(&a.lat));
        assert_eq!(b2.ttfb.as_ref().unwrap().len(), 100);
    }
}
