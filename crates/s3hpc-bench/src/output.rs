//! Human table, JSON, CSV and `bench compare`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::stats::{BenchRun, Lat, Phase, TargetResult};

/// `1.5 KiB`, `16 MiB`, ...
pub fn fmt_size(b: u64) -> String {
    const U: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut i = 0;
    while v >= 1024.0 && i < U.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if v.fract() == 0.0 { format!("{v:.0}{}", U[i]) } else { format!("{v:.1}{}", U[i]) }
}

/// Microseconds as a short human duration.
pub fn fmt_us(us: f64) -> String {
    if us >= 1_000_000.0 {
        format!("{:.2}s", us / 1e6)
    } else if us >= 1000.0 {
        format!("{:.2}ms", us / 1e3)
    } else if us >= 10.0 {
        format!("{us:.0}us")
    } else {
        format!("{us:.2}us")
    }
}

fn lat_cols(l: &Option<Lat>) -> [String; 5] {
    match l {
        Some(l) => [fmt_us(l.p50_us), fmt_us(l.p90_us), fmt_us(l.p99_us), fmt_us(l.p999_us), fmt_us(l.max_us)],
        None => Default::default(),
    }
}

/// Rows ordered by phase, with the targets side by side (one row per target).
pub fn table(run: &BenchRun) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        [
            "phase", "size", "target", "conc", "ops", "err", "secs", "ops/s", "MiB/s", "p50", "p90", "p99", "p99.9",
            "max", "ttfb50",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    ];
    let mut order: Vec<(String, u64)> = Vec::new();
    for r in &run.results {
        for p in &r.phases {
            let k = (p.name.clone(), p.object_size);
            if !order.contains(&k) {
                order.push(k);
            }
        }
    }
    for (name, size) in &order {
        for r in &run.results {
            for p in r.phases.iter().filter(|p| &p.name == name && p.object_size == *size) {
                let [a, b, c, d, e] = lat_cols(&p.latency);
                let ttfb = p.ttfb.as_ref().map(|t| fmt_us(t.p50_us)).unwrap_or_default();
                rows.push(vec![
                    p.name.clone(),
                    if p.object_size > 0 { fmt_size(p.object_size) } else { "-".into() },
                    r.target.clone(),
                    p.concurrency.to_string(),
                    p.ops.to_string(),
                    p.errors.to_string(),
                    format!("{:.3}", p.seconds),
                    format!("{:.1}", p.ops_per_sec),
                    if p.bytes > 0 { format!("{:.1}", p.mib_per_sec) } else { "-".into() },
                    a,
                    b,
                    c,
                    d,
                    e,
                    ttfb,
                ]);
            }
        }
    }
    let widths: Vec<usize> =
        (0..rows[0].len()).map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0)).collect();
    let mut s = String::new();
    for (ri, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| if i <= 2 { format!("{c:<w$}", w = widths[i]) } else { format!("{c:>w$}", w = widths[i]) })
            .collect();
        let _ = writeln!(s, "{}", line.join("  ").trim_end());
        if ri == 0 {
            let _ = writeln!(s, "{}", "-".repeat(widths.iter().sum::<usize>() + 2 * (widths.len() - 1)));
        }
    }
    s.push_str(&rank_table(run));
    for r in &run.results {
        if !r.summary.is_empty() {
            let _ = writeln!(s, "\n{} [{}]:", r.target, r.workload);
            for (k, v) in &r.summary {
                let _ = writeln!(s, "  {k:<34} {}", fmt_num(*v));
            }
        }
        let _ = writeln!(s, "{}: {} errors", r.target, r.errors);
        for e in &r.error_samples {
            let _ = writeln!(s, "  error: {e}");
        }
        if let Some(a) = &r.aborted {
            let _ = writeln!(s, "  ABORTED: {a}");
        }
    }
    s
}

