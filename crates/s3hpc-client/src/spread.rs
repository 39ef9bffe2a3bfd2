//! Several endpoints of one S3 service (gateways on one shared root): each new connection goes
//! to the next endpoint in turn.
//!
//! The client builds every request URI with the FIRST endpoint's authority (so signing, the
//! `Host` header and hyper's connection pool see one service); [`Spread`] sits under TLS, right
//! above the TCP connector, and rewrites the address a new connection is opened to: connection
//! k goes to endpoint `k mod n`. A kept-alive connection stays with its endpoint, so with `c`
//! requests in flight each of `n` gateways holds about `c / n` connections and serves their
//! requests. Over TLS the certificate is checked against the first endpoint's name (SNI), so
//! every endpoint must present a certificate valid for it (as behind one service name).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use http::Uri;
use http::uri::Authority;

/// A connector that sends new connections round-robin to a list of authorities.
#[derive(Clone)]
pub(crate) struct Spread<C> {
    inner: C,
    /// `host:port` of every endpoint after the first (the first is the URI's own).
    others: Arc<[Authority]>,
    next: Arc<AtomicUsize>,
}

impl<C> Spread<C> {
    /// `others`: the endpoints after the first; empty = every connection to the URI's own.
    pub(crate) fn new(inner: C, others: Vec<Authority>) -> Self {
        Spread { inner, others: others.into(), next: Arc::new(AtomicUsize::new(0)) }
    }

    /// The URI the next connection opens: the request's own (turn 0), else endpoint `turn`.
    fn route(&self, uri: Uri) -> Uri {
        if self.others.is_empty() {
            return uri;
        }
        let turn = self.next.fetch_add(1, Ordering::Relaxed) % (self.others.len() + 1);
        if turn == 0 {
            return uri;
        }
        let mut parts = uri.into_parts();
        parts.authority = Some(self.others[turn - 1].clone());
        // Scheme and path are kept; a URI that was valid stays valid with another authority.
        Uri::from_parts(parts).expect("a valid URI with another authority")
    }
}

impl<C> tower_service::Service<Uri> for Spread<C>
where
    C: tower_service::Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = C::Response;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<C::Response, C::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let uri = self.route(uri);
        Box::pin(self.inner.call(uri))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_take_turns() {
        let others = vec![Authority::from_static("127.0.0.1:2"), Authority::from_static("127.0.0.1:3")];
        let s = Spread::new((), others);
        let hosts: Vec<String> =
            (0..7).map(|_| s.route(Uri::from_static("http://127.0.0.1:1/b/k?x=1")).to_string()).collect();
        assert_eq!(
            hosts,
            [
                "http://127.0.0.1:1/b/k?x=1",
                "http://127.0.0.1:2/b/k?x=1",
                "http://127.0.0.1:3/b/k?x=1",
                "http://127.0.0.1:1/b/k?x=1",
                "http://127.0.0.1:2/b/k?x=1",
                "http://127.0.0.1:3/b/k?x=1",
                "http://127.0.0.1:1/b/k?x=1",
            ]
        );
        let single = Spread::new((), Vec::new());
        assert_eq!(single.route(Uri::from_static("http://h:1/")).to_string(), "http://h:1/");
    }
}
