//! The workload runner: timed phases of concurrent tasks, per-task recorders merged at the end,
//! a timeout on every request, error accounting, live progress and cleanup.

use std::future::Future;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use s3hpc_core::{DynStore, Error, ErrorCode, GetObjectRequest, ListObjectsRequest, PutObjectRequest};

use crate::coord::Ranks;
use crate::data::{Expect, Pattern, drain};
use crate::stats::{Balance, Phase, RankFig, RankPhase, Recorder};

/// Options shared by every workload.
#[derive(Debug, Clone)]
pub struct RunOpts {
    /// Concurrent tasks per rank.
    pub concurrency: usize,
    /// Limit for every single request; an operation that takes longer fails with `RequestTimeout`.
    pub timeout: Duration,
    /// Count errors and go on instead of stopping at the first one.
    pub keep_going: bool,
    /// Verify the content of everything read back.
    pub verify: bool,
    /// Leave the objects (and the bucket) the run created.
    pub keep: bool,
    /// Show live progress (only honoured on a terminal).
    pub progress: bool,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            concurrency: 4,
            timeout: Duration::from_secs(120),
            keep_going: false,
            verify: false,
            keep: false,
            progress: false,
        }
    }
}

/// The outcome of one timed operation.
pub struct Sample {
    pub op: &'static str,
    pub lat: Duration,
    pub bytes: u64,
    pub ttfb: Option<Duration>,
    pub err: Option<Error>,
}

/// When a phase ends: after `count` operations in total, after `duration`, whichever comes first.
#[derive(Debug, Clone, Default)]
pub struct Limit {
    pub count: Option<u64>,
    pub duration: Option<Duration>,
    /// Iterations of each task (task `t` stops after `per_task[t]`; missing entries mean 0).
    pub per_task: Option<Arc<Vec<u64>>>,
}

impl Limit {
    pub fn count(n: u64) -> Self {
        Limit { count: Some(n), ..Default::default() }
    }
    pub fn duration(d: Duration) -> Self {
        Limit { duration: Some(d), ..Default::default() }
    }
    pub fn per_task(v: Vec<u64>) -> Self {
        Limit { per_task: Some(Arc::new(v)), ..Default::default() }
    }
    /// `count` and/or `duration`, whichever is set (count alone when neither is).
    pub fn of(count: Option<u64>, duration: Option<Duration>, default_count: u64) -> Self {
        match (count, duration) {
            (None, None) => Limit::count(default_count),
            (c, d) => Limit { count: c, duration: d, per_task: None },
        }
    }
}

/// Which iteration a task is running.
#[derive(Debug, Clone, Copy)]
pub struct Iter {
    /// Task number within this rank.
    pub task: usize,
    /// Number of tasks in the phase.
    pub tasks: usize,
    /// Iteration number of this task (0, 1, 2, ...).
    pub i: u64,
    /// Iteration number over all tasks of the rank.
    pub g: u64,
}

pub type OpFn = Arc<dyn Fn(Iter) -> BoxFuture<'static, Vec<Sample>> + Send + Sync>;

/// What a phase produced.
pub struct PhaseOutcome {
    /// One entry per operation type seen.
    pub phases: Vec<Phase>,
    /// Iterations completed by each task.
    pub per_task: Vec<u64>,
    pub seconds: f64,
    /// The measurements merged over every rank (histograms included).
    pub rec: Recorder,
}

impl PhaseOutcome {
    pub fn total_iters(&self) -> u64 {
        self.per_task.iter().sum()
    }
}

#[derive(Default)]
struct ErrLog {
    count: AtomicU64,
    samples: Mutex<Vec<String>>,
    abort: Mutex<Option<String>>,
}

/// Everything a workload needs: the store, where to write, options, rank coordination.
#[derive(Clone)]
pub struct Ctx {
    pub store: DynStore,
    /// The target as the user named it (used in every message).
    pub target: String,
    pub bucket: String,
    /// Prefix of this rank's own keys (ends with `/`; with several ranks `<shared>r<rank>/`).
    pub prefix: String,
    /// Prefix every rank shares (objects several ranks write, like IOR's shared file).
    pub shared_prefix: String,
    pub opts: RunOpts,
    pub coord: Arc<Ranks>,
    pub pattern: Arc<Pattern>,
    errors: Arc<ErrLog>,
}

