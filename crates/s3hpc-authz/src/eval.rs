//! Evaluating a bucket policy against one request.

use crate::actions;
use crate::policy::{Condition, Effect, Operator, Patterns, Policy, PrincipalId, SetQualifier, Statement, Version};
use crate::wildcard;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::net::IpAddr;

/// An s3hpc account (an AWS account and its one user at once).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Account {
    /// The canonical user id (also the account id policies name).
    pub id: String,
    /// The user name (`aws:username`, `arn:aws:iam::ID:user/NAME`), if the account has one.
    pub name: Option<String>,
    /// An administrator: acts as the owner of every bucket and object.
    pub admin: bool,
}

/// Who makes a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// An unsigned request.
    Anonymous,
    /// A signed request of an account (or the node-local socket's mapped peer).
    Account(Account),
}

impl Principal {
    /// A plain (non-admin) account without a user name.
    pub fn account(id: impl Into<String>) -> Principal {
        Principal::Account(Account { id: id.into(), name: None, admin: false })
    }

    /// The account id, `None` for anonymous.
    pub fn id(&self) -> Option<&str> {
        match self {
            Principal::Anonymous => None,
            Principal::Account(a) => Some(&a.id),
        }
    }

    /// Whether this is an administrator.
    pub fn is_admin(&self) -> bool {
        matches!(self, Principal::Account(a) if a.admin)
    }
}

/// Everything a policy decision looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestContext {
    /// Who asks.
    pub principal: Principal,
    /// The policy action, e.g. `s3:GetObject` (see [`crate::S3OpAuthz::action`]).
    pub action: String,
    /// The bucket.
    pub bucket: String,
    /// The key, for object-level requests.
    pub key: Option<String>,
    /// The client's address (`aws:SourceIp`); absent: `IpAddress` fails, `NotIpAddress` holds.
    pub source_ip: Option<IpAddr>,
    /// Whether the request came over TLS (or the local socket path; `aws:SecureTransport`).
    pub secure_transport: bool,
    /// The request time in seconds since the epoch (`aws:CurrentTime`, `aws:EpochTime`); absent:
    /// `Date*` conditions on these keys see no value.
    pub current_time: Option<i64>,
    /// Further condition keys, by normalized name ([`actions::normalize_key`]): `s3:prefix`,
    /// `s3:delimiter`, `s3:max-keys`, `s3:x-amz-acl`, `s3:ExistingObjectTag/<k>`, ...
    pub keys: BTreeMap<String, Vec<String>>,
}

impl RequestContext {
    /// A context for `action` on `bucket` (and `key`).
    pub fn new(
        principal: Principal,
        action: impl Into<String>,
        bucket: impl Into<String>,
        key: Option<String>,
    ) -> Self {
        RequestContext {
            principal,
            action: action.into(),
            bucket: bucket.into(),
            key,
            source_ip: None,
            secure_transport: false,
            current_time: None,
            keys: BTreeMap::new(),
        }
    }

    /// Sets `aws:SourceIp`.
    pub fn with_source_ip(mut self, ip: IpAddr) -> Self {
        self.source_ip = Some(ip);
        self
    }

    /// Sets `aws:SecureTransport`.
    pub fn with_secure_transport(mut self, secure: bool) -> Self {
        self.secure_transport = secure;
        self
    }

    /// Adds a value of condition key `name` (any case).
    pub fn with_key(mut self, name: &str, value: impl Into<String>) -> Self {
        self.keys.entry(actions::normalize_key(name)).or_default().push(value.into());
        self
    }

    /// Sets the request time (seconds since the epoch) for `aws:CurrentTime` / `aws:EpochTime`.
    pub fn with_current_time(mut self, epoch_secs: i64) -> Self {
        self.current_time = Some(epoch_secs);
        self
    }

