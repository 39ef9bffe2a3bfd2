//! Bucket policies: parsing and validation with AWS's `MalformedPolicy` texts.
//!
//! See the crate docs for the list of messages and where each comes from.

use crate::actions::{self, ResourceKind};
use crate::cidr::Cidr;
use crate::error::AuthzError;
use crate::json::{self, J};
use crate::wildcard;

/// The largest policy S3 takes: 20 KiB of normalized JSON.
pub const MAX_POLICY_SIZE: usize = 20480;

/// The policy language version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `2008-10-17` (also when `Version` is absent): no policy variables.
    V2008_10_17,
    /// `2012-10-17`: `${...}` policy variables in `Resource` and string conditions.
    V2012_10_17,
}

/// A statement's effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// `Allow`
    Allow,
    /// `Deny`
    Deny,
}

/// One principal named in `Principal` / `NotPrincipal`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrincipalId {
    /// `"*"` or `{"AWS": "*"}`: everyone, anonymous included.
    Everyone,
    /// An account: `{"AWS": "ID"}`, `{"AWS": "arn:aws:iam::ID:root"}` or `{"CanonicalUser": "ID"}`.
    Account(String),
    /// `{"AWS": "arn:aws:iam::ID:user/NAME"}`: the account `ID` whose user name is `NAME`.
    User {
        /// The account id.
        account: String,
        /// The user name (path stripped).
        name: String,
    },
    /// `{"Service": "..."}`: accepted, never matches a request (s3hpc has no service principals).
    Service(String),
}

/// A `Principal` / `NotPrincipal` element.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrincipalSet {
    /// `true` for `NotPrincipal`.
    pub negated: bool,
    /// The principals named.
    pub ids: Vec<PrincipalId>,
}

/// An `Action`/`NotAction` or `Resource`/`NotResource` element: patterns and whether negated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Patterns {
    /// `true` for `NotAction` / `NotResource`.
    pub negated: bool,
    /// The patterns as written.
    pub patterns: Vec<String>,
}

/// A condition operator (without the `IfExists` suffix and the set qualifier).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `StringEquals`
    StringEquals,
    /// `StringNotEquals`
    StringNotEquals,
    /// `StringEqualsIgnoreCase`
    StringEqualsIgnoreCase,
    /// `StringNotEqualsIgnoreCase`
    StringNotEqualsIgnoreCase,
    /// `StringLike`
    StringLike,
    /// `StringNotLike`
    StringNotLike,
    /// `NumericEquals`
    NumericEquals,
    /// `NumericNotEquals`
    NumericNotEquals,
    /// `NumericLessThan`
    NumericLessThan,
    /// `NumericLessThanEquals`
    NumericLessThanEquals,
    /// `NumericGreaterThan`
    NumericGreaterThan,
    /// `NumericGreaterThanEquals`
    NumericGreaterThanEquals,
    /// `Bool`
    Bool,
    /// `IpAddress`
    IpAddress,
    /// `NotIpAddress`
    NotIpAddress,
    /// `ArnEquals` (compared as `StringEquals`)
    ArnEquals,
    /// `ArnNotEquals`
    ArnNotEquals,
    /// `ArnLike` (compared as `StringLike`)
    ArnLike,
    /// `ArnNotLike`
    ArnNotLike,
    /// `Null`: `true` asks for the key to be absent, `false` present.
    Null,
    /// `DateEquals`
    DateEquals,
    /// `DateNotEquals`
    DateNotEquals,
    /// `DateLessThan`
    DateLessThan,
    /// `DateLessThanEquals`
    DateLessThanEquals,
    /// `DateGreaterThan`
    DateGreaterThan,
    /// `DateGreaterThanEquals`
    DateGreaterThanEquals,
}

