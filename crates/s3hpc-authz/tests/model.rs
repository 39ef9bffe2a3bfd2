//! Property test: the policy evaluator against a small, independent reference model.
//!
//! Random policies over a small vocabulary (principals, actions and resources with wildcards,
//! negated elements, string conditions with and without `IfExists`, IP and Bool conditions) are written as JSON, parsed by the crate and evaluated
//! for random requests; the model evaluates the same statements directly with naive code.

use proptest::prelude::*;
use s3hpc_authz::{Decision, Policy, Principal, RequestContext, evaluate};
use serde_json::{Value, json};

#[derive(Debug, Clone)]
struct MStmt {
    deny: bool,
    not_principal: bool,
    /// `None`: `"*"`; else these account ids.
    principals: Option<Vec<&'static str>>,
    not_action: bool,
    actions: Vec<&'static str>,
    not_resource: bool,
    resources: Vec<&'static str>,
    /// A condition on `s3:prefix`: operator index into `PREFIX_OPS`, and its values.
    prefix_cond: Option<(usize, Vec<&'static str>)>,
    ip_10: Option<bool>,
    secure: Option<bool>,
}

#[derive(Debug, Clone)]
struct MReq {
    who: Option<&'static str>,
    action: &'static str,
    key: Option<&'static str>,
    prefix: Option<&'static str>,
    ip: Option<&'static str>,
    secure: bool,
}

const ACCOUNTS: &[&str] = &["a", "b", "c"];
const ACTION_PATTERNS: &[&str] = &[
    "s3:GetObject",
    "s3:Get*",
    "s3:*Object",
    "*",
    "s3:ListBucket",
    "s3:PutObject",
    "S3:DELETEOBJECT",
    "s3:?etObject",
    "s3:List*",
];
const RESOURCE_PATTERNS: &[&str] = &[
    "arn:aws:s3:::bkt",
    "arn:aws:s3:::bkt/*",
    "arn:aws:s3:::bkt/x*",
    "arn:aws:s3:::bkt/x/?",
    "arn:aws:s3:::*",
    "arn:aws:s3:::b?t",
];
const ACTIONS: &[&str] = &["s3:GetObject", "s3:PutObject", "s3:ListBucket", "s3:DeleteObject", "s3:GetObjectAcl"];
const PREFIX_OPS: &[&str] = &[
    "StringEquals",
    "StringNotEquals",
    "StringLike",
    "StringNotLike",
    "StringEqualsIfExists",
    "StringNotEqualsIfExists",
];
const KEYS: &[&str] = &["x", "x/y", "z", "xa", "x/yy"];

fn subset(items: &'static [&'static str], max: usize) -> impl Strategy<Value = Vec<&'static str>> {
    proptest::sample::subsequence(items, 1..=max)
}