    /// Adds the listing keys `s3:prefix`, `s3:delimiter` and `s3:max-keys` that the request has.
    pub fn with_list_params(mut self, prefix: Option<&str>, delimiter: Option<&str>, max_keys: Option<u32>) -> Self {
        if let Some(p) = prefix {
            self = self.with_key("s3:prefix", p);
        }
        if let Some(d) = delimiter {
            self = self.with_key("s3:delimiter", d);
        }
        if let Some(m) = max_keys {
            self = self.with_key("s3:max-keys", m.to_string());
        }
        self
    }

    /// Adds `s3:x-amz-acl` and `s3:x-amz-grant-*` from a request's ACL headers.
    pub fn with_acl_headers(mut self, h: &crate::acl::AclHeaders<'_>) -> Self {
        let pairs = [
            ("s3:x-amz-acl", h.canned),
            ("s3:x-amz-grant-read", h.grant_read),
            ("s3:x-amz-grant-write", h.grant_write),
            ("s3:x-amz-grant-read-acp", h.grant_read_acp),
            ("s3:x-amz-grant-write-acp", h.grant_write_acp),
            ("s3:x-amz-grant-full-control", h.grant_full_control),
        ];
        for (k, v) in pairs {
            if let Some(v) = v {
                self = self.with_key(k, v.trim());
            }
        }
        self
    }

    /// Adds `s3:ExistingObjectTag/<k>` for each tag of the object the request acts on.
    pub fn with_existing_object_tags<'a>(mut self, tags: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        for (k, v) in tags {
            self.keys.entry(format!("s3:existingobjecttag/{k}")).or_default().push(v.to_owned());
        }
        self
    }

    /// The resource ARN: `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`.
    pub fn resource_arn(&self) -> String {
        match &self.key {
            Some(k) => format!("arn:aws:s3:::{}/{}", self.bucket, k),
            None => format!("arn:aws:s3:::{}", self.bucket),
        }
    }

    /// The values of condition key `key` (normalized), built-in keys included.
    pub fn values(&self, key: &str) -> Option<Vec<String>> {
        self.values_cow(key).map(Cow::into_owned)
    }

    fn values_cow(&self, key: &str) -> Option<Cow<'_, [String]>> {
        if let Some(v) = self.keys.get(key) {
            return Some(Cow::Borrowed(v.as_slice()));
        }
        self.builtin(key).map(Cow::Owned)
    }

    fn builtin(&self, key: &str) -> Option<Vec<String>> {
        match key {
            "aws:sourceip" => self.source_ip.map(|ip| vec![ip.to_string()]),
            "aws:securetransport" => Some(vec![self.secure_transport.to_string()]),
            "aws:userid" => Some(vec![self.principal.id().unwrap_or("anonymous").to_owned()]),
            "aws:username" => match &self.principal {
                Principal::Account(Account { name: Some(n), .. }) => Some(vec![n.clone()]),
                _ => None,
            },
            "aws:principaltype" => Some(vec![
                match self.principal {
                    Principal::Anonymous => "Anonymous",
                    Principal::Account(_) => "Account",
                }
                .to_owned(),
            ]),
            "aws:principalaccount" => self.principal.id().map(|id| vec![id.to_owned()]),
            "aws:currenttime" => self.current_time.map(|t| vec![crate::date::format(t)]),
            "aws:epochtime" => self.current_time.map(|t| vec![t.to_string()]),
            _ => None,
        }
    }
}

/// The outcome of evaluating one policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// A `Deny` statement matched: nothing else can allow the request.
    ExplicitDeny,
    /// An `Allow` statement matched and no `Deny` did.
    Allow,
    /// No statement matched.
    NoMatch,
}

/// Evaluates `policy` for `ctx`: explicit deny beats allow, allow beats no match.
pub fn evaluate(policy: &Policy, ctx: &RequestContext) -> Decision {
    let arn = ctx.resource_arn();
    let mut allowed = false;
    for s in &policy.statements {
        if matches_with_arn(s, policy.version, ctx, &arn) {
            match s.effect {
                Effect::Deny => return Decision::ExplicitDeny,
                Effect::Allow => allowed = true,
            }
        }
    }
    if allowed { Decision::Allow } else { Decision::NoMatch }
}

