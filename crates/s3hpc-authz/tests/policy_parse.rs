//! Validation rules of PutBucketPolicy: each test names the rule it guards.

use s3hpc_authz::policy::{self, ParseOptions, Policy, PrincipalId, Version};
use s3hpc_authz::{AuthzError, ErrorCode};

const B: &str = "bkt";

fn stmt(body: &str) -> String {
    format!(r#"{{"Version":"2012-10-17","Statement":[{body}]}}"#)
}

fn allow(principal: &str, action: &str, resource: &str) -> String {
    stmt(&format!(r#"{{"Effect":"Allow","Principal":{principal},"Action":{action},"Resource":{resource}}}"#))
}

fn err_of(text: &str) -> AuthzError {
    match Policy::parse(text, B) {
        Ok(p) => panic!("accepted: {text}\n{p:?}"),
        Err(e) => e,
    }
}

fn msg(text: &str) -> String {
    let e = err_of(text);
    assert_eq!(e.code, ErrorCode::MalformedPolicy, "{text}");
    assert_eq!(e.http_status(), 400);
    e.message
}

fn ok(text: &str) -> Policy {
    Policy::parse(text, B).unwrap_or_else(|e| panic!("refused {text}: {e}"))
}

#[test]
fn minimal_policy_parses() {
    let p = ok(&allow(r#""*""#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#));
    assert_eq!(p.version, Version::V2012_10_17);
    assert_eq!(p.statements.len(), 1);
    assert_eq!(p.statements[0].principal.ids, vec![PrincipalId::Everyone]);
}

#[test]
fn not_json_is_refused_with_first_byte_message() {
    for t in ["", "invalid json", "[1]", "  \"x\"", "null"] {
        assert_eq!(msg(t), policy::MSG_NOT_JSON, "{t:?}");
    }
}

#[test]
fn broken_json_after_brace_is_invalid_json() {
    for t in ["{", "{\"Version\":", "{\"Statement\":[}", "{} trailing"] {
        assert_eq!(msg(t), policy::MSG_INVALID_JSON, "{t:?}");
    }
}

#[test]
fn duplicate_member_names_are_refused() {
    let t = r#"{"Statement":[{"Effect":"Allow","Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]}"#;
    assert_eq!(msg(t), policy::MSG_INVALID_JSON);
}

#[test]
fn normalized_size_limit() {
    let many: Vec<String> = (0..1200).map(|i| format!("\"arn:aws:s3:::bkt/k{i:05}\"")).collect();
    let big = allow(r#""*""#, r#""s3:GetObject""#, &format!("[{}]", many.join(",")));
    assert!(msg(&big).starts_with("Normalized policy document exceeds the maximum allowed size of 20480 bytes"));
    // Whitespace does not count.
    let few: Vec<String> = (0..50).map(|i| format!("\"arn:aws:s3:::bkt/k{i}\"")).collect();
    let padded = allow(r#""*""#, r#""s3:GetObject""#, &format!("[{}]", few.join(&format!(",{}", " ".repeat(500)))));
    assert!(padded.len() > 20480);
    ok(&padded);
}

#[test]
fn unknown_top_level_field() {
    assert_eq!(msg(r#"{"Statement":[],"Foo":1}"#), "Unknown field Foo");
}

#[test]
fn unknown_statement_field() {
    let t = stmt(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*","Bogus":"x"}"#,
    );
    assert_eq!(msg(&t), "Unknown field Bogus");
    // Element names are case-sensitive.
    let t = stmt(r#"{"effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), "Unknown field effect");
}

#[test]
fn version_must_be_one_of_two() {
    let body = r#"[{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}]"#;
    for v in [r#""2020-01-01""#, "2012", r#""""#] {
        assert_eq!(msg(&format!(r#"{{"Version":{v},"Statement":{body}}}"#)), policy::MSG_VERSION, "{v}");
    }
    assert_eq!(ok(&format!(r#"{{"Version":"2008-10-17","Statement":{body}}}"#)).version, Version::V2008_10_17);
    assert_eq!(ok(&format!(r#"{{"Statement":{body}}}"#)).version, Version::V2008_10_17);
}

#[test]
fn statement_required_and_not_empty() {
    assert_eq!(msg("{}"), "Missing required field Statement");
    assert_eq!(msg(r#"{"Statement":[]}"#), policy::MSG_EMPTY);
    assert_eq!(msg(r#"{"Statement":"x"}"#), policy::MSG_SYNTAX);
    assert_eq!(msg(r#"{"Statement":["x"]}"#), policy::MSG_SYNTAX);
}

#[test]
fn statement_may_be_a_single_object() {
    let t = r#"{"Statement":{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt"}}"#;
    assert_eq!(ok(t).statements.len(), 1);
}

#[test]
fn id_and_sid_must_be_strings() {
    let s = r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#;
    assert_eq!(msg(&format!(r#"{{"Id":5,"Statement":[{s}]}}"#)), policy::MSG_SYNTAX);
    let t =
        stmt(r#"{"Sid":1,"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), policy::MSG_SYNTAX);
    let p = ok(&format!(r#"{{"Id":"x","Statement":[{s}]}}"#));
    assert_eq!(p.id.as_deref(), Some("x"));
}

#[test]
fn effect_required_and_case_sensitive() {
    let t = stmt(r#"{"Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), "Missing required field Effect");
    let t = stmt(r#"{"Effect":"allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), "Invalid effect: allow");
}

#[test]
fn principal_action_resource_required() {
    let t = stmt(r#"{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), "Missing required field Principal");
    let t = stmt(r#"{"Effect":"Allow","Principal":"*","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(msg(&t), "Missing required field Action");
    let t = stmt(r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject"}"#);
    assert_eq!(msg(&t), "Missing required field Resource");
}

#[test]
fn element_and_its_negation_are_exclusive() {
    let t = stmt(
        r#"{"Effect":"Deny","Principal":"*","NotPrincipal":{"AWS":"a"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(msg(&t), policy::MSG_SYNTAX);
    let t = stmt(
        r#"{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","NotAction":"s3:PutObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(msg(&t), policy::MSG_SYNTAX);
    let t = stmt(
        r#"{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*","NotResource":"arn:aws:s3:::bkt/x"}"#,
    );
    assert_eq!(msg(&t), policy::MSG_SYNTAX);
}

#[test]
fn null_and_wrongly_typed_values() {
    assert_eq!(msg(&allow(r#""*""#, "null", r#""arn:aws:s3:::bkt/*""#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&allow(r#""*""#, "[]", r#""arn:aws:s3:::bkt/*""#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&allow(r#""*""#, "[1]", r#""arn:aws:s3:::bkt/*""#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&allow(r#""*""#, r#""s3:GetObject""#, "{}")), policy::MSG_SYNTAX);
}

#[test]
fn not_principal_only_with_deny() {
    let body = |effect: &str| {
        stmt(&format!(
            r#"{{"Effect":"{effect}","NotPrincipal":{{"AWS":"alice"}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}}"#
        ))
    };
    assert_eq!(msg(&body("Allow")), policy::MSG_PRINCIPAL);
    assert!(ok(&body("Deny")).statements[0].principal.negated);
}

#[test]
fn principal_forms_accepted() {
    let cases: &[(&str, PrincipalId)] = &[
        (r#""*""#, PrincipalId::Everyone),
        (r#"{"AWS":"*"}"#, PrincipalId::Everyone),
        (r#"{"AWS":"111122223333"}"#, PrincipalId::Account("111122223333".into())),
        (r#"{"AWS":"arn:aws:iam::111122223333:root"}"#, PrincipalId::Account("111122223333".into())),
        (
            r#"{"AWS":"arn:aws:iam::111122223333:user/path/alice"}"#,
            PrincipalId::User { account: "111122223333".into(), name: "alice".into() },
        ),
        (
            r#"{"CanonicalUser":"79a59df900b949e55d96a1e698fbace"}"#,
            PrincipalId::Account("79a59df900b949e55d96a1e698fbace".into()),
        ),
        (r#"{"Service":"logging.s3.amazonaws.com"}"#, PrincipalId::Service("logging.s3.amazonaws.com".into())),
    ];
    for (p, want) in cases {
        let pol = ok(&allow(p, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#));
        assert_eq!(pol.statements[0].principal.ids, vec![want.clone()], "{p}");
    }
    let pol = ok(&allow(r#"{"AWS":["a","b"],"CanonicalUser":"c"}"#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#));
    assert_eq!(pol.statements[0].principal.ids.len(), 3);
}

#[test]
fn principal_forms_refused() {
    for p in [
        r#""alice""#,
        r#""a*""#,
        r#"{"AWS":"al*ce"}"#,
        r#"{"AWS":"arn:aws:iam::*:root"}"#,
        r#"{"AWS":"arn:aws:iam::111122223333:role/r"}"#,
        r#"{"AWS":"arn:aws:iam::111122223333:user/a*"}"#,
        r#"{"AWS":"arn:aws:iam::111122223333"}"#,
        r#"{"AWS":""}"#,
        r#"{"AWS":[]}"#,
        r#"{"AWS":5}"#,
        r#"{"Federated":"cognito-identity.amazonaws.com"}"#,
        r#"{"CanonicalUser":"*"}"#,
        r#"{"Service":"*"}"#,
        "{}",
        "5",
    ] {
        assert_eq!(msg(&allow(p, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#)), policy::MSG_PRINCIPAL, "{p}");
    }
}

#[test]
fn principal_must_name_a_known_account_when_asked() {
    let exists = |id: &str| id == "alice";
    let opts = ParseOptions { bucket: Some(B), account_exists: Some(&exists) };
    let good = allow(r#"{"AWS":"alice"}"#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#);
    assert!(Policy::parse_with(&good, &opts).is_ok());
    let bad = allow(r#"{"AWS":"arn:aws:iam::mallory:root"}"#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#);
    assert_eq!(Policy::parse_with(&bad, &opts).unwrap_err().message, policy::MSG_PRINCIPAL);
    let bad = allow(r#"{"CanonicalUser":"bob"}"#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#);
    assert_eq!(Policy::parse_with(&bad, &opts).unwrap_err().message, policy::MSG_PRINCIPAL);
    // `*` needs no account.
    let star = allow(r#""*""#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt/*""#);
    assert!(Policy::parse_with(&star, &opts).is_ok());
}

#[test]
fn actions_must_be_known_s3_actions() {
    for a in [
        r#""s3:GetObjekt""#,
        r#""ec2:*""#,
        r#""GetObject""#,
        r#""s3:""#,
        r#""s3:Nope*""#,
        r#""s3:PutObjectLockConfiguration""#,
    ] {
        assert_eq!(msg(&allow(r#""*""#, a, r#""arn:aws:s3:::bkt/*""#)), policy::MSG_ACTION, "{a}");
    }
    for a in [r#""S3:GETOBJECT""#, r#""s3:get*""#, r#""s3:*""#, r#""*""#, r#""s3:Get?bject""#] {
        ok(&allow(r#""*""#, a, r#""arn:aws:s3:::bkt/*""#));
    }
}

#[test]
fn resources_must_belong_to_the_bucket() {
    for r in [
        r#""*""#,
        r#""arn:aws:s3:::other/*""#,
        r#""arn:aws:s3:::other""#,
        r#""bkt/*""#,
        r#""arn:aws:s3:::""#,
        r#""arn:aws:s3:::/x""#,
        r#""arn:aws:s3:us-east-1::bkt/*""#,
        r#""arn:aws:s3:::${aws:username}/*""#,
        r#"["arn:aws:s3:::bkt/*","arn:aws:s3:::other/*"]"#,
    ] {
        assert_eq!(msg(&allow(r#""*""#, r#""s3:GetObject""#, r)), policy::MSG_RESOURCE, "{r}");
    }
    for r in [r#""arn:aws:s3:::*""#, r#""arn:aws:s3:::*/*""#, r#""arn:aws:s3:::b*""#, r#""arn:aws:s3:::bk?/x/*""#] {
        ok(&allow(r#""*""#, r#""s3:GetObject""#, r));
    }
    // A stored policy is not checked against a bucket.
    assert!(Policy::parse_stored(&allow(r#""*""#, r#""s3:GetObject""#, r#""arn:aws:s3:::other/*""#)).is_ok());
}

#[test]
fn each_action_must_apply_to_some_resource() {
    let na = policy::MSG_NOT_APPLICABLE;
    assert_eq!(msg(&allow(r#""*""#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt""#)), na);
    assert_eq!(msg(&allow(r#""*""#, r#""s3:ListBucket""#, r#""arn:aws:s3:::bkt/*""#)), na);
    assert_eq!(msg(&allow(r#""*""#, r#"["s3:GetObject","s3:ListBucket"]"#, r#""arn:aws:s3:::bkt/*""#)), na);
    assert_eq!(msg(&allow(r#""*""#, r#""s3:ListAllMyBuckets""#, r#""arn:aws:s3:::bkt""#)), na);
    assert_eq!(msg(&allow(r#""*""#, r#""s3:PutObject""#, r#""arn:aws:s3:::bkt""#)), na);
    ok(&allow(r#""*""#, r#"["s3:GetObject","s3:ListBucket"]"#, r#"["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"]"#));
    ok(&allow(r#""*""#, r#""s3:*""#, r#""arn:aws:s3:::bkt/*""#));
    ok(&allow(r#""*""#, r#""s3:Get*""#, r#""arn:aws:s3:::bkt""#));
    ok(&allow(r#""*""#, r#""s3:GetObject""#, r#""arn:aws:s3:::bkt*""#));
    // NotAction / NotResource are not checked.
    ok(&stmt(r#"{"Effect":"Deny","Principal":"*","NotAction":"s3:ListBucket","Resource":"arn:aws:s3:::bkt/*"}"#));
}

fn cond(c: &str) -> String {
    stmt(&format!(
        r#"{{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{c}}}"#
    ))
}

#[test]
fn condition_operators_must_be_known() {
    assert_eq!(msg(&cond(r#"{"StringEqualz":{"s3:prefix":"a"}}"#)), "Invalid Condition type : StringEqualz");
    assert_eq!(msg(&cond(r#"{"stringequals":{"s3:prefix":"a"}}"#)), "Invalid Condition type : stringequals");
    assert_eq!(msg(&cond(r#"{"NullIfExists":{"s3:prefix":"true"}}"#)), "Invalid Condition type : NullIfExists");
    assert_eq!(
        msg(&cond(r#"{"ForSomeValues:StringEquals":{"s3:prefix":"a"}}"#)),
        "Invalid Condition type : ForSomeValues:StringEquals"
    );
    for op in [
        "StringEquals",
        "StringNotEqualsIfExists",
        "ForAnyValue:StringLike",
        "ForAllValues:StringNotLike",
        "StringEqualsIgnoreCase",
        "ArnLike",
    ] {
        ok(&cond(&format!(r#"{{"{op}":{{"s3:prefix":"a"}}}}"#)));
    }
}

#[test]
fn condition_keys_must_be_known() {
    assert_eq!(msg(&cond(r#"{"StringEquals":{"s3:VersionStatus":"x"}}"#)), policy::MSG_CONDITION_KEY);
    assert_eq!(msg(&cond(r#"{"StringEquals":{"foo":"x"}}"#)), policy::MSG_CONDITION_KEY);
    assert_eq!(msg(&cond(r#"{"StringEquals":{"s3:ExistingObjectTag/":"x"}}"#)), policy::MSG_CONDITION_KEY);
    ok(&cond(r#"{"StringEquals":{"aws:AnyGlobalKey":"x","S3:Prefix":"y","s3:ExistingObjectTag/Team":"z"}}"#));
}

#[test]
fn condition_values_are_checked() {
    assert_eq!(msg(&cond(r#"{"IpAddress":{"aws:SourceIp":"10.0.0.300/8"}}"#)), policy::MSG_IP);
    assert_eq!(msg(&cond(r#"{"NotIpAddress":{"aws:SourceIp":["10.0.0.0/8","nope"]}}"#)), policy::MSG_IP);
    assert!(msg(&cond(r#"{"NumericLessThan":{"s3:max-keys":"ten"}}"#)).starts_with("Invalid numeric value"));
    assert!(msg(&cond(r#"{"Bool":{"aws:SecureTransport":"yes"}}"#)).starts_with("Invalid boolean value"));
    assert!(msg(&cond(r#"{"DateLessThan":{"aws:CurrentTime":"tomorrow"}}"#)).starts_with("Invalid date value"));
    assert_eq!(msg(&cond(r#"{"BinaryEquals":{"aws:userid":"YQ=="}}"#)), "Invalid Condition type : BinaryEquals");
    assert_eq!(msg(&cond(r#"{"StringEquals":{"s3:prefix":[]}}"#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&cond(r#"{"StringEquals":{"s3:prefix":{"a":1}}}"#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&cond(r#"{"StringEquals":"x"}"#)), policy::MSG_SYNTAX);
    assert_eq!(msg(&cond(r#""x""#)), policy::MSG_SYNTAX);
    // Numbers and booleans need no quotes.
    let p = ok(&cond(r#"{"NumericLessThan":{"s3:max-keys":10},"Bool":{"aws:SecureTransport":true}}"#));
    let c = &p.statements[0].conditions;
    assert_eq!(c[0].values, vec!["10"]);
    assert_eq!(c[1].values, vec!["true"]);
    ok(&cond(r#"{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32","192.0.2.1"]}}"#));
}