/// With several ranks: who ran where, each phase's balance (min / mean / max over ranks of the
/// ops each rank did and of its own rate) and every rank's own figures.
fn rank_table(run: &BenchRun) -> String {
    let mut s = String::new();
    for r in &run.results {
        if r.ranks.is_empty() && r.phases.iter().all(|p| p.per_rank.is_empty()) {
            continue;
        }
        let _ = writeln!(s, "\n{} [{}]: {} ranks", r.target, r.workload, r.ranks.len());
        for i in &r.ranks {
            let _ = writeln!(s, "  rank {:<3} {} pid {:<8} endpoint {}", i.rank, i.launcher, i.pid, i.endpoint);
        }
        let _ = writeln!(
            s,
            "  {:<26} {:>8} {:>5} {:>22} {:>30} {:>26}",
            "balance: phase",
            "size",
            "ranks",
            "ops/rank min/mean/max",
            "ops/s/rank min/mean/max",
            "MiB/s/rank min/mean/max"
        );
        for p in &r.phases {
            let Some(b) = &p.balance else { continue };
            let _ = writeln!(
                s,
                "  {:<26} {:>8} {:>5} {:>22} {:>30} {:>26}",
                p.name,
                if p.object_size > 0 { fmt_size(p.object_size) } else { "-".into() },
                b.ranks,
                format!("{}/{:.1}/{}", b.ops_min, b.ops_mean, b.ops_max),
                format!("{:.1}/{:.1}/{:.1}", b.ops_per_sec_min, b.ops_per_sec_mean, b.ops_per_sec_max),
                if p.bytes > 0 {
                    format!("{:.1}/{:.1}/{:.1}", b.mib_per_sec_min, b.mib_per_sec_mean, b.mib_per_sec_max)
                } else {
                    "-".into()
                },
            );
        }
        let _ = writeln!(
            s,
            "  {:<26} {:>8} {:>5} {:>10} {:>6} {:>9} {:>12} {:>10}",
            "per rank: phase", "size", "rank", "ops", "err", "secs", "ops/s", "MiB/s"
        );
        for p in &r.phases {
            for f in &p.per_rank {
                let _ = writeln!(
                    s,
                    "  {:<26} {:>8} {:>5} {:>10} {:>6} {:>9.3} {:>12.1} {:>10}",
                    p.name,
                    if p.object_size > 0 { fmt_size(p.object_size) } else { "-".into() },
                    f.rank,
                    f.ops,
                    f.errors,
                    f.seconds,
                    f.ops_per_sec,
                    if f.bytes > 0 { format!("{:.1}", f.mib_per_sec) } else { "-".into() },
                );
            }
        }
    }
    s
}

fn fmt_num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 { format!("{v:.0}") } else { format!("{v:.4}") }
}

pub fn to_json(run: &BenchRun) -> String {
    serde_json::to_string_pretty(run).expect("serialisable")
}

pub fn from_json(text: &str) -> anyhow::Result<BenchRun> {
    Ok(serde_json::from_str(text)?)
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.to_string() }
}

pub const CSV_HEADER: &str = "target,workload,phase,op,object_size,concurrency,ops,bytes,errors,seconds,ops_per_sec,mib_per_sec,lat_min_us,lat_q1_us,lat_p50_us,lat_q3_us,lat_p90_us,lat_p99_us,lat_p999_us,lat_max_us,lat_mean_us,ttfb_p50_us,ttfb_p90_us,ttfb_p99_us,ttfb_p999_us,ttfb_max_us,summary_key,summary_value,rank,ranks,rank_ops_per_sec_min,rank_ops_per_sec_mean,rank_ops_per_sec_max,rank_mib_per_sec_min,rank_mib_per_sec_mean,rank_mib_per_sec_max";

/// One row per phase (with several ranks followed by one row per rank, `rank` set), then one row
/// per summary figure (`phase` = `summary`).
pub fn to_csv(run: &BenchRun) -> String {
    let mut s = String::from(CSV_HEADER);
    s.push('\n');
    let lat = |l: &Option<Lat>, all: bool| -> Vec<String> {
        match l {
            Some(l) if all => {
                [l.min_us, l.q1_us, l.p50_us, l.q3_us, l.p90_us, l.p99_us, l.p999_us, l.max_us, l.mean_us]
                    .iter()
                    .map(|v| format!("{v:.3}"))
                    .collect()
            }
            Some(l) => [l.p50_us, l.p90_us, l.p99_us, l.p999_us, l.max_us].iter().map(|v| format!("{v:.3}")).collect(),
            None => vec![String::new(); if all { 9 } else { 5 }],
        }
    };
    for r in &run.results {
        for p in &r.phases {
            // The columns every row starts with; the counts are the aggregate's or one rank's.
            let head = |ops: u64, bytes: u64, errors: u64, seconds: f64, ops_s: f64, mib_s: f64| {
                vec![
                    csv_field(&r.target),
                    csv_field(&r.workload),
                    csv_field(&p.name),
                    csv_field(&p.op),
                    p.object_size.to_string(),
                    p.concurrency.to_string(),
                    ops.to_string(),
                    bytes.to_string(),
                    errors.to_string(),
                    format!("{seconds:.6}"),
                    format!("{ops_s:.3}"),
                    format!("{mib_s:.3}"),
                ]
            };
            let mut f = head(p.ops, p.bytes, p.errors, p.seconds, p.ops_per_sec, p.mib_per_sec);
            f.extend(lat(&p.latency, true));
            f.extend(lat(&p.ttfb, false));
            f.push(String::new());
            f.push(String::new());
            f.push(String::new());
            match &p.balance {
                Some(b) => {
                    f.push(b.ranks.to_string());
                    f.extend(
                        [
                            b.ops_per_sec_min,
                            b.ops_per_sec_mean,
                            b.ops_per_sec_max,
                            b.mib_per_sec_min,
                            b.mib_per_sec_mean,
                            b.mib_per_sec_max,
                        ]
                        .iter()
                        .map(|v| format!("{v:.3}")),
                    );
                }
                None => f.extend(std::iter::repeat_n(String::new(), 7)),
            }
            s.push_str(&f.join(","));
            s.push('\n');
            // Each rank's own figures: the same phase with `rank` set (aggregate rows have it empty).
            for rf in &p.per_rank {
                let mut f = head(rf.ops, rf.bytes, rf.errors, rf.seconds, rf.ops_per_sec, rf.mib_per_sec);
                f.extend(std::iter::repeat_n(String::new(), 16));
                f.push(rf.rank.to_string());
                f.extend(std::iter::repeat_n(String::new(), 7));
                s.push_str(&f.join(","));
                s.push('\n');
            }
        }
        for (k, v) in &r.summary {
            let mut f = vec![csv_field(&r.target), csv_field(&r.workload), "summary".into(), String::new()];
            f.extend(std::iter::repeat_n(String::new(), 22));
            f.push(csv_field(k));
            f.push(format!("{v}"));
            f.extend(std::iter::repeat_n(String::new(), 8));
            s.push_str(&f.join(","));
            s.push('\n');
        }
        let mut f = vec![csv_field(&r.target), csv_field(&r.workload), "summary".into(), String::new()];
        f.extend(std::iter::repeat_n(String::new(), 22));
        f.push("errors".into());
        f.push(r.errors.to_string());
        f.extend(std::iter::repeat_n(String::new(), 8));
        s.push_str(&f.join(","));
        s.push('\n');
    }
    s
}

