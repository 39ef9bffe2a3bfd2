//! The `s3hpc bench` command line (clap), shared with the `s3hpc` binary.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, Subcommand};

use crate::coord::Ranks;
use crate::runner::RunOpts;
use crate::stats::BenchRun;
use crate::target::TargetOpts;
use crate::workloads::*;

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub cmd: BenchCmd,
}

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// PUT, GET and HEAD throughput and ops/s across object sizes.
    Sweep {
        #[command(flatten)]
        common: Common,
        /// Object sizes, comma separated (B, KiB, MiB, GiB; K/M/G are binary too).
        #[arg(long, default_value = "1KiB,4KiB,64KiB,1MiB,16MiB,128MiB", value_parser = parse_sizes)]
        sizes: SizeList,
        /// Objects per size (default: 256 MiB / size, between 2 and 1000).
        #[arg(long)]
        count: Option<u64>,
        /// Time per size and operation instead of a count (e.g. 5s, 500ms).
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
        /// Skip the HEAD phase.
        #[arg(long)]
        no_head: bool,
    },
    /// MinIO-like autotune: rounds of PUT then GET, concurrency x1.5 until GET gains < 2.5%.
    Speedtest {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value = "16MiB", value_parser = parse_size)]
        size: u64,
        /// Length of the PUT and of the GET part of each round.
        #[arg(long, default_value = "2s", value_parser = parse_duration)]
        round: Duration,
        /// Concurrency of the first round (then x1.5 per round).
        #[arg(long, default_value_t = 1)]
        start_concurrency: usize,
        #[arg(long, default_value_t = 10)]
        max_rounds: usize,
    },
    /// OSSperf steps: create bucket, upload, list, download, delete objects, delete bucket.
    Crud {
        #[command(flatten)]
        common: Common,
        /// Number of objects (OSSperf -n).
        #[arg(long, short = 'n', default_value_t = 20)]
        count: u64,
        /// Object size (OSSperf -s).
        #[arg(long, short = 's', default_value = "64KiB", value_parser = parse_size)]
        size: u64,
        /// Upload, download and delete with --concurrency tasks (OSSperf -p).
        #[arg(long, short = 'p')]
        parallel: bool,
        /// Print OSSperf's 13-column result line.
        #[arg(long)]
        ossperf: bool,
    },
    /// IO500 phases mapped to S3 (IOR easy/hard, mdtest easy/hard, find) and the IO500 score.
    Io500 {
        #[command(flatten)]
        common: Common,
        /// Write phases stop after this long (IO500's rule: 300s).
        #[arg(long, default_value = "3s", value_parser = parse_duration)]
        stonewall: Duration,
        /// IOR easy: `fragment` (every 2 MiB transfer one object) or `whole` (objects of --ior-easy-block).
        #[arg(long, default_value = "fragment")]
        ior_easy_mode: String,
        #[arg(long, default_value = "2MiB", value_parser = parse_size)]
        ior_easy_xfer: u64,
        #[arg(long, default_value = "32MiB", value_parser = parse_size)]
        ior_easy_block: u64,
        #[arg(long, default_value_t = 47008)]
        ior_hard_xfer: u64,
        #[arg(long, default_value_t = 3901)]
        mdtest_hard_size: u64,
        /// Cap on the bytes of each IOR write phase.
        #[arg(long, default_value = "2GiB", value_parser = parse_size)]
        max_bytes: u64,
        /// Cap on the objects of each mdtest write phase.
        #[arg(long, default_value_t = 200_000)]
        max_files: u64,
    },
    /// md-workbench: precreate, then per iteration create one object, read+stat+delete an older one.
    Mdworkbench {
        #[command(flatten)]
        common: Common,
        /// Objects each task creates first.
        #[arg(long, default_value_t = 50)]
        precreate: u64,
        #[arg(long, default_value_t = 3901)]
        size: u64,
        /// Benchmark iterations per task.
        #[arg(long, default_value_t = 200)]
        iterations: u64,
        /// Run the benchmark phase for this long instead.
        #[arg(long, value_parser = parse_duration)]
        duration: Option<Duration>,
    },
    /// HEAD (or GET of tiny objects) request rate at rising concurrency 1, 2, 4, ...
    Rate {
        #[command(flatten)]
        common: Common,
        /// GET tiny objects instead of HEAD.
        #[arg(long)]
        get: bool,
        #[arg(long, default_value = "1", value_parser = parse_size)]
        size: u64,
        #[arg(long, default_value_t = 64)]
        max_concurrency: usize,
        /// Time per concurrency step.
        #[arg(long, default_value = "1s", value_parser = parse_duration)]
        step: Duration,
    },
    /// GET/PUT/HEAD/DELETE/LIST mix by percentages for a duration.
    Mixed {
        #[command(flatten)]
        common: Common,
        #[arg(long, default_value = "get=45,put=15,head=20,delete=10,list=10")]
        mix: String,
        #[arg(long, default_value_t = 100)]
        objects: u64,
        #[arg(long, default_value = "16KiB", value_parser = parse_size)]
        size: u64,
        #[arg(long, default_value = "3s", value_parser = parse_duration)]
        duration: Duration,
        /// PUTs rewrite the populated objects instead of adding new ones (the data stored stays
        /// OBJECTS x SIZE however long the run: PUT throughput on a RAM file system).
        #[arg(long)]
        overwrite: bool,
    },
    /// Differences between two `--json` results.
    Compare { a: PathBuf, b: PathBuf },
}

