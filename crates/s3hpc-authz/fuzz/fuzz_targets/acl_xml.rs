//! AccessControlPolicy, OwnershipControls and PublicAccessBlockConfiguration documents on
//! arbitrary bytes: a value or the S3 error AWS gives, never a panic; a parsed ACL survives a
//! round trip through our own serialization.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3hpc_authz::{Acl, ErrorCode, ObjectOwnership, PublicAccessBlock};

fuzz_target!(|data: &[u8]| {
    match Acl::from_xml(data, None) {
        Ok(acl) => {
            let again = Acl::from_xml(acl.to_xml().as_bytes(), None).expect("own document parses");
            assert_eq!(again.grants, acl.grants);
        }
        Err(e) => assert!(matches!(
            e.code,
            ErrorCode::MalformedACLError | ErrorCode::InvalidArgument | ErrorCode::UnresolvableGrantByEmailAddress
        )),
    }
    if let Err(e) = ObjectOwnership::from_xml(data) {
        assert_eq!(e.code, ErrorCode::MalformedXML);
    }
    if let Err(e) = PublicAccessBlock::from_xml(data) {
        assert_eq!(e.code, ErrorCode::MalformedXML);
    }
});
