//! Thread dispatch: where a call's blocking file-system work runs (inline, on the blocking
//! pool, in place on the worker) and as whom (the request's POSIX identity, or the gateway).

use super::*;

impl PosixStore {
    /// The identity this call acts as (`None`: the process; always `None` unless
    /// `posix_identity` is on).
    pub(crate) fn identity(&self) -> Option<s3hpc_core::identity::Identity> {
        if self.inner.opts.posix_identity { s3hpc_core::identity::current() } else { None }
    }

    /// Act as the call's identity for file-system work done outside `run`, until the guard
    /// drops.
    pub(crate) fn assume_here(&self) -> Result<Option<ident::Guard>> {
        if !self.inner.opts.posix_identity {
            return Ok(None);
        }
        let Some(id) = self.identity() else { return Err(no_identity()) };
        Ok(Some(ident::enter(Some(&id))?))
    }

    /// File-system work runs on the calling thread: `IoMode::Inline`, or a thread that a server
    /// marked as one that may block (`s3hpc_core::io::blocking_here`).
    pub(crate) fn inline_io(&self) -> bool {
        self.inner.opts.io == IoMode::Inline || s3hpc_core::io::may_block()
    }

    pub(crate) async fn run<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(
        &self,
        f: F,
    ) -> Result<T> {
        if self.inner.opts.posix_identity && s3hpc_core::identity::current().is_none() {
            // Never root by default: every request of a front end carries its account's identity
            // (anonymous ones nobody's), and the gateway's own work says so (`run_gateway`).
            return Err(no_identity());
        }
        self.run_any(f).await
    }

    /// Run the gateway's own work on its state (bucket configuration, tags, the bucket list):
    /// as the request's identity when there is one (the state itself is read and written as the
    /// gateway, see `state`), else explicitly as the gateway (the lifecycle runner, CORS).
    pub(crate) async fn run_gateway<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(
        &self,
        f: F,
    ) -> Result<T> {
        self.run_any(f).await
    }

    pub(crate) async fn run_any<T: Send + 'static, F: FnOnce(&Inner) -> Result<T> + Send + 'static>(
        &self,
        f: F,
    ) -> Result<T> {
        let id = self.identity();
        // On the caller's thread the identity is switched back when the call ends; on the
        // blocking pool it stays until a call with another identity comes (see `ident`).
        let here = |s: &Inner, f: F| {
            let _as = if s.opts.posix_identity { Some(ident::enter(id.as_ref())?) } else { None };
            f(s)
        };
        if self.inline_io() {
            return here(&self.inner, f);
        }
        match self.inner.opts.io {
            IoMode::InPlace
                if tokio::runtime::Handle::try_current()
                    .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread) =>
            {
                return tokio::task::block_in_place(|| here(&self.inner, f));
            }
            _ => {}
        }
        let inner = self.inner.clone();
        tokio::task::spawn_blocking(move || {
            if inner.opts.posix_identity {
                ident::assume(id.as_ref())?;
            }
            f(&inner)
        })
        .await
        .map_err(|e| Error::internal(format!("blocking task failed: {e}")))?
    }
}
