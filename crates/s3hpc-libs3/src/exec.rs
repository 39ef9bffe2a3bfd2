//! How a libs3 request runs: argument capture, the response callbacks (properties once, then
//! complete exactly once), request contexts (queues run by `S3_runall_request_context`), and
//! strings that must outlive a callback.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use s3hpc_core::{Error, ErrorCode};

use crate::ffi::*;
use crate::status::*;

/// Why a request failed.
#[derive(Debug)]
pub enum Fail {
    /// A status found by the library itself (bad argument, callback abort, ...).
    Status(S3Status, String),
    /// A store error; `bool`: whether the S3 response would carry an error document (false for
    /// HEAD, where libs3 only sees the HTTP status).
    Store(Error, bool),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        Fail::Store(e, true)
    }
}

impl Fail {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Fail::Store(Error::invalid_argument(msg), true)
    }

    pub fn status(&self) -> S3Status {
        match self {
            Fail::Status(s, _) => *s,
            Fail::Store(e, body) => status_for_error(e, *body),
        }
    }
}

pub type Res<T = ()> = Result<T, Fail>;

/// Seconds since the epoch, as libs3 reports times.
pub fn secs(t: SystemTime) -> i64 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

pub fn quoted(etag: &str) -> String {
    if etag.starts_with('"') { etag.to_string() } else { format!("\"{etag}\"") }
}

/// A C string from Rust text; interior NULs (impossible in keys from C) are cut.
pub fn cstring(s: &str) -> CString {
    CString::new(s).unwrap_or_else(|e| {
        let n = e.nul_position();
        CString::new(&s.as_bytes()[..n]).unwrap_or_default()
    })
}

thread_local! {
    /// Error detail strings of the last failed request on this thread: programs (IOR) copy the
    /// S3ErrorDetails struct and print its strings after the call returned.
    static LAST_ERROR: RefCell<Vec<CString>> = const { RefCell::new(Vec::new()) };
    /// Strings handed to callbacks that programs are known to keep (nextMarker, upload ids).
    static KEPT: RefCell<VecDeque<CString>> = const { RefCell::new(VecDeque::new()) };
}

const KEPT_MAX: usize = 64;

/// A C string that stays valid after the callback it was given to (until 64 more are kept on
/// this thread): IOR keeps `nextMarker` across calls.
pub fn kept(s: &str) -> *const c_char {
    let c = cstring(s);
    let p = c.as_ptr();
    let _ = KEPT.try_with(|k| {
        let mut k = k.borrow_mut();
        k.push_back(c);
        if k.len() > KEPT_MAX {
            k.pop_front();
        }
    });
    // The CString's heap buffer does not move when the CString is moved into the queue.
    p
}

/// What a successful response reports through the properties callback (borrowed from the
/// response it describes: nothing is copied until the C strings are written).
#[derive(Default)]
pub struct Props<'a> {
    pub content_type: Option<&'a str>,
    pub content_length: u64,
    /// Unquoted.
    pub etag: Option<&'a str>,
    pub last_modified: Option<SystemTime>,
    pub meta: Vec<(&'a str, &'a str)>,
}

impl<'a> Props<'a> {
    pub fn of_object(info: &'a s3hpc_core::ObjectInfo, content_length: u64) -> Self {
        Props {
            content_type: info.meta.content_type.as_deref(),
            content_length,
            etag: Some(&info.etag),
            last_modified: Some(info.last_modified),
            meta: info.meta.user.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
        }
    }

    /// ETag and time only (puts, copies, parts).
    pub fn written(etag: &'a str, last_modified: SystemTime) -> Self {
        Props { etag: Some(etag), last_modified: Some(last_modified), ..Default::default() }
    }
}

thread_local! {
    /// The C strings of the properties callback, reused from call to call on this thread.
    static PROPS_BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Append `s` up to its first NUL (impossible in text from C) and a terminating NUL; returns
/// the offset where it starts.
fn push_c(buf: &mut Vec<u8>, s: &str) -> usize {
    let at = buf.len();
    let b = s.as_bytes();
    buf.extend_from_slice(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]);
    buf.push(0);
    at
}

