//! The C entry points called from Rust on a memory store: a put/get round trip with ranges, a
//! callback abort that publishes nothing, and queued requests on a context. (The full suite
//! is the C one in tests/c, run by test.sh.)

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr;

use s3::api::*;
use s3::exec::RequestContext;
use s3::ffi::*;
use s3::status::*;

#[derive(Default)]
struct St {
    status: Option<S3Status>,
    data: Vec<u8>,
    src: Vec<u8>,
    pos: usize,
    abort_at: Option<usize>,
    etag: String,
}

unsafe extern "C" fn props(p: *const S3ResponseProperties, d: *mut c_void) -> S3Status {
    let st = unsafe { &mut *(d as *mut St) };
    let e = unsafe { (*p).eTag };
    st.etag = if e.is_null() { String::new() } else { unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned() };
    S3StatusOK
}

unsafe extern "C" fn complete(s: S3Status, _e: *const S3ErrorDetails, d: *mut c_void) {
    let st = unsafe { &mut *(d as *mut St) };
    assert!(st.status.is_none(), "complete called twice");
    st.status = Some(s);
}

unsafe extern "C" fn put_data(n: c_int, buf: *mut c_char, d: *mut c_void) -> c_int {
    let st = unsafe { &mut *(d as *mut St) };
    if st.abort_at.is_some_and(|a| st.pos >= a) {
        return -1;
    }
    let k = (n as usize).min(st.src.len() - st.pos).min(1000);
    unsafe { ptr::copy_nonoverlapping(st.src[st.pos..].as_ptr(), buf as *mut u8, k) };
    st.pos += k;
    k as c_int
}

unsafe extern "C" fn get_data(n: c_int, buf: *const c_char, d: *mut c_void) -> S3Status {
    let st = unsafe { &mut *(d as *mut St) };
    st.data.extend_from_slice(unsafe { std::slice::from_raw_parts(buf as *const u8, n as usize) });
    S3StatusOK
}

fn handler() -> S3ResponseHandler {
    S3ResponseHandler { propertiesCallback: Some(props), completeCallback: Some(complete) }
}

#[test]
fn round_trip_abort_and_contexts() {
    // SAFETY: set before any thread of this test binary reads the environment.
    unsafe { std::env::set_var("S3HPC_TARGET", "memory://") };
    assert_eq!(unsafe { S3_initialize(ptr::null(), 0, ptr::null()) }, S3StatusOK);
    let bucket = c"ffi-bucket";
    let bctx = S3BucketContext {
        hostName: ptr::null(),
        bucketName: bucket.as_ptr(),
        protocol: 1,
        uriStyle: S3_URI_STYLE_PATH,
        accessKeyId: c"a".as_ptr(),
        secretAccessKey: c"s".as_ptr(),
        securityToken: ptr::null(),
        authRegion: ptr::null(),
    };
    let rh = handler();
    let mut st = St::default();
    unsafe {
        S3_create_bucket(
            1,
            c"a".as_ptr(),
            c"s".as_ptr(),
            ptr::null(),
            ptr::null(),
            bucket.as_ptr(),
            ptr::null(),
            0,
            ptr::null(),
            ptr::null_mut(),
            0,
            &rh,
            &mut st as *mut St as *mut c_void,
        )
    };
    assert_eq!(st.status, Some(S3StatusOK));

    let ph = S3PutObjectHandler { responseHandler: handler(), putObjectDataCallback: Some(put_data) };
    let gh = S3GetObjectHandler { responseHandler: handler(), getObjectDataCallback: Some(get_data) };
    let body: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut st = St { src: body.clone(), ..Default::default() };
    unsafe {
        S3_put_object(&bctx, c"k".as_ptr(), 10_000, ptr::null(), ptr::null_mut(), 0, &ph, &mut st as *mut St as _)
    };
    assert_eq!(st.status, Some(S3StatusOK));
    assert!(st.etag.starts_with('"'), "{}", st.etag);

    let mut st = St::default();
    unsafe {
        S3_get_object(&bctx, c"k".as_ptr(), ptr::null(), 100, 50, ptr::null_mut(), 0, &gh, &mut st as *mut St as _)
    };
    assert_eq!(st.status, Some(S3StatusOK));
    assert_eq!(st.data, body[100..150]);

    // An aborting data callback: the request fails and nothing is published.
    let mut st = St { src: body.clone(), abort_at: Some(3000), ..Default::default() };
    unsafe {
        S3_put_object(&bctx, c"k2".as_ptr(), 10_000, ptr::null(), ptr::null_mut(), 0, &ph, &mut st as *mut St as _)
    };
    assert_eq!(st.status, Some(S3StatusAbortedByCallback));
    let mut st = St::default();
    unsafe { S3_head_object(&bctx, c"k2".as_ptr(), ptr::null_mut(), 0, &rh, &mut st as *mut St as _) };
    assert_eq!(st.status, Some(S3StatusHttpErrorNotFound));

    // Queued on a context: nothing runs until the context does; destroy interrupts the rest.
    let mut ctx: *mut c_void = ptr::null_mut();
    assert_eq!(unsafe { S3_create_request_context(&mut ctx) }, S3StatusOK);
    let mut a = St::default();
    let mut b = St::default();
    unsafe {
        S3_delete_object(&bctx, c"k".as_ptr(), ctx, 0, &rh, &mut a as *mut St as _);
        S3_head_object(&bctx, c"k".as_ptr(), ctx, 0, &rh, &mut b as *mut St as _);
    }
    assert_eq!((a.status, b.status), (None, None));
    assert_eq!(unsafe { (*(ctx as *const RequestContext)).pending() }, 2);
    let mut remaining: c_int = -1;
    assert_eq!(unsafe { S3_runonce_request_context(ctx, &mut remaining) }, S3StatusOK);
    assert_eq!((a.status, remaining), (Some(S3StatusOK), 1));
    unsafe { S3_destroy_request_context(ctx) };
    assert_eq!(b.status, Some(S3StatusInterrupted));

    let name = unsafe { CStr::from_ptr(S3_get_status_name(S3StatusErrorNoSuchKey)) };
    assert_eq!(name.to_str().unwrap(), "ErrorNoSuchKey");
    S3_deinitialize();
}
