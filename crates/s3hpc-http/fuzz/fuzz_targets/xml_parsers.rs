//! Every request-document parser of the gateway on arbitrary bytes: must return Ok or a typed
//! S3 error (MalformedXML / MaxMessageLengthExceeded), never panic, hang or blow up memory.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3hpc_http::xml;

fuzz_target!(|data: &[u8]| {
    let check = |e: s3hpc_http::xml::ParseError| {
        assert!(matches!(e.code.as_str(), "MalformedXML" | "MaxMessageLengthExceeded"), "{e}");
    };
    if let Err(e) = xml::parse_complete_multipart_upload(data) {
        check(e);
    }
    match xml::parse_delete_objects(data) {
        Ok(d) => assert!(!d.objects.is_empty() && d.objects.len() <= xml::MAX_DELETE_KEYS),
        Err(e) => check(e),
    }
    if let Err(e) = xml::parse_tagging(data) {
        check(e);
    }
    if let Err(e) = xml::parse_create_bucket_configuration(data) {
        check(e);
    }
});