impl Ctx {
    pub fn new(store: DynStore, target: &str, bucket: &str, prefix: &str, opts: RunOpts) -> Ctx {
        Ctx {
            store,
            target: target.to_string(),
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            shared_prefix: prefix.to_string(),
            opts,
            coord: Arc::new(Ranks::default()),
            pattern: Pattern::global(),
            errors: Arc::default(),
        }
    }

    /// Run as one of several ranks: own keys move under `r<rank>/`.
    pub fn with_coordinator(mut self, coord: Arc<Ranks>) -> Ctx {
        self.prefix = if coord.size() > 1 {
            format!("{}r{}/", self.shared_prefix, coord.rank())
        } else {
            self.shared_prefix.clone()
        };
        self.coord = coord;
        self
    }

    /// Full key of a workload-relative name, private to this rank.
    pub fn key(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }

    /// Full key of a name private to rank `r` (another rank's data, for reads across ranks).
    pub fn rank_key(&self, r: usize, name: &str) -> String {
        if self.coord.size() > 1 {
            format!("{}r{r}/{name}", self.shared_prefix)
        } else {
            format!("{}{name}", self.prefix)
        }
    }

    /// Full key of a name every rank sees the same.
    pub fn shared_key(&self, name: &str) -> String {
        format!("{}{}", self.shared_prefix, name)
    }

    pub fn error_count(&self) -> u64 {
        self.errors.count.load(Ordering::Relaxed)
    }

    pub fn error_samples(&self) -> Vec<String> {
        self.errors.samples.lock().unwrap().clone()
    }

    fn note_error(&self, phase: &str, op: &str, e: &Error) -> String {
        let msg = format!("target {}: {phase}: {op} failed: {e}", self.target);
        self.errors.count.fetch_add(1, Ordering::Relaxed);
        let mut s = self.errors.samples.lock().unwrap();
        if s.len() < 10 {
            s.push(msg.clone());
        }
        msg
    }