#[derive(Args, Debug, Clone)]
pub struct Common {
    /// Target: http(s)://HOST:PORT, file://ROOT (embedded), posix://DIR (raw POSIX baseline),
    /// unix://SOCKET or tcp://HOST:PORT (binary protocol), memory://, noop://[SIZE]. Repeat to compare.
    /// A comma-separated list of endpoints is one target served by several gateways (on one
    /// shared root): by default every rank spreads its connections over all of them (see --spread).
    // `[SIZE]` is help text (clap prints these lines), not a link.
    #[allow(rustdoc::broken_intra_doc_links)]
    #[arg(long = "target", short = 't', required = true)]
    pub targets: Vec<String>,
    /// Run N ranks as local processes (this program re-executed N times, same code path as MPI
    /// ranks); rank 0 prints the merged report. Not with mpirun/srun (there the launcher decides).
    #[arg(long, default_value_t = 1)]
    pub procs: usize,
    /// How a rank uses the endpoints of a comma-separated target list: `connection` (every
    /// rank uses all of them, each new connection going to the next endpoint in turn, rank r
    /// starting at endpoint r mod n; http(s) lists only, other lists as `rank`), `rank` (alias
    /// `round-robin`: rank r uses only endpoint r mod n, as IOR's S3 backend does) or `local`
    /// (the first endpoint whose address belongs to this host, e.g. the node-local gateway).
    #[arg(long, default_value = "connection")]
    pub spread: String,
    /// With several ranks: how long a rank waits at a barrier for the others before failing.
    #[arg(long, default_value = "600s", value_parser = parse_duration)]
    pub barrier_timeout: Duration,
    /// Bucket to use (default: a fresh `s3hpc-bench-<id>`, deleted afterwards).
    #[arg(long)]
    pub bucket: Option<String>,
    /// Concurrent requests (tasks) per rank.
    #[arg(long, short = 'c', default_value_t = 4)]
    pub concurrency: usize,
    /// Timeout of every single request.
    #[arg(long, default_value = "120s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Count errors and continue instead of stopping at the first.
    #[arg(long)]
    pub keep_going: bool,
    /// Verify the content of everything read back (deterministic per-object pattern).
    #[arg(long)]
    pub verify: bool,
    /// Keep the objects and bucket the run created.
    #[arg(long)]
    pub keep: bool,
    /// Write every figure as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write every figure as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Write SVG plots and index.html into this directory.
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// No progress display.
    #[arg(long, short = 'q')]
    pub quiet: bool,
    /// Access key. Credentials are taken, first match wins, from: --access-key/--secret-key
    /// (+ --session-token); --profile; AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY (+
    /// AWS_SESSION_TOKEN); the AWS_PROFILE (else `default`) profile of the credentials file
    /// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials). That is the AWS CLI's order.
    #[arg(long)]
    pub access_key: Option<String>,
    #[arg(long)]
    pub secret_key: Option<String>,
    /// Session token of temporary credentials (sent as x-amz-security-token).
    #[arg(long)]
    pub session_token: Option<String>,
    /// Profile of the AWS credentials file to take keys from (beats the AWS_* key variables).
    #[arg(long)]
    pub profile: Option<String>,
    #[arg(long, env = "AWS_REGION", default_value = "us-east-1")]
    pub region: String,
    /// Virtual-hosted-style addressing (bucket.host) instead of path style.
    #[arg(long)]
    pub virtual_host: bool,
    /// Durability of file:// targets: strict, relaxed or none (default: the backend's).
    #[arg(long)]
    pub durability: Option<String>,
    /// ETag mode of file:// targets: md5 (default) or fast.
    #[arg(long)]
    pub etag: Option<String>,
    /// Where file:// targets do their file I/O: offload (Tokio's blocking pool, the default,
    /// as the gateways do), inplace (on the calling thread inside block_in_place, the worker's
    /// other tasks moved away first) or inline (on the calling task, as the libs3 library does;
    /// with -c above the runtime's worker count, requests then wait for each other).
    #[arg(long)]
    pub io: Option<String>,
    /// PEM file of CA certificates https:// targets trust besides the system's roots.
    #[arg(long, env = "AWS_CA_BUNDLE")]
    pub ca_bundle: Option<PathBuf>,
    /// Do not verify the TLS certificates of https:// targets (testing only).
    #[arg(long)]
    pub insecure: bool,
}