/// Whether statement `s` applies to `ctx` (principal, action, resource and every condition).
pub fn statement_matches(s: &Statement, version: Version, ctx: &RequestContext) -> bool {
    matches_with_arn(s, version, ctx, &ctx.resource_arn())
}

fn matches_with_arn(s: &Statement, version: Version, ctx: &RequestContext, arn: &str) -> bool {
    let principal_hit = s.principal.ids.iter().any(|p| principal_matches(p, &ctx.principal));
    if principal_hit == s.principal.negated {
        return false;
    }
    if !patterns_match(&s.action, |p| p == "*" || wildcard::matches_ignore_case(p, &ctx.action)) {
        return false;
    }
    let resource_hit = |p: &str| match substitute(p, version, ctx) {
        Some(p) => wildcard::matches(&p, arn),
        None => false,
    };
    if !patterns_match(&s.resource, resource_hit) {
        return false;
    }
    s.conditions.iter().all(|c| condition_holds(c, version, ctx))
}

fn patterns_match(p: &Patterns, hit: impl Fn(&str) -> bool) -> bool {
    p.patterns.iter().any(|x| hit(x)) != p.negated
}

/// Whether principal `p` of a policy names `who`.
pub fn principal_matches(p: &PrincipalId, who: &Principal) -> bool {
    match (p, who) {
        (PrincipalId::Everyone, _) => true,
        (_, Principal::Anonymous) => false,
        (PrincipalId::Account(id), Principal::Account(a)) => *id == a.id,
        (PrincipalId::User { account, name }, Principal::Account(a)) => {
            *account == a.id && a.name.as_deref() == Some(name.as_str())
        }
        (PrincipalId::Service(_), _) => false,
    }
}

/// Replaces `${key}` policy variables (version 2012-10-17 only). `None` when a variable has no
/// value: such a resource matches nothing, such a condition value matches nothing.
pub fn substitute<'a>(s: &'a str, version: Version, ctx: &RequestContext) -> Option<Cow<'a, str>> {
    // `contains(char)` is a memchr; a `$` without `{` takes the slow path and comes out unchanged.
    if version != Version::V2012_10_17 || !s.contains('$') {
        return Some(Cow::Borrowed(s));
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find('}') else {
            out.push_str(&rest[i..]);
            return Some(Cow::Owned(out));
        };
        let inner = &after[..j];
        let (name, default) = match inner.split_once(',') {
            Some((n, d)) => {
                let d = d.trim();
                let d = d.strip_prefix('\'').and_then(|d| d.strip_suffix('\'')).unwrap_or(d);
                (n.trim(), Some(d))
            }
            None => (inner.trim(), None),
        };
        match name {
            "*" | "?" | "$" => out.push_str(name),
            _ => {
                let vals = ctx.values(&actions::normalize_key(name));
                match (vals.as_deref(), default) {
                    (Some([v]), _) => out.push_str(v),
                    (_, Some(d)) => out.push_str(d),
                    _ => return None,
                }
            }
        }
        rest = &after[j + 1..];
    }
    out.push_str(rest);
    Some(Cow::Owned(out))
}

