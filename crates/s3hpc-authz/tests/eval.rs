//! Policy evaluation: each test guards one matching rule.

use s3hpc_authz::{Account, Decision, Policy, Principal, RequestContext, evaluate};

fn pol(statements: &str) -> Policy {
    let t = format!(r#"{{"Version":"2012-10-17","Statement":[{statements}]}}"#);
    Policy::parse(&t, "bkt").unwrap_or_else(|e| panic!("{e}: {t}"))
}

fn pol08(statements: &str) -> Policy {
    let t = format!(r#"{{"Version":"2008-10-17","Statement":[{statements}]}}"#);
    Policy::parse(&t, "bkt").unwrap()
}

fn alice() -> Principal {
    Principal::Account(Account { id: "alice".into(), name: Some("al".into()), admin: false })
}

fn get(p: Principal, key: &str) -> RequestContext {
    RequestContext::new(p, "s3:GetObject", "bkt", Some(key.into()))
}

fn list(p: Principal) -> RequestContext {
    RequestContext::new(p, "s3:ListBucket", "bkt", None)
}

const ALLOW_GET_ALL: &str =
    r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#;

#[test]
fn star_principal_includes_anonymous() {
    let p = pol(ALLOW_GET_ALL);
    assert_eq!(evaluate(&p, &get(Principal::Anonymous, "k")), Decision::Allow);
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow);
}

#[test]
fn account_principals_match_only_their_account() {
    for form in [r#""alice""#, r#""arn:aws:iam::alice:root""#] {
        let p = pol(&format!(
            r#"{{"Effect":"Allow","Principal":{{"AWS":{form}}},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}}"#
        ));
        assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow, "{form}");
        assert_eq!(evaluate(&p, &get(Principal::account("bob"), "k")), Decision::NoMatch, "{form}");
        assert_eq!(evaluate(&p, &get(Principal::Anonymous, "k")), Decision::NoMatch, "{form}");
    }
    let p = pol(
        r#"{"Effect":"Allow","Principal":{"CanonicalUser":"alice"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow);
    assert_eq!(evaluate(&p, &get(Principal::account("bob"), "k")), Decision::NoMatch);
}

#[test]
fn user_arn_needs_the_user_name() {
    let p = pol(
        r#"{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::alice:user/al"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow);
    assert_eq!(evaluate(&p, &get(Principal::account("alice"), "k")), Decision::NoMatch);
}

#[test]
fn service_principals_never_match() {
    let p = pol(
        r#"{"Effect":"Allow","Principal":{"Service":"logging.s3.amazonaws.com"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::NoMatch);
    assert_eq!(evaluate(&p, &get(Principal::Anonymous, "k")), Decision::NoMatch);
}

#[test]
fn not_principal_denies_everyone_else() {
    let p = pol(
        r#"{"Effect":"Deny","NotPrincipal":{"AWS":"alice"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#,
    );
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::NoMatch);
    assert_eq!(evaluate(&p, &get(Principal::account("bob"), "k")), Decision::ExplicitDeny);
    assert_eq!(evaluate(&p, &get(Principal::Anonymous, "k")), Decision::ExplicitDeny);
}

#[test]
fn actions_match_with_wildcards_ignoring_case() {
    let p = pol(r#"{"Effect":"Allow","Principal":"*","Action":"S3:get*","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow);
    let put = RequestContext::new(alice(), "s3:PutObject", "bkt", Some("k".into()));
    assert_eq!(evaluate(&p, &put), Decision::NoMatch);
    let p = pol(r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObjec?","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::Allow);
}

#[test]
fn not_action_matches_the_other_actions() {
    let p = pol(r#"{"Effect":"Deny","Principal":"*","NotAction":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(evaluate(&p, &get(alice(), "k")), Decision::NoMatch);
    let put = RequestContext::new(alice(), "s3:PutObject", "bkt", Some("k".into()));
    assert_eq!(evaluate(&p, &put), Decision::ExplicitDeny);
}

#[test]
fn resources_match_with_wildcards_case_sensitively() {
    let p = pol(r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/pub/*"}"#);
    assert_eq!(evaluate(&p, &get(alice(), "pub/a/b")), Decision::Allow);
    assert_eq!(evaluate(&p, &get(alice(), "Pub/a")), Decision::NoMatch);
    assert_eq!(evaluate(&p, &get(alice(), "private/a")), Decision::NoMatch);
    // Object patterns do not name the bucket.
    let p = pol(r#"{"Effect":"Allow","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}"#);
    assert_eq!(evaluate(&p, &list(alice())), Decision::NoMatch);
}

#[test]
fn not_resource_matches_the_other_resources() {
    let p = pol(r#"{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","NotResource":"arn:aws:s3:::bkt/pub/*"}"#);
    assert_eq!(evaluate(&p, &get(alice(), "pub/x")), Decision::NoMatch);
    assert_eq!(evaluate(&p, &get(alice(), "secret")), Decision::ExplicitDeny);
}

#[test]
fn explicit_deny_beats_allow_in_any_order() {
    let deny = r#"{"Effect":"Deny","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/secret"}"#;
    for p in [pol(&format!("{ALLOW_GET_ALL},{deny}")), pol(&format!("{deny},{ALLOW_GET_ALL}"))] {
        assert_eq!(evaluate(&p, &get(alice(), "secret")), Decision::ExplicitDeny);
        assert_eq!(evaluate(&p, &get(alice(), "open")), Decision::Allow);
    }
}

fn cond_policy(c: &str) -> Policy {
    pol(&format!(
        r#"{{"Effect":"Allow","Principal":"*","Action":["s3:ListBucket","s3:GetObject"],"Resource":["arn:aws:s3:::bkt","arn:aws:s3:::bkt/*"],"Condition":{c}}}"#
    ))
}

fn d(p: &Policy, ctx: &RequestContext) -> bool {
    evaluate(p, ctx) == Decision::Allow
}

#[test]
fn string_equals_and_absent_keys() {
    let p = cond_policy(r#"{"StringEquals":{"s3:prefix":["home/","pub/"]}}"#);
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "pub/")));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "Pub/")));
    assert!(!d(&p, &list(alice())), "absent key fails a positive operator");
    let p = cond_policy(r#"{"StringNotEquals":{"s3:prefix":"secret/"}}"#);
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "pub/")));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "secret/")));
    assert!(d(&p, &list(alice())), "absent key satisfies a negated operator");
}

#[test]
fn string_ignore_case_and_like() {
    let p = cond_policy(r#"{"StringEqualsIgnoreCase":{"s3:x-amz-acl":"PRIVATE"}}"#);
    assert!(d(&p, &list(alice()).with_key("s3:x-amz-acl", "private")));
    assert!(!d(&p, &list(alice()).with_key("s3:x-amz-acl", "public-read")));
    let p = cond_policy(r#"{"StringNotEqualsIgnoreCase":{"s3:x-amz-acl":"PRIVATE"}}"#);
    assert!(!d(&p, &list(alice()).with_key("s3:x-amz-acl", "Private")));
    let p = cond_policy(r#"{"StringLike":{"s3:prefix":"home/*"}}"#);
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "home/al/")));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "HOME/al/")));
    let p = cond_policy(r#"{"StringNotLike":{"s3:x-amz-acl":"public*"}}"#);
    assert!(!d(&p, &list(alice()).with_key("s3:x-amz-acl", "public-read")));
    assert!(d(&p, &list(alice()).with_key("s3:x-amz-acl", "private")));
}

#[test]
fn ip_address_conditions() {
    let p = cond_policy(r#"{"IpAddress":{"aws:SourceIp":["10.0.0.0/8","2001:db8::/32"]}}"#);
    assert!(d(&p, &list(alice()).with_source_ip("10.1.2.3".parse().unwrap())));
    assert!(d(&p, &list(alice()).with_source_ip("2001:db8::5".parse().unwrap())));
    assert!(!d(&p, &list(alice()).with_source_ip("192.0.2.1".parse().unwrap())));
    assert!(!d(&p, &list(alice())), "no address: IpAddress fails");
    let p = cond_policy(r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#);
    assert!(!d(&p, &list(alice()).with_source_ip("10.1.2.3".parse().unwrap())));
    assert!(d(&p, &list(alice()).with_source_ip("192.0.2.1".parse().unwrap())));
    assert!(d(&p, &list(alice())), "no address: NotIpAddress holds");
}

#[test]
fn bool_secure_transport() {
    let p = cond_policy(r#"{"Bool":{"aws:SecureTransport":"true"}}"#);
    assert!(d(&p, &list(alice()).with_secure_transport(true)));
    assert!(!d(&p, &list(alice()).with_secure_transport(false)));
    let p = cond_policy(r#"{"Bool":{"aws:SecureTransport":false}}"#);
    assert!(d(&p, &list(alice())));
}

#[test]
fn numeric_conditions() {
    let p = cond_policy(r#"{"NumericLessThanEquals":{"s3:max-keys":"100"}}"#);
    assert!(d(&p, &list(alice()).with_key("s3:max-keys", "100")));
    assert!(d(&p, &list(alice()).with_key("s3:max-keys", "7")));
    assert!(!d(&p, &list(alice()).with_key("s3:max-keys", "101")));
    assert!(!d(&p, &list(alice()).with_key("s3:max-keys", "lots")));
    let cases = [
        ("NumericEquals", "5", true, "6", false),
        ("NumericNotEquals", "6", true, "5", false),
        ("NumericLessThan", "4", true, "5", false),
        ("NumericGreaterThan", "6", true, "5", false),
        ("NumericGreaterThanEquals", "5", true, "4", false),
    ];
    for (op, yes, y, no, n) in cases {
        let p = cond_policy(&format!(r#"{{"{op}":{{"s3:max-keys":5}}}}"#));
        assert_eq!(d(&p, &list(alice()).with_key("s3:max-keys", yes)), y, "{op} {yes}");
        assert_eq!(d(&p, &list(alice()).with_key("s3:max-keys", no)), n, "{op} {no}");
    }
}

#[test]
fn if_exists_holds_when_absent() {
    let p = cond_policy(r#"{"StringEqualsIfExists":{"s3:prefix":"pub/"}}"#);
    assert!(d(&p, &list(alice())));
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "pub/")));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "x/")));
    let p = cond_policy(r#"{"IpAddressIfExists":{"aws:SourceIp":"10.0.0.0/8"}}"#);
    assert!(d(&p, &list(alice())));
    assert!(!d(&p, &list(alice()).with_source_ip("192.0.2.1".parse().unwrap())));
}

#[test]
fn null_operator() {
    let p = cond_policy(r#"{"Null":{"s3:prefix":"true"}}"#);
    assert!(d(&p, &list(alice())));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "a")));
    let p = cond_policy(r#"{"Null":{"s3:prefix":"false"}}"#);
    assert!(!d(&p, &list(alice())));
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "a")));
}

#[test]
fn set_qualifiers() {
    let any = cond_policy(r#"{"ForAnyValue:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}"#);
    let all = cond_policy(r#"{"ForAllValues:StringEquals":{"s3:RequestObjectTagKeys":["a","b"]}}"#);
    let ctx = |vals: &[&str]| vals.iter().fold(list(alice()), |c, v| c.with_key("s3:RequestObjectTagKeys", *v));
    assert!(d(&any, &ctx(&["a", "z"])));
    assert!(!d(&any, &ctx(&["y", "z"])));
    assert!(!d(&any, &ctx(&[])), "ForAnyValue: absent key is false");
    assert!(d(&all, &ctx(&["a", "b"])));
    assert!(!d(&all, &ctx(&["a", "z"])));
    assert!(d(&all, &ctx(&[])), "ForAllValues: absent key is true");
    let not_any = cond_policy(r#"{"ForAnyValue:StringNotEquals":{"s3:RequestObjectTagKeys":["a"]}}"#);
    assert!(d(&not_any, &ctx(&["a", "z"])));
    assert!(!d(&not_any, &ctx(&["a"])));
}

#[test]
fn all_conditions_must_hold_and_any_value_may_match() {
    let p = cond_policy(
        r#"{"StringEquals":{"s3:prefix":["a/","b/"],"s3:delimiter":"/"},"Bool":{"aws:SecureTransport":"true"}}"#,
    );
    let base = || list(alice()).with_key("s3:prefix", "b/").with_key("s3:delimiter", "/");
    assert!(d(&p, &base().with_secure_transport(true)));
    assert!(!d(&p, &base()));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "b/").with_secure_transport(true)));
}

#[test]
fn existing_object_tags() {
    let p = cond_policy(r#"{"StringEquals":{"s3:ExistingObjectTag/security":"public"}}"#);
    let c = get(alice(), "k").with_existing_object_tags([("security", "public")]);
    assert!(d(&p, &c));
    let c = get(alice(), "k").with_existing_object_tags([("security", "secret")]);
    assert!(!d(&p, &c));
    // The tag key is case-sensitive, the prefix is not.
    let c = get(alice(), "k").with_existing_object_tags([("Security", "public")]);
    assert!(!d(&p, &c));
    let p = cond_policy(r#"{"StringEquals":{"S3:existingobjecttag/security":"public"}}"#);
    assert!(d(&p, &get(alice(), "k").with_existing_object_tags([("security", "public")])));
}

#[test]
fn user_id_and_principal_type() {
    let p = cond_policy(r#"{"StringEquals":{"aws:userid":"anonymous"}}"#);
    assert!(d(&p, &list(Principal::Anonymous)));
    assert!(!d(&p, &list(alice())));
    let p = cond_policy(r#"{"StringEquals":{"aws:username":"al"}}"#);
    assert!(d(&p, &list(alice())));
    assert!(!d(&p, &list(Principal::account("alice"))));
}

#[test]
fn policy_variables_in_resources_and_conditions() {
    let p = pol(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/home/${aws:username}/*"}"#,
    );
    assert!(d(&p, &get(alice(), "home/al/x")));
    assert!(!d(&p, &get(alice(), "home/bob/x")));
    assert!(!d(&p, &get(Principal::account("alice"), "home//x")), "no value: matches nothing");
    let p = pol(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:ListBucket","Resource":"arn:aws:s3:::bkt","Condition":{"StringLike":{"s3:prefix":"home/${aws:username}/*"}}}"#,
    );
    assert!(d(&p, &list(alice()).with_key("s3:prefix", "home/al/docs/")));
    assert!(!d(&p, &list(alice()).with_key("s3:prefix", "home/bob/")));
    let p =
        pol(r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${*}${?}${$}"}"#);
    assert!(d(&p, &get(alice(), "*?$")));
    assert!(!d(&p, &get(alice(), "abc")));
    let p = pol(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${aws:username, 'shared'}/*"}"#,
    );
    assert!(d(&p, &get(Principal::account("x"), "shared/f")));
}

#[test]
fn variables_are_literal_under_2008() {
    let p = pol08(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/${aws:username}/*"}"#,
    );
    assert!(!d(&p, &get(alice(), "al/x")));
    assert!(d(&p, &get(alice(), "${aws:username}/x")));
}

#[test]
fn date_conditions_on_current_time() {
    let p = cond_policy(
        r#"{"DateLessThan":{"aws:CurrentTime":"2030-01-01T00:00:00Z"},"DateGreaterThanEquals":{"aws:EpochTime":"2020-01-01"}}"#,
    );
    let at = |t: i64| list(alice()).with_current_time(t);
    assert!(d(&p, &at(1_700_000_000)));
    assert!(!d(&p, &at(1_900_000_000)), "after the end");
    assert!(!d(&p, &at(1_893_456_000)), "DateLessThan excludes the bound");
    assert!(d(&p, &at(1_893_455_999)));
    assert!(d(&p, &at(1_577_836_800)), "DateGreaterThanEquals includes the bound");
    assert!(!d(&p, &at(1_500_000_000)), "before the start");
    assert!(!d(&p, &list(alice())), "no time: positive date operators fail");
    let p = cond_policy(r#"{"DateNotEquals":{"aws:EpochTime":1700000000}}"#);
    assert!(!d(&p, &at(1_700_000_000)));
    assert!(d(&p, &at(1_700_000_001)));
    let p = cond_policy(r#"{"DateEquals":{"aws:CurrentTime":"2023-11-14T23:13:20+01:00"}}"#);
    assert!(d(&p, &at(1_700_000_000)));
    let p = cond_policy(
        r#"{"DateLessThanEquals":{"aws:CurrentTime":"2023-11-14T22:13:20Z"},"DateGreaterThan":{"aws:CurrentTime":"2023-11-14"}}"#,
    );
    assert!(d(&p, &at(1_700_000_000)));
    assert!(!d(&p, &at(1_700_000_001)));
}
