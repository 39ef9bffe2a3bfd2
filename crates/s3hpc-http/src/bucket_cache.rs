//! Per-gateway cache of a parsed bucket configuration (CORS, lifecycle): read on the request
//! path, so a bucket's document is read from the store at most once per [`CACHE_TTL`].

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// How long a bucket's configuration is used before it is read again (a change made through
/// another gateway on the same root takes effect within this time).
pub(crate) const CACHE_TTL: Duration = Duration::from_secs(2);

/// When a configuration was read, and what (`None`: the bucket has none).
type Entry<T> = (Instant, Option<Arc<T>>);

/// Each bucket's configuration `T` as last read.
pub(crate) struct BucketConfigCache<T> {
    map: RwLock<HashMap<String, Entry<T>>>,
}

impl<T> Default for BucketConfigCache<T> {
    fn default() -> Self {
        BucketConfigCache { map: RwLock::new(HashMap::new()) }
    }
}

impl<T> BucketConfigCache<T> {
    /// The cached configuration if read within [`CACHE_TTL`]; `None` when it must be read.
    pub(crate) fn get(&self, bucket: &str) -> Option<Option<Arc<T>>> {
        let m = self.map.read().unwrap_or_else(|e| e.into_inner());
        m.get(bucket).filter(|(t, _)| t.elapsed() < CACHE_TTL).map(|(_, c)| c.clone())
    }

    pub(crate) fn put(&self, bucket: &str, c: Option<Arc<T>>) {
        let mut m = self.map.write().unwrap_or_else(|e| e.into_inner());
        if m.len() > 10_000 {
            m.retain(|_, (t, _)| t.elapsed() < CACHE_TTL);
        }
        m.insert(bucket.to_string(), (Instant::now(), c));
    }

    /// Drop the bucket's entry (its configuration changed through this gateway).
    pub(crate) fn forget(&self, bucket: &str) {
        self.map.write().unwrap_or_else(|e| e.into_inner()).remove(bucket);
    }
}
