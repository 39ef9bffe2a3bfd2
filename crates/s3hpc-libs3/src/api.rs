//! The exported C functions. Each captures its arguments (strings are copied at call time, as
//! libs3 does), reports argument errors through the complete callback, and runs or queues the
//! request. No panic crosses the boundary: every body runs under `catch_unwind`.

#![allow(non_snake_case)]
#![allow(clippy::missing_safety_doc)]
#![allow(clippy::too_many_arguments)]
// c_ulong is u64 here but not on every platform.
#![allow(clippy::unnecessary_cast)]

use std::os::raw::{c_char, c_int, c_ulong, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::exec::*;
use crate::ffi::*;
use crate::ops::{self, DataSource};
use crate::status::*;

/// Run a non-request function; a panic becomes `fallback`.
fn guard<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        eprintln!("s3hpc libs3: internal error (panic) caught at the C boundary");
        fallback
    })
}

/// Capture arguments with `args`; on failure report it at once, else run or queue `op`.
///
/// # Safety
/// `ctx` is NULL or a live context from `S3_create_request_context`; `args` runs before this
/// returns, so the C arguments it reads need to be valid only for this call.
unsafe fn request<A: 'static>(
    ctx: *mut c_void,
    resp: Resp,
    args: impl FnOnce() -> Res<A>,
    op: impl FnOnce(A, &Resp) -> Res + 'static,
) {
    let a = match catch_unwind(AssertUnwindSafe(args)) {
        Ok(Ok(a)) => a,
        Ok(Err(f)) => return resp.complete(Err(f)),
        Err(_) => return resp.complete(Err(Fail::Status(S3StatusInternalError, "internal error (panic)".into()))),
    };
    // SAFETY: ctx is NULL or a live context (this function's # Safety), as `dispatch` requires.
    unsafe { dispatch(ctx, resp, move |r| op(a, r)) }
}

fn not_implemented(what: &str) -> Res {
    Err(Fail::Store(s3hpc_core::Error::not_implemented(format!("{what} is not implemented by s3hpc's libs3")), true))
}

// ---------------------------------------------------------------- library