const OPERATORS: &[(&str, Operator)] = &[
    ("StringEquals", Operator::StringEquals),
    ("StringNotEquals", Operator::StringNotEquals),
    ("StringEqualsIgnoreCase", Operator::StringEqualsIgnoreCase),
    ("StringNotEqualsIgnoreCase", Operator::StringNotEqualsIgnoreCase),
    ("StringLike", Operator::StringLike),
    ("StringNotLike", Operator::StringNotLike),
    ("NumericEquals", Operator::NumericEquals),
    ("NumericNotEquals", Operator::NumericNotEquals),
    ("NumericLessThan", Operator::NumericLessThan),
    ("NumericLessThanEquals", Operator::NumericLessThanEquals),
    ("NumericGreaterThan", Operator::NumericGreaterThan),
    ("NumericGreaterThanEquals", Operator::NumericGreaterThanEquals),
    ("Bool", Operator::Bool),
    ("IpAddress", Operator::IpAddress),
    ("NotIpAddress", Operator::NotIpAddress),
    ("ArnEquals", Operator::ArnEquals),
    ("ArnNotEquals", Operator::ArnNotEquals),
    ("ArnLike", Operator::ArnLike),
    ("ArnNotLike", Operator::ArnNotLike),
    ("Null", Operator::Null),
    ("DateEquals", Operator::DateEquals),
    ("DateNotEquals", Operator::DateNotEquals),
    ("DateLessThan", Operator::DateLessThan),
    ("DateLessThanEquals", Operator::DateLessThanEquals),
    ("DateGreaterThan", Operator::DateGreaterThan),
    ("DateGreaterThanEquals", Operator::DateGreaterThanEquals),
];

impl Operator {
    /// Whether the operator is a negation (`...Not...`): true when the key is absent.
    pub fn is_negated(self) -> bool {
        use Operator::*;
        matches!(
            self,
            StringNotEquals
                | StringNotEqualsIgnoreCase
                | StringNotLike
                | NumericNotEquals
                | DateNotEquals
                | NotIpAddress
                | ArnNotEquals
                | ArnNotLike
        )
    }

    /// Whether the operator compares numbers.
    pub fn is_numeric(self) -> bool {
        use Operator::*;
        matches!(
            self,
            NumericEquals
                | NumericNotEquals
                | NumericLessThan
                | NumericLessThanEquals
                | NumericGreaterThan
                | NumericGreaterThanEquals
        )
    }

    /// Whether the operator compares dates.
    pub fn is_date(self) -> bool {
        use Operator::*;
        matches!(
            self,
            DateEquals | DateNotEquals | DateLessThan | DateLessThanEquals | DateGreaterThan | DateGreaterThanEquals
        )
    }

    /// The operator's name as written in a policy.
    pub fn name(self) -> &'static str {
        OPERATORS.iter().find(|(_, o)| *o == self).map(|(n, _)| *n).unwrap_or("?")
    }
}

/// `ForAnyValue:` / `ForAllValues:` on a multi-valued key, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetQualifier {
    /// No qualifier: any request value matching counts.
    None,
    /// `ForAnyValue:`
    ForAnyValue,
    /// `ForAllValues:`
    ForAllValues,
}

/// One `operator: { key: values }` test of a `Condition` block.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The operator.
    pub op: Operator,
    /// The set qualifier.
    pub qualifier: SetQualifier,
    /// The `IfExists` suffix.
    pub if_exists: bool,
    /// The key, normalized (see [`actions::normalize_key`]).
    pub key: String,
    /// The values as strings (numbers and booleans in their text form).
    pub values: Vec<String>,
    /// For `IpAddress` / `NotIpAddress`: the parsed blocks.
    pub cidrs: Vec<Cidr>,
}

/// One statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// `Sid`
    pub sid: Option<String>,
    /// `Effect`
    pub effect: Effect,
    /// `Principal` / `NotPrincipal`
    pub principal: PrincipalSet,
    /// `Action` / `NotAction`
    pub action: Patterns,
    /// `Resource` / `NotResource`
    pub resource: Patterns,
    /// The tests of `Condition`, all of which must hold.
    pub conditions: Vec<Condition>,
}

/// A parsed, validated bucket policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// `Version`
    pub version: Version,
    /// `Id`
    pub id: Option<String>,
    /// `Statement`
    pub statements: Vec<Statement>,
}

