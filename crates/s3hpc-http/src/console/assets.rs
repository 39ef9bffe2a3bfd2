//! The console's page, script and style sheet, built into the binary (nothing is fetched at run
//! time; the page's Content-Security-Policy allows only its own origin).

use bytes::Bytes;
use http::{Response, StatusCode, header};

use crate::RespBody;

const FILES: &[(&str, &str, &str)] = &[
    ("index.html", "text/html; charset=utf-8", include_str!("assets/index.html")),
    ("app.js", "text/javascript; charset=utf-8", include_str!("assets/app.js")),
    ("style.css", "text/css; charset=utf-8", include_str!("assets/style.css")),
];

/// The page's policy: scripts, styles and requests to its own origin only; no frames of it.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// An asset's bytes and content type.
pub(super) fn get(name: &str) -> Option<(Bytes, &'static str)> {
    FILES.iter().find(|(n, _, _)| *n == name).map(|(_, t, b)| (Bytes::from_static(b.as_bytes()), *t))
}

/// The asset as a response (404 when there is none of that name).
pub(super) fn page(name: &str) -> Response<RespBody> {
    match get(name) {
        Some((b, ctype)) => Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, ctype)
            .header(header::CONTENT_LENGTH, b.len())
            .header("content-security-policy", CSP)
            .body(RespBody::full(b))
            .expect("valid response"),
        None => super::json_error(StatusCode::NOT_FOUND, "NotFound", "No such console page"),
    }
}