static INIT_COUNT: AtomicUsize = AtomicUsize::new(0);

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_initialize(
    _user_agent_info: *const c_char,
    _flags: c_int,
    _default_host: *const c_char,
) -> S3Status {
    guard(S3StatusInternalError, || {
        INIT_COUNT.fetch_add(1, Ordering::SeqCst);
        match crate::target::target() {
            Ok(_) => S3StatusOK,
            Err(_) => S3StatusInternalError,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn S3_deinitialize() {
    // The store and runtimes stay for the life of the process: other threads or ranks in the
    // same process may still use them, and re-initialising must find them again.
    let _ = INIT_COUNT.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
}

#[unsafe(no_mangle)]
pub extern "C" fn S3_get_status_name(status: S3Status) -> *const c_char {
    static NAMES: std::sync::OnceLock<Vec<std::ffi::CString>> = std::sync::OnceLock::new();
    static UNKNOWN: &std::ffi::CStr = c"Unknown";
    guard(UNKNOWN.as_ptr(), || {
        let names = NAMES.get_or_init(|| STATUS_NAMES.iter().map(|n| cstring(n)).collect());
        usize::try_from(status).ok().and_then(|i| names.get(i)).map_or(UNKNOWN.as_ptr(), |c| c.as_ptr())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn S3_status_is_retryable(status: S3Status) -> c_int {
    c_int::from(is_retryable(status))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_validate_bucket_name(bucket_name: *const c_char, uri_style: S3UriStyle) -> S3Status {
    guard(S3StatusInternalError, || {
        if bucket_name.is_null() {
            return S3StatusInvalidBucketNameTooShort;
        }
        // SAFETY: not NULL (checked above); libs3's contract: bucketName is a NUL-terminated string.
        validate_bucket_name(unsafe { std::ffi::CStr::from_ptr(bucket_name) }.to_bytes(), uri_style)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_convert_acl(
    _acl_xml: *mut c_char,
    _owner_id: *mut c_char,
    _owner_display_name: *mut c_char,
    acl_grant_count_return: *mut c_int,
    _acl_grants: *mut S3AclGrant,
) -> S3Status {
    if !acl_grant_count_return.is_null() {
        // SAFETY: not NULL (checked above); libs3's contract: it points to the caller's int.
        unsafe { *acl_grant_count_return = 0 };
    }
    S3StatusErrorNotImplemented
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_generate_authenticated_query_string(
    buffer: *mut c_char,
    _bucket_context: *const S3BucketContext,
    _key: *const c_char,
    _expires: c_int,
    _resource: *const c_char,
    _http_method: *const c_char,
) -> S3Status {
    if !buffer.is_null() {
        // SAFETY: not NULL (checked above); libs3's contract: the caller's buffer of at least
        // S3_MAX_AUTHENTICATED_QUERY_STRING_SIZE bytes.
        unsafe { *buffer = 0 };
    }
    S3StatusErrorNotImplemented
}

// ---------------------------------------------------------------- request contexts

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_create_request_context(ret: *mut *mut c_void) -> S3Status {
    guard(S3StatusInternalError, || {
        if ret.is_null() {
            return S3StatusInternalError;
        }
        let ctx = Box::new(RequestContext::new());
        // SAFETY: not NULL (checked above); libs3's contract: the caller's S3RequestContext* to fill in.
        unsafe { *ret = Box::into_raw(ctx) as *mut c_void };
        S3StatusOK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_create_request_context_ex(
    ret: *mut *mut c_void,
    _curl_multi: *mut c_void,
    _setup: SetupCurlCallback,
    _setup_data: *mut c_void,
) -> S3Status {
    // SAFETY: the caller's argument, passed on unchanged under the same contract.
    unsafe { S3_create_request_context(ret) }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_destroy_request_context(ctx: *mut c_void) {
    guard((), || {
        if ctx.is_null() {
            return;
        }
        // SAFETY: not NULL (checked above); libs3's contract: ctx came from S3_create_request_context (a
        // Box::into_raw) and is destroyed once, so we take that Box back.
        let ctx = unsafe { Box::from_raw(ctx as *mut RequestContext) };
        ctx.cancel_all();
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_runall_request_context(ctx: *mut c_void) -> S3Status {
    guard(S3StatusInternalError, || {
        // SAFETY: ctx is NULL (None) or came from S3_create_request_context and is not freed until
        // S3_destroy_request_context (libs3's contract).
        let Some(c) = (unsafe { (ctx as *const RequestContext).as_ref() }) else {
            return S3StatusInternalError;
        };
        while c.run_one() {}
        S3StatusOK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_runonce_request_context(ctx: *mut c_void, remaining: *mut c_int) -> S3Status {
    guard(S3StatusInternalError, || {
        // SAFETY: as in S3_runall_request_context.
        let Some(c) = (unsafe { (ctx as *const RequestContext).as_ref() }) else {
            return S3StatusInternalError;
        };
        c.run_one();
        if !remaining.is_null() {
            // SAFETY: not NULL (checked above); libs3's contract: it points to the caller's int.
            unsafe { *remaining = c.pending().min(c_int::MAX as usize) as c_int };
        }
        S3StatusOK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_process_request_context(ctx: *mut c_void) -> S3Status {
    guard(S3StatusInternalError, || {
        // SAFETY: as in S3_runall_request_context.
        let Some(c) = (unsafe { (ctx as *const RequestContext).as_ref() }) else {
            return S3StatusInternalError;
        };
        c.run_one();
        S3StatusOK
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_get_request_context_fdsets(
    ctx: *mut c_void,
    _read: *mut libc::fd_set,
    _write: *mut libc::fd_set,
    _except: *mut libc::fd_set,
    max_fd: *mut c_int,
) -> S3Status {
    // Requests run when the context is run, not on sockets: there is nothing to wait for.
    if !max_fd.is_null() {
        // SAFETY: not NULL (checked above); libs3's contract: it points to the caller's int.
        unsafe { *max_fd = -1 };
    }
    if ctx.is_null() { S3StatusInternalError } else { S3StatusOK }
}

#[unsafe(no_mangle)]
pub extern "C" fn S3_get_request_context_timeout(_ctx: *mut c_void) -> i64 {
    0
}

#[unsafe(no_mangle)]
pub extern "C" fn S3_set_request_context_verify_peer(_ctx: *mut c_void, _verify_peer: c_int) {}

// ---------------------------------------------------------------- service and buckets

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_list_service(
    _protocol: S3Protocol,
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    _security_token: *const c_char,
    _host_name: *const c_char,
    _auth_region: *const c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ListServiceHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.listServiceCallback);
        request(
            ctx,
            resp,
            || {
                Ok((
                    opt_str(access_key_id, "accessKeyId")?.unwrap_or_default(),
                    opt_str(secret_access_key, "secretAccessKey")?.unwrap_or_default(),
                ))
            },
            move |(a, s), r| ops::list_service(a, s, cb, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_test_bucket(
    _protocol: S3Protocol,
    uri_style: S3UriStyle,
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    _security_token: *const c_char,
    _host_name: *const c_char,
    bucket_name: *const c_char,
    _auth_region: *const c_char,
    location_constraint_return_size: c_int,
    location_constraint_return: *mut c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // location_constraint_return is NULL or the caller's buffer of location_constraint_return_size bytes,
    // kept until the request completes.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        request(
            ctx,
            resp,
            || bucket_args(bucket_name, uri_style, access_key_id, secret_access_key),
            move |b, r| {
                let out = ops::LocationOut { buf: location_constraint_return, size: location_constraint_return_size };
                ops::test_bucket(b, out, r)
            },
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_create_bucket(
    _protocol: S3Protocol,
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    _security_token: *const c_char,
    _host_name: *const c_char,
    bucket_name: *const c_char,
    _auth_region: *const c_char,
    _canned_acl: S3CannedAcl,
    _location_constraint: *const c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        request(
            ctx,
            resp,
            || bucket_args(bucket_name, S3_URI_STYLE_PATH, access_key_id, secret_access_key),
            ops::create_bucket,
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_delete_bucket(
    _protocol: S3Protocol,
    uri_style: S3UriStyle,
    access_key_id: *const c_char,
    secret_access_key: *const c_char,
    _security_token: *const c_char,
    _host_name: *const c_char,
    bucket_name: *const c_char,
    _auth_region: *const c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        request(ctx, resp, || bucket_args(bucket_name, uri_style, access_key_id, secret_access_key), ops::delete_bucket)
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_list_bucket(
    bucket_context: *const S3BucketContext,
    prefix: *const c_char,
    marker: *const c_char,
    delimiter: *const c_char,
    maxkeys: c_int,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ListBucketHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.listBucketCallback);
        request(
            ctx,
            resp,
            || {
                Ok((
                    bucket_ctx(bucket_context)?,
                    ops::ListArgs {
                        prefix: opt_str(prefix, "prefix")?,
                        marker: opt_str(marker, "marker")?,
                        delimiter: opt_str(delimiter, "delimiter")?,
                        max_keys: maxkeys,
                    },
                ))
            },
            move |(b, a), r| ops::list_bucket(b, a, cb, r),
        )
    })
}

// ---------------------------------------------------------------- objects

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_put_object(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    content_length: u64,
    put_properties: *const S3PutProperties,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3PutObjectHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // put_properties is NULL or valid; data only goes back to the program's own callbacks.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let src = DataSource { cb: h.and_then(|h| h.putObjectDataCallback), data };
        request(
            ctx,
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?, ops::put_props(put_properties)?)),
            move |(b, k, p), r| ops::put_object(b, k, content_length, p, src, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_copy_object(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    destination_bucket: *const c_char,
    destination_key: *const c_char,
    put_properties: *const S3PutProperties,
    last_modified_return: *mut i64,
    etag_return_size: c_int,
    etag_return: *mut c_char,
    ctx: *mut c_void,
    timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: the caller's arguments under the same contract, plus part_no 0 and a NULL upload_id,
    // which S3_copy_object_range accepts.
    unsafe {
        S3_copy_object_range(
            bucket_context,
            key,
            destination_bucket,
            destination_key,
            0,
            std::ptr::null(),
            0,
            0,
            put_properties,
            last_modified_return,
            etag_return_size,
            etag_return,
            ctx,
            timeout_ms,
            handler,
            data,
        )
    }
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_copy_object_range(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    destination_bucket: *const c_char,
    destination_key: *const c_char,
    part_no: c_int,
    upload_id: *const c_char,
    start_offset: c_ulong,
    count: c_ulong,
    put_properties: *const S3PutProperties,
    last_modified_return: *mut i64,
    etag_return_size: c_int,
    etag_return: *mut c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // `*bucket_context` is read only after `bucket_ctx` found it not NULL; last_modified_return
    // and etag_return (etag_return_size bytes) are NULL or the caller's, kept until the request completes.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        let out = ops::CopyOut { last_modified: last_modified_return, etag: etag_return, etag_size: etag_return_size };
        request(
            ctx,
            resp,
            || {
                let src = bucket_ctx(bucket_context)?;
                let src_key = key_arg(key)?;
                let dst_bucket = match destination_bucket.is_null() {
                    true => src.name.clone(),
                    false => {
                        let uri = (*bucket_context).uriStyle;
                        bucket_args(destination_bucket, uri, std::ptr::null(), std::ptr::null())?.name
                    }
                };
                let dst_key = if destination_key.is_null() { src_key.clone() } else { key_arg(destination_key)? };
                Ok(ops::CopyArgs {
                    src,
                    src_key,
                    dst_bucket,
                    dst_key,
                    part_no,
                    upload_id: opt_str(upload_id, "uploadId")?,
                    start: start_offset as u64,
                    count: count as u64,
                    props: ops::put_props(put_properties)?,
                })
            },
            move |a, r| ops::copy_object(a, out, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_get_object(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    get_conditions: *const S3GetConditions,
    start_byte: u64,
    byte_count: u64,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3GetObjectHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // get_conditions is NULL or valid.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.getObjectDataCallback);
        request(
            ctx,
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?, ops::get_conditions(get_conditions)?)),
            move |(b, k, c), r| ops::get_object(b, k, c, start_byte, byte_count, cb, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_head_object(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        request(
            ctx,
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?)),
            move |(b, k), r| ops::head_object(b, k, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_delete_object(
    bucket_context: *const S3BucketContext,
    key: *const c_char,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ResponseHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let resp = Resp::new(handler, data);
        request(
            ctx,
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?)),
            move |(b, k), r| ops::delete_object(b, k, r),
        )
    })
}

// ---------------------------------------------------------------- not implemented

macro_rules! unimplemented_request {
    ($name:ident ( $($arg:ident : $ty:ty),* )) => {
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name(
            $($arg: $ty,)*
            ctx: *mut c_void,
            _timeout_ms: c_int,
            handler: *const S3ResponseHandler,
            data: *mut c_void,
        ) {
            $(let _ = $arg;)*
            // SAFETY: libs3's contract: handler is NULL or a valid handler, ctx is NULL or a live request context;
            // no other argument is read.
            guard((), || unsafe {
                let resp = Resp::new(handler, data);
                request(ctx, resp, || Ok(()), |_, _| not_implemented(stringify!($name)))
            })
        }
    };
}

unimplemented_request!(S3_get_acl(
    _bucket_context: *const S3BucketContext,
    _key: *const c_char,
    _owner_id: *mut c_char,
    _owner_display_name: *mut c_char,
    _acl_grant_count_return: *mut c_int,
    _acl_grants: *mut S3AclGrant
));
unimplemented_request!(S3_set_acl(
    _bucket_context: *const S3BucketContext,
    _key: *const c_char,
    _owner_id: *const c_char,
    _owner_display_name: *const c_char,
    _acl_grant_count: c_int,
    _acl_grants: *const S3AclGrant
));
unimplemented_request!(S3_get_lifecycle(
    _bucket_context: *const S3BucketContext,
    _lifecycle_xml_document_return: *mut c_char,
    _lifecycle_xml_document_buffer_size: c_int
));
unimplemented_request!(S3_set_lifecycle(_bucket_context: *const S3BucketContext, _lifecycle_xml_document: *const c_char));
unimplemented_request!(S3_get_server_access_logging(
    _bucket_context: *const S3BucketContext,
    _target_bucket_return: *mut c_char,
    _target_prefix_return: *mut c_char,
    _acl_grant_count_return: *mut c_int,
    _acl_grants: *mut S3AclGrant
));
unimplemented_request!(S3_set_server_access_logging(
    _bucket_context: *const S3BucketContext,
    _target_bucket: *const c_char,
    _target_prefix: *const c_char,
    _acl_grant_count: c_int,
    _acl_grants: *const S3AclGrant
));

// ---------------------------------------------------------------- multipart

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_initiate_multipart(
    bucket_context: *mut S3BucketContext,
    key: *const c_char,
    put_properties: *mut S3PutProperties,
    handler: *mut S3MultipartInitialHandler,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // put_properties is NULL or valid; the handler is only read.
    guard((), || unsafe {
        let h = (handler as *const S3MultipartInitialHandler).as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.responseXmlCallback);
        request(
            ctx,
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?, ops::put_props(put_properties)?)),
            move |(b, k, p), r| ops::initiate_multipart(b, k, p, cb, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_upload_part(
    bucket_context: *mut S3BucketContext,
    key: *const c_char,
    put_properties: *mut S3PutProperties,
    handler: *mut S3PutObjectHandler,
    seq: c_int,
    upload_id: *const c_char,
    part_content_length: c_int,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // put_properties is NULL or valid; the handler is only read.
    guard((), || unsafe {
        let h = (handler as *const S3PutObjectHandler).as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let src = DataSource { cb: h.and_then(|h| h.putObjectDataCallback), data };
        request(
            ctx,
            resp,
            || {
                if part_content_length < 0 {
                    return Err(Fail::invalid("partContentLength must not be negative"));
                }
                Ok((
                    bucket_ctx(bucket_context)?,
                    key_arg(key)?,
                    req_str(upload_id, "upload_id")?,
                    ops::put_props(put_properties)?,
                ))
            },
            move |(b, k, id, p), r| ops::upload_part(b, k, id, seq, part_content_length as u64, p, src, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_complete_multipart_upload(
    bucket_context: *mut S3BucketContext,
    key: *const c_char,
    handler: *mut S3MultipartCommitHandler,
    upload_id: *const c_char,
    content_length: c_int,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // The handler is only read.
    guard((), || unsafe {
        let h = (handler as *const S3MultipartCommitHandler).as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let src = DataSource { cb: h.and_then(|h| h.putObjectDataCallback), data };
        let cb = h.and_then(|h| h.responseXmlCallback);
        request(
            ctx,
            resp,
            || {
                if content_length < 0 {
                    return Err(Fail::invalid("contentLength must not be negative"));
                }
                Ok((bucket_ctx(bucket_context)?, key_arg(key)?, req_str(upload_id, "upload_id")?))
            },
            move |(b, k, id), r| ops::complete_multipart(b, k, id, content_length as u64, src, cb, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_list_parts(
    bucket_context: *mut S3BucketContext,
    key: *const c_char,
    part_number_marker: *const c_char,
    upload_id: *const c_char,
    _encoding_type: *const c_char,
    max_parts: c_int,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ListPartsHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.responseXmlCallback);
        request(
            ctx,
            resp,
            || {
                Ok((
                    bucket_ctx(bucket_context)?,
                    key_arg(key)?,
                    req_str(upload_id, "uploadid")?,
                    opt_str(part_number_marker, "partnumbermarker")?,
                ))
            },
            move |(b, k, id, m), r| ops::list_parts(b, k, id, m, max_parts, cb, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_abort_multipart_upload(
    bucket_context: *mut S3BucketContext,
    key: *const c_char,
    upload_id: *const c_char,
    _timeout_ms: c_int,
    handler: *mut S3AbortMultipartUploadHandler,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    // The handler is only read; ctx is NULL (the request runs now).
    guard((), || unsafe {
        let h = (handler as *const S3AbortMultipartUploadHandler).as_ref();
        // As in libs3, the callbacks of an abort receive no callback data.
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), std::ptr::null_mut());
        request(
            std::ptr::null_mut(),
            resp,
            || Ok((bucket_ctx(bucket_context)?, key_arg(key)?, req_str(upload_id, "uploadId")?)),
            move |(b, k, id), r| ops::abort_multipart(b, k, id, r),
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn S3_list_multipart_uploads(
    bucket_context: *mut S3BucketContext,
    prefix: *const c_char,
    key_marker: *const c_char,
    upload_id_marker: *const c_char,
    _encoding_type: *const c_char,
    delimiter: *const c_char,
    max_uploads: c_int,
    ctx: *mut c_void,
    _timeout_ms: c_int,
    handler: *const S3ListMultipartUploadsHandler,
    data: *mut c_void,
) {
    // SAFETY: libs3's contract: handler is NULL or a valid handler, bucket_context is NULL or valid, the
    // strings are NULL or NUL-terminated (all read before `request` returns), ctx is NULL or a live request context.
    guard((), || unsafe {
        let h = handler.as_ref();
        let resp = Resp::new(h.map_or(std::ptr::null(), |h| &h.responseHandler), data);
        let cb = h.and_then(|h| h.responseXmlCallback);
        request(
            ctx,
            resp,
            || {
                Ok((
                    bucket_ctx(bucket_context)?,
                    ops::ListUploadsArgs {
                        prefix: opt_str(prefix, "prefix")?,
                        key_marker: opt_str(key_marker, "keymarker")?,
                        upload_id_marker: opt_str(upload_id_marker, "uploadidmarker")?,
                        delimiter: opt_str(delimiter, "delimiter")?,
                        max_uploads,
                    },
                ))
            },
            move |(b, a), r| ops::list_uploads(b, a, cb, r),
        )
    })
}
