//! S3 errors as errnos, the way applications expect them.

use fuser::Errno;
use s3hpc_core::{Error, ErrorCode};

/// The errno for an S3 error met while doing `what` on `key`. Errors that become `EIO` (and the
/// other unexpected ones) are logged with the S3 error code and message, since the errno alone
/// cannot tell the user what went wrong.
pub fn errno(e: &Error, what: &str, key: &str) -> Errno {
    use ErrorCode::*;
    // s3hpc's file-system extension says which errno the file system answered.
    if let Some(n) = s3hpc_core::fsattr::errno_of(e) {
        return Errno::from_i32(n);
    }
    let errno = match e.code {
        NoSuchKey | NoSuchBucket | NoSuchUpload => Errno::ENOENT,
        AccessDenied | InvalidAccessKeyId | SignatureDoesNotMatch | ExpiredToken | RequestTimeTooSkewed => {
            Errno::EACCES
        }
        EntityTooLarge => Errno::EFBIG,
        KeyTooLongError => Errno::ENAMETOOLONG,
        XMinioStorageFull => Errno::ENOSPC,
        InternalError if is_storage_full(&e.message) => Errno::ENOSPC,
        _ => Errno::EIO,
    };
    if errno != Errno::ENOENT {
        tracing::warn!(
            "s3hpc mount: {what} {key:?}: S3 error {}: {} -> {}",
            e.code.as_str(),
            e.message,
            errno_name(errno)
        );
    }
    errno
}

/// Older gateways reported ENOSPC/EDQUOT as InternalError "storage full: ..."; now it is
/// XMinioStorageFull (507).
fn is_storage_full(msg: &str) -> bool {
    let m = msg.to_ascii_lowercase();
    m.contains("storage full") || m.contains("no space left") || m.contains("quota exceeded")
}

/// Whether a request that failed this way is worth repeating (transport errors, a restarting
/// gateway, throttling).
pub fn retryable(e: &Error) -> bool {
    matches!(
        e.code,
        ErrorCode::InternalError
            | ErrorCode::ServiceUnavailable
            | ErrorCode::RequestTimeout
            | ErrorCode::IncompleteBody
    ) && !is_storage_full(&e.message)
}

pub fn errno_name(e: Errno) -> &'static str {
    match e {
        Errno::ENOENT => "ENOENT",
        Errno::EACCES => "EACCES",
        Errno::ENOSPC => "ENOSPC",
        Errno::EFBIG => "EFBIG",
        Errno::ENAMETOOLONG => "ENAMETOOLONG",
        _ => "EIO",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping() {
        assert_eq!(errno(&Error::code(ErrorCode::NoSuchKey), "GET", "k"), Errno::ENOENT);
        assert_eq!(errno(&Error::code(ErrorCode::AccessDenied), "GET", "k"), Errno::EACCES);
        assert_eq!(
            errno(&Error::new(ErrorCode::InternalError, "storage full: No space left on device"), "PUT", "k"),
            Errno::ENOSPC
        );
        assert_eq!(errno(&Error::code(ErrorCode::XMinioStorageFull), "PUT", "k"), Errno::ENOSPC);
        assert!(!retryable(&Error::code(ErrorCode::XMinioStorageFull)));
        assert_eq!(errno(&Error::internal("boom"), "PUT", "k"), Errno::EIO);
        assert_eq!(errno(&Error::code(ErrorCode::PreconditionFailed), "GET", "k"), Errno::EIO);
        assert!(retryable(&Error::code(ErrorCode::ServiceUnavailable)));
        assert!(!retryable(&Error::code(ErrorCode::NoSuchKey)));
        assert!(!retryable(&Error::new(ErrorCode::InternalError, "storage full: x")));
    }
}