/// As [`push_c`] for the ETag in double quotes (as S3 sends it), unless already quoted.
fn push_quoted(buf: &mut Vec<u8>, etag: &str) -> usize {
    if etag.starts_with('"') {
        return push_c(buf, etag);
    }
    let at = buf.len();
    buf.push(b'"');
    let b = etag.as_bytes();
    buf.extend_from_slice(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]);
    buf.extend_from_slice(b"\"\0");
    at
}

/// The response callbacks of one request and its callback data.
pub struct Resp {
    props: PropertiesCallback,
    complete: CompleteCallback,
    pub data: *mut c_void,
    done: Cell<bool>,
}

impl Resp {
    /// # Safety
    /// `h` is NULL or points to a valid handler.
    pub unsafe fn new(h: *const S3ResponseHandler, data: *mut c_void) -> Self {
        // SAFETY: `h` is NULL (None) or points to a valid handler (# Safety above).
        let (props, complete) = match unsafe { h.as_ref() } {
            Some(h) => (h.propertiesCallback, h.completeCallback),
            None => (None, None),
        };
        Resp { props, complete, data, done: Cell::new(false) }
    }

    /// Call the properties callback; a non-OK answer ends the request with that status.
    pub fn properties(&self, p: &Props) -> Res {
        let Some(cb) = self.props else {
            return Ok(());
        };
        // The strings go into one buffer kept by the thread (a callback that issues another
        // request on this thread finds it taken and gets a fresh one).
        let mut buf = PROPS_BUF
            .try_with(|b| b.try_borrow_mut().map(|mut b| std::mem::take(&mut *b)).unwrap_or_default())
            .unwrap_or_default();
        buf.clear();
        let ct = p.content_type.map(|c| push_c(&mut buf, c));
        let etag = p.etag.map(|e| push_quoted(&mut buf, e));
        let meta: Vec<(usize, usize)> =
            p.meta.iter().map(|(k, v)| (push_c(&mut buf, k), push_c(&mut buf, v))).collect();
        // Every string is in place: the buffer no longer moves.
        let at = |o: usize| -> *const c_char { buf[o..].as_ptr().cast() };
        let nv: Vec<S3NameValue> = meta.iter().map(|&(k, v)| S3NameValue { name: at(k), value: at(v) }).collect();
        let c = S3ResponseProperties {
            requestId: ptr::null(),
            requestId2: ptr::null(),
            contentType: ct.map_or(ptr::null(), at),
            contentLength: p.content_length,
            server: c"s3hpc".as_ptr(),
            eTag: etag.map_or(ptr::null(), at),
            lastModified: p.last_modified.map_or(-1, secs),
            metaDataCount: nv.len() as i32,
            metaData: if nv.is_empty() { ptr::null() } else { nv.as_ptr() },
            usesServerSideEncryption: 0,
        };
        // SAFETY: cb is the program's properties callback, called with the data pointer it gave us; `c`
        // and the strings it points to (`buf`, `nv`) live until it returns.
        let st = unsafe { cb(&c, self.data) };
        drop(nv);
        let _ = PROPS_BUF.try_with(|b| {
            if let Ok(mut b) = b.try_borrow_mut()
                && buf.capacity() <= 64 * 1024
            {
                *b = buf;
            }
        });
        check_cb(st, "properties callback")
    }