fn condition_holds(c: &Condition, version: Version, ctx: &RequestContext) -> bool {
    // Fast paths for the two most common keys (same results as the general path below, without
    // formatting the request's values as strings).
    if c.qualifier == SetQualifier::None {
        if c.key == "aws:sourceip" && matches!(c.op, Operator::IpAddress | Operator::NotIpAddress) {
            return match ctx.source_ip {
                None => c.if_exists || c.op.is_negated(),
                Some(ip) => c.cidrs.iter().any(|n| n.contains(ip)) != c.op.is_negated(),
            };
        }
        if c.key == "aws:securetransport" && c.op == Operator::Bool {
            let v = if ctx.secure_transport { "true" } else { "false" };
            return c.values.iter().any(|p| p.eq_ignore_ascii_case(v));
        }
    }
    let present = ctx.values_cow(&c.key);
    if c.op == Operator::Null {
        // "true": the key must be absent; "false": present.
        let want_absent = c.values.iter().any(|v| v.eq_ignore_ascii_case("true"));
        let want_present = c.values.iter().any(|v| v.eq_ignore_ascii_case("false"));
        let is_present = present.as_ref().is_some_and(|v| !v.is_empty());
        return (want_absent && !is_present) || (want_present && is_present);
    }
    let values = match present {
        Some(v) if !v.is_empty() => v,
        _ => {
            return match c.qualifier {
                SetQualifier::ForAllValues => true,
                SetQualifier::ForAnyValue => c.if_exists,
                SetQualifier::None => c.if_exists || c.op.is_negated(),
            };
        }
    };
    let positive = |v: &str| value_matches_positive(c, v, version, ctx);
    match c.qualifier {
        SetQualifier::None => {
            let any = values.iter().any(|v| positive(v));
            if c.op.is_negated() { !any } else { any }
        }
        SetQualifier::ForAnyValue => values.iter().any(|v| if c.op.is_negated() { !positive(v) } else { positive(v) }),
        SetQualifier::ForAllValues => values.iter().all(|v| if c.op.is_negated() { !positive(v) } else { positive(v) }),
    }
}

/// Whether request value `v` matches one of the condition's values under the operator's
/// positive form (a negated operator is the negation of this).
fn value_matches_positive(c: &Condition, v: &str, version: Version, ctx: &RequestContext) -> bool {
    use Operator::*;
    let policy_values = || c.values.iter().filter_map(|p| substitute(p, version, ctx));
    match c.op {
        StringEquals | StringNotEquals | ArnEquals | ArnNotEquals => policy_values().any(|p| p == v),
        StringEqualsIgnoreCase | StringNotEqualsIgnoreCase => {
            policy_values().any(|p| p.to_lowercase() == v.to_lowercase())
        }
        StringLike | StringNotLike | ArnLike | ArnNotLike => policy_values().any(|p| wildcard::matches(&p, v)),
        NumericEquals | NumericNotEquals => numeric(c, v, |a, b| a == b),
        NumericLessThan => numeric(c, v, |a, b| a < b),
        NumericLessThanEquals => numeric(c, v, |a, b| a <= b),
        NumericGreaterThan => numeric(c, v, |a, b| a > b),
        NumericGreaterThanEquals => numeric(c, v, |a, b| a >= b),
        DateEquals | DateNotEquals => date(c, v, |a, b| a == b),
        DateLessThan => date(c, v, |a, b| a < b),
        DateLessThanEquals => date(c, v, |a, b| a <= b),
        DateGreaterThan => date(c, v, |a, b| a > b),
        DateGreaterThanEquals => date(c, v, |a, b| a >= b),
        Bool => c.values.iter().any(|p| p.eq_ignore_ascii_case(v)),
        IpAddress | NotIpAddress => match v.parse::<IpAddr>() {
            Ok(ip) => c.cidrs.iter().any(|n| n.contains(ip)),
            Err(_) => false,
        },
        Null => false,
    }
}

fn date(c: &Condition, v: &str, cmp: impl Fn(i64, i64) -> bool) -> bool {
    let Some(x) = crate::date::parse(v) else { return false };
    c.values.iter().filter_map(|p| crate::date::parse(p)).any(|p| cmp(x, p))
}

fn numeric(c: &Condition, v: &str, cmp: impl Fn(f64, f64) -> bool) -> bool {
    let Some(x) = crate::policy::parse_number(v) else { return false };
    c.values.iter().filter_map(|p| crate::policy::parse_number(p)).any(|p| cmp(x, p))
}
