//! The gateway's Prometheus metrics (crate `prometheus-client`), recorded at one place: when a
//! request's response has been written ([`crate::RequestRecord`]'s drop), plus the connection and
//! upload-slot gauges the engine keeps anyway. `s3hpc serve --admin-listen` serves them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OpStatus {
    pub operation: &'static str,
    pub status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OpLabel {
    pub operation: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct CodeLabel {
    pub code: &'static str,
}

fn latency_histogram() -> Histogram {
    // 250 us .. 65 s
    Histogram::new(exponential_buckets(0.000_25, 2.0, 19))
}

/// The HTTP front end's metrics. Create one, [`register`](HttpMetrics::register) it in a
/// registry, and give it to [`crate::Config::metrics`].
pub struct HttpMetrics {
    pub(crate) requests: Family<OpStatus, Counter>,
    pub(crate) duration: Family<OpLabel, Histogram, fn() -> Histogram>,
    pub(crate) bytes_in: Family<OpLabel, Counter>,
    pub(crate) bytes_out: Family<OpLabel, Counter>,
    pub(crate) in_flight: Gauge,
    pub(crate) errors: Family<CodeLabel, Counter>,
    pub(crate) connections_shed: Counter,
    pub(crate) accept_errors: Counter,
    /// Open connections and upload slots are read from the server's state when scraped.
    open_connections: Gauge,
    upload_slots_free: Gauge,
    pub(crate) state: std::sync::Mutex<Weak<crate::State>>,
    /// The lifecycle runner's metrics (`s3hpc_lifecycle_*`).
    pub lifecycle: LifecycleMetrics,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct ReasonLabel {
    pub reason: &'static str,
}

/// The lifecycle runner's metrics ([`crate::lifecycle::runner`]), registered with the HTTP
/// front end's.
pub struct LifecycleMetrics {
    pub(crate) runs: Counter,
    pub(crate) skipped: Family<ReasonLabel, Counter>,
    pub(crate) expired: Counter,
    pub(crate) aborted: Counter,
    pub(crate) errors: Counter,
    pub(crate) locked: Counter,
    pub(crate) duration: Histogram,
    pub(crate) last_run: Gauge,
}

impl Default for LifecycleMetrics {
    fn default() -> Self {
        LifecycleMetrics {
            runs: Counter::default(),
            skipped: Family::default(),
            expired: Counter::default(),
            aborted: Counter::default(),
            errors: Counter::default(),
            locked: Counter::default(),
            duration: latency_histogram(),
            last_run: Gauge::default(),
        }
    }
}

impl LifecycleMetrics {
    fn register(&self, registry: &mut Registry) {
        registry.register("lifecycle_runs", "Lifecycle runs completed on a bucket by this gateway", self.runs.clone());
        registry.register(
            "lifecycle_runs_skipped",
            "Lifecycle runs not done: another gateway holds the bucket's lease (busy), ran it within the interval (recent), or no identity to act as (no_owner)",
            self.skipped.clone(),
        );
        registry.register(
            "lifecycle_objects_expired",
            "Objects deleted by lifecycle Expiration rules",
            self.expired.clone(),
        );
        registry.register(
            "lifecycle_uploads_aborted",
            "Multipart uploads aborted by AbortIncompleteMultipartUpload rules",
            self.aborted.clone(),
        );
        registry.register(
            "lifecycle_errors",
            "Lifecycle store calls that failed (the run goes on)",
            self.errors.clone(),
        );
        registry.register(
            "lifecycle_versions_locked",
            "Versions a lifecycle rule made due that object lock kept (retention or legal hold)",
            self.locked.clone(),
        );
        registry.register_with_unit(
            "lifecycle_run_duration",
            "Time one lifecycle run of a bucket took",
            Unit::Seconds,
            self.duration.clone(),
        );
        registry.register(
            "lifecycle_last_run_timestamp_seconds",
            "When this gateway last completed a lifecycle run (Unix time)",
            self.last_run.clone(),
        );
    }
}

impl Default for HttpMetrics {
    fn default() -> Self {
        HttpMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(latency_histogram),
            bytes_in: Family::default(),
            bytes_out: Family::default(),
            in_flight: Gauge::default(),
            errors: Family::default(),
            connections_shed: Counter::default(),
            accept_errors: Counter::default(),
            open_connections: Gauge::default(),
            upload_slots_free: Gauge::default(),
            state: std::sync::Mutex::new(Weak::new()),
            lifecycle: LifecycleMetrics::default(),
        }
    }
}

impl HttpMetrics {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Register every metric under `registry` (which should carry the `s3hpc` prefix).
    pub fn register(&self, registry: &mut Registry) {
        registry.register("http_requests", "S3 requests answered, by operation and HTTP status", self.requests.clone());
        registry.register_with_unit(
            "http_request_duration",
            "Time from the request head to the last response byte, by operation",
            Unit::Seconds,
            self.duration.clone(),
        );
        registry.register_with_unit(
            "http_received",
            "Request body bytes received, by operation",
            Unit::Bytes,
            self.bytes_in.clone(),
        );
        registry.register_with_unit(
            "http_sent",
            "Response body bytes sent, by operation",
            Unit::Bytes,
            self.bytes_out.clone(),
        );
        registry.register("http_requests_in_flight", "S3 requests being handled now", self.in_flight.clone());
        registry.register("http_errors", "S3 error responses, by error code", self.errors.clone());
        registry.register("http_open_connections", "Open HTTP connections", self.open_connections.clone());
        registry.register(
            "http_connections_shed",
            "Idle connections closed because the server neared its connection limit",
            self.connections_shed.clone(),
        );
        registry.register(
            "http_accept_errors",
            "Failed accept(2) calls (e.g. out of file descriptors)",
            self.accept_errors.clone(),
        );
        registry.register(
            "http_upload_slots_free",
            "Upload slots free for large request bodies (0: uploads may be waiting)",
            self.upload_slots_free.clone(),
        );
        self.lifecycle.register(registry);
    }

    /// Refresh the gauges read from the server's state; call before encoding.
    pub fn refresh(&self) {
        let st = self.state.lock().map(|w| w.upgrade()).unwrap_or_default();
        if let Some(st) = st {
            self.open_connections.set(st.conns.load(Ordering::Relaxed) as i64);
            self.upload_slots_free.set(st.uploads.available_permits() as i64);
        }
    }
}