    /// Report the outcome (only the first call has an effect).
    pub fn complete(&self, r: Res) {
        if self.done.replace(true) {
            return;
        }
        let Some(cb) = self.complete else {
            return;
        };
        match r {
            Ok(()) => {
                let d = S3ErrorDetails {
                    message: ptr::null(),
                    resource: ptr::null(),
                    furtherDetails: ptr::null(),
                    extraDetailsCount: 0,
                    extraDetails: ptr::null_mut(),
                };
                // SAFETY: cb is the program's complete callback, called with the data pointer it gave us; `d` lives
                // until it returns.
                unsafe { cb(S3StatusOK, &d, self.data) };
            }
            Err(f) => {
                let st = f.status();
                let (message, resource, further) = match &f {
                    Fail::Status(_, m) => (m.clone(), None, status_name(st).to_string()),
                    Fail::Store(e, _) => (e.message.clone(), e.resource.clone(), e.code.as_str().to_string()),
                };
                let strings = vec![cstring(&message), cstring(resource.as_deref().unwrap_or("")), cstring(&further)];
                let d = S3ErrorDetails {
                    message: strings[0].as_ptr(),
                    resource: if resource.is_some() { strings[1].as_ptr() } else { ptr::null() },
                    furtherDetails: strings[2].as_ptr(),
                    extraDetailsCount: 0,
                    extraDetails: ptr::null_mut(),
                };
                // Keep the strings alive after the callback (replacing the previous error's).
                let _ = LAST_ERROR.try_with(|l| *l.borrow_mut() = strings);
                // SAFETY: as above; `d`'s strings stay in LAST_ERROR after the callback returns.
                unsafe { cb(st, &d, self.data) };
            }
        }
    }
}

/// A status returned by a program's callback: OK continues, anything else ends the request.
pub fn check_cb(st: S3Status, what: &str) -> Res {
    if st == S3StatusOK { Ok(()) } else { Err(Fail::Status(st, format!("request ended by the {what}"))) }
}

/// Run a request now: the operation, then exactly one complete callback, panics included.
pub fn run(resp: Resp, op: impl FnOnce(&Resp) -> Res) {
    let r = catch_unwind(AssertUnwindSafe(|| op(&resp)));
    match r {
        Ok(r) => resp.complete(r),
        Err(_) => {
            resp.complete(Err(Fail::Status(S3StatusInternalError, "internal error (panic) in s3hpc libs3".into())))
        }
    }
}

// ---------------------------------------------------------------- request contexts

type JobFn = Box<dyn FnOnce(bool)>;

/// A queued request. It holds the program's callback pointers; libs3 lets a context be run
/// from any one thread at a time, so moving it between threads is the program's business.
struct Job(JobFn);
// SAFETY: a Job holds the program's callback and data pointers; libs3 lets a context be run from one
// thread at a time, so a Job runs on one thread, and which one is the program's choice as in libs3.
unsafe impl Send for Job {}

/// What `S3RequestContext*` points to.
pub struct RequestContext {
    queue: Mutex<VecDeque<Job>>,
}

impl RequestContext {
    pub fn new() -> Self {
        RequestContext { queue: Mutex::new(VecDeque::new()) }
    }

    fn pop(&self) -> Option<Job> {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front()
    }

    pub fn pending(&self) -> usize {
        self.queue.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Run one queued request (the lock is not held while it runs: callbacks may queue more).
    pub fn run_one(&self) -> bool {
        match self.pop() {
            Some(Job(f)) => {
                f(false);
                true
            }
            None => false,
        }
    }

    /// Complete every queued request with S3StatusInterrupted.
    pub fn cancel_all(&self) {
        while let Some(Job(f)) = self.pop() {
            f(true);
        }
    }
}

impl Default for RequestContext {
    fn default() -> Self {
        Self::new()
    }
}

/// Run a request now (`ctx` NULL) or queue it on the context.
///
/// # Safety
/// `ctx` is NULL or a context made by `S3_create_request_context` and not yet destroyed.
pub unsafe fn dispatch(ctx: *mut c_void, resp: Resp, op: impl FnOnce(&Resp) -> Res + 'static) {
    let ctx = ctx as *const RequestContext;
    // SAFETY: `ctx` is NULL (None) or a live context from S3_create_request_context (# Safety above).
    match unsafe { ctx.as_ref() } {
        None => run(resp, op),
        Some(c) => {
            let job = move |cancel: bool| {
                if cancel {
                    resp.complete(Err(Fail::Status(S3StatusInterrupted, "request context destroyed".into())));
                } else {
                    run(resp, op)
                }
            };
            c.queue.lock().unwrap_or_else(|p| p.into_inner()).push_back(Job(Box::new(job)));
        }
    }
}

// ---------------------------------------------------------------- argument capture

/// Text of an optional C string; `Err` when it is not UTF-8.
///
/// # Safety
/// `p` is NULL or a NUL-terminated string.
pub unsafe fn opt_str(p: *const c_char, what: &str) -> Res<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    // SAFETY: not NULL (checked above) and NUL-terminated (# Safety above).
    match unsafe { CStr::from_ptr(p) }.to_str() {
        Ok(s) => Ok(Some(s.to_string())),
        Err(_) => Err(Fail::invalid(format!("{what} is not valid UTF-8"))),
    }
}