    /// Run a single timed operation outside a phase (bucket creation etc.); errors are returned.
    pub async fn once<F>(&self, phase: &str, op: &'static str, fut: F) -> anyhow::Result<(Phase, Sample)>
    where
        F: Future<Output = s3hpc_core::Result<(u64, Option<Duration>)>>,
    {
        let s = self.timed(op, fut).await;
        let mut rec = Recorder::default();
        let st = rec.op(op);
        match &s.err {
            None => st.record(s.lat, s.bytes, s.ttfb),
            Some(e) => {
                st.errors += 1;
                let msg = self.note_error(phase, op, e);
                if !self.opts.keep_going {
                    anyhow::bail!(msg);
                }
            }
        }
        let p = Phase::from_stats(phase, op, 0, 1, rec.op(op), s.lat.as_secs_f64());
        Ok((p, s))
    }

    /// Time `fut` under the request timeout.
    pub async fn timed<F>(&self, op: &'static str, fut: F) -> Sample
    where
        F: Future<Output = s3hpc_core::Result<(u64, Option<Duration>)>>,
    {
        let t0 = Instant::now();
        let r = tokio::time::timeout(self.opts.timeout, fut).await;
        let lat = t0.elapsed();
        match r {
            Ok(Ok((bytes, ttfb))) => Sample { op, lat, bytes, ttfb, err: None },
            Ok(Err(e)) => Sample { op, lat, bytes: 0, ttfb: None, err: Some(e) },
            Err(_) => Sample {
                op,
                lat,
                bytes: 0,
                ttfb: None,
                err: Some(Error::new(
                    ErrorCode::RequestTimeout,
                    format!("no answer within {:.1} s (--timeout)", self.opts.timeout.as_secs_f64()),
                )),
            },
        }
    }

    // ---- the operations workloads use, each timed ----

    pub async fn put(&self, op: &'static str, key: String, size: u64) -> Sample {
        let body = self.pattern.body(&key, size);
        let req = PutObjectRequest { content_length: Some(size), ..Default::default() };
        self.timed(op, async { self.store.put_object(&self.bucket, &key, req, body).await.map(|_| (size, None)) }).await
    }

    /// GET the whole object (or `range`), draining and (with `--verify`) checking the body.
    pub async fn get(&self, op: &'static str, key: String, size: u64) -> Sample {
        self.timed(op, async {
            let t0 = Instant::now();
            let out = self.store.get_object(&self.bucket, &key, GetObjectRequest::default()).await?;
            let expect = self.opts.verify.then(|| Expect { pattern: &self.pattern, key: &key, size });
            let (n, ttfb) = drain(out.body, expect, t0).await?;
            Ok((n, Some(ttfb)))
        })
        .await
    }

    pub async fn head(&self, op: &'static str, key: String, size: Option<u64>) -> Sample {
        self.timed(op, async {
            let info = self.store.head_object(&self.bucket, &key, GetObjectRequest::default()).await?;
            if self.opts.verify
                && let Some(s) = size
                && info.size != s
            {
                return Err(Error::new(
                    ErrorCode::BadDigest,
                    format!("verify: HEAD {key} reports {} bytes, expected {s}", info.size),
                ));
            }
            Ok((0, None))
        })
        .await
    }

    pub async fn delete(&self, op: &'static str, key: String) -> Sample {
        self.timed(op, async { self.store.delete_object(&self.bucket, &key).await.map(|_| (0, None)) }).await
    }

    /// List every key under `prefix` (all pages). The sample carries no bytes.
    pub async fn list_all(&self, op: &'static str, prefix: String) -> Sample {
        self.timed(op, async {
            let keys = self.list_keys(&prefix).await?;
            let _ = keys;
            Ok((0, None))
        })
        .await
    }

    /// One listing page of at most `max_keys` keys under `prefix`.
    pub async fn list_page(&self, op: &'static str, prefix: String, max_keys: usize) -> Sample {
        self.timed(op, async {
            let req = ListObjectsRequest { prefix, max_keys, ..Default::default() };
            let page = self.store.list_objects(&self.bucket, req).await?;
            let _ = page;
            Ok((0, None))
        })
        .await
    }

    /// Every key (with its size) under `prefix`, following pagination.
    pub async fn list_keys(&self, prefix: &str) -> s3hpc_core::Result<Vec<(String, u64)>> {
        let mut out = Vec::new();
        let mut start_after = None;
        loop {
            let req = ListObjectsRequest {
                prefix: prefix.to_string(),
                start_after: start_after.clone(),
                max_keys: 1000,
                ..Default::default()
            };
            let page = self.store.list_objects(&self.bucket, req).await?;
            out.extend(page.objects.iter().map(|o| (o.key.clone(), o.size)));
            if !page.is_truncated {
                break;
            }
            match page.next_marker.or_else(|| page.objects.last().map(|o| o.key.clone())) {
                Some(m) if Some(&m) != start_after.as_ref() => start_after = Some(m),
                _ => break,
            }
        }
        Ok(out)
    }

    /// Create the bucket (an existing one of ours is fine). Returns whether we created it. An
    /// existing bucket is looked for first: in us-east-1 S3 (and s3hpc) answer 200 to the owner
    /// creating a bucket again, which must not read as "created" (it would be deleted at the end).
    pub async fn ensure_bucket(&self) -> anyhow::Result<bool> {
        if let Ok(Ok(())) = tokio::time::timeout(self.opts.timeout, self.store.head_bucket(&self.bucket)).await {
            return Ok(false);
        }
        let r = tokio::time::timeout(self.opts.timeout, self.store.create_bucket(&self.bucket)).await;
        match r {
            Ok(Ok(())) => Ok(true),
            Ok(Err(e)) if matches!(e.code, ErrorCode::BucketAlreadyOwnedByYou) => Ok(false),
            Ok(Err(e)) => {
                let msg = self.note_error("setup", "create-bucket", &e);
                anyhow::bail!("{msg} (bucket {})", self.bucket)
            }
            Err(_) => anyhow::bail!(
                "target {}: setup: create-bucket {} got no answer within {:.1} s",
                self.target,
                self.bucket,
                self.opts.timeout.as_secs_f64()
            ),
        }
    }

    /// Delete every object under `prefix` (best effort, concurrent); returns how many failed.
    pub async fn delete_prefix(&self, prefix: &str) -> u64 {
        let keys = match tokio::time::timeout(self.opts.timeout * 4, self.list_keys(prefix)).await {
            Ok(Ok(k)) => k,
            _ => return 1,
        };
        let keys = Arc::new(keys);
        let next = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..self.opts.concurrency.clamp(1, 64) {
            let (ctx, keys, next, failed) = (self.clone(), keys.clone(), next.clone(), failed.clone());
            set.spawn(async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                    let Some((k, _)) = keys.get(i) else { break };
                    if ctx.delete("cleanup", k.clone()).await.err.is_some() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
        while set.join_next().await.is_some() {}
        failed.load(Ordering::Relaxed)
    }

    /// Run one timed phase: `concurrency` tasks each calling `f` until `limit` is reached.
    /// Operation errors are counted; without `--keep-going` the first one stops the phase and
    /// is returned as an error naming target, phase and operation.
    /// A phase of PUTs of `size`-byte objects named `name_of(g)` (under this run's prefix), `g`
    /// being the phase-wide iteration number: how every workload creates its objects.
    pub async fn put_phase(
        &self,
        phase: &str,
        size: u64,
        concurrency: usize,
        limit: Limit,
        name_of: impl Fn(u64) -> String + Send + Sync + 'static,
    ) -> anyhow::Result<PhaseOutcome> {
        let c = self.clone();
        let name_of = Arc::new(name_of);
        let f = op_fn(move |it: Iter| {
            let (c, name_of) = (c.clone(), name_of.clone());
            async move { vec![c.put("put", c.key(&name_of(it.g)), size).await] }
        });
        self.run_phase(phase, size, concurrency, limit, f).await
    }

    pub async fn run_phase(
        &self,
        name: &str,
        object_size: u64,
        concurrency: usize,
        limit: Limit,
        f: OpFn,
    ) -> anyhow::Result<PhaseOutcome> {
        let concurrency = concurrency.max(1);
        let limit = if limit.count.is_none() && limit.duration.is_none() && limit.per_task.is_none() {
            Limit::count(1)
        } else {
            limit
        };
        let bar_len = match limit.duration {
            Some(_) => None,
            None => limit
                .count
                .or_else(|| limit.per_task.as_ref().map(|v| v.iter().fold(0u64, |a, b| a.saturating_add(*b)))),
        };
        self.coord.barrier(&format!("start {name}")).await?;
        let wall_start = unix_now();
        let next = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let start = Instant::now();
        let deadline = limit.duration.map(|d| start + d);
        let bar = self.progress_bar(name, bar_len);
        let ticker = bar.clone().map(|bar| {
            let done = done.clone();
            tokio::spawn(async move {
                loop {
                    bar.set_position(done.load(Ordering::Relaxed));
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            })
        });
        let mut set = tokio::task::JoinSet::new();
        for task in 0..concurrency {
            let (ctx, f, next, done, stop) = (self.clone(), f.clone(), next.clone(), done.clone(), stop.clone());
            let phase = name.to_string();
            let limit = limit.clone();
            set.spawn(async move {
                let mut rec = Recorder::default();
                let mut i = 0u64;
                loop {
                    if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
                        break;
                    }
                    if let Some(v) = &limit.per_task
                        && i >= v.get(task).copied().unwrap_or(0)
                    {
                        break;
                    }
                    let g = next.fetch_add(1, Ordering::Relaxed);
                    if limit.count.is_some_and(|c| g >= c) {
                        break;
                    }
                    for s in f(Iter { task, tasks: concurrency, i, g }).await {
                        let st = rec.op(s.op);
                        match s.err {
                            None => st.record(s.lat, s.bytes, s.ttfb),
                            Some(e) => {
                                st.errors += 1;
                                let msg = ctx.note_error(&phase, s.op, &e);
                                if !ctx.opts.keep_going {
                                    stop.store(true, Ordering::Relaxed);
                                    ctx.errors.abort.lock().unwrap().get_or_insert(msg);
                                }
                            }
                        }
                    }
                    i += 1;
                    done.fetch_add(1, Ordering::Relaxed);
                }
                (task, rec, i)
            });
        }
        let mut rec = Recorder::default();
        let mut per_task = vec![0u64; concurrency];
        while let Some(r) = set.join_next().await {
            let (task, r, i) = r.map_err(|e| anyhow::anyhow!("target {}: {name}: worker failed: {e}", self.target))?;
            rec.merge(&r);
            per_task[task] = i;
        }
        let local = start.elapsed().as_secs_f64();
        if let Some(t) = ticker {
            t.abort();
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
        let abort = self.errors.abort.lock().unwrap().take();
        let (phases, seconds, rec) =
            self.gather_phase(name, object_size, concurrency, rec, (wall_start, unix_now(), local), abort).await?;
        Ok(PhaseOutcome { phases, per_task, seconds, rec })
    }

    /// Combine every rank's measurements of one phase (every rank gets the same result): ops,
    /// bytes and merged latency histograms summed over ranks, over the phase's wall time from
    /// the first rank's start to the last rank's end (as IOR computes it); with several ranks
    /// also each rank's own figures and their balance. Fails on every rank if any rank aborted.
    /// `times` = (wall-clock start, wall-clock end, local elapsed seconds).
    pub async fn gather_phase(
        &self,
        name: &str,
        object_size: u64,
        concurrency: usize,
        rec: Recorder,
        times: (f64, f64, f64),
        abort: Option<String>,
    ) -> anyhow::Result<(Vec<Phase>, f64, Recorder)> {
        let (start, end, local) = times;
        let pname = |op: &str, n: usize| if n == 1 { name.to_string() } else { format!("{name}:{op}") };
        if self.coord.size() == 1 {
            if let Some(msg) = abort {
                anyhow::bail!(msg);
            }
            let phases = rec
                .ops
                .iter()
                .map(|(op, s)| Phase::from_stats(&pname(op, rec.ops.len()), op, object_size, concurrency, s, local))
                .collect();
            return Ok((phases, local, rec));
        }
        let mine = RankPhase { start, end, abort, ops: rec.to_wire() };
        let all = self.coord.allgather(&format!("end {name}"), serde_json::to_vec(&mine)?).await?;
        let all: Vec<RankPhase> = all
            .iter()
            .enumerate()
            .map(|(r, b)| serde_json::from_slice(b).map_err(|e| anyhow::anyhow!("rank {r}: bad phase result: {e}")))
            .collect::<anyhow::Result<_>>()?;
        let aborts: Vec<String> =
            all.iter().enumerate().filter_map(|(r, p)| p.abort.as_ref().map(|a| format!("rank {r}: {a}"))).collect();
        if !aborts.is_empty() {
            anyhow::bail!(aborts.join("; "));
        }
        let recs: Vec<Recorder> = all.iter().map(|p| Recorder::from_wire(&p.ops)).collect::<anyhow::Result<_>>()?;
        let mut merged = Recorder::default();
        recs.iter().for_each(|r| merged.merge(r));
        let first = all.iter().map(|p| p.start).fold(f64::INFINITY, f64::min);
        let last = all.iter().map(|p| p.end).fold(0.0, f64::max);
        let seconds = (last - first).max(0.0);
        let phases = merged
            .ops
            .iter()
            .map(|(op, s)| {
                let mut p = Phase::from_stats(&pname(op, merged.ops.len()), op, object_size, concurrency, s, seconds);
                p.per_rank = recs
                    .iter()
                    .zip(&all)
                    .enumerate()
                    .map(|(r, (rec, rp))| {
                        let o = rec.ops.get(op);
                        let secs = (rp.end - rp.start).max(1e-9);
                        let (ops, bytes, errors) = o.map(|o| (o.ops, o.bytes, o.errors)).unwrap_or_default();
                        RankFig {
                            rank: r,
                            ops,
                            bytes,
                            errors,
                            seconds: rp.end - rp.start,
                            ops_per_sec: ops as f64 / secs,
                            mib_per_sec: bytes as f64 / secs / (1024.0 * 1024.0),
                        }
                    })
                    .collect();
                p.balance = Balance::of(&p.per_rank);
                p
            })
            .collect();
        Ok((phases, seconds, merged))
    }

    fn progress_bar(&self, name: &str, count: Option<u64>) -> Option<indicatif::ProgressBar> {
        if !self.opts.progress || self.coord.rank() != 0 || !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = match count {
            Some(n) => indicatif::ProgressBar::new(n),
            None => indicatif::ProgressBar::new_spinner(),
        };
        let style = indicatif::ProgressStyle::with_template(
            "{spinner} {prefix} {wide_msg} {pos}/{len} ops [{elapsed_precise}] {per_sec}",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_prefix(self.target.clone());
        bar.set_message(name.to_string());
        Some(bar)
    }
}

/// Wall-clock time in seconds since the Unix epoch (comparable across ranks of one node; across
/// nodes as good as their clock synchronisation).
pub fn unix_now() -> f64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or(0.0)
}

/// Wrap an async block as an [`OpFn`].
pub fn op_fn<F, Fut>(f: F) -> OpFn
where
    F: Fn(Iter) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Vec<Sample>> + Send + 'static,
{
    Arc::new(move |it| Box::pin(f(it)))
}