fn stmt() -> impl Strategy<Value = MStmt> {
    (
        any::<bool>(),
        any::<bool>(),
        proptest::option::of(subset(ACCOUNTS, 2)),
        any::<bool>(),
        subset(ACTION_PATTERNS, 3),
        any::<bool>(),
        subset(RESOURCE_PATTERNS, 3),
        proptest::option::of((0..PREFIX_OPS.len(), subset(&["p", "q", "p*"], 2))),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(
            |(deny, np, principals, not_action, actions, not_resource, resources, prefix_cond, ip_10, secure)| MStmt {
                deny,
                // NotPrincipal only with Deny (AWS refuses it with Allow).
                not_principal: np && deny,
                principals,
                not_action,
                actions,
                not_resource,
                resources,
                prefix_cond,
                ip_10,
                secure,
            },
        )
}

fn req() -> impl Strategy<Value = MReq> {
    (
        proptest::option::of(proptest::sample::select(ACCOUNTS)),
        proptest::sample::select(ACTIONS),
        proptest::sample::select(KEYS),
        proptest::option::of(proptest::sample::select(&["p", "q", "r", "pp", "p*"][..])),
        proptest::option::of(proptest::sample::select(&["10.1.2.3", "192.168.0.1", "2001:db8::1"][..])),
        any::<bool>(),
    )
        .prop_map(|(who, action, key, prefix, ip, secure)| MReq {
            who,
            action,
            key: if action == "s3:ListBucket" { None } else { Some(key) },
            prefix,
            ip,
            secure,
        })
}

fn to_json(stmts: &[MStmt]) -> String {
    let list: Vec<Value> = stmts
        .iter()
        .map(|s| {
            let mut o = serde_json::Map::new();
            o.insert("Effect".into(), json!(if s.deny { "Deny" } else { "Allow" }));
            let p = match &s.principals {
                None => json!("*"),
                Some(ids) => json!({ "AWS": ids }),
            };
            o.insert((if s.not_principal { "NotPrincipal" } else { "Principal" }).into(), p);
            o.insert((if s.not_action { "NotAction" } else { "Action" }).into(), json!(s.actions));
            o.insert((if s.not_resource { "NotResource" } else { "Resource" }).into(), json!(s.resources));
            let mut c = serde_json::Map::new();
            if let Some((op, vals)) = &s.prefix_cond {
                c.insert(PREFIX_OPS[*op].into(), json!({ "s3:prefix": vals }));
            }
            if let Some(b) = s.ip_10 {
                c.insert(
                    (if b { "IpAddress" } else { "NotIpAddress" }).into(),
                    json!({ "aws:SourceIp": "10.0.0.0/8" }),
                );
            }
            if let Some(b) = s.secure {
                c.insert("Bool".into(), json!({ "aws:SecureTransport": b }));
            }
            if !c.is_empty() {
                o.insert("Condition".into(), Value::Object(c));
            }
            Value::Object(o)
        })
        .collect();
    json!({ "Version": "2012-10-17", "Statement": list }).to_string()
}

/// Naive recursive wildcard matching (the model's own).
fn naive_glob(p: &[char], t: &[char]) -> bool {
    match (p.first(), t.first()) {
        (None, None) => true,
        (Some('*'), _) => naive_glob(&p[1..], t) || (!t.is_empty() && naive_glob(p, &t[1..])),
        (Some('?'), Some(_)) => naive_glob(&p[1..], &t[1..]),
        (Some(a), Some(b)) if a == b => naive_glob(&p[1..], &t[1..]),
        _ => false,
    }
}

fn glob(p: &str, t: &str) -> bool {
    naive_glob(&p.chars().collect::<Vec<_>>(), &t.chars().collect::<Vec<_>>())
}

fn model_stmt_applies(s: &MStmt, r: &MReq) -> bool {
    let named = match (&s.principals, r.who) {
        (None, _) => true,
        (Some(_), None) => false,
        (Some(ids), Some(w)) => ids.contains(&w),
    };
    if named == s.not_principal {
        return false;
    }
    let act = s.actions.iter().any(|a| glob(&a.to_lowercase(), &r.action.to_lowercase()));
    if act == s.not_action {
        return false;
    }
    let arn = match r.key {
        Some(k) => format!("arn:aws:s3:::bkt/{k}"),
        None => "arn:aws:s3:::bkt".to_string(),
    };
    let res = s.resources.iter().any(|p| glob(p, &arn));
    if res == s.not_resource {
        return false;
    }
    if let Some((op, vals)) = &s.prefix_cond {
        let holds = match (PREFIX_OPS[*op], r.prefix) {
            ("StringEquals", Some(v)) => vals.contains(&v),
            ("StringEquals", None) => false,
            ("StringNotEquals", Some(v)) => !vals.contains(&v),
            ("StringNotEquals", None) => true,
            ("StringLike", Some(v)) => vals.iter().any(|p| glob(p, v)),
            ("StringLike", None) => false,
            ("StringNotLike", Some(v)) => !vals.iter().any(|p| glob(p, v)),
            ("StringNotLike", None) => true,
            ("StringEqualsIfExists", Some(v)) => vals.contains(&v),
            ("StringNotEqualsIfExists", Some(v)) => !vals.contains(&v),
            (_, None) => true,
            _ => unreachable!(),
        };
        if !holds {
            return false;
        }
    }
    if let Some(want_in) = s.ip_10 {
        let inside = r.ip.is_some_and(|ip| ip.starts_with("10."));
        // IpAddress needs the address inside; NotIpAddress holds when outside or absent.
        if want_in != inside {
            return false;
        }
    }
    if let Some(b) = s.secure
        && b != r.secure
    {
        return false;
    }
    true
}

fn model(stmts: &[MStmt], r: &MReq) -> Decision {
    let applying: Vec<&MStmt> = stmts.iter().filter(|s| model_stmt_applies(s, r)).collect();
    if applying.iter().any(|s| s.deny) {
        Decision::ExplicitDeny
    } else if applying.is_empty() {
        Decision::NoMatch
    } else {
        Decision::Allow
    }
}

fn ctx(r: &MReq) -> RequestContext {
    let who = match r.who {
        None => Principal::Anonymous,
        Some(id) => Principal::account(id),
    };
    let mut c = RequestContext::new(who, r.action, "bkt", r.key.map(str::to_owned)).with_secure_transport(r.secure);
    if let Some(p) = r.prefix {
        c = c.with_key("s3:prefix", p);
    }
    if let Some(ip) = r.ip {
        c = c.with_source_ip(ip.parse().unwrap());
    }
    c
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, max_global_rejects: 100_000, ..ProptestConfig::default() })]

    #[test]
    fn evaluator_agrees_with_model(stmts in proptest::collection::vec(stmt(), 1..4), reqs in proptest::collection::vec(req(), 1..8)) {
        let text = to_json(&stmts);
        let policy = match Policy::parse_stored(&text) {
            Ok(p) => p,
            Err(e) => {
                // Only "Action does not apply" may refuse these documents.
                prop_assert_eq!(e.message.as_str(), s3hpc_authz::policy::MSG_NOT_APPLICABLE, "{}", text);
                return Err(TestCaseError::reject("action without a matching resource"));
            }
        };
        for r in &reqs {
            prop_assert_eq!(evaluate(&policy, &ctx(r)), model(&stmts, r), "{}\n{:?}", text, r);
        }
    }

    #[test]
    fn wildcard_agrees_with_naive(p in "[ab*?]{0,8}", t in "[ab]{0,10}", q in "[aé*?]{0,8}", u in "[aéb]{0,10}") {
        prop_assert_eq!(s3hpc_authz::wildcard::matches(&p, &t), glob(&p, &t));
        prop_assert_eq!(s3hpc_authz::wildcard::matches(&q, &u), glob(&q, &u));
    }
}
