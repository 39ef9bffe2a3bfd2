//! Stable-toolchain fuzzing: arbitrary strings, JSON values and XML-ish documents fed to every
//! parser must give `Ok` or a typed error, never a panic; parsed policies evaluate without one.

use proptest::prelude::*;
use s3hpc_authz::acl::parse_grantees;
use s3hpc_authz::{
    Acl, AclHeaders, CannedAcl, ErrorCode, ObjectOwnership, Policy, Principal, PublicAccessBlock, RequestContext,
    evaluate, policy_is_public,
};
use serde_json::{Map, Value};

const WORDS: &[&str] = &[
    "Version",
    "2012-10-17",
    "2008-10-17",
    "Id",
    "Statement",
    "Sid",
    "Effect",
    "Allow",
    "Deny",
    "Principal",
    "NotPrincipal",
    "AWS",
    "CanonicalUser",
    "Service",
    "*",
    "Action",
    "NotAction",
    "Resource",
    "NotResource",
    "Condition",
    "StringEquals",
    "StringLike",
    "ForAnyValue:StringNotLike",
    "ForAllValues:StringEquals",
    "IpAddress",
    "NotIpAddressIfExists",
    "NumericLessThan",
    "Bool",
    "Null",
    "aws:SourceIp",
    "aws:SecureTransport",
    "s3:prefix",
    "s3:max-keys",
    "s3:ExistingObjectTag/t",
    "aws:username",
    "s3:GetObject",
    "s3:*",
    "s3:List*",
    "arn:aws:s3:::bkt",
    "arn:aws:s3:::bkt/*",
    "arn:aws:s3:::bkt/${aws:username}/*",
    "arn:aws:s3:::*",
    "arn:aws:iam::a:root",
    "arn:aws:iam::a:user/n",
    "10.0.0.0/8",
    "::/0",
    "true",
    "5",
    "a",
    "${*}",
    "${aws:userid",
];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![proptest::sample::select(WORDS).prop_map(str::to_owned), "[ -~]{0,12}", any::<String>()]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        word().prop_map(Value::String),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((word(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn exercise_policy(text: &str) {
    for p in [Policy::parse(text, "bkt"), Policy::parse_stored(text)] {
        match p {
            Ok(p) => {
                let _ = policy_is_public(&p);
                for who in [Principal::Anonymous, Principal::account("a")] {
                    for (action, key) in [("s3:GetObject", Some("a/b")), ("s3:ListBucket", None)] {
                        let ctx = RequestContext::new(who.clone(), action, "bkt", key.map(str::to_owned))
                            .with_key("s3:prefix", "a/")
                            .with_key("s3:max-keys", "5")
                            .with_source_ip("10.0.0.1".parse().unwrap());
                        let _ = evaluate(&p, &ctx);
                    }
                }
            }
            Err(e) => assert_eq!(e.code, ErrorCode::MalformedPolicy, "{e}"),
        }
    }
}

fn exercise_xml(doc: &[u8]) {
    match Acl::from_xml(doc, None) {
        Ok(acl) => {
            let again = Acl::from_xml(acl.to_xml().as_bytes(), None).expect("our own document parses");
            assert_eq!(again.grants, acl.grants);
        }
        Err(e) => assert!(
            matches!(
                e.code,
                ErrorCode::MalformedACLError | ErrorCode::InvalidArgument | ErrorCode::UnresolvableGrantByEmailAddress
            ),
            "{e}"
        ),
    }
    if let Err(e) = ObjectOwnership::from_xml(doc) {
        assert_eq!(e.code, ErrorCode::MalformedXML);
    }
    if let Err(e) = PublicAccessBlock::from_xml(doc) {
        assert_eq!(e.code, ErrorCode::MalformedXML);
    }
}

const XML_WORDS: &[&str] = &[
    "<AccessControlPolicy>",
    "</AccessControlPolicy>",
    "<Owner>",
    "</Owner>",
    "<ID>",
    "</ID>",
    "<AccessControlList>",
    "</AccessControlList>",
    "<Grant>",
    "</Grant>",
    r#"<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser">"#,
    r#"<Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group">"#,
    "</Grantee>",
    "<URI>",
    "</URI>",
    "http://acs.amazonaws.com/groups/global/AllUsers",
    "<Permission>",
    "</Permission>",
    "READ",
    "FULL_CONTROL",
    "<OwnershipControls>",
    "</OwnershipControls>",
    "<Rule>",
    "</Rule>",
    "<ObjectOwnership>",
    "</ObjectOwnership>",
    "ObjectWriter",
    "<PublicAccessBlockConfiguration>",
    "</PublicAccessBlockConfiguration>",
    "<BlockPublicAcls>",
    "</BlockPublicAcls>",
    "true",
    "&amp;",
    "&#x41;",
    "&bogus;",
    "<![CDATA[x]]>",
    "<!-- c -->",
    "<?xml version=\"1.0\"?>",
    "<!DOCTYPE a>",
    "own",
    "<",
    ">",
    "/",
    "\"",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn policy_parser_never_panics_on_strings(s in any::<String>()) {
        exercise_policy(&s);
        exercise_policy(&format!("{{{s}"));
    }

    #[test]
    fn policy_parser_never_panics_on_json(v in json_value()) {
        exercise_policy(&v.to_string());
        exercise_policy(&serde_json::json!({"Version": "2012-10-17", "Statement": v}).to_string());
        exercise_policy(&serde_json::json!({"Statement": [{"Effect": "Allow", "Principal": "*",
            "Action": "s3:*", "Resource": "arn:aws:s3:::bkt/*", "Condition": v}]}).to_string());
    }

    #[test]
    fn policy_parser_never_panics_on_statement_parts(
        parts in proptest::collection::vec((proptest::sample::select(WORDS), json_value()), 0..8)
    ) {
        let stmt: Map<String, Value> = parts.into_iter().map(|(k, v)| (k.to_owned(), v)).collect();
        exercise_policy(&serde_json::json!({"Version": "2012-10-17", "Statement": [stmt]}).to_string());
    }

    #[test]
    fn xml_parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        exercise_xml(&bytes);
    }

    #[test]
    fn xml_parsers_never_panic_on_near_documents(parts in proptest::collection::vec(proptest::sample::select(XML_WORDS), 0..40)) {
        exercise_xml(parts.concat().as_bytes());
    }

    #[test]
    fn header_parsers_never_panic(s in any::<String>(), t in "[idurmeAls=\", ]{0,30}") {
        for v in [&s, &t] {
            if let Err(e) = parse_grantees("x-amz-grant-read", v, None) {
                assert!(matches!(e.code, ErrorCode::InvalidArgument | ErrorCode::UnresolvableGrantByEmailAddress));
            }
            let _ = CannedAcl::parse(v);
            let h = AclHeaders { grant_read: Some(v), ..Default::default() };
            let _ = h.parse(None);
        }
        let _ = s3hpc_authz::cidr::Cidr::parse(&s);
        let _ = s3hpc_authz::wildcard::matches(&s, &t);
    }
}