/// How strictly [`Policy::parse_with`] checks a document.
pub struct ParseOptions<'a> {
    /// The bucket the policy is put on: every `Resource` must be able to name it or its objects.
    /// `None` skips the check (a policy read back from the store).
    pub bucket: Option<&'a str>,
    /// Says whether an account id exists; principals naming unknown accounts are refused with
    /// "Invalid principal in policy", as AWS does. `None` accepts every well-formed id.
    pub account_exists: Option<&'a dyn Fn(&str) -> bool>,
}

fn err(msg: impl Into<String>) -> AuthzError {
    AuthzError::policy(msg)
}

/// AWS's message for a document that is not JSON.
pub const MSG_NOT_JSON: &str = "Policies must be valid JSON and the first byte must be '{'";
/// AWS's message for a JSON syntax error after a leading `{`.
pub const MSG_INVALID_JSON: &str = "This policy contains invalid Json";
/// AWS's message for element values of the wrong type.
pub const MSG_SYNTAX: &str = "Invalid policy syntax.";
/// AWS's message for a bad principal.
pub const MSG_PRINCIPAL: &str = "Invalid principal in policy";
/// AWS's message for a bad resource.
pub const MSG_RESOURCE: &str = "Policy has invalid resource";
/// AWS's message for an unknown action.
pub const MSG_ACTION: &str = "Policy has invalid action";
/// AWS's message for an action none of whose resources fit.
pub const MSG_NOT_APPLICABLE: &str = "Action does not apply to any resource(s) in statement";
/// AWS's message for an unknown condition key.
pub const MSG_CONDITION_KEY: &str = "Policy has an invalid condition key";
/// AWS's message for a bad CIDR in a condition.
pub const MSG_IP: &str = "Invalid IP address in Conditions";
/// AWS's message for a policy without statements.
pub const MSG_EMPTY: &str = "Could not parse the policy: Statement is empty!";
/// AWS's message for a bad `Version`.
pub const MSG_VERSION: &str = "The policy must contain a valid version string";

impl Policy {
    /// Parses and validates `text` as the policy of `bucket` (what PutBucketPolicy does).
    pub fn parse(text: &str, bucket: &str) -> Result<Policy, AuthzError> {
        Self::parse_with(text, &ParseOptions { bucket: Some(bucket), account_exists: None })
    }

    /// Parses a policy the store kept: validated when it was put, so the bucket is not checked.
    pub fn parse_stored(text: &str) -> Result<Policy, AuthzError> {
        Self::parse_with(text, &ParseOptions { bucket: None, account_exists: None })
    }

    /// Parses and validates `text` with `opts`.
    pub fn parse_with(text: &str, opts: &ParseOptions<'_>) -> Result<Policy, AuthzError> {
        let body = text.trim_start_matches(['\u{feff}', ' ', '\t', '\n', '\r']);
        if !body.starts_with('{') {
            return Err(err(MSG_NOT_JSON));
        }
        // Size first (a linear scan), so a huge body is refused before it is parsed.
        if json::normalized_len(body) > MAX_POLICY_SIZE {
            return Err(err(format!(
                "Normalized policy document exceeds the maximum allowed size of {MAX_POLICY_SIZE} bytes"
            )));
        }
        let doc = json::parse(body).map_err(|_| err(MSG_INVALID_JSON))?;
        let J::Obj(members) = doc else { return Err(err(MSG_NOT_JSON)) };
        let (mut version, mut id, mut stmts) = (None, None, None);
        for (name, value) in members {
            match name.as_str() {
                "Version" => version = Some(value),
                "Id" => id = Some(value),
                "Statement" => stmts = Some(value),
                _ => return Err(err(format!("Unknown field {name}"))),
            }
        }
        let version = match version {
            None => Version::V2008_10_17,
            Some(J::Str(v)) if v == "2012-10-17" => Version::V2012_10_17,
            Some(J::Str(v)) if v == "2008-10-17" => Version::V2008_10_17,
            Some(_) => return Err(err(MSG_VERSION)),
        };
        let id = match id {
            None => None,
            Some(J::Str(s)) => Some(s),
            Some(_) => return Err(err(MSG_SYNTAX)),
        };
        let stmts = match stmts {
            None => return Err(err("Missing required field Statement")),
            Some(J::Arr(v)) => v,
            Some(o @ J::Obj(_)) => vec![o],
            Some(_) => return Err(err(MSG_SYNTAX)),
        };
        if stmts.is_empty() {
            return Err(err(MSG_EMPTY));
        }
        let statements = stmts.into_iter().map(|s| parse_statement(s, version, opts)).collect::<Result<Vec<_>, _>>()?;
        Ok(Policy { version, id, statements })
    }
}