pub type SizeList = Vec<u64>;

/// `4096`, `4KiB`, `4K`, `1.5MiB`, `2G` (all binary multiples).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let i = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(i);
    let v: f64 = num.parse().map_err(|_| format!("bad size {s:?}"))?;
    let m = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1u64,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        u => return Err(format!("bad size unit {u:?} in {s:?}")),
    };
    Ok((v * m as f64).round() as u64)
}

fn parse_sizes(s: &str) -> Result<SizeList, String> {
    let v: Result<Vec<u64>, String> = s.split(',').filter(|p| !p.trim().is_empty()).map(parse_size).collect();
    let v = v?;
    if v.is_empty() {
        return Err("no sizes given".into());
    }
    Ok(v)
}

/// `5`, `5s`, `500ms`, `2m`, `1.5s`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mul) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num.trim().parse().map_err(|_| format!("bad duration {s:?}"))?;
    if !(v >= 0.0 && v.is_finite()) {
        return Err(format!("bad duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(v * mul))
}

impl Common {
    pub fn run_opts(&self) -> RunOpts {
        RunOpts {
            concurrency: self.concurrency.max(1),
            timeout: self.timeout,
            keep_going: self.keep_going,
            verify: self.verify,
            keep: self.keep,
            progress: !self.quiet,
        }
    }

    /// Keys from the flags/environment, else from the `~/.aws/credentials` profile.
    pub fn target_opts(&self) -> TargetOpts {
        let credentials = crate::target::CredentialFlags {
            access_key: self.access_key.clone(),
            secret_key: self.secret_key.clone(),
            session_token: self.session_token.clone(),
            profile: self.profile.clone(),
        }
        .resolve();
        TargetOpts {
            credentials,
            region: self.region.clone(),
            virtual_host: self.virtual_host,
            durability: self.durability.clone(),
            etag: self.etag.clone(),
            io: self.io.clone(),
            tls: s3hpc_client::TlsOptions {
                ca_bundle: self.ca_bundle.clone().filter(|p| !p.as_os_str().is_empty()),
                insecure: self.insecure,
            },
        }
    }
}

fn workload_of(cmd: &BenchCmd) -> anyhow::Result<(Common, Workload)> {
    Ok(match cmd {
        BenchCmd::Sweep { common, sizes, count, duration, no_head } => (
            common.clone(),
            Workload::Sweep(SweepOpts { sizes: sizes.clone(), count: *count, duration: *duration, head: !no_head }),
        ),
        BenchCmd::Speedtest { common, size, round, start_concurrency, max_rounds } => (
            common.clone(),
            Workload::Speedtest(SpeedtestOpts {
                size: *size,
                round: *round,
                start_concurrency: *start_concurrency,
                max_rounds: *max_rounds,
                ..Default::default()
            }),
        ),
        BenchCmd::Crud { common, count, size, parallel, .. } => {
            (common.clone(), Workload::Crud(CrudOpts { count: *count, size: *size, parallel: *parallel }))
        }
        BenchCmd::Io500 {
            common,
            stonewall,
            ior_easy_mode,
            ior_easy_xfer,
            ior_easy_block,
            ior_hard_xfer,
            mdtest_hard_size,
            max_bytes,
            max_files,
        } => {
            let mode = match ior_easy_mode.as_str() {
                "fragment" => IorEasyMode::Fragment,
                "whole" => IorEasyMode::Whole,
                m => anyhow::bail!("--ior-easy-mode {m:?}: expected fragment or whole"),
            };
            if *ior_easy_xfer == 0 || *ior_hard_xfer == 0 || *ior_easy_block == 0 {
                anyhow::bail!("transfer and block sizes must be positive");
            }
            (
                common.clone(),
                Workload::Io500(Io500Opts {
                    stonewall: *stonewall,
                    ior_easy_xfer: *ior_easy_xfer,
                    ior_easy_mode: mode,
                    ior_easy_block: *ior_easy_block,
                    ior_hard_xfer: *ior_hard_xfer,
                    mdtest_hard_size: *mdtest_hard_size,
                    max_bytes: *max_bytes,
                    max_files: *max_files,
                }),
            )
        }
        BenchCmd::Mdworkbench { common, precreate, size, iterations, duration } => (
            common.clone(),
            Workload::MdWorkbench(MdWorkbenchOpts {
                precreate: *precreate,
                size: *size,
                iterations: *iterations,
                duration: *duration,
            }),
        ),
        BenchCmd::Rate { common, get, size, max_concurrency, step } => (
            common.clone(),
            Workload::Rate(RateOpts { get: *get, size: *size, max_concurrency: *max_concurrency, step: *step }),
        ),
        BenchCmd::Mixed { common, mix, objects, size, duration, overwrite } => (
            common.clone(),
            Workload::Mixed(MixedOpts {
                mix: parse_mix(mix)?,
                objects: *objects,
                size: *size,
                duration: *duration,
                overwrite: *overwrite,
            }),
        ),
        BenchCmd::Compare { .. } => unreachable!("handled by run"),
    })
}

/// The endpoint(s) of `spec` (possibly a comma-separated list of endpoints of one target) that
/// `rank` uses: `connection` = the whole list of http(s) endpoints, starting at endpoint
/// `rank mod n` (the client opens its connections round-robin over it; other lists as `rank`);
/// `rank` / `round-robin` = endpoint `rank mod n`; `local` = the first endpoint whose host
/// address is assigned to this host (tested by binding to it), for node-local gateways.
pub fn pick_endpoint(spec: &str, spread: &str, rank: usize) -> anyhow::Result<String> {
    let list: Vec<&str> = spec.split(',').map(str::trim).filter(|p| !p.is_empty()).collect();
    if list.is_empty() {
        anyhow::bail!("target {spec:?}: empty endpoint list");
    }
    let http = list.iter().all(|e| e.starts_with("http://") || e.starts_with("https://"));
    match spread {
        "connection" | "conn" if http => {
            let k = rank % list.len();
            Ok(list[k..].iter().chain(&list[..k]).copied().collect::<Vec<_>>().join(","))
        }
        "connection" | "conn" | "rank" | "round-robin" | "rr" => Ok(list[rank % list.len()].to_string()),
        "local" => list
            .iter()
            .find(|e| endpoint_is_local(e))
            .map(|e| e.to_string())
            .ok_or_else(|| anyhow::anyhow!("--spread local: no endpoint of {spec:?} has an address of this host")),
        other => anyhow::bail!("--spread {other:?}: expected connection, rank (round-robin) or local"),
    }
}

/// Whether the host of a `scheme://host:port/...` endpoint is an address of this host (or the
/// endpoint is not a network one at all).
fn endpoint_is_local(e: &str) -> bool {
    use std::net::ToSocketAddrs;
    let Some((scheme, rest)) = e.split_once("://") else { return false };
    if !matches!(scheme, "http" | "https" | "tcp" | "tls") {
        return true;
    }
    let hostport = rest.split('/').next().unwrap_or("");
    let hostport = if hostport.contains(':') { hostport.to_string() } else { format!("{hostport}:80") };
    let Ok(addrs) = hostport.to_socket_addrs() else { return false };
    addrs.into_iter().any(|a| std::net::UdpSocket::bind((a.ip(), 0)).is_ok())
}

/// Run every target of `common` one after another with the same workload, as one rank of
/// `coord` (every rank calls this; every rank gets the merged result).
pub async fn run_targets(common: &Common, wl: &Workload, command: &str, coord: Arc<Ranks>) -> BenchRun {
    let started_unix =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let topts = common.target_opts();
    let mut results = Vec::new();
    for t in &common.targets {
        let endpoint = pick_endpoint(t, &common.spread, coord.rank());
        let opened = match &endpoint {
            Ok(ep) => crate::target::open(ep, &topts).await,
            Err(e) => Err(anyhow::anyhow!("{e}")),
        };
        // Every rank must take part in the same collectives: agree on whether all opened it.
        let agreed = coord.agree(&format!("open {t}"), opened.as_ref().map(|_| ()).map_err(|e| e.to_string())).await;
        let mut r = match (opened, agreed) {
            (Ok(store), Ok(())) => {
                crate::workloads::run_target_ranked(
                    store,
                    t,
                    common.run_opts(),
                    common.bucket.as_deref(),
                    wl,
                    coord.clone(),
                )
                .await
            }
            (_, Err(e)) | (Err(e), _) => crate::stats::TargetResult {
                target: t.clone(),
                workload: wl.name().to_string(),
                phases: Vec::new(),
                summary: Default::default(),
                errors: 1,
                error_samples: vec![e.to_string()],
                aborted: Some(e.to_string()),
                ranks: Vec::new(),
            },
        };
        if coord.size() > 1 && coord.broken().is_none() {
            let ep = endpoint.unwrap_or_default();
            let mine = format!("{}\n{ep}", std::process::id()).into_bytes();
            if let Ok(all) = coord.allgather(&format!("endpoints {t}"), mine).await {
                r.ranks = all
                    .iter()
                    .enumerate()
                    .map(|(i, b)| {
                        let s = String::from_utf8_lossy(b);
                        let (pid, ep) = s.split_once('\n').unwrap_or(("0", ""));
                        crate::stats::RankInfo {
                            rank: i,
                            launcher: coord.kind().to_string(),
                            pid: pid.parse().unwrap_or(0),
                            endpoint: ep.to_string(),
                        }
                    })
                    .collect();
            }
        }
        // Rank 0 reports for all; another rank only when the ranks fell out of step (then rank 0
        // may not know this rank's reason).
        if let Some(a) = &r.aborted
            && (coord.rank() == 0 || coord.broken().is_some())
        {
            eprintln!("s3hpc bench: {a}");
        }
        results.push(r);
    }
    BenchRun {
        tool: "s3hpc bench".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        started_unix,
        command: command.to_string(),
        workload: wl.name().to_string(),
        results,
    }
}

/// Write the outputs a run asked for.
pub fn write_outputs(common: &Common, run: &BenchRun) -> anyhow::Result<()> {
    if let Some(p) = &common.json {
        std::fs::write(p, crate::output::to_json(run))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(p) = &common.csv {
        std::fs::write(p, crate::output::to_csv(run))
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    if let Some(d) = &common.report {
        crate::report::write_report(run, d).map_err(|e| anyhow::anyhow!("report {}: {e}", d.display()))?;
    }
    Ok(())
}

fn date_time(unix: u64) -> (String, String) {
    // Civil date from days since the epoch (UTC), Howard Hinnant's algorithm.
    let days = (unix / 86400) as i64;
    let secs = unix % 86400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    (format!("{y:04}-{m:02}-{d:02}"), format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60))
}

/// Entry point of `s3hpc bench`.
pub fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let BenchCmd::Compare { a, b } = &args.cmd {
        let read = |p: &PathBuf| -> anyhow::Result<BenchRun> {
            let t = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
            crate::output::from_json(&t)
                .map_err(|e| anyhow::anyhow!("{}: not an s3hpc bench JSON result: {e}", p.display()))
        };
        print!("{}", crate::output::compare(&read(a)?, &read(b)?));
        return Ok(());
    }
    let (common, wl) = workload_of(&args.cmd)?;
    let child = std::env::var_os(crate::procs::ENV_RANK).is_some();
    if common.procs == 0 {
        anyhow::bail!("--procs must be at least 1");
    }
    if common.procs > 1 && !child {
        if let Some((n, var)) = crate::coord::launcher() {
            anyhow::bail!(
                "--procs {}: already started as one of {n} MPI ranks ({var}); use one or the other",
                common.procs
            );
        }
        return crate::procs::launch(common.procs);
    }
    let coord = Arc::new(crate::coord::from_env(common.barrier_timeout)?);
    let command: Vec<String> = std::env::args().collect();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    let run = rt.block_on(run_targets(&common, &wl, &command.join(" "), coord.clone()));
    rt.block_on(coord.finish());
    rt.shutdown_timeout(Duration::from_secs(1));
    let aborted: Vec<&str> = run.results.iter().filter_map(|r| r.aborted.as_deref()).collect();
    if coord.rank() != 0 {
        // Rank 0 reports for everyone; the others only say whether they completed.
        if !aborted.is_empty() {
            anyhow::bail!("rank {}: {} of {} targets did not complete", coord.rank(), aborted.len(), run.results.len());
        }
        return Ok(());
    }
    print!("{}", crate::output::table(&run));
    if let BenchCmd::Crud { ossperf: true, .. } = &args.cmd {
        let (d, t) = date_time(run.started_unix);
        println!("\n{OSSPERF_HEADER}");
        for r in &run.results {
            match ossperf_line(&r.summary, &d, &t) {
                Some(l) => println!("{l}"),
                None => println!("# {}: incomplete run, no OSSperf line", r.target),
            }
        }
    }
    write_outputs(&common, &run)?;
    if !aborted.is_empty() {
        anyhow::bail!("{} of {} targets did not complete: {}", aborted.len(), run.results.len(), aborted.join("; "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert_eq!(parse_size("4KiB").unwrap(), 4096);
        assert_eq!(parse_size("1.5M").unwrap(), 3 << 19);
        assert!(parse_size("4XB").is_err());
        assert_eq!(parse_sizes("1KiB, 2KiB").unwrap(), vec![1024, 2048]);
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("1m").unwrap(), Duration::from_secs(60));
        assert!(parse_duration("x").is_err());
        assert_eq!(date_time(0), ("1970-01-01".to_string(), "00:00:00".to_string()));
        assert_eq!(date_time(1_763_769_600 + 3661).0, "2025-11-22");
    }

    #[test]
    fn endpoint_spreading() {
        let l = "http://10.0.0.1:9000, http://10.0.0.2:9000,http://10.0.0.3:9000";
        let rr: Vec<String> = (0..5).map(|r| pick_endpoint(l, "round-robin", r).unwrap()).collect();
        assert_eq!(rr[0], "http://10.0.0.1:9000");
        assert_eq!(rr[1], "http://10.0.0.2:9000");
        assert_eq!(rr[3], "http://10.0.0.1:9000");
        assert_eq!(rr[4], "http://10.0.0.2:9000");
        assert_eq!(pick_endpoint("memory://", "round-robin", 7).unwrap(), "memory://");
        assert_eq!(pick_endpoint(l, "rank", 2).unwrap(), "http://10.0.0.3:9000");
        // Per connection (the default): the whole list, rank r starting at endpoint r mod n.
        let a = "http://10.0.0.1:9000";
        let (b, c) = ("http://10.0.0.2:9000", "http://10.0.0.3:9000");
        assert_eq!(pick_endpoint(l, "connection", 0).unwrap(), format!("{a},{b},{c}"));
        assert_eq!(pick_endpoint(l, "connection", 4).unwrap(), format!("{b},{c},{a}"));
        // Lists of other kinds fall back to one endpoint per rank.
        assert_eq!(pick_endpoint("tcp://h:1,tcp://h:2", "connection", 1).unwrap(), "tcp://h:2");
        // 192.0.2.0/24 is TEST-NET-1: never an address of this host; loopback always is.
        let mixed = "http://192.0.2.7:9000,http://127.0.0.1:9001";
        assert_eq!(pick_endpoint(mixed, "local", 0).unwrap(), "http://127.0.0.1:9001");
        assert!(pick_endpoint("http://192.0.2.7:9000", "local", 0).is_err());
        assert!(pick_endpoint(l, "nearest", 0).is_err());
    }
}