fn pct(a: f64, b: f64) -> String {
    if a == 0.0 && b == 0.0 {
        "=".into()
    } else if a == 0.0 {
        "new".into()
    } else {
        format!("{:+.1}%", (b - a) / a * 100.0)
    }
}

/// Differences between two runs: phases matched by (workload, target position, phase, size);
/// targets are matched by position so runs against differently named targets compare.
pub fn compare(a: &BenchRun, b: &BenchRun) -> String {
    let mut s = String::new();
    let key = |r: &TargetResult, i: usize| (r.workload.clone(), i);
    let index = |run: &BenchRun| -> BTreeMap<(String, usize), TargetResult> {
        let mut per_wl: BTreeMap<String, usize> = BTreeMap::new();
        run.results
            .iter()
            .map(|r| {
                let n = per_wl.entry(r.workload.clone()).or_default();
                let k = key(r, *n);
                *n += 1;
                (k, r.clone())
            })
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let _ = writeln!(
        s,
        "{:<26} {:>8} {:>12} {:>12} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "phase", "size", "A ops/s", "B ops/s", "ops/s", "MiB/s", "p50", "p99", "errors"
    );
    for (k, ra) in &ia {
        let Some(rb) = ib.get(k) else {
            let _ = writeln!(s, "only in A: {} [{}]", ra.target, ra.workload);
            continue;
        };
        let _ = writeln!(s, "== {} [{}]  A={}  B={}", ra.workload, k.1, ra.target, rb.target);
        for pa in &ra.phases {
            let Some(pb) = rb.phases.iter().find(|p| p.name == pa.name && p.object_size == pa.object_size) else {
                let _ = writeln!(s, "{:<26} only in A", pa.name);
                continue;
            };
            let l = |p: &Phase, f: fn(&Lat) -> f64| p.latency.as_ref().map(f).unwrap_or(0.0);
            let _ = writeln!(
                s,
                "{:<26} {:>8} {:>12.1} {:>12.1} {:>9} {:>9} {:>9} {:>9} {:>4}->{:<4}",
                pa.name,
                if pa.object_size > 0 { fmt_size(pa.object_size) } else { "-".into() },
                pa.ops_per_sec,
                pb.ops_per_sec,
                pct(pa.ops_per_sec, pb.ops_per_sec),
                if pa.bytes > 0 { pct(pa.mib_per_sec, pb.mib_per_sec) } else { "-".into() },
                pct(l(pa, |l| l.p50_us), l(pb, |l| l.p50_us)),
                pct(l(pa, |l| l.p99_us), l(pb, |l| l.p99_us)),
                pa.errors,
                pb.errors,
            );
        }
        for (name, va) in &ra.summary {
            if let Some(vb) = rb.summary.get(name) {
                let _ = writeln!(s, "  {name:<34} {:>14.4} {:>14.4} {:>9}", va, vb, pct(*va, *vb));
            }
        }
    }
    for (k, rb) in &ib {
        if !ia.contains_key(k) {
            let _ = writeln!(s, "only in B: {} [{}]", rb.target, rb.workload);
        }
    }
    s
}
