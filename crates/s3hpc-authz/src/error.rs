//! Typed errors carrying AWS's error code, HTTP status and message.

use std::fmt;

/// The S3 error codes this crate produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// 403: the request is not authorized.
    AccessDenied,
    /// 400: PutBucketPolicy with a policy that is not valid.
    MalformedPolicy,
    /// 400: an ACL document or grant that is not valid.
    MalformedACLError,
    /// 400: XML that does not parse or does not follow the schema (ownership, public access block).
    MalformedXML,
    /// 400: an argument (canned ACL, grantee, header) that is not valid.
    InvalidArgument,
    /// 400: a request that combines things S3 refuses to combine.
    InvalidRequest,
    /// 400: a grant by e-mail address (s3hpc has no e-mail directory).
    UnresolvableGrantByEmailAddress,
    /// 400: an ACL on a bucket whose ownership is BucketOwnerEnforced.
    AccessControlListNotSupported,
    /// 400: BucketOwnerEnforced asked for while the bucket ACL grants others.
    InvalidBucketAclWithObjectOwnership,
    /// 400: PutBucketAcl / PutObjectAcl with ACL headers and a document.
    UnexpectedContent,
    /// 400: PutBucketAcl / PutObjectAcl with neither ACL headers nor a document.
    MissingSecurityHeader,
    /// 405: a bucket-policy operation by another account than the bucket owner's.
    MethodNotAllowed,
}

impl ErrorCode {
    /// The code as written in `<Code>` of an S3 error document.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::AccessDenied => "AccessDenied",
            ErrorCode::MalformedPolicy => "MalformedPolicy",
            ErrorCode::MalformedACLError => "MalformedACLError",
            ErrorCode::MalformedXML => "MalformedXML",
            ErrorCode::InvalidArgument => "InvalidArgument",
            ErrorCode::InvalidRequest => "InvalidRequest",
            ErrorCode::UnresolvableGrantByEmailAddress => "UnresolvableGrantByEmailAddress",
            ErrorCode::AccessControlListNotSupported => "AccessControlListNotSupported",
            ErrorCode::InvalidBucketAclWithObjectOwnership => "InvalidBucketAclWithObjectOwnership",
            ErrorCode::MethodNotAllowed => "MethodNotAllowed",
            ErrorCode::UnexpectedContent => "UnexpectedContent",
            ErrorCode::MissingSecurityHeader => "MissingSecurityHeader",
        }
    }

    /// The HTTP status AWS answers this code with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::AccessDenied => 403,
            ErrorCode::MethodNotAllowed => 405,
            _ => 400,
        }
    }
}

/// An authorization or validation error: AWS's code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuthzError {
    /// The S3 error code.
    pub code: ErrorCode,
    /// The message for `<Message>`.
    pub message: String,
    /// Further elements of the error document, in order: `("ArgumentName", ..)`,
    /// `("ArgumentValue", ..)` where S3 names the offending argument, `("MissingHeaderName", ..)`.
    pub extra: Vec<(&'static str, String)>,
}

impl AuthzError {
    /// A new error.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AuthzError { code, message: message.into(), extra: Vec::new() }
    }

    /// Names the argument at fault (`<ArgumentName>`, `<ArgumentValue>`).
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.extra.push(("ArgumentName", name.into()));
        self.extra.push(("ArgumentValue", value.into()));
        self
    }

    /// Adds element `<name>value</name>` to the error document.
    pub fn with_element(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.extra.push((name, value.into()));
        self
    }

    /// The `(ArgumentName, ArgumentValue)` pair, if the error names one.
    pub fn argument(&self) -> Option<(&str, &str)> {
        let find = |n: &str| self.extra.iter().find(|(k, _)| *k == n).map(|(_, v)| v.as_str());
        Some((find("ArgumentName")?, find("ArgumentValue")?))
    }

    /// `MalformedPolicy` with `message`.
    pub fn policy(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::MalformedPolicy, message)
    }

    /// `AccessDenied`, "Access Denied".
    pub fn access_denied() -> Self {
        Self::new(ErrorCode::AccessDenied, "Access Denied")
    }

    /// `MalformedACLError` with AWS's message.
    pub fn malformed_acl() -> Self {
        Self::new(ErrorCode::MalformedACLError, MSG_MALFORMED_ACL)
    }

    /// `MalformedXML` with AWS's message.
    pub fn malformed_xml() -> Self {
        Self::new(ErrorCode::MalformedXML, MSG_MALFORMED_XML)
    }

    /// `AccessControlListNotSupported`, "The bucket does not allow ACLs".
    pub fn acl_not_supported() -> Self {
        Self::new(ErrorCode::AccessControlListNotSupported, "The bucket does not allow ACLs")
    }

    /// The HTTP status of this error.
    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }
}

/// AWS's message for `MalformedACLError`.
pub const MSG_MALFORMED_ACL: &str =
    "The XML you provided was not well-formed or did not validate against our published schema";
/// AWS's message for `MalformedXML`.
pub const MSG_MALFORMED_XML: &str =
    "The XML you provided was not well-formed or did not validate against our published schema.";

impl fmt::Display for AuthzError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl std::error::Error for AuthzError {}