fn parse_statement(s: J, version: Version, opts: &ParseOptions<'_>) -> Result<Statement, AuthzError> {
    let J::Obj(members) = s else { return Err(err(MSG_SYNTAX)) };
    let mut sid = None;
    let mut effect = None;
    let (mut principal, mut action, mut resource, mut condition) = (None, None, None, None);
    for (name, value) in members {
        let slot = match name.as_str() {
            "Sid" => {
                match value {
                    J::Str(s) => sid = Some(s),
                    _ => return Err(err(MSG_SYNTAX)),
                }
                continue;
            }
            "Effect" => {
                effect = Some(value);
                continue;
            }
            "Condition" => {
                condition = Some(value);
                continue;
            }
            "Principal" | "NotPrincipal" => &mut principal,
            "Action" | "NotAction" => &mut action,
            "Resource" | "NotResource" => &mut resource,
            _ => return Err(err(format!("Unknown field {name}"))),
        };
        if slot.is_some() {
            // Both `X` and `NotX` in one statement.
            return Err(err(MSG_SYNTAX));
        }
        let negated = name.starts_with("Not");
        *slot = Some((negated, value));
    }
    let effect = match effect {
        None => return Err(err("Missing required field Effect")),
        Some(J::Str(e)) if e == "Allow" => Effect::Allow,
        Some(J::Str(e)) if e == "Deny" => Effect::Deny,
        Some(J::Str(e)) => return Err(err(format!("Invalid effect: {e}"))),
        Some(_) => return Err(err(MSG_SYNTAX)),
    };
    let Some((p_neg, p)) = principal else { return Err(err("Missing required field Principal")) };
    let Some((a_neg, a)) = action else { return Err(err("Missing required field Action")) };
    let Some((r_neg, r)) = resource else { return Err(err("Missing required field Resource")) };
    if p_neg && effect == Effect::Allow {
        // AWS: NotPrincipal must be used with "Effect": "Deny".
        return Err(err(MSG_PRINCIPAL));
    }
    let principal = PrincipalSet { negated: p_neg, ids: parse_principal(p, opts)? };
    let action = Patterns { negated: a_neg, patterns: string_list(a)? };
    let resource = Patterns { negated: r_neg, patterns: string_list(r)? };
    if action.patterns.is_empty() || resource.patterns.is_empty() {
        return Err(err(MSG_SYNTAX));
    }
    for a in &action.patterns {
        check_action(a)?;
    }
    for r in &resource.patterns {
        check_resource(r, version, opts.bucket)?;
    }
    if !action.negated && !resource.negated {
        for a in &action.patterns {
            if !action_applies(a, &resource.patterns) {
                return Err(err(MSG_NOT_APPLICABLE));
            }
        }
    }
    let conditions = match condition {
        None => Vec::new(),
        Some(c) => parse_conditions(c)?,
    };
    Ok(Statement { sid, effect, principal, action, resource, conditions })
}

/// A string or a list of strings (a single value needs no brackets).
fn string_list(v: J) -> Result<Vec<String>, AuthzError> {
    match v {
        J::Str(s) => Ok(vec![s]),
        J::Arr(items) => {
            items.into_iter().map(|i| if let J::Str(s) = i { Ok(s) } else { Err(err(MSG_SYNTAX)) }).collect()
        }
        _ => Err(err(MSG_SYNTAX)),
    }
}

