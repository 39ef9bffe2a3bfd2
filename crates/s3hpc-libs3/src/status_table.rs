//! The S3Status values of libs3, in declaration order (the order is the ABI).

#![allow(non_upper_case_globals)]

/// A libs3 status: a C enum, passed as `int`.
pub type S3Status = std::os::raw::c_int;

// Generated from the libs3 S3Status enumeration order (values are the positions).
pub const STATUS_NAMES: [&str; 135] = [
    "OK",
    "InternalError",
    "OutOfMemory",
    "Interrupted",
    "InvalidBucketNameTooLong",
    "InvalidBucketNameFirstCharacter",
    "InvalidBucketNameCharacter",
    "InvalidBucketNameCharacterSequence",
    "InvalidBucketNameTooShort",
    "InvalidBucketNameDotQuadNotation",
    "QueryParamsTooLong",
    "FailedToInitializeRequest",
    "MetaDataHeadersTooLong",
    "BadMetaData",
    "BadContentType",
    "ContentTypeTooLong",
    "BadMD5",
    "MD5TooLong",
    "BadCacheControl",
    "CacheControlTooLong",
    "BadContentDispositionFilename",
    "ContentDispositionFilenameTooLong",
    "BadContentEncoding",
    "ContentEncodingTooLong",
    "BadIfMatchETag",
    "IfMatchETagTooLong",
    "BadIfNotMatchETag",
    "IfNotMatchETagTooLong",
    "HeadersTooLong",
    "KeyTooLong",
    "UriTooLong",
    "XmlParseFailure",
    "EmailAddressTooLong",
    "UserIdTooLong",
    "UserDisplayNameTooLong",
    "GroupUriTooLong",
    "PermissionTooLong",
    "TargetBucketTooLong",
    "TargetPrefixTooLong",
    "TooManyGrants",
    "BadGrantee",
    "BadPermission",
    "XmlDocumentTooLarge",
    "NameLookupError",
    "FailedToConnect",
    "ServerFailedVerification",
    "ConnectionFailed",
    "AbortedByCallback",
    "NotSupported",
    "ErrorAccessDenied",
    "ErrorAccountProblem",
    "ErrorAmbiguousGrantByEmailAddress",
    "ErrorBadDigest",
    "ErrorBucketAlreadyExists",
    "ErrorBucketAlreadyOwnedByYou",
    "ErrorBucketNotEmpty",
    "ErrorCredentialsNotSupported",
    "ErrorCrossLocationLoggingProhibited",
    "ErrorEntityTooSmall",
    "ErrorEntityTooLarge",
    "ErrorExpiredToken",
    "ErrorIllegalVersioningConfigurationException",
    "ErrorIncompleteBody",
    "ErrorIncorrectNumberOfFilesInPostRequest",
    "ErrorInlineDataTooLarge",
    "ErrorInternalError",
    "ErrorInvalidAccessKeyId",
    "ErrorInvalidAddressingHeader",
    "ErrorInvalidArgument",
    "ErrorInvalidBucketName",
    "ErrorInvalidBucketState",
    "ErrorInvalidDigest",
    "ErrorInvalidEncryptionAlgorithmError",
    "ErrorInvalidLocationConstraint",
    "ErrorInvalidObjectState",
    "ErrorInvalidPart",
    "ErrorInvalidPartOrder",
    "ErrorInvalidPayer",
    "ErrorInvalidPolicyDocument",
    "ErrorInvalidRange",
    "ErrorInvalidRequest",
    "ErrorInvalidSecurity",
    "ErrorInvalidSOAPRequest",
    "ErrorInvalidStorageClass",
    "ErrorInvalidTargetBucketForLogging",
    "ErrorInvalidToken",
    "ErrorInvalidURI",
    "ErrorKeyTooLong",
    "ErrorMalformedACLError",
    "ErrorMalformedPOSTRequest",
    "ErrorMalformedXML",
    "ErrorMaxMessageLengthExceeded",
    "ErrorMaxPostPreDataLengthExceededError",
    "ErrorMetadataTooLarge",
    "ErrorMethodNotAllowed",
    "ErrorMissingAttachment",
    "ErrorMissingContentLength",
    "ErrorMissingRequestBodyError",
    "ErrorMissingSecurityElement",
    "ErrorMissingSecurityHeader",
    "ErrorNoLoggingStatusForKey",
    "ErrorNoSuchBucket",
    "ErrorNoSuchKey",
    "ErrorNoSuchLifecycleConfiguration",
    "ErrorNoSuchUpload",
    "ErrorNoSuchVersion",
    "ErrorNotImplemented",
    "ErrorNotSignedUp",
    "ErrorNoSuchBucketPolicy",
    "ErrorOperationAborted",
    "ErrorPermanentRedirect",
    "ErrorPreconditionFailed",
    "ErrorRedirect",
    "ErrorRestoreAlreadyInProgress",
    "ErrorRequestIsNotMultiPartContent",
    "ErrorRequestTimeout",
    "ErrorRequestTimeTooSkewed",
    "ErrorRequestTorrentOfBucketError",
    "ErrorSignatureDoesNotMatch",
    "ErrorServiceUnavailable",
    "ErrorSlowDown",
    "ErrorTemporaryRedirect",
    "ErrorTokenRefreshRequired",
    "ErrorTooManyBuckets",
    "ErrorUnexpectedContent",
    "ErrorUnresolvableGrantByEmailAddress",
    "ErrorUserKeyMustBeSpecified",
    "ErrorQuotaExceeded",
    "ErrorUnknown",
    "HttpErrorMovedTemporarily",
    "HttpErrorBadRequest",
    "HttpErrorForbidden",
    "HttpErrorNotFound",
    "HttpErrorConflict",
    "HttpErrorUnknown",
];
pub const S3StatusOK: S3Status = 0;
pub const S3StatusInternalError: S3Status = 1;
pub const S3StatusOutOfMemory: S3Status = 2;
pub const S3StatusInterrupted: S3Status = 3;
pub const S3StatusInvalidBucketNameTooLong: S3Status = 4;
pub const S3StatusInvalidBucketNameFirstCharacter: S3Status = 5;
pub const S3StatusInvalidBucketNameCharacter: S3Status = 6;
pub const S3StatusInvalidBucketNameCharacterSequence: S3Status = 7;
pub const S3StatusInvalidBucketNameTooShort: S3Status = 8;
pub const S3StatusInvalidBucketNameDotQuadNotation: S3Status = 9;
pub const S3StatusQueryParamsTooLong: S3Status = 10;
pub const S3StatusFailedToInitializeRequest: S3Status = 11;
pub const S3StatusMetaDataHeadersTooLong: S3Status = 12;
pub const S3StatusBadMetaData: S3Status = 13;
pub const S3StatusBadContentType: S3Status = 14;
pub const S3StatusContentTypeTooLong: S3Status = 15;
pub const S3StatusBadMD5: S3Status = 16;
pub const S3StatusMD5TooLong: S3Status = 17;
pub const S3StatusBadCacheControl: S3Status = 18;
pub const S3StatusCacheControlTooLong: S3Status = 19;
pub const S3StatusBadContentDispositionFilename: S3Status = 20;
pub const S3StatusContentDispositionFilenameTooLong: S3Status = 21;
pub const S3StatusBadContentEncoding: S3Status = 22;
pub const S3StatusContentEncodingTooLong: S3Status = 23;
pub const S3StatusBadIfMatchETag: S3Status = 24;
pub const S3StatusIfMatchETagTooLong: S3Status = 25;
pub const S3StatusBadIfNotMatchETag: S3Status = 26;
pub const S3StatusIfNotMatchETagTooLong: S3Status = 27;
pub const S3StatusHeadersTooLong: S3Status = 28;
pub const S3StatusKeyTooLong: S3Status = 29;
pub const S3StatusUriTooLong: S3Status = 30;
pub const S3StatusXmlParseFailure: S3Status = 31;
pub const S3StatusEmailAddressTooLong: S3Status = 32;
pub const S3StatusUserIdTooLong: S3Status = 33;
pub const S3StatusUserDisplayNameTooLong: S3Status = 34;
pub const S3StatusGroupUriTooLong: S3Status = 35;
pub const S3StatusPermissionTooLong: S3Status = 36;
pub const S3StatusTargetBucketTooLong: S3Status = 37;
pub const S3StatusTargetPrefixTooLong: S3Status = 38;
pub const S3StatusTooManyGrants: S3Status = 39;
pub const S3StatusBadGrantee: S3Status = 40;
pub const S3StatusBadPermission: S3Status = 41;
pub const S3StatusXmlDocumentTooLarge: S3Status = 42;
pub const S3StatusNameLookupError: S3Status = 43;
pub const S3StatusFailedToConnect: S3Status = 44;
pub const S3StatusServerFailedVerification: S3Status = 45;
pub const S3StatusConnectionFailed: S3Status = 46;
pub const S3StatusAbortedByCallback: S3Status = 47;
pub const S3StatusNotSupported: S3Status = 48;
pub const S3StatusErrorAccessDenied: S3Status = 49;
pub const S3StatusErrorAccountProblem: S3Status = 50;
pub const S3StatusErrorAmbiguousGrantByEmailAddress: S3Status = 51;
pub const S3StatusErrorBadDigest: S3Status = 52;
pub const S3StatusErrorBucketAlreadyExists: S3Status = 53;
pub const S3StatusErrorBucketAlreadyOwnedByYou: S3Status = 54;
pub const S3StatusErrorBucketNotEmpty: S3Status = 55;
pub const S3StatusErrorCredentialsNotSupported: S3Status = 56;
pub const S3StatusErrorCrossLocationLoggingProhibited: S3Status = 57;
pub const S3StatusErrorEntityTooSmall: S3Status = 58;
pub const S3StatusErrorEntityTooLarge: S3Status = 59;
pub const S3StatusErrorExpiredToken: S3Status = 60;
pub const S3StatusErrorIllegalVersioningConfigurationException: S3Status = 61;
pub const S3StatusErrorIncompleteBody: S3Status = 62;
pub const S3StatusErrorIncorrectNumberOfFilesInPostRequest: S3Status = 63;
pub const S3StatusErrorInlineDataTooLarge: S3Status = 64;
pub const S3StatusErrorInternalError: S3Status = 65;
pub const S3StatusErrorInvalidAccessKeyId: S3Status = 66;
pub const S3StatusErrorInvalidAddressingHeader: S3Status = 67;
pub const S3StatusErrorInvalidArgument: S3Status = 68;
pub const S3StatusErrorInvalidBucketName: S3Status = 69;
pub const S3StatusErrorInvalidBucketState: S3Status = 70;
pub const S3StatusErrorInvalidDigest: S3Status = 71;
pub const S3StatusErrorInvalidEncryptionAlgorithmError: S3Status = 72;
pub const S3StatusErrorInvalidLocationConstraint: S3Status = 73;
pub const S3StatusErrorInvalidObjectState: S3Status = 74;
pub const S3StatusErrorInvalidPart: S3Status = 75;
pub const S3StatusErrorInvalidPartOrder: S3Status = 76;
pub const S3StatusErrorInvalidPayer: S3Status = 77;
pub const S3StatusErrorInvalidPolicyDocument: S3Status = 78;
pub const S3StatusErrorInvalidRange: S3Status = 79;
pub const S3StatusErrorInvalidRequest: S3Status = 80;
pub const S3StatusErrorInvalidSecurity: S3Status = 81;
pub const S3StatusErrorInvalidSOAPRequest: S3Status = 82;
pub const S3StatusErrorInvalidStorageClass: S3Status = 83;
pub const S3StatusErrorInvalidTargetBucketForLogging: S3Status = 84;
pub const S3StatusErrorInvalidToken: S3Status = 85;
pub const S3StatusErrorInvalidURI: S3Status = 86;
pub const S3StatusErrorKeyTooLong: S3Status = 87;
pub const S3StatusErrorMalformedACLError: S3Status = 88;
pub const S3StatusErrorMalformedPOSTRequest: S3Status = 89;
pub const S3StatusErrorMalformedXML: S3Status = 90;
pub const S3StatusErrorMaxMessageLengthExceeded: S3Status = 91;
pub const S3StatusErrorMaxPostPreDataLengthExceededError: S3Status = 92;
pub const S3StatusErrorMetadataTooLarge: S3Status = 93;
pub const S3StatusErrorMethodNotAllowed: S3Status = 94;
pub const S3StatusErrorMissingAttachment: S3Status = 95;
pub const S3StatusErrorMissingContentLength: S3Status = 96;
pub const S3StatusErrorMissingRequestBodyError: S3Status = 97;
pub const S3StatusErrorMissingSecurityElement: S3Status = 98;
pub const S3StatusErrorMissingSecurityHeader: S3Status = 99;
pub const S3StatusErrorNoLoggingStatusForKey: S3Status = 100;
pub const S3StatusErrorNoSuchBucket: S3Status = 101;
pub const S3StatusErrorNoSuchKey: S3Status = 102;
pub const S3StatusErrorNoSuchLifecycleConfiguration: S3Status = 103;
pub const S3StatusErrorNoSuchUpload: S3Status = 104;
pub const S3StatusErrorNoSuchVersion: S3Status = 105;
pub const S3StatusErrorNotImplemented: S3Status = 106;
pub const S3StatusErrorNotSignedUp: S3Status = 107;
pub const S3StatusErrorNoSuchBucketPolicy: S3Status = 108;
pub const S3StatusErrorOperationAborted: S3Status = 109;
pub const S3StatusErrorPermanentRedirect: S3Status = 110;
pub const S3StatusErrorPreconditionFailed: S3Status = 111;
pub const S3StatusErrorRedirect: S3Status = 112;
pub const S3StatusErrorRestoreAlreadyInProgress: S3Status = 113;
pub const S3StatusErrorRequestIsNotMultiPartContent: S3Status = 114;
pub const S3StatusErrorRequestTimeout: S3Status = 115;
pub const S3StatusErrorRequestTimeTooSkewed: S3Status = 116;
pub const S3StatusErrorRequestTorrentOfBucketError: S3Status = 117;
pub const S3StatusErrorSignatureDoesNotMatch: S3Status = 118;
pub const S3StatusErrorServiceUnavailable: S3Status = 119;
pub const S3StatusErrorSlowDown: S3Status = 120;
pub const S3StatusErrorTemporaryRedirect: S3Status = 121;
pub const S3StatusErrorTokenRefreshRequired: S3Status = 122;
pub const S3StatusErrorTooManyBuckets: S3Status = 123;
pub const S3StatusErrorUnexpectedContent: S3Status = 124;
pub const S3StatusErrorUnresolvableGrantByEmailAddress: S3Status = 125;
pub const S3StatusErrorUserKeyMustBeSpecified: S3Status = 126;
pub const S3StatusErrorQuotaExceeded: S3Status = 127;
pub const S3StatusErrorUnknown: S3Status = 128;
pub const S3StatusHttpErrorMovedTemporarily: S3Status = 129;
pub const S3StatusHttpErrorBadRequest: S3Status = 130;
pub const S3StatusHttpErrorForbidden: S3Status = 131;
pub const S3StatusHttpErrorNotFound: S3Status = 132;
pub const S3StatusHttpErrorConflict: S3Status = 133;
pub const S3StatusHttpErrorUnknown: S3Status = 134;
