//! S3Status rules: names, retryability, bucket-name validation and the mapping of s3hpc's
//! typed errors to the statuses a libs3 program would see from an S3 server.

use s3hpc_core::{Error, ErrorCode};

pub use crate::status_table::*;

/// The name of a status without the `S3Status` prefix, as libs3 prints it; "Unknown" otherwise.
pub fn status_name(s: S3Status) -> &'static str {
    usize::try_from(s).ok().and_then(|i| STATUS_NAMES.get(i)).copied().unwrap_or("Unknown")
}

/// The statuses libs3 calls retryable.
pub fn is_retryable(s: S3Status) -> bool {
    matches!(
        s,
        S3StatusNameLookupError
            | S3StatusFailedToConnect
            | S3StatusConnectionFailed
            | S3StatusErrorInternalError
            | S3StatusErrorOperationAborted
            | S3StatusErrorRequestTimeout
    )
}

/// libs3's client-side bucket-name check (run before every request that names a bucket).
pub fn validate_bucket_name(name: &[u8], uri_style: crate::ffi::S3UriStyle) -> S3Status {
    let vhost = uri_style == crate::ffi::S3_URI_STYLE_VIRTUAL_HOST;
    let maxlen = if vhost { 63 } else { 255 };
    let (mut has_dot, mut has_non_digit) = (false, false);
    for (i, &c) in name.iter().enumerate() {
        if i == maxlen {
            return S3StatusInvalidBucketNameTooLong;
        }
        if c.is_ascii_alphabetic() {
            has_non_digit = true;
        } else if c.is_ascii_digit() {
        } else if i == 0 {
            return S3StatusInvalidBucketNameFirstCharacter;
        } else if c == b'_' {
            if vhost {
                return S3StatusInvalidBucketNameCharacter;
            }
            has_non_digit = true;
        } else if c == b'-' {
            if vhost && name[i - 1] == b'.' {
                return S3StatusInvalidBucketNameCharacterSequence;
            }
            has_non_digit = true;
        } else if c == b'.' {
            if vhost && name[i - 1] == b'-' {
                return S3StatusInvalidBucketNameCharacterSequence;
            }
            has_dot = true;
        } else {
            return S3StatusInvalidBucketNameCharacter;
        }
    }
    if name.len() < 3 {
        return S3StatusInvalidBucketNameTooShort;
    }
    if has_dot && !has_non_digit {
        return S3StatusInvalidBucketNameDotQuadNotation;
    }
    S3StatusOK
}

/// The status of an S3 error that arrived with an error document (GET, PUT, DELETE, ...):
/// `S3StatusError<Code>` where libs3 knows the code, `S3StatusErrorUnknown` otherwise.
pub fn status_for_code(code: ErrorCode) -> S3Status {
    use ErrorCode as C;
    match code {
        C::AccessDenied => S3StatusErrorAccessDenied,
        C::BadDigest => S3StatusErrorBadDigest,
        C::BucketAlreadyExists => S3StatusErrorBucketAlreadyExists,
        C::BucketAlreadyOwnedByYou => S3StatusErrorBucketAlreadyOwnedByYou,
        C::BucketNotEmpty => S3StatusErrorBucketNotEmpty,
        C::EntityTooLarge => S3StatusErrorEntityTooLarge,
        C::EntityTooSmall => S3StatusErrorEntityTooSmall,
        C::ExpiredToken => S3StatusErrorExpiredToken,
        C::IncompleteBody => S3StatusErrorIncompleteBody,
        C::InternalError => S3StatusErrorInternalError,
        C::InvalidAccessKeyId => S3StatusErrorInvalidAccessKeyId,
        C::InvalidArgument => S3StatusErrorInvalidArgument,
        C::InvalidBucketName => S3StatusErrorInvalidBucketName,
        C::InvalidDigest => S3StatusErrorInvalidDigest,
        C::InvalidObjectState => S3StatusErrorInvalidObjectState,
        C::InvalidPart => S3StatusErrorInvalidPart,
        C::InvalidPartOrder => S3StatusErrorInvalidPartOrder,
        C::InvalidRange => S3StatusErrorInvalidRange,
        C::InvalidRequest => S3StatusErrorInvalidRequest,
        C::InvalidStorageClass => S3StatusErrorInvalidStorageClass,
        C::KeyTooLongError => S3StatusErrorKeyTooLong,
        C::MalformedXML => S3StatusErrorMalformedXML,
        C::MissingRequestBodyError => S3StatusErrorMissingRequestBodyError,
        C::InvalidLocationConstraint => S3StatusErrorInvalidLocationConstraint,
        C::MetadataTooLarge => S3StatusErrorMetadataTooLarge,
        C::MethodNotAllowed => S3StatusErrorMethodNotAllowed,
        C::MissingContentLength => S3StatusErrorMissingContentLength,
        C::MissingSecurityHeader => S3StatusErrorMissingSecurityHeader,
        C::NoSuchBucket => S3StatusErrorNoSuchBucket,
        C::NoSuchKey => S3StatusErrorNoSuchKey,
        C::NoSuchUpload => S3StatusErrorNoSuchUpload,
        C::NotImplemented => S3StatusErrorNotImplemented,
        C::PreconditionFailed => S3StatusErrorPreconditionFailed,
        C::RequestTimeTooSkewed => S3StatusErrorRequestTimeTooSkewed,
        C::RequestTimeout => S3StatusErrorRequestTimeout,
        C::SignatureDoesNotMatch => S3StatusErrorSignatureDoesNotMatch,
        C::ServiceUnavailable => S3StatusErrorServiceUnavailable,
        C::InvalidEncryptionAlgorithmError => S3StatusErrorInvalidEncryptionAlgorithmError,
        C::UnexpectedContent => S3StatusErrorUnexpectedContent,
        C::MaxMessageLengthExceeded => S3StatusErrorMaxMessageLengthExceeded,
        // A 304 carries no error document: libs3 reports the bare HTTP status.
        C::NotModified => S3StatusHttpErrorUnknown,
        _ => S3StatusErrorUnknown,
    }
}

