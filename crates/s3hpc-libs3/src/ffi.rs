//! The C types of the libs3 interface (layouts as in `include/libs3.h`).

#![allow(non_snake_case)]

use std::os::raw::{c_char, c_int, c_void};

use crate::status_table::S3Status;

pub type S3Protocol = c_int;
pub type S3UriStyle = c_int;
pub type S3CannedAcl = c_int;

pub const S3_URI_STYLE_VIRTUAL_HOST: S3UriStyle = 0;
pub const S3_URI_STYLE_PATH: S3UriStyle = 1;

#[repr(C)]
pub struct S3NameValue {
    pub name: *const c_char,
    pub value: *const c_char,
}

#[repr(C)]
pub struct S3ResponseProperties {
    pub requestId: *const c_char,
    pub requestId2: *const c_char,
    pub contentType: *const c_char,
    pub contentLength: u64,
    pub server: *const c_char,
    pub eTag: *const c_char,
    pub lastModified: i64,
    pub metaDataCount: c_int,
    pub metaData: *const S3NameValue,
    pub usesServerSideEncryption: c_char,
}

#[repr(C)]
pub struct S3BucketContext {
    pub hostName: *const c_char,
    pub bucketName: *const c_char,
    pub protocol: S3Protocol,
    pub uriStyle: S3UriStyle,
    pub accessKeyId: *const c_char,
    pub secretAccessKey: *const c_char,
    pub securityToken: *const c_char,
    pub authRegion: *const c_char,
}

#[repr(C)]
pub struct S3ListBucketContent {
    pub key: *const c_char,
    pub lastModified: i64,
    pub eTag: *const c_char,
    pub size: u64,
    pub ownerId: *const c_char,
    pub ownerDisplayName: *const c_char,
}

#[repr(C)]
pub struct S3ListMultipartUpload {
    pub key: *const c_char,
    pub uploadId: *const c_char,
    pub initiatorId: *const c_char,
    pub initiatorDisplayName: *const c_char,
    pub ownerId: *const c_char,
    pub ownerDisplayName: *const c_char,
    pub storageClass: *const c_char,
    pub initiated: i64,
}

#[repr(C)]
pub struct S3ListPart {
    pub eTag: *const c_char,
    pub lastModified: i64,
    pub partNumber: u64,
    pub size: u64,
}

#[repr(C)]
pub struct S3PutProperties {
    pub contentType: *const c_char,
    pub md5: *const c_char,
    pub cacheControl: *const c_char,
    pub contentDispositionFilename: *const c_char,
    pub contentEncoding: *const c_char,
    pub expires: i64,
    pub cannedAcl: S3CannedAcl,
    pub metaDataCount: c_int,
    pub metaData: *const S3NameValue,
    pub useServerSideEncryption: c_char,
}

#[repr(C)]
pub struct S3GetConditions {
    pub ifModifiedSince: i64,
    pub ifNotModifiedSince: i64,
    pub ifMatchETag: *const c_char,
    pub ifNotMatchETag: *const c_char,
}

#[repr(C)]
pub struct S3ErrorDetails {
    pub message: *const c_char,
    pub resource: *const c_char,
    pub furtherDetails: *const c_char,
    pub extraDetailsCount: c_int,
    pub extraDetails: *mut S3NameValue,
}

pub type PropertiesCallback = Option<unsafe extern "C" fn(*const S3ResponseProperties, *mut c_void) -> S3Status>;
pub type CompleteCallback = Option<unsafe extern "C" fn(S3Status, *const S3ErrorDetails, *mut c_void)>;
pub type ListServiceCallback =
    Option<unsafe extern "C" fn(*const c_char, *const c_char, *const c_char, i64, *mut c_void) -> S3Status>;
pub type ListBucketCallback = Option<
    unsafe extern "C" fn(
        c_int,
        *const c_char,
        c_int,
        *const S3ListBucketContent,
        c_int,
        *const *const c_char,
        *mut c_void,
    ) -> S3Status,
>;
pub type PutObjectDataCallback = Option<unsafe extern "C" fn(c_int, *mut c_char, *mut c_void) -> c_int>;
pub type GetObjectDataCallback = Option<unsafe extern "C" fn(c_int, *const c_char, *mut c_void) -> S3Status>;
pub type MultipartInitialCallback = Option<unsafe extern "C" fn(*const c_char, *mut c_void) -> S3Status>;
pub type ListMultipartUploadsCallback = Option<
    unsafe extern "C" fn(
        c_int,
        *const c_char,
        *const c_char,
        c_int,
        *const S3ListMultipartUpload,
        c_int,
        *const *const c_char,
        *mut c_void,
    ) -> S3Status,
>;
pub type ListPartsCallback = Option<
    unsafe extern "C" fn(
        c_int,
        *const c_char,
        *const c_char,
        *const c_char,
        *const c_char,
        *const c_char,
        *const c_char,
        c_int,
        c_int,
        *const S3ListPart,
        *mut c_void,
    ) -> S3Status,
>;
pub type MultipartCommitCallback = Option<unsafe extern "C" fn(*const c_char, *const c_char, *mut c_void) -> S3Status>;
pub type SetupCurlCallback = Option<unsafe extern "C" fn(*mut c_void, *mut c_void, *mut c_void) -> S3Status>;

#[repr(C)]
pub struct S3ResponseHandler {
    pub propertiesCallback: PropertiesCallback,
    pub completeCallback: CompleteCallback,
}

#[repr(C)]
pub struct S3ListServiceHandler {
    pub responseHandler: S3ResponseHandler,
    pub listServiceCallback: ListServiceCallback,
}

#[repr(C)]
pub struct S3ListBucketHandler {
    pub responseHandler: S3ResponseHandler,
    pub listBucketCallback: ListBucketCallback,
}

#[repr(C)]
pub struct S3PutObjectHandler {
    pub responseHandler: S3ResponseHandler,
    pub putObjectDataCallback: PutObjectDataCallback,
}

#[repr(C)]
pub struct S3GetObjectHandler {
    pub responseHandler: S3ResponseHandler,
    pub getObjectDataCallback: GetObjectDataCallback,
}

#[repr(C)]
pub struct S3MultipartInitialHandler {
    pub responseHandler: S3ResponseHandler,
    pub responseXmlCallback: MultipartInitialCallback,
}

#[repr(C)]
pub struct S3MultipartCommitHandler {
    pub responseHandler: S3ResponseHandler,
    pub putObjectDataCallback: PutObjectDataCallback,
    pub responseXmlCallback: MultipartCommitCallback,
}

#[repr(C)]
pub struct S3ListMultipartUploadsHandler {
    pub responseHandler: S3ResponseHandler,
    pub responseXmlCallback: ListMultipartUploadsCallback,
}

#[repr(C)]
pub struct S3ListPartsHandler {
    pub responseHandler: S3ResponseHandler,
    pub responseXmlCallback: ListPartsCallback,
}

#[repr(C)]
pub struct S3AbortMultipartUploadHandler {
    pub responseHandler: S3ResponseHandler,
}

/// Opaque grant record; only passed through (ACLs are not implemented).
#[repr(C)]
pub struct S3AclGrant {
    _opaque: [u8; 0],
}
