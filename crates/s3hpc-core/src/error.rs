//! Typed S3 errors. Every layer (backends, HTTP server, binary protocol, C ABI) speaks these
//! codes, so a front end only maps `ErrorCode` to its wire form.

use std::fmt;
use std::sync::Arc;

macro_rules! error_codes {
    ($( $name:ident => $status:expr, $msg:expr; )*) => {
        /// S3 error codes, spelled as AWS spells them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ErrorCode { $( $name, )* }

        impl ErrorCode {
            /// Every code, in declaration order (stable: the binary protocol numbers them by index).
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$name, )* ];

            /// The code as it appears in `<Code>` of an S3 error document.
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$name => stringify!($name), )* }
            }

            /// The HTTP status AWS uses for this code.
            pub fn http_status(self) -> u16 {
                match self { $( ErrorCode::$name => $status, )* }
            }

            /// AWS's default message for this code.
            pub fn default_message(self) -> &'static str {
                match self { $( ErrorCode::$name => $msg, )* }
            }

            /// Parse the `<Code>` text of an error document.
            pub fn parse(s: &str) -> Option<ErrorCode> {
                match s { $( stringify!($name) => Some(ErrorCode::$name), )* _ => None }
            }
        }
    };
}

error_codes! {
    AccessDenied => 403, "Access Denied";
    AuthorizationHeaderMalformed => 400, "The authorization header is malformed.";
    AuthorizationQueryParametersError => 400, "Error parsing the X-Amz-Credential parameter.";
    BadDigest => 400, "The Content-MD5 or checksum you specified did not match what was received.";
    BucketAlreadyExists => 409, "The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.";
    BucketAlreadyOwnedByYou => 409, "Your previous request to create the named bucket succeeded and you already own it.";
    BucketNotEmpty => 409, "The bucket you tried to delete is not empty.";
    EntityTooLarge => 400, "Your proposed upload exceeds the maximum allowed object size.";
    EntityTooSmall => 400, "Your proposed upload is smaller than the minimum allowed object size.";
    ExpiredToken => 400, "The provided token has expired.";
    IncompleteBody => 400, "You did not provide the number of bytes specified by the Content-Length HTTP header.";
    InternalError => 500, "We encountered an internal error. Please try again.";
    InvalidAccessKeyId => 403, "The AWS Access Key Id you provided does not exist in our records.";
    InvalidArgument => 400, "Invalid Argument";
    InvalidBucketName => 400, "The specified bucket is not valid.";
    InvalidDigest => 400, "The Content-MD5 you specified is not valid.";
    InvalidObjectState => 403, "The operation is not valid for the current state of the object.";
    InvalidPart => 400, "One or more of the specified parts could not be found.  The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.";
    InvalidPartOrder => 400, "The list of parts was not in ascending order. Parts must be ordered by part number.";
    InvalidRange => 416, "The requested range is not satisfiable";
    InvalidRequest => 400, "Invalid Request";
    InvalidStorageClass => 400, "The storage class you specified is not valid.";
    InvalidTag => 400, "The tag provided was not a valid tag.";
    KeyTooLongError => 400, "Your key is too long.";
    MalformedXML => 400, "The XML you provided was not well-formed or did not validate against our published schema.";
    MetadataTooLarge => 400, "Your metadata headers exceed the maximum allowed metadata size.";
    MethodNotAllowed => 405, "The specified method is not allowed against this resource.";
    MissingContentLength => 411, "You must provide the Content-Length HTTP header.";
    MissingSecurityHeader => 400, "Your request is missing a required header.";
    NoSuchBucket => 404, "The specified bucket does not exist.";
    NoSuchKey => 404, "The specified key does not exist.";
    NoSuchTagSet => 404, "The TagSet does not exist";
    NoSuchUpload => 404, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.";
    NotImplemented => 501, "A header you provided implies functionality that is not implemented.";
    NotModified => 304, "Not Modified";
    PreconditionFailed => 412, "At least one of the pre-conditions you specified did not hold";
    RequestTimeTooSkewed => 403, "The difference between the request time and the current time is too large.";
    RequestTimeout => 400, "Your socket connection to the server was not read from or written to within the timeout period.";
    SignatureDoesNotMatch => 403, "The request signature we calculated does not match the signature you provided. Check your key and signing method.";
    XAmzContentSHA256Mismatch => 400, "The provided 'x-amz-content-sha256' header does not match what was computed.";
    ConditionalRequestConflict => 409, "A conflicting operation occurred. If using PutObject you can retry the request.";
    ServiceUnavailable => 503, "Please reduce your request rate.";
    InvalidEncryptionAlgorithmError => 400, "The encryption request you specified is not valid.";
    UnexpectedContent => 400, "This request does not support content.";
    MaxMessageLengthExceeded => 400, "Your request was too big.";
    RequestHeaderSectionTooLarge => 400, "Your request header section exceeds the maximum allowed size.";
    InvalidWriteOffset => 400, "The write offset value that you specified does not match the current object size.";
    MalformedPolicy => 400, "Policies must be valid JSON and the first byte must be '{'";
    MalformedACLError => 400, "The XML you provided was not well-formed or did not validate against our published schema";
    AccessControlListNotSupported => 400, "The bucket does not allow ACLs";
    InvalidBucketAclWithObjectOwnership => 400, "Bucket cannot have ACLs set with ObjectOwnership's BucketOwnerEnforced setting";
    UnresolvableGrantByEmailAddress => 400, "The email address that you provided does not match any account on record.";
    NoSuchBucketPolicy => 404, "The bucket policy does not exist";
    OwnershipControlsNotFoundError => 404, "The bucket ownership controls were not found";
    NoSuchPublicAccessBlockConfiguration => 404, "The public access block configuration was not found";
    // The file system is full (ENOSPC, EDQUOT). AWS has no such error; S3 servers on disks
    // answer MinIO's code with 507 Insufficient Storage, which clients do not retry (a 500 is
    // retried, in vain).
    XMinioStorageFull => 507, "Storage backend has reached its minimum free drive threshold. Please delete a few objects to proceed.";
    InvalidPolicyDocument => 400, "The content of the form does not meet the conditions specified in the policy document.";
    MalformedPOSTRequest => 400, "The body of your POST request is not well-formed multipart/form-data.";
    MaxPostPreDataLengthExceededError => 400, "Your POST request fields preceding the upload file were too large.";
    InvalidRedirectLocation => 400, "The website redirect location must have a prefix of 'http://' or 'https://' or '/'.";
    NoSuchVersion => 404, "The specified version does not exist.";
    IllegalVersioningConfigurationException => 400, "The versioning configuration specified in the request is invalid.";
    IdempotencyParameterMismatch => 400, "Parameters on this idempotent request are inconsistent with parameters used in previous request(s).";
    // s3hpc's RenameObject of a prefix (both keys ending in '/'): the destination prefix holds
    // keys (rename(2) of a directory onto a non-empty one: ENOTEMPTY). No AWS equivalent.
    PrefixNotEmpty => 409, "The destination prefix is not empty.";
    InvalidBucketState => 409, "The request is not valid with the current state of the bucket.";
    NoSuchObjectLockConfiguration => 404, "The specified object does not have a ObjectLock configuration";
    ObjectLockConfigurationNotFoundError => 404, "Object Lock configuration does not exist for this bucket";
    SlowDown => 503, "Please reduce your request rate.";
    MalformedTrailerError => 400, "The request contained trailing data that was not well-formed or did not conform to our published schema.";
    InvalidToken => 400, "The provided token is malformed or otherwise invalid.";
    MissingRequestBodyError => 400, "Request Body is empty";
    BadRequest => 400, "Bad Request";
    InvalidLocationConstraint => 400, "The specified location-constraint is not valid";
    IllegalLocationConstraintException => 400, "The unspecified location constraint is incompatible for the region specific endpoint this request was sent to.";
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An S3 error: a code, a human message, and optionally the resource it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// Bucket or `bucket/key` the error is about (the `<Resource>` of the error document).
    pub resource: Option<String>,
    /// The error concerns a delete marker (GET of a key whose current version is one, or of a
    /// marker's version id): its version id, sent as `x-amz-delete-marker: true` and
    /// `x-amz-version-id` by the HTTP front end.
    pub delete_marker: Option<String>,
    /// The elements AWS adds to this error's document after `<Message>`, in AWS's order:
    /// `("BucketName", ..)` of NoSuchBucket, `("ArgumentName", ..), ("ArgumentValue", ..)` of
    /// InvalidArgument, `("RangeRequested", ..), ("ActualObjectSize", ..)` of InvalidRange...
    /// Empty (no allocation) for most errors. The HTTP front end writes them; the binary
    /// protocol does not carry them.
    pub details: Vec<(&'static str, String)>,
    /// The I/O error this one was made from, if any: [`std::error::Error::source`], so a log
    /// that walks the chain keeps the errno. Never sent to a client.
    io: IoSource,
}

/// An [`Error`]'s I/O source: shared (errors are cloned) and left out of `==` (two errors are
/// equal when they say the same to the client).
#[derive(Debug, Clone, Default)]
struct IoSource(Option<Arc<std::io::Error>>);

impl PartialEq for IoSource {
    fn eq(&self, _: &IoSource) -> bool {
        true
    }
}

impl Eq for IoSource {}

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            resource: None,
            delete_marker: None,
            details: Vec::new(),
            io: IoSource(None),
        }
    }

    /// An error with AWS's default message for the code.
    pub fn code(code: ErrorCode) -> Self {
        Error {
            code,
            message: code.default_message().to_string(),
            resource: None,
            delete_marker: None,
            details: Vec::new(),
            io: IoSource(None),
        }
    }

    /// Keeps `e` as this error's source ([`std::error::Error::source`]): what it was made from,
    /// for logs (the errno), not for the client.
    pub fn with_io_source(mut self, e: std::io::Error) -> Self {
        self.io = IoSource(Some(Arc::new(e)));
        self
    }

    /// The I/O error this one was made from, if it kept it.
    pub fn io_source(&self) -> Option<&std::io::Error> {
        self.io.0.as_deref()
    }

    pub fn with_resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }

    pub fn with_delete_marker(mut self, version_id: impl Into<String>) -> Self {
        self.delete_marker = Some(version_id.into());
        self
    }

    /// Adds element `<name>value</name>` to the error document (after those added before).
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.details.push((name, value.into()));
        self
    }

    /// Names the argument at fault: `<ArgumentName>`, `<ArgumentValue>` (InvalidArgument).
    pub fn with_argument(self, name: &'static str, value: impl Into<String>) -> Self {
        self.with("ArgumentName", name).with("ArgumentValue", value)
    }

    /// The value of extra element `name`, if the error carries it.
    pub fn detail(&self, name: &str) -> Option<&str> {
        self.details.iter().find(|(k, _)| *k == name).map(|(_, v)| v.as_str())
    }

    /// The error is about bucket `bucket`: its `<Resource>` and AWS's `<BucketName>` (NoSuchBucket,
    /// BucketNotEmpty, BucketAlreadyExists, NoSuchBucketPolicy and the other bucket 404s).
    pub fn with_bucket(self, bucket: &str) -> Self {
        self.with_resource(bucket).with("BucketName", bucket)
    }

    pub fn no_such_bucket(bucket: &str) -> Self {
        Error::code(ErrorCode::NoSuchBucket).with_bucket(bucket)
    }

    pub fn no_such_key(bucket: &str, key: &str) -> Self {
        Error::code(ErrorCode::NoSuchKey).with_resource(format!("{bucket}/{key}")).with("Key", key)
    }

    pub fn no_such_upload(upload_id: &str) -> Self {
        Error::code(ErrorCode::NoSuchUpload).with_resource(upload_id).with("UploadId", upload_id)
    }

    /// InvalidArgument with `message`, naming the argument and the value sent.
    pub fn invalid_arg(message: impl Into<String>, name: &'static str, value: impl Into<String>) -> Self {
        Error::invalid_argument(message).with_argument(name, value)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InternalError, message)
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InvalidArgument, message)
    }

    pub fn not_implemented(what: impl Into<String>) -> Self {
        Error::new(ErrorCode::NotImplemented, what)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)?;
        if let Some(r) = &self.resource {
            write!(f, " ({r})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.io.0.as_deref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

impl From<std::io::Error> for Error {
    /// I/O errors that reach a front end are internal errors, except the few kinds that have an
    /// S3 meaning. Backends map ENOENT and friends themselves where the meaning is known.
    fn from(e: std::io::Error) -> Self {
        // An Error smuggled through an io::Error (e.g. from a body stream) comes back out whole.
        if e.get_ref().is_some_and(|inner| inner.is::<Error>()) {
            return *e.into_inner().unwrap().downcast::<Error>().unwrap();
        }
        let out = match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::new(ErrorCode::IncompleteBody, e.to_string()),
            std::io::ErrorKind::TimedOut => Error::new(ErrorCode::RequestTimeout, e.to_string()),
            std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded => {
                Error::new(ErrorCode::XMinioStorageFull, format!("storage full: {e}"))
            }
            std::io::ErrorKind::PermissionDenied => Error::new(ErrorCode::AccessDenied, e.to_string()),
            _ => Error::internal(e.to_string()),
        };
        out.with_io_source(e)
    }
}

impl From<Error> for std::io::Error {
    fn from(e: Error) -> Self {
        std::io::Error::other(e)
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_roundtrip_and_statuses() {
        for &c in ErrorCode::ALL {
            assert_eq!(ErrorCode::parse(c.as_str()), Some(c));
        }
        assert_eq!(ErrorCode::NoSuchKey.http_status(), 404);
        assert_eq!(ErrorCode::InvalidRange.http_status(), 416);
        assert_eq!(ErrorCode::PreconditionFailed.http_status(), 412);
        assert_eq!(ErrorCode::BucketNotEmpty.http_status(), 409);
    }

    /// An error made from an I/O error keeps it as its source, errno and all (and says the same
    /// to the client as before: the source is left out of `==`).
    #[test]
    fn io_error_is_the_source() {
        use std::error::Error as _;
        for (errno, code) in [
            (libc::ENOENT, ErrorCode::InternalError),
            (libc::EACCES, ErrorCode::AccessDenied),
            (libc::ENOSPC, ErrorCode::XMinioStorageFull),
        ] {
            let e = Error::from(std::io::Error::from_raw_os_error(errno));
            assert_eq!(e.code, code);
            let src = e.source().expect("the io::Error is the source");
            let io = src.downcast_ref::<std::io::Error>().expect("an io::Error");
            assert_eq!(io.raw_os_error(), Some(errno));
            assert_eq!(e.io_source().and_then(|s| s.raw_os_error()), Some(errno));
            // Clones keep it; equality ignores it.
            assert_eq!(e.clone().io_source().and_then(|s| s.raw_os_error()), Some(errno));
            assert_eq!(e, Error::new(e.code, e.message.clone()));
        }
        assert!(Error::code(ErrorCode::NoSuchKey).source().is_none());
    }

    #[test]
    fn error_survives_io_roundtrip() {
        let e = Error::new(ErrorCode::BadDigest, "crc32 mismatch");
        let io: std::io::Error = e.clone().into();
        assert_eq!(Error::from(io), e);
    }
}
