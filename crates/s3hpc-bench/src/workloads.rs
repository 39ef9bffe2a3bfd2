//! The workloads. Each runs against one [`Ctx`] (one target) and appends its phases and
//! summary figures to a [`WorkOut`]; on an error without `--keep-going` it returns early and
//! what was measured so far is kept.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::runner::{Ctx, Iter, Limit, PhaseOutcome, op_fn};
use crate::stats::{OpStats, Phase};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * 1024;
pub const GIB: u64 = 1024 * 1024 * 1024;

/// What a workload measured.
#[derive(Default, Debug)]
pub struct WorkOut {
    pub phases: Vec<Phase>,
    pub summary: BTreeMap<String, f64>,
}

impl WorkOut {
    fn push_all(&mut self, p: Vec<Phase>) {
        self.phases.extend(p);
    }
}

/// Geometric mean; 0 when any value is 0 or the list is empty.
pub fn geo_mean(v: &[f64]) -> f64 {
    if v.is_empty() || v.iter().any(|x| *x <= 0.0) {
        return 0.0;
    }
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// A single-task phase measured as a whole (no per-operation latencies).
fn one_phase(name: &str, op: &str, size: u64, ops: u64, bytes: u64, errors: u64, secs: f64) -> Phase {
    let s = OpStats { ops, bytes, errors, ..Default::default() };
    let mut p = Phase::from_stats(name, op, size, 1, &s, secs);
    p.latency = None;
    p
}

// ------------------------------------------------------------------------------------------
// sweep

/// Upper bound of the bytes a duration-limited write phase may store (a PUT phase then ends at
/// the duration or at this many bytes, whichever comes first).
pub const MAX_STORED: u64 = 2 * GIB;

#[derive(Debug, Clone)]
pub struct SweepOpts {
    pub sizes: Vec<u64>,
    /// Objects per size (default: 256 MiB / size, between 2 and 1000).
    pub count: Option<u64>,
    /// Time per size and operation instead of a count.
    pub duration: Option<Duration>,
    pub head: bool,
}

impl Default for SweepOpts {
    fn default() -> Self {
        SweepOpts {
            sizes: vec![KIB, 4 * KIB, 64 * KIB, MIB, 16 * MIB, 128 * MIB],
            count: None,
            duration: None,
            head: true,
        }
    }
}

pub async fn sweep(ctx: &Ctx, o: &SweepOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let conc = ctx.opts.concurrency;
    for &size in &o.sizes {
        let default_count = (256 * MIB / size.max(1)).clamp(2, 1000);
        let mut limit = Limit::of(o.count, o.duration, default_count);
        if limit.count.is_none() {
            // Duration mode: still bound what one size may store (memory targets).
            limit.count = Some((MAX_STORED / size.max(1)).max(2));
        }
        let put = ctx.put_phase("put", size, conc, limit.clone(), move |g| format!("sweep/{size}/{g}")).await?;
        let n = put.total_iters().max(1);
        out.push_all(put.phases);
        let c = ctx.clone();
        let get = ctx
            .run_phase(
                "get",
                size,
                conc,
                limit.clone(),
                op_fn(move |it: Iter| {
                    let c = c.clone();
                    async move { vec![c.get("get", c.key(&format!("sweep/{size}/{}", it.g % n)), size).await] }
                }),
            )
            .await?;
        out.push_all(get.phases);
        if o.head {
            let c = ctx.clone();
            let head = ctx
                .run_phase(
                    "head",
                    size,
                    conc,
                    limit.clone(),
                    op_fn(move |it: Iter| {
                        let c = c.clone();
                        async move {
                            vec![c.head("head", c.key(&format!("sweep/{size}/{}", it.g % n)), Some(size)).await]
                        }
                    }),
                )
                .await?;
            out.push_all(head.phases);
        }
        let c = ctx.clone();
        let del = ctx
            .run_phase(
                "delete",
                size,
                conc,
                Limit::count(n),
                op_fn(move |it: Iter| {
                    let c = c.clone();
                    async move { vec![c.delete("delete", c.key(&format!("sweep/{size}/{}", it.g))).await] }
                }),
            )
            .await?;
        out.push_all(del.phases);
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// speedtest

#[derive(Debug, Clone)]
pub struct SpeedtestOpts {
    pub size: u64,
    /// Length of the PUT and of the GET part of each round.
    pub round: Duration,
    pub start_concurrency: usize,
    pub max_rounds: usize,
    pub max_concurrency: usize,
}

impl Default for SpeedtestOpts {
    fn default() -> Self {
        SpeedtestOpts {
            size: 16 * MIB,
            round: Duration::from_secs(2),
            start_concurrency: 1,
            max_rounds: 10,
            max_concurrency: 512,
        }
    }
}

pub async fn speedtest(ctx: &Ctx, o: &SpeedtestOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let mut conc = o.start_concurrency.max(1);
    let mut best: Option<(f64, f64, usize)> = None; // (get MiB/s, put MiB/s, concurrency)
    let size = o.size;
    for round in 1..=o.max_rounds {
        let prefix = format!("speedtest/r{round}/");
        let p = prefix.clone();
        let limit = Limit { count: Some((MAX_STORED / size.max(1)).max(1)), duration: Some(o.round), per_task: None };
        let put = ctx.put_phase(&format!("round{round}-put"), size, conc, limit, move |g| format!("{p}{g}")).await?;
        let n = put.total_iters().max(1);
        let put_mib: f64 = put.phases.iter().map(|p| p.mib_per_sec).sum();
        let put_err: u64 = put.phases.iter().map(|p| p.errors).sum();
        out.push_all(put.phases);
        let c = ctx.clone();
        let p = prefix.clone();
        let get = ctx
            .run_phase(
                &format!("round{round}-get"),
                size,
                conc,
                Limit::duration(o.round),
                op_fn(move |it: Iter| {
                    let (c, p) = (c.clone(), p.clone());
                    async move { vec![c.get("get", c.key(&format!("{p}{}", it.g % n)), size).await] }
                }),
            )
            .await?;
        let get_mib: f64 = get.phases.iter().map(|p| p.mib_per_sec).sum();
        let get_err: u64 = get.phases.iter().map(|p| p.errors).sum();
        out.push_all(get.phases);
        out.summary.insert(format!("round{round}_concurrency"), conc as f64);
        if !ctx.opts.keep {
            ctx.delete_prefix(&ctx.key(&prefix)).await;
        }
        let improved = match best {
            None => true,
            Some((b, _, _)) => get_mib >= b * 1.025,
        };
        if get_err + put_err > 0 {
            out.summary.insert("stopped_on_errors".into(), 1.0);
            break;
        }
        if !improved {
            break;
        }
        best = Some((get_mib, put_mib, conc));
        let next = ((conc as f64) * 1.5).ceil() as usize;
        conc = next.max(conc + 1);
        if conc > o.max_concurrency {
            break;
        }
    }
    if let Some((g, p, c)) = best {
        out.summary.insert("best_get_mib_s".into(), g);
        out.summary.insert("best_put_mib_s".into(), p);
        out.summary.insert("best_concurrency".into(), c as f64);
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// crud (OSSperf)

#[derive(Debug, Clone)]
pub struct CrudOpts {
    pub count: u64,
    pub size: u64,
    /// Upload/download/delete with `--concurrency` tasks (OSSperf `-p`); else one at a time.
    pub parallel: bool,
}

impl Default for CrudOpts {
    fn default() -> Self {
        CrudOpts { count: 20, size: 64 * KIB, parallel: false }
    }
}

/// The OSSperf steps, each timed. Creates and deletes the bucket itself (steps 1 and 6).
pub async fn crud(ctx: &Ctx, o: &CrudOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let conc = if o.parallel { ctx.opts.concurrency } else { 1 };
    let size = o.size;
    let store = ctx.store.clone();
    let bucket = ctx.bucket.clone();
    // With several ranks rank 0 creates (and at the end deletes) the bucket; the others wait for
    // it (and create their own where each rank has a private store, like memory://).
    let rank = ctx.coord.rank();
    let mut t_create = 0.0;
    let mut r = Ok(());
    if rank == 0 {
        r = ctx
            .once("create-bucket", "create-bucket", async { store.create_bucket(&bucket).await.map(|_| (0, None)) })
            .await
            .map(|(p, _)| {
                t_create = p.seconds;
                out.phases.push(p);
            });
    }
    ctx.coord.agree("crud bucket", r.map_err(|e| e.to_string())).await?;
    let own = if rank != 0 { ctx.ensure_bucket().await? } else { false };
    let up = ctx.put_phase("upload", size, conc, Limit::count(o.count), |g| format!("ossperf/{g:06}")).await?;
    let t_up = up.seconds;
    out.push_all(up.phases);
    let t0 = Instant::now();
    let listed = ctx.list_keys(&ctx.key("ossperf/")).await;
    let t_list = t0.elapsed().as_secs_f64();
    let listed = match listed {
        Ok(v) => v.len() as u64,
        Err(e) => anyhow::bail!("target {}: list: list failed: {e}", ctx.target),
    };
    if listed != o.count && !ctx.opts.keep_going {
        anyhow::bail!("target {}: list: listing returned {listed} objects, {} were uploaded", ctx.target, o.count);
    }
    out.phases.push(one_phase("list", "list", 0, 1, 0, (listed != o.count) as u64, t_list));
    let c = ctx.clone();
    let down = ctx
        .run_phase(
            "download",
            size,
            conc,
            Limit::count(o.count),
            op_fn(move |it: Iter| {
                let c = c.clone();
                async move { vec![c.get("get", c.key(&format!("ossperf/{:06}", it.g)), size).await] }
            }),
        )
        .await?;
    let t_down = down.seconds;
    out.push_all(down.phases);
    if ctx.opts.keep {
        out.summary.insert("kept".into(), 1.0);
        return Ok(());
    }
    let c = ctx.clone();
    let del = ctx
        .run_phase(
            "delete-objects",
            size,
            conc,
            Limit::count(o.count),
            op_fn(move |it: Iter| {
                let c = c.clone();
                async move { vec![c.delete("delete", c.key(&format!("ossperf/{:06}", it.g))).await] }
            }),
        )
        .await?;
    let t_del = del.seconds;
    out.push_all(del.phases);
    ctx.coord.barrier("crud delete-bucket").await?;
    let mut t_rb = 0.0;
    if rank == 0 {
        let (p, _) = ctx
            .once("delete-bucket", "delete-bucket", async { store.delete_bucket(&bucket).await.map(|_| (0, None)) })
            .await?;
        t_rb = p.seconds;
        out.phases.push(p);
    } else if own {
        store.delete_bucket(&bucket).await.map_err(|e| anyhow::anyhow!("target {}: delete-bucket: {e}", ctx.target))?;
    }
    let bits = (o.count * o.size) as f64 * 8.0 / 1e6;
    let s = &mut out.summary;
    s.insert("num_files".into(), o.count as f64);
    s.insert("size_files".into(), o.size as f64);
    s.insert("time_create_bucket".into(), t_create);
    s.insert("time_objects_upload".into(), t_up);
    s.insert("time_objects_list".into(), t_list);
    s.insert("time_objects_download".into(), t_down);
    s.insert("time_erase_objects".into(), t_del);
    s.insert("time_erase_bucket".into(), t_rb);
    s.insert("time_sum".into(), t_create + t_up + t_list + t_down + t_del + t_rb);
    s.insert("bandwidth_objects_upload_mbps".into(), bits / t_up.max(1e-9));
    s.insert("bandwidth_objects_download_mbps".into(), bits / t_down.max(1e-9));
    Ok(())
}

/// OSSperf's 13-column result line (the format of its `-o` output file):
/// `DATE TIME NUM_FILES SIZE_FILES TIME_CREATE_BUCKET TIME_OBJECTS_UPLOAD TIME_OBJECTS_LIST
/// TIME_OBJECTS_DOWNLOAD TIME_ERASE_OBJECTS TIME_ERASE_BUCKET TIME_SUM BANDWIDTH_OBJECTS_UPLOAD
/// BANDWIDTH_OBJECTS_DOWNLOAD` (times in s with 3 decimals, bandwidths in Mbit/s).
pub fn ossperf_line(summary: &BTreeMap<String, f64>, date: &str, time: &str) -> Option<String> {
    let g = |k: &str| summary.get(k).copied();
    Some(format!(
        "{date} {time} {} {} {:.3} {:.3} {:.3} {:.3} {:.3} {:.3} {:.3} {:.3} {:.3}",
        g("num_files")? as u64,
        g("size_files")? as u64,
        g("time_create_bucket")?,
        g("time_objects_upload")?,
        g("time_objects_list")?,
        g("time_objects_download")?,
        g("time_erase_objects")?,
        g("time_erase_bucket")?,
        g("time_sum")?,
        g("bandwidth_objects_upload_mbps")?,
        g("bandwidth_objects_download_mbps")?,
    ))
}

pub const OSSPERF_HEADER: &str = "DATE TIME NUM_FILES SIZE_FILES TIME_CREATE_BUCKET TIME_OBJECTS_UPLOAD TIME_OBJECTS_LIST TIME_OBJECTS_DOWNLOAD TIME_ERASE_OBJECTS TIME_ERASE_BUCKET TIME_SUM BANDWIDTH_OBJECTS_UPLOAD BANDWIDTH_OBJECTS_DOWNLOAD";

// ------------------------------------------------------------------------------------------
// io500

/// How an IOR easy "file per process" maps to objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IorEasyMode {
    /// Every 2 MiB transfer is its own object `ior-easy/r<rank>t<task>/x<n>`.
    Fragment,
    /// Each process writes whole objects of `ior_easy_block` bytes, streamed in transfers.
    Whole,
}

#[derive(Debug, Clone)]
pub struct Io500Opts {
    /// Write phases stop after this long (IO500's rule is 300 s).
    pub stonewall: Duration,
    pub ior_easy_xfer: u64,
    pub ior_easy_mode: IorEasyMode,
    pub ior_easy_block: u64,
    pub ior_hard_xfer: u64,
    pub mdtest_hard_size: u64,
    /// Cap on bytes written by each ior write phase (keeps memory targets bounded).
    pub max_bytes: u64,
    /// Cap on objects created by each mdtest write phase.
    pub max_files: u64,
}

impl Default for Io500Opts {
    fn default() -> Self {
        Io500Opts {
            stonewall: Duration::from_secs(3),
            ior_easy_xfer: 2 * MIB,
            ior_easy_mode: IorEasyMode::Fragment,
            ior_easy_block: 32 * MIB,
            ior_hard_xfer: 47008,
            mdtest_hard_size: 3901,
            max_bytes: 2 * GIB,
            max_files: 200_000,
        }
    }
}

/// IO500 phase order; `true` marks bandwidth phases, `false` metadata phases.
pub const IO500_PHASES: &[(&str, bool)] = &[
    ("ior-easy-write", true),
    ("mdtest-easy-write", false),
    ("ior-hard-write", true),
    ("mdtest-hard-write", false),
    ("find", false),
    ("ior-easy-read", true),
    ("mdtest-easy-stat", false),
    ("ior-hard-read", true),
    ("mdtest-hard-stat", false),
    ("mdtest-easy-delete", false),
    ("mdtest-hard-read", false),
    ("mdtest-hard-delete", false),
];

/// Who reads what another wrote (IOR `-C`, mdtest `-N 1`): with one rank, task `t` reads the data
/// of task `(t + 1) % T`; with several ranks, task `t` of rank `r` reads task `t` of rank
/// `(r + 1) % R`. Nobody reads what it wrote itself, defeating client caches. Returns
/// (source rank, source task).
fn source(rank: usize, ranks: usize, task: usize, tasks: usize) -> (usize, usize) {
    if ranks > 1 { ((rank + 1) % ranks, task) } else { (rank, (task + 1) % tasks) }
}

/// Key of an io500 object: (ctx, rank, task, tasks, item) -> full key.
type KeyFn = Arc<dyn Fn(&Ctx, usize, usize, usize, u64) -> String + Send + Sync>;

/// A write phase under IOR's stonewalling: every task writes until the stonewall (or the cap),
/// then all ranks agree on the most items any task of any rank completed, and the tasks that did
/// fewer continue ("wear-out") until they have as many, so the read phases find a complete,
/// consistent set. Returns (stonewall phases, wear-out phases, items per task afterwards,
/// fewest and most items per task at the stonewall).
async fn stonewalled_write(
    ctx: &Ctx,
    name: &str,
    size: u64,
    limit: Limit,
    key: KeyFn,
) -> anyhow::Result<(PhaseOutcome, PhaseOutcome, Vec<u64>, u64, u64)> {
    let conc = ctx.opts.concurrency;
    let rank = ctx.coord.rank();
    let (c, k) = (ctx.clone(), key.clone());
    let sw = ctx
        .run_phase(
            name,
            size,
            conc,
            limit,
            op_fn(move |it: Iter| {
                let (c, k) = (c.clone(), k.clone());
                async move { vec![c.put("put", k(&c, rank, it.task, it.tasks, it.i), size).await] }
            }),
        )
        .await?;
    let mine: Vec<f64> = sw.per_task.iter().map(|v| *v as f64).collect();
    let all = ctx.coord.gather_f64(&format!("stonewall {name}"), &mine).await?;
    let flat: Vec<u64> = all.iter().flatten().map(|v| *v as u64).collect();
    let most = flat.iter().copied().max().unwrap_or(0);
    let fewest = flat.iter().copied().min().unwrap_or(0);
    let start = Arc::new(sw.per_task.clone());
    let rest: Vec<u64> = sw.per_task.iter().map(|n| most - n).collect();
    let (c, k, st) = (ctx.clone(), key.clone(), start.clone());
    let wear = ctx
        .run_phase(
            &format!("{name}-wearout"),
            size,
            conc,
            Limit::per_task(rest),
            op_fn(move |it: Iter| {
                let (c, k) = (c.clone(), k.clone());
                let i = st[it.task] + it.i;
                async move { vec![c.put("put", k(&c, rank, it.task, it.tasks, i), size).await] }
            }),
        )
        .await?;
    Ok((sw, wear, vec![most; conc], fewest, most))
}

/// The whole of a stonewalled write phase as IO500 scores it: stonewall part plus wear-out
/// (all items over both times), named `name`; the parts are renamed `<name>-stonewall` and
/// `<name>-wearout`.
fn whole_write(name: &str, size: u64, conc: usize, sw: &mut PhaseOutcome, wear: &mut PhaseOutcome) -> Vec<Phase> {
    let worn = !wear.phases.is_empty();
    let mut rec = sw.rec.clone();
    rec.merge(&wear.rec);
    let secs = sw.seconds + if worn { wear.seconds } else { 0.0 };
    let mut out: Vec<Phase> = rec
        .ops
        .iter()
        .map(|(op, s)| {
            let pname = if rec.ops.len() == 1 { name.to_string() } else { format!("{name}:{op}") };
            let mut p = Phase::from_stats(&pname, op, size, conc, s, secs);
            let find = |v: &[Phase]| v.iter().find(|x| x.op == *op).map(|x| x.per_rank.clone()).unwrap_or_default();
            let (a, b) = (find(&sw.phases), find(&wear.phases));
            p.per_rank = a
                .iter()
                .map(|ra| {
                    let mut r = ra.clone();
                    if let Some(rb) = b.iter().find(|x| x.rank == ra.rank) {
                        r.ops += rb.ops;
                        r.bytes += rb.bytes;
                        r.errors += rb.errors;
                        r.seconds += rb.seconds;
                    }
                    let t = r.seconds.max(1e-9);
                    r.ops_per_sec = r.ops as f64 / t;
                    r.mib_per_sec = r.bytes as f64 / t / MIB as f64;
                    r
                })
                .collect();
            p.balance = crate::stats::Balance::of(&p.per_rank);
            p
        })
        .collect();
    for p in sw.phases.iter_mut() {
        p.name = p.name.replacen(name, &format!("{name}-stonewall"), 1);
    }
    out.append(&mut sw.phases);
    out.append(&mut wear.phases);
    out
}

/// One read-side io500 phase: every task handles `n` items of its source (see [`source`]).
async fn io500_each(
    ctx: &Ctx,
    name: &str,
    size: u64,
    n: u64,
    key: KeyFn,
    op: &'static str,
) -> anyhow::Result<PhaseOutcome> {
    let conc = ctx.opts.concurrency;
    let (rank, ranks) = (ctx.coord.rank(), ctx.coord.size());
    let c = ctx.clone();
    ctx.run_phase(
        name,
        size,
        conc,
        Limit::per_task(vec![n; conc]),
        op_fn(move |it: Iter| {
            let (c, key) = (c.clone(), key.clone());
            let (sr, st) = source(rank, ranks, it.task, it.tasks);
            async move {
                let k = key(&c, sr, st, it.tasks, it.i);
                vec![match op {
                    "get" => c.get("get", k, size).await,
                    "head" => c.head("head", k, Some(size)).await,
                    _ => c.delete("delete", k).await,
                }]
            }
        }),
    )
    .await
}

pub async fn io500(ctx: &Ctx, o: &Io500Opts, out: &mut WorkOut) -> anyhow::Result<()> {
    let rank = ctx.coord.rank();
    let ranks = ctx.coord.size() as u64;
    let sw = Some(o.stonewall);
    // Per-process data (IOR easy = file per process, mdtest easy = directory per process) lives
    // under each rank's prefix; IOR hard's single shared file and mdtest hard's single shared
    // directory under the shared prefix.
    let easy_obj = match o.ior_easy_mode {
        IorEasyMode::Fragment => o.ior_easy_xfer,
        IorEasyMode::Whole => o.ior_easy_block,
    };
    let easy_key: KeyFn = match o.ior_easy_mode {
        IorEasyMode::Fragment => Arc::new(|c: &Ctx, r, t, _, i| c.rank_key(r, &format!("ior-easy/r{r}t{t}/x{i:08}"))),
        IorEasyMode::Whole => Arc::new(|c: &Ctx, r, t, _, i| c.rank_key(r, &format!("ior-easy/r{r}t{t}/b{i:06}"))),
    };
    let hard_xfer = o.ior_hard_xfer;
    // Transfer i of task t of rank r sits at offset ((i * R + r) * T + t) * xfer of the one file.
    let hard_key: KeyFn = Arc::new(move |c: &Ctx, r, t, tasks, i| {
        let off = (i * ranks * tasks as u64 + (r * tasks + t) as u64) * hard_xfer;
        c.shared_key(&format!("ior-hard/file/{off:016}"))
    });
    let md_easy: KeyFn = Arc::new(|c: &Ctx, r, t, _, i| c.rank_key(r, &format!("mdt-easy/r{r}t{t}/f{i}")));
    let md_hard: KeyFn = Arc::new(|c: &Ctx, r, t, _, i| c.shared_key(&format!("mdt-hard/f{r}.{t}.{i}")));
    let hsize = o.mdtest_hard_size;
    // The caps (--max-bytes, --max-files) are per rank, split evenly over its tasks (like IOR's
    // fixed block per task), so every task stops at the same count when a cap ends a phase.
    let conc = ctx.opts.concurrency.max(1) as u64;
    let cap = |items: u64| Limit {
        duration: sw,
        per_task: Some(Arc::new(vec![(items / conc).max(1); conc as usize])),
        count: None,
    };
    let mut secs: BTreeMap<&str, f64> = BTreeMap::new();
    let mut rate: BTreeMap<&str, f64> = BTreeMap::new();
    // The score counts the phase itself (`name`, or `name:op` per operation), not its parts
    // (`name-stonewall`, `name-wearout`).
    let mut record = |out: &mut WorkOut, name: &'static str, phases: Vec<Phase>, bw: bool| {
        let own: Vec<&Phase> =
            phases.iter().filter(|p| p.name == name || p.name.starts_with(&format!("{name}:"))).collect();
        let (ops, bytes): (u64, u64) = (own.iter().map(|p| p.ops).sum(), own.iter().map(|p| p.bytes).sum());
        let s = own.first().map(|p| p.seconds).unwrap_or(0.0).max(1e-9);
        let v = if bw { bytes as f64 / s / GIB as f64 } else { ops as f64 / s / 1000.0 };
        rate.insert(name, v);
        secs.insert(name, s);
        out.push_all(phases);
    };
    let sum = |p: &PhaseOutcome| -> (u64, u64, f64) {
        (p.phases.iter().map(|x| x.ops).sum(), p.phases.iter().map(|x| x.bytes).sum(), p.seconds)
    };
    let stonewall_summary =
        |out: &mut WorkOut, name: &str, swp: &PhaseOutcome, wear: &PhaseOutcome, lo: u64, hi: u64, bw: bool| {
            let (o, b, t) = sum(swp);
            let t = t.max(1e-9);
            let v = if bw { b as f64 / t / GIB as f64 } else { o as f64 / t / 1000.0 };
            let unit = if bw { "gib_s" } else { "kiops" };
            out.summary.insert(format!("{name}_stonewall_{unit}"), v);
            out.summary
                .insert(format!("{name}_wearout_seconds"), if wear.phases.is_empty() { 0.0 } else { wear.seconds });
            out.summary.insert(format!("{name}_items_min"), lo as f64);
            out.summary.insert(format!("{name}_items_max"), hi as f64);
        };

    // The write phases: stonewalled, then worn out to the same item count everywhere.
    let (p, w, easy_n, lo, hi) =
        stonewalled_write(ctx, "ior-easy-write", easy_obj, cap(o.max_bytes / easy_obj.max(1)), easy_key.clone())
            .await?;
    stonewall_summary(out, "ior-easy-write", &p, &w, lo, hi, true);
    let (mut p, mut w) = (p, w);
    record(out, "ior-easy-write", whole_write("ior-easy-write", easy_obj, ctx.opts.concurrency, &mut p, &mut w), true);

    let (p, w, mde_n, lo, hi) =
        stonewalled_write(ctx, "mdtest-easy-write", 0, cap(o.max_files), md_easy.clone()).await?;
    stonewall_summary(out, "mdtest-easy-write", &p, &w, lo, hi, false);
    let (mut p, mut w) = (p, w);
    record(out, "mdtest-easy-write", whole_write("mdtest-easy-write", 0, ctx.opts.concurrency, &mut p, &mut w), false);

    let (p, w, hard_n, lo, hi) =
        stonewalled_write(ctx, "ior-hard-write", hard_xfer, cap(o.max_bytes / hard_xfer.max(1)), hard_key.clone())
            .await?;
    stonewall_summary(out, "ior-hard-write", &p, &w, lo, hi, true);
    let (mut p, mut w) = (p, w);
    record(out, "ior-hard-write", whole_write("ior-hard-write", hard_xfer, ctx.opts.concurrency, &mut p, &mut w), true);

    let (p, w, mdh_n, lo, hi) =
        stonewalled_write(ctx, "mdtest-hard-write", hsize, cap(o.max_files), md_hard.clone()).await?;
    stonewall_summary(out, "mdtest-hard-write", &p, &w, lo, hi, false);
    let (mut p, mut w) = (p, w);
    record(
        out,
        "mdtest-hard-write",
        whole_write("mdtest-hard-write", hsize, ctx.opts.concurrency, &mut p, &mut w),
        false,
    );

    // find: like IO500's find, every rank scans its part of what mdtest created (its own easy
    // directory and its files in the shared hard directory) and counts the entries matching the
    // criterion (the hard files: name in mdt-hard/ and size == --mdtest-hard-size). The rate is
    // entries scanned per second over all ranks; the matches are checked against what was written.
    ctx.coord.barrier("start find").await?;
    let (w0, t0) = (crate::runner::unix_now(), Instant::now());
    let mut scanned = 0u64;
    let mut found = 0u64;
    let mut err: Option<String> = None;
    for prefix in [ctx.key("mdt-easy/"), ctx.shared_key(&format!("mdt-hard/f{rank}."))] {
        match tokio::time::timeout(ctx.opts.timeout * 10, ctx.list_keys(&prefix)).await {
            Ok(Ok(v)) => {
                scanned += v.len() as u64;
                found += v
                    .iter()
                    .filter(|(k, s)| {
                        let leaf = k.rsplit('/').next().unwrap_or("");
                        *s == hsize && leaf.starts_with('f') && leaf.matches('.').count() == 2
                    })
                    .count() as u64;
            }
            Ok(Err(e)) => err = Some(format!("target {}: find: list failed: {e}", ctx.target)),
            Err(_) => err = Some(format!("target {}: find: list got no answer in time", ctx.target)),
        }
    }
    let t = t0.elapsed().as_secs_f64();
    let mut rec = crate::stats::Recorder::default();
    {
        let st = rec.op("list");
        st.ops = scanned;
        st.errors = err.is_some() as u64;
    }
    let abort = if ctx.opts.keep_going { None } else { err.clone() };
    if let (Some(e), true) = (&err, ctx.opts.keep_going) {
        eprintln!("{e}");
    }
    let (mut fp, _, _) = ctx.gather_phase("find", 0, 1, rec, (w0, crate::runner::unix_now(), t), abort).await?;
    let found_all = crate::coord::sum_col(&ctx.coord.gather_f64("find matches", &[found as f64]).await?, 0);
    out.summary.insert("find_matched".into(), found_all);
    let expected: u64 = mdh_n.iter().sum::<u64>() * ranks;
    out.summary.insert("find_expected".into(), expected as f64);
    if found_all as u64 != expected && !ctx.opts.keep_going {
        anyhow::bail!("target {}: find: {found_all} hard files matched, {expected} were written", ctx.target);
    }
    fp.iter_mut().for_each(|p| p.latency = None);
    record(out, "find", fp, false);

    // The read phases read the data of the neighbour (see `source`).
    let p = io500_each(ctx, "ior-easy-read", easy_obj, easy_n[0], easy_key.clone(), "get").await?;
    record(out, "ior-easy-read", p.phases, true);
    let p = io500_each(ctx, "mdtest-easy-stat", 0, mde_n[0], md_easy.clone(), "head").await?;
    record(out, "mdtest-easy-stat", p.phases, false);
    // mdtest-easy-read (not an IO500 phase; reported, not scored)
    let p = io500_each(ctx, "mdtest-easy-read", 0, mde_n[0], md_easy.clone(), "get").await?;
    out.push_all(p.phases);
    let p = io500_each(ctx, "ior-hard-read", hard_xfer, hard_n[0], hard_key.clone(), "get").await?;
    record(out, "ior-hard-read", p.phases, true);
    let p = io500_each(ctx, "mdtest-hard-stat", hsize, mdh_n[0], md_hard.clone(), "head").await?;
    record(out, "mdtest-hard-stat", p.phases, false);
    let p = io500_each(ctx, "mdtest-easy-delete", 0, mde_n[0], md_easy.clone(), "delete").await?;
    record(out, "mdtest-easy-delete", p.phases, false);
    let p = io500_each(ctx, "mdtest-hard-read", hsize, mdh_n[0], md_hard.clone(), "get").await?;
    record(out, "mdtest-hard-read", p.phases, false);
    let p = io500_each(ctx, "mdtest-hard-delete", hsize, mdh_n[0], md_hard.clone(), "delete").await?;
    record(out, "mdtest-hard-delete", p.phases, false);

    let bw: Vec<f64> =
        IO500_PHASES.iter().filter(|(_, b)| *b).map(|(n, _)| rate.get(n).copied().unwrap_or(0.0)).collect();
    let md: Vec<f64> =
        IO500_PHASES.iter().filter(|(_, b)| !*b).map(|(n, _)| rate.get(n).copied().unwrap_or(0.0)).collect();
    for (n, b) in IO500_PHASES {
        let unit = if *b { "gib_s" } else { "kiops" };
        out.summary.insert(format!("{n}_{unit}"), rate.get(n).copied().unwrap_or(0.0));
        out.summary.insert(format!("{n}_seconds"), secs.get(n).copied().unwrap_or(0.0));
    }
    let (bw, md) = (geo_mean(&bw), geo_mean(&md));
    out.summary.insert("score_bw_gib_s".into(), bw);
    out.summary.insert("score_md_kiops".into(), md);
    out.summary.insert("score_total".into(), (bw * md).sqrt());
    out.summary.insert("stonewall_seconds".into(), o.stonewall.as_secs_f64());
    out.summary.insert("ranks".into(), ranks as f64);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// md-workbench

#[derive(Debug, Clone)]
pub struct MdWorkbenchOpts {
    /// Objects each task creates before the benchmark phase.
    pub precreate: u64,
    pub size: u64,
    /// Benchmark iterations per task (ignored when `duration` is set).
    pub iterations: u64,
    pub duration: Option<Duration>,
}

impl Default for MdWorkbenchOpts {
    fn default() -> Self {
        MdWorkbenchOpts { precreate: 50, size: 3901, iterations: 200, duration: None }
    }
}

pub async fn mdworkbench(ctx: &Ctx, o: &MdWorkbenchOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let conc = ctx.opts.concurrency;
    let rank = ctx.coord.rank();
    let size = o.size;
    let key = move |t: usize, i: u64| format!("mdwb/r{rank}t{t}/o{i:08}");
    let c = ctx.clone();
    let pre = ctx
        .run_phase(
            "precreate",
            size,
            conc,
            Limit::per_task(vec![o.precreate; conc]),
            op_fn(move |it: Iter| {
                let c = c.clone();
                async move { vec![c.put("create", c.key(&key(it.task, it.i)), size).await] }
            }),
        )
        .await?;
    let created = pre.per_task.clone();
    out.push_all(pre.phases);
    let p = o.precreate;
    let c = ctx.clone();
    let limit = match o.duration {
        Some(d) => Limit { duration: Some(d), per_task: Some(Arc::new(vec![u64::MAX; conc])), count: None },
        None => Limit::per_task(vec![o.iterations; conc]),
    };
    let bench = ctx
        .run_phase(
            "benchmark",
            size,
            conc,
            limit,
            op_fn(move |it: Iter| {
                let c = c.clone();
                async move {
                    let mut v = Vec::with_capacity(4);
                    v.push(c.put("create", c.key(&key(it.task, p + it.i)), size).await);
                    let old = c.key(&key(it.task, it.i));
                    v.push(c.get("read", old.clone(), size).await);
                    v.push(c.head("stat", old.clone(), Some(size)).await);
                    v.push(c.delete("delete", old).await);
                    v
                }
            }),
        )
        .await?;
    let done = bench.per_task.clone();
    let total_ops: u64 = bench.phases.iter().map(|p| p.ops).sum();
    out.summary.insert("benchmark_iops".into(), total_ops as f64 / bench.seconds.max(1e-9));
    out.summary.insert("benchmark_seconds".into(), bench.seconds);
    out.push_all(bench.phases);
    let c = ctx.clone();
    let left: Vec<u64> = (0..conc).map(|t| created[t].min(p)).collect();
    let cleanup = ctx
        .run_phase(
            "cleanup",
            size,
            conc,
            Limit::per_task(left),
            op_fn(move |it: Iter| {
                let c = c.clone();
                let start = done.get(it.task).copied().unwrap_or(0);
                async move { vec![c.delete("delete", c.key(&key(it.task, start + it.i))).await] }
            }),
        )
        .await?;
    out.push_all(cleanup.phases);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// rate

#[derive(Debug, Clone)]
pub struct RateOpts {
    /// GET tiny objects instead of HEAD.
    pub get: bool,
    pub size: u64,
    pub max_concurrency: usize,
    pub step: Duration,
}

impl Default for RateOpts {
    fn default() -> Self {
        RateOpts { get: false, size: 1, max_concurrency: 64, step: Duration::from_secs(1) }
    }
}

pub async fn rate(ctx: &Ctx, o: &RateOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let size = o.size;
    let objects = o.max_concurrency.max(1) as u64;
    let pre =
        ctx.put_phase("prepare", size, ctx.opts.concurrency, Limit::count(objects), |g| format!("rate/{g}")).await?;
    out.push_all(pre.phases);
    let mut conc = 1usize;
    let mut best = (0.0f64, 0usize);
    while conc <= o.max_concurrency.max(1) {
        let c = ctx.clone();
        let get = o.get;
        let r = ctx
            .run_phase(
                &format!("c{conc}"),
                size,
                conc,
                Limit::duration(o.step),
                op_fn(move |it: Iter| {
                    let c = c.clone();
                    async move {
                        let k = c.key(&format!("rate/{}", it.task as u64 % objects));
                        if get { vec![c.get("get", k, size).await] } else { vec![c.head("head", k, Some(size)).await] }
                    }
                }),
            )
            .await?;
        let ops: f64 = r.phases.iter().map(|p| p.ops_per_sec).sum();
        if ops > best.0 {
            best = (ops, conc);
        }
        out.push_all(r.phases);
        conc *= 2;
    }
    out.summary.insert("best_ops_per_sec".into(), best.0);
    out.summary.insert("best_concurrency".into(), best.1 as f64);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// mixed

#[derive(Debug, Clone)]
pub struct MixedOpts {
    /// Percentages of get, put, head, delete, list (summing to 100).
    pub mix: [u32; 5],
    pub objects: u64,
    pub size: u64,
    pub duration: Duration,
    /// PUTs rewrite the populated objects instead of adding new ones, so what the run stores
    /// stays `objects x size` however long it runs (PUT throughput on a RAM file system).
    pub overwrite: bool,
}

impl Default for MixedOpts {
    fn default() -> Self {
        MixedOpts {
            mix: [45, 15, 20, 10, 10],
            objects: 100,
            size: 16 * KIB,
            duration: Duration::from_secs(3),
            overwrite: false,
        }
    }
}

/// Parse `get=45,put=15,head=20,delete=10,list=10` (missing entries are 0; must sum to 100).
pub fn parse_mix(s: &str) -> anyhow::Result<[u32; 5]> {
    let mut mix = [0u32; 5];
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| anyhow::anyhow!("mix entry {part:?}: expected op=percent"))?;
        let v: u32 = v.trim().parse().map_err(|_| anyhow::anyhow!("mix entry {part:?}: bad percentage"))?;
        let i = match k.trim().to_ascii_lowercase().as_str() {
            "get" => 0,
            "put" => 1,
            "head" => 2,
            "delete" => 3,
            "list" => 4,
            other => anyhow::bail!("mix: unknown operation {other:?} (get, put, head, delete, list)"),
        };
        mix[i] = v;
    }
    let sum: u32 = mix.iter().sum();
    if sum != 100 {
        anyhow::bail!("mix percentages sum to {sum}, not 100");
    }
    Ok(mix)
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[derive(Default)]
struct MixTask {
    next: u64,
    live: VecDeque<u64>,
}

pub async fn mixed(ctx: &Ctx, o: &MixedOpts, out: &mut WorkOut) -> anyhow::Result<()> {
    let size = o.size;
    let n = o.objects.max(1);
    let pre =
        ctx.put_phase("populate", size, ctx.opts.concurrency, Limit::count(n), |g| format!("mixed/base/{g}")).await?;
    out.push_all(pre.phases);
    let conc = ctx.opts.concurrency;
    let state: Arc<Vec<Mutex<MixTask>>> = Arc::new((0..conc).map(|_| Mutex::default()).collect());
    let mix = o.mix;
    let overwrite = o.overwrite;
    let c = ctx.clone();
    let st = state.clone();
    let r = ctx
        .run_phase(
            "mixed",
            size,
            conc,
            Limit::duration(o.duration),
            op_fn(move |it: Iter| {
                let c = c.clone();
                let st = st.clone();
                async move {
                    let r = splitmix(it.g);
                    let pick = (r % 100) as u32;
                    let k = (r >> 32) % n;
                    let mut acc = 0;
                    let mut op = 4;
                    for (i, p) in mix.iter().enumerate() {
                        acc += p;
                        if pick < acc {
                            op = i;
                            break;
                        }
                    }
                    let base = c.key(&format!("mixed/base/{k}"));
                    if op == 3 {
                        let victim = st[it.task].lock().unwrap().live.pop_front();
                        match victim {
                            Some(v) => {
                                return vec![c.delete("delete", c.key(&format!("mixed/w/{}/{v}", it.task))).await];
                            }
                            None => op = 1,
                        }
                    }
                    match op {
                        0 => vec![c.get("get", base, size).await],
                        1 if overwrite => vec![c.put("put", base, size).await],
                        1 => {
                            let seq = {
                                let mut s = st[it.task].lock().unwrap();
                                s.next += 1;
                                s.next - 1
                            };
                            let s = c.put("put", c.key(&format!("mixed/w/{}/{seq}", it.task)), size).await;
                            if s.err.is_none() {
                                st[it.task].lock().unwrap().live.push_back(seq);
                            }
                            vec![s]
                        }
                        2 => vec![c.head("head", base, Some(size)).await],
                        _ => vec![c.list_page("list", c.key("mixed/base/"), 100).await],
                    }
                }
            }),
        )
        .await?;
    let total: u64 = r.phases.iter().map(|p| p.ops).sum();
    out.summary.insert("total_ops_per_sec".into(), total as f64 / r.seconds.max(1e-9));
    out.push_all(r.phases);
    Ok(())
}

// ------------------------------------------------------------------------------------------
// driver

/// A workload with its parameters.
#[derive(Debug, Clone)]
pub enum Workload {
    Sweep(SweepOpts),
    Speedtest(SpeedtestOpts),
    Crud(CrudOpts),
    Io500(Io500Opts),
    MdWorkbench(MdWorkbenchOpts),
    Rate(RateOpts),
    Mixed(MixedOpts),
}

impl Workload {
    pub fn name(&self) -> &'static str {
        match self {
            Workload::Sweep(_) => "sweep",
            Workload::Speedtest(_) => "speedtest",
            Workload::Crud(_) => "crud",
            Workload::Io500(_) => "io500",
            Workload::MdWorkbench(_) => "mdworkbench",
            Workload::Rate(_) => "rate",
            Workload::Mixed(_) => "mixed",
        }
    }

    async fn run(&self, ctx: &Ctx, out: &mut WorkOut) -> anyhow::Result<()> {
        match self {
            Workload::Sweep(o) => sweep(ctx, o, out).await,
            Workload::Speedtest(o) => speedtest(ctx, o, out).await,
            Workload::Crud(o) => crud(ctx, o, out).await,
            Workload::Io500(o) => io500(ctx, o, out).await,
            Workload::MdWorkbench(o) => mdworkbench(ctx, o, out).await,
            Workload::Rate(o) => rate(ctx, o, out).await,
            Workload::Mixed(o) => mixed(ctx, o, out).await,
        }
    }
}

/// A fresh run id: 8 hex digits.
pub fn run_id() -> String {
    format!("{:08x}", rand::random::<u32>())
}

/// Run `wl` against one store: set up the bucket, run, clean up (unless `--keep`), and collect
/// everything into a [`crate::stats::TargetResult`]. Never fails: errors end up in `aborted`.
pub async fn run_target(
    store: s3hpc_core::DynStore,
    target: &str,
    opts: crate::runner::RunOpts,
    bucket: Option<&str>,
    wl: &Workload,
) -> crate::stats::TargetResult {
    run_target_ranked(store, target, opts, bucket, wl, Arc::new(crate::coord::Ranks::default())).await
}

/// [`run_target`] as one rank of several: every rank calls it with its own store (connection)
/// and the same arguments. Rank 0 picks the run id and creates the bucket; every rank runs the
/// workload on its share; each rank cleans up its own keys, then rank 0 the shared ones and the
/// bucket. Every rank returns the same phases (merged over ranks); errors and error samples are
/// summed over ranks.
pub async fn run_target_ranked(
    store: s3hpc_core::DynStore,
    target: &str,
    opts: crate::runner::RunOpts,
    bucket: Option<&str>,
    wl: &Workload,
    coord: Arc<crate::coord::Ranks>,
) -> crate::stats::TargetResult {
    let rank = coord.rank();
    let id = match coord.broadcast("run id", run_id().into_bytes()).await {
        Ok(b) => String::from_utf8_lossy(&b).into_owned(),
        Err(e) => {
            return crate::stats::TargetResult {
                target: target.to_string(),
                workload: wl.name().to_string(),
                phases: Vec::new(),
                summary: Default::default(),
                errors: 1,
                error_samples: vec![e.to_string()],
                aborted: Some(e.to_string()),
                ranks: Vec::new(),
            };
        }
    };
    let (bucket, prefix) = match bucket {
        Some(b) => (b.to_string(), format!("s3hpc-bench-{id}/")),
        None => (format!("s3hpc-bench-{id}"), String::new()),
    };
    let ctx = Ctx::new(store.clone(), target, &bucket, &prefix, opts.clone()).with_coordinator(coord.clone());
    let mut out = WorkOut::default();
    let own_bucket = matches!(wl, Workload::Crud(_));
    let mut created = false;
    let mut aborted = None;
    if !own_bucket {
        // Rank 0 first (so it is the one that created it and deletes it), then the others (a
        // store private to each rank, like memory://, needs its own).
        let mut r = Ok(());
        if rank == 0 {
            r = ctx.ensure_bucket().await.map(|c| created = c);
        }
        let mut r = coord.agree("bucket", r.map_err(|e| e.to_string())).await;
        if r.is_ok() {
            let mine = if rank != 0 { ctx.ensure_bucket().await.map(|c| created = c) } else { Ok(()) };
            r = coord.agree("bucket on every rank", mine.map_err(|e| e.to_string())).await;
        }
        if let Err(e) = r {
            aborted = Some(e.to_string());
        }
    }
    if aborted.is_none() {
        let r = wl.run(&ctx, &mut out).await;
        created |= own_bucket && r.is_err();
        if let Err(e) = coord.agree("workload end", r.map_err(|e| e.to_string())).await {
            aborted = Some(e.to_string());
        }
    }
    let mut samples = ctx.error_samples();
    if !opts.keep {
        // Clean up whatever this run left behind (everything, when it ended early): each rank its
        // own keys, then rank 0 the shared ones and the bucket. Works rank-locally (without
        // collectives) when the ranks are out of step.
        let present = (created || !own_bucket) && store.head_bucket(&bucket).await.is_ok();
        let mut failed = 0;
        if coord.size() > 1 {
            if present {
                failed += ctx.delete_prefix(&ctx.prefix).await;
            }
            let _ = coord.barrier("cleanup").await;
        }
        if present && (rank == 0 || created) {
            failed += ctx.delete_prefix(&prefix).await;
        }
        if failed > 0 {
            samples.push(format!("target {target}: cleanup: {failed} objects could not be deleted"));
        }
        if present
            && created
            && let Err(e) = store.delete_bucket(&bucket).await
        {
            samples.push(format!("target {target}: cleanup: delete-bucket {bucket} failed: {e}"));
        }
    }
    // Errors of every rank (counts summed, samples labelled by rank).
    let mut errors = ctx.error_count();
    if coord.size() > 1 && coord.broken().is_none() {
        let mine = serde_json::to_vec(&(errors, &samples)).unwrap_or_default();
        if let Ok(all) = coord.allgather("errors", mine).await {
            errors = 0;
            samples = Vec::new();
            for (r, b) in all.iter().enumerate() {
                if let Ok((n, s)) = serde_json::from_slice::<(u64, Vec<String>)>(b) {
                    errors += n;
                    samples.extend(s.into_iter().map(|m| format!("rank {r}: {m}")));
                }
            }
        }
    }
    if coord.size() > 1 {
        out.summary.insert("ranks".into(), coord.size() as f64);
    }
    crate::stats::TargetResult {
        target: target.to_string(),
        workload: wl.name().to_string(),
        phases: out.phases,
        summary: out.summary,
        errors,
        error_samples: samples,
        aborted,
        ranks: Vec::new(),
    }
}