fn parse_principal(v: J, opts: &ParseOptions<'_>) -> Result<Vec<PrincipalId>, AuthzError> {
    match v {
        J::Str(s) if s == "*" => Ok(vec![PrincipalId::Everyone]),
        J::Obj(members) => {
            let mut out = Vec::new();
            if members.is_empty() {
                return Err(err(MSG_PRINCIPAL));
            }
            for (kind, value) in members {
                let ids = string_list(value).map_err(|_| err(MSG_PRINCIPAL))?;
                if ids.is_empty() {
                    return Err(err(MSG_PRINCIPAL));
                }
                for id in ids {
                    let p = match kind.as_str() {
                        "AWS" => aws_principal(&id)?,
                        "CanonicalUser" => {
                            if id.is_empty() || wildcard::has_wildcard(&id) {
                                return Err(err(MSG_PRINCIPAL));
                            }
                            PrincipalId::Account(id)
                        }
                        "Service" => {
                            if id.is_empty() || wildcard::has_wildcard(&id) {
                                return Err(err(MSG_PRINCIPAL));
                            }
                            PrincipalId::Service(id)
                        }
                        _ => return Err(err(MSG_PRINCIPAL)),
                    };
                    if let (Some(exists), PrincipalId::Account(a) | PrincipalId::User { account: a, .. }) =
                        (opts.account_exists, &p)
                        && !exists(a)
                    {
                        return Err(err(MSG_PRINCIPAL));
                    }
                    out.push(p);
                }
            }
            Ok(out)
        }
        _ => Err(err(MSG_PRINCIPAL)),
    }
}

/// An account id as s3hpc knows them: no wildcard, no `:` or `/`, no spaces, not empty.
fn valid_account_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && !id.contains(['*', '?', ':', '/', ' ', '\t', '\n', '\r'])
}

fn aws_principal(id: &str) -> Result<PrincipalId, AuthzError> {
    if id == "*" {
        return Ok(PrincipalId::Everyone);
    }
    if let Some(rest) = id.strip_prefix("arn:aws:iam::") {
        let (account, what) = rest.split_once(':').ok_or_else(|| err(MSG_PRINCIPAL))?;
        if !valid_account_id(account) {
            return Err(err(MSG_PRINCIPAL));
        }
        if what == "root" {
            return Ok(PrincipalId::Account(account.to_owned()));
        }
        if let Some(path_name) = what.strip_prefix("user/") {
            // `user/path/NAME`: the name is the last component.
            let name = path_name.rsplit('/').next().unwrap_or("");
            if name.is_empty() || wildcard::has_wildcard(path_name) {
                return Err(err(MSG_PRINCIPAL));
            }
            return Ok(PrincipalId::User { account: account.to_owned(), name: name.to_owned() });
        }
        return Err(err(MSG_PRINCIPAL));
    }
    if valid_account_id(id) {
        return Ok(PrincipalId::Account(id.to_owned()));
    }
    Err(err(MSG_PRINCIPAL))
}

fn check_action(a: &str) -> Result<(), AuthzError> {
    if a == "*" {
        return Ok(());
    }
    let Some((service, name)) = a.split_once(':') else { return Err(err(MSG_ACTION)) };
    if !service.eq_ignore_ascii_case("s3") || name.is_empty() {
        return Err(err(MSG_ACTION));
    }
    if !actions::ACTIONS.iter().any(|(known, _)| wildcard::matches_ignore_case(a, known)) {
        return Err(err(MSG_ACTION));
    }
    Ok(())
}

const S3_ARN_PREFIX: &str = "arn:aws:s3:::";

fn check_resource(r: &str, version: Version, bucket: Option<&str>) -> Result<(), AuthzError> {
    if r == "*" {
        // A bare `*` names resources beyond the bucket.
        return Err(err(MSG_RESOURCE));
    }
    let Some(rest) = r.strip_prefix(S3_ARN_PREFIX) else { return Err(err(MSG_RESOURCE)) };
    let bucket_part = rest.split('/').next().unwrap_or("");
    if bucket_part.is_empty() {
        return Err(err(MSG_RESOURCE));
    }
    if version == Version::V2012_10_17 && bucket_part.contains("${") {
        // Variables may stand only in the key part of an S3 ARN.
        return Err(err(MSG_RESOURCE));
    }
    if let Some(bucket) = bucket {
        // The bucket part must be able to name this bucket (`*` alone does; the key part of a
        // pattern like `arn:aws:s3:::b*` may also cover objects, so match with the key cut off).
        let covers = wildcard::matches(bucket_part, bucket)
            || (!rest.contains('/') && wildcard::matches(rest, &format!("{bucket}/")));
        if !covers {
            return Err(err(MSG_RESOURCE));
        }
    }
    Ok(())
}