/// Text of a required C string.
///
/// # Safety
/// As [`opt_str`].
pub unsafe fn req_str(p: *const c_char, what: &str) -> Res<String> {
    // SAFETY: `p` is NULL or NUL-terminated (# Safety above), as opt_str requires.
    unsafe { opt_str(p, what) }?.ok_or_else(|| Fail::invalid(format!("{what} must not be NULL")))
}

/// An object key: present and UTF-8 (the store applies the remaining rules).
///
/// # Safety
/// As [`opt_str`].
pub unsafe fn key_arg(p: *const c_char) -> Res<String> {
    // SAFETY: `p` is NULL or NUL-terminated (# Safety above), as req_str requires.
    let k = unsafe { req_str(p, "key") }?;
    if k.is_empty() {
        return Err(Fail::Store(Error::new(ErrorCode::InvalidArgument, "Object key must not be empty"), true));
    }
    Ok(k)
}

/// The bucket and credentials of a request.
pub struct Bucket {
    pub name: String,
    pub access_key: String,
    pub secret_key: String,
}

/// Checked as libs3 does before sending anything.
///
/// # Safety
/// As [`opt_str`].
pub unsafe fn bucket_args(
    name: *const c_char,
    uri_style: S3UriStyle,
    access: *const c_char,
    secret: *const c_char,
) -> Res<Bucket> {
    if name.is_null() {
        return Err(Fail::Status(S3StatusInvalidBucketNameTooShort, "bucket name is NULL".into()));
    }
    // SAFETY: not NULL (checked above) and NUL-terminated (# Safety above).
    let bytes = unsafe { CStr::from_ptr(name) }.to_bytes();
    let st = validate_bucket_name(bytes, uri_style);
    if st != S3StatusOK {
        return Err(Fail::Status(st, format!("invalid bucket name {:?}", String::from_utf8_lossy(bytes))));
    }
    // Embedded stores ignore credentials (the process's uid is what the file system checks).
    let creds = !crate::target::is_embedded();
    Ok(Bucket {
        name: String::from_utf8_lossy(bytes).into_owned(),
        // SAFETY: `access` is NULL or NUL-terminated (# Safety above).
        access_key: if creds { unsafe { opt_str(access, "accessKeyId") }?.unwrap_or_default() } else { String::new() },
        secret_key: if creds {
            // SAFETY: `secret` is NULL or NUL-terminated (# Safety above).
            unsafe { opt_str(secret, "secretAccessKey") }?.unwrap_or_default()
        } else {
            String::new()
        },
    })
}

/// # Safety
/// `ctx` is NULL or a valid bucket context.
pub unsafe fn bucket_ctx(ctx: *const S3BucketContext) -> Res<Bucket> {
    // SAFETY: `ctx` is NULL (None) or a valid bucket context (# Safety above).
    let Some(c) = (unsafe { ctx.as_ref() }) else {
        return Err(Fail::invalid("bucket context must not be NULL"));
    };
    // SAFETY: a valid bucket context's strings are NULL or NUL-terminated (libs3's contract).
    unsafe { bucket_args(c.bucketName, c.uriStyle, c.accessKeyId, c.secretAccessKey) }
}

/// Format seconds since the epoch as an HTTP date (RFC 7231 IMF-fixdate).
pub fn http_date(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    // Civil-from-days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    const WD: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MON: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} GMT",
        WD[days.rem_euclid(7) as usize],
        d,
        MON[(mo - 1) as usize],
        y,
        h,
        m,
        s
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_dates() {
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(http_date(1_709_251_200), "Fri, 01 Mar 2024 00:00:00 GMT");
    }

    #[test]
    fn quoting() {
        assert_eq!(quoted("abc"), "\"abc\"");
        assert_eq!(quoted("\"abc\""), "\"abc\"");
    }
}
