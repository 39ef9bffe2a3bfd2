//! Bucket policy JSON on arbitrary bytes: `Policy::parse` returns a policy or a MalformedPolicy
//! error, never panics; a parsed policy evaluates (and is judged public or not) without panicking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use s3hpc_authz::{ErrorCode, Policy, Principal, RequestContext, evaluate, policy_is_public};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    for parsed in [Policy::parse(text, "bkt"), Policy::parse_stored(text)] {
        match parsed {
            Ok(p) => {
                let _ = policy_is_public(&p);
                for who in [Principal::Anonymous, Principal::account("a")] {
                    for (action, key) in [("s3:GetObject", Some("a/b")), ("s3:ListBucket", None)] {
                        let ctx = RequestContext::new(who.clone(), action, "bkt", key.map(str::to_owned))
                            .with_key("s3:prefix", "a/")
                            .with_source_ip(std::net::IpAddr::from([10, 0, 0, 1]));
                        let _ = evaluate(&p, &ctx);
                    }
                }
            }
            Err(e) => assert_eq!(e.code, ErrorCode::MalformedPolicy, "{e}"),
        }
    }
});