/// The status libs3 derives from a bare HTTP status (responses without an error document,
/// e.g. every failed HEAD).
pub fn status_for_http(code: u16) -> S3Status {
    match code {
        301 => S3StatusErrorPermanentRedirect,
        307 => S3StatusHttpErrorMovedTemporarily,
        400 => S3StatusHttpErrorBadRequest,
        403 => S3StatusHttpErrorForbidden,
        404 => S3StatusHttpErrorNotFound,
        405 => S3StatusErrorMethodNotAllowed,
        409 => S3StatusHttpErrorConflict,
        411 => S3StatusErrorMissingContentLength,
        412 => S3StatusErrorPreconditionFailed,
        416 => S3StatusErrorInvalidRange,
        500 => S3StatusErrorInternalError,
        501 => S3StatusErrorNotImplemented,
        503 => S3StatusErrorSlowDown,
        _ => S3StatusHttpErrorUnknown,
    }
}

/// The status for a store error; `has_body` is false for requests whose error responses carry
/// no document (HEAD).
pub fn status_for_error(e: &Error, has_body: bool) -> S3Status {
    if has_body { status_for_code(e.code) } else { status_for_http(e.code.http_status()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_values_follow_the_abi_order() {
        assert_eq!(status_name(S3StatusOK), "OK");
        assert_eq!(S3StatusAbortedByCallback, 47);
        assert_eq!(S3StatusErrorNoSuchKey, 102);
        assert_eq!(status_name(S3StatusErrorNoSuchKey), "ErrorNoSuchKey");
        assert_eq!(S3StatusHttpErrorUnknown, 134);
        assert_eq!(status_name(135), "Unknown");
        assert_eq!(status_name(-1), "Unknown");
    }

    #[test]
    fn every_error_code_maps() {
        for &c in ErrorCode::ALL {
            let s = status_for_code(c);
            assert!((S3StatusErrorAccessDenied..=S3StatusHttpErrorUnknown).contains(&s), "{c}");
            let h = status_for_http(c.http_status());
            assert!(h > S3StatusOK, "{c}");
        }
        assert_eq!(status_for_error(&Error::code(ErrorCode::NoSuchKey), false), S3StatusHttpErrorNotFound);
        assert_eq!(status_for_error(&Error::code(ErrorCode::NoSuchKey), true), S3StatusErrorNoSuchKey);
        assert_eq!(status_for_code(ErrorCode::MissingRequestBodyError), S3StatusErrorMissingRequestBodyError);
        assert_eq!(status_for_code(ErrorCode::InvalidLocationConstraint), S3StatusErrorInvalidLocationConstraint);
    }

    #[test]
    fn bucket_names_as_libs3_checks_them() {
        let p = crate::ffi::S3_URI_STYLE_PATH;
        let v = crate::ffi::S3_URI_STYLE_VIRTUAL_HOST;
        assert_eq!(validate_bucket_name(b"my-bucket_1", p), S3StatusOK);
        assert_eq!(validate_bucket_name(b"my-bucket_1", v), S3StatusInvalidBucketNameCharacter);
        assert_eq!(validate_bucket_name(b"ab", p), S3StatusInvalidBucketNameTooShort);
        assert_eq!(validate_bucket_name(b"-ab", p), S3StatusInvalidBucketNameFirstCharacter);
        assert_eq!(validate_bucket_name(b"a/b", p), S3StatusInvalidBucketNameCharacter);
        assert_eq!(validate_bucket_name(b"1.2.3.4", p), S3StatusInvalidBucketNameDotQuadNotation);
        assert_eq!(validate_bucket_name(b"a.-b", v), S3StatusInvalidBucketNameCharacterSequence);
        assert_eq!(validate_bucket_name(&[b'a'; 64], v), S3StatusInvalidBucketNameTooLong);
        assert_eq!(validate_bucket_name(&[b'a'; 64], p), S3StatusOK);
    }
}