/// Whether some resource pattern can name what action pattern `a` applies to.
fn action_applies(a: &str, resources: &[String]) -> bool {
    let kinds = actions::ACTIONS.iter().filter(|(known, _)| a == "*" || wildcard::matches_ignore_case(a, known));
    let (mut bucket, mut object) = (false, false);
    for r in resources {
        let rest = r.strip_prefix(S3_ARN_PREFIX).unwrap_or("");
        // A pattern whose bucket part has a trailing wildcard can also reach objects.
        if rest.contains('/') || rest.ends_with('*') {
            object = true;
        }
        if !rest.contains('/') {
            bucket = true;
        }
    }
    for (_, kind) in kinds {
        match kind {
            ResourceKind::Bucket if bucket => return true,
            ResourceKind::Object if object => return true,
            _ => {}
        }
    }
    false
}

fn parse_conditions(c: J) -> Result<Vec<Condition>, AuthzError> {
    let J::Obj(blocks) = c else { return Err(err(MSG_SYNTAX)) };
    let mut out = Vec::new();
    for (type_name, body) in blocks {
        let (qualifier, rest) = if let Some(r) = type_name.strip_prefix("ForAnyValue:") {
            (SetQualifier::ForAnyValue, r)
        } else if let Some(r) = type_name.strip_prefix("ForAllValues:") {
            (SetQualifier::ForAllValues, r)
        } else {
            (SetQualifier::None, type_name.as_str())
        };
        let (if_exists, base) = match rest.strip_suffix("IfExists") {
            Some(b) => (true, b),
            None => (false, rest),
        };
        let op = OPERATORS.iter().find(|(n, _)| *n == base).map(|&(_, o)| o);
        let op = match op {
            Some(Operator::Null) if if_exists => None,
            o => o,
        };
        let Some(op) = op else { return Err(err(format!("Invalid Condition type : {type_name}"))) };
        let J::Obj(tests) = body else { return Err(err(MSG_SYNTAX)) };
        for (key, values) in tests {
            let key = actions::normalize_key(&key);
            if !actions::is_known_condition_key(&key) {
                return Err(err(MSG_CONDITION_KEY));
            }
            let values = condition_values(values)?;
            let mut cidrs = Vec::new();
            if matches!(op, Operator::IpAddress | Operator::NotIpAddress) {
                for v in &values {
                    cidrs.push(Cidr::parse(v).ok_or_else(|| err(MSG_IP))?);
                }
            }
            if op.is_numeric() && values.iter().any(|v| parse_number(v).is_none()) {
                return Err(err(format!("Invalid numeric value in Conditions for operator {}", op.name())));
            }
            if op.is_date() && values.iter().any(|v| crate::date::parse(v).is_none()) {
                return Err(err(format!("Invalid date value in Conditions for operator {}", op.name())));
            }
            if matches!(op, Operator::Bool | Operator::Null)
                && values.iter().any(|v| !v.eq_ignore_ascii_case("true") && !v.eq_ignore_ascii_case("false"))
            {
                return Err(err(format!("Invalid boolean value in Conditions for operator {}", op.name())));
            }
            out.push(Condition { op, qualifier, if_exists, key, values, cidrs });
        }
    }
    Ok(out)
}

/// Condition values: a string, number or boolean, or a non-empty list of them.
fn condition_values(v: J) -> Result<Vec<String>, AuthzError> {
    fn one(v: J) -> Result<String, AuthzError> {
        match v {
            J::Str(s) | J::Num(s) => Ok(s),
            J::Bool(b) => Ok(b.to_string()),
            _ => Err(err(MSG_SYNTAX)),
        }
    }
    match v {
        J::Arr(items) if !items.is_empty() => items.into_iter().map(one).collect(),
        J::Arr(_) => Err(err(MSG_SYNTAX)),
        other => Ok(vec![one(other)?]),
    }
}

/// A number as IAM compares them (integers and decimals).
pub(crate) fn parse_number(s: &str) -> Option<f64> {
    let t = s.trim();
    if t.is_empty() || !t.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')) {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}
