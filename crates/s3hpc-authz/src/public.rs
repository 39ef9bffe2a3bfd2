//! Whether a bucket policy is "public" as Block Public Access defines it.
//!
//! S3 starts by assuming a policy is public. An `Allow` statement is non-public when it names only
//! fixed principals (no `*`), or when a condition pins it to fixed values (no wildcard, no policy
//! variable) of one of: `aws:SourceIp` (a block no wider than /8 for IPv4 or /32 for IPv6),
//! `aws:SourceArn`, `aws:SourceVpc`, `aws:SourceVpce`, `aws:SourceOwner`, `aws:SourceAccount`,
//! `s3:x-amz-server-side-encryption-aws-kms-key-id`, `aws:userid` (outside `AROLEID:*`),
//! `s3:DataAccessPointArn`, `s3:DataAccessPointAccount`. Statements whose actions include none of
//! the "bad actions" (`s3:Get*`, `s3:List*`, `s3:AbortMultipartUpload`, `s3:Delete*`, `s3:Put*`,
//! `s3:RestoreObject`) are not public either.

use crate::actions::ACTIONS;
use crate::policy::{Condition, Effect, Operator, Policy, PrincipalId, SetQualifier, Statement};
use crate::wildcard;

const FIXING_KEYS: &[&str] = &[
    "aws:sourcearn",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceowner",
    "aws:sourceaccount",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "aws:userid",
    "s3:dataaccesspointarn",
    "s3:dataaccesspointaccount",
];

fn is_bad_action(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("s3:get")
        || n.starts_with("s3:list")
        || n.starts_with("s3:delete")
        || n.starts_with("s3:put")
        || n == "s3:abortmultipartupload"
        || n == "s3:restoreobject"
}

/// Whether `policy` is public (GetBucketPolicyStatus `IsPublic`; BlockPublicPolicy refuses such
/// a policy, RestrictPublicBuckets limits access under it).
pub fn policy_is_public(policy: &Policy) -> bool {
    policy.statements.iter().any(statement_is_public)
}

fn statement_is_public(s: &Statement) -> bool {
    if s.effect != Effect::Allow {
        return false;
    }
    let grants_bad = if s.action.negated {
        true
    } else {
        s.action
            .patterns
            .iter()
            .any(|p| p == "*" || ACTIONS.iter().any(|(a, _)| is_bad_action(a) && wildcard::matches_ignore_case(p, a)))
    };
    if !grants_bad {
        return false;
    }
    let open_principal = s.principal.negated || s.principal.ids.iter().any(|p| matches!(p, PrincipalId::Everyone));
    if !open_principal {
        return false;
    }
    !s.conditions.iter().any(condition_fixes)
}

fn condition_fixes(c: &Condition) -> bool {
    if c.if_exists || c.qualifier == SetQualifier::ForAllValues {
        // Holds when the key is absent: restricts nothing for requests without it.
        return false;
    }
    let fixed = |v: &String| !wildcard::has_wildcard(v) && !v.contains("${");
    match c.op {
        Operator::IpAddress => {
            c.key == "aws:sourceip"
                && !c.cidrs.is_empty()
                && c.cidrs.iter().all(|n| if n.is_ipv4() { n.prefix() >= 8 } else { n.prefix() >= 32 })
        }
        Operator::StringEquals | Operator::StringEqualsIgnoreCase | Operator::ArnEquals => {
            FIXING_KEYS.contains(&c.key.as_str())
                && c.values.iter().all(fixed)
                && !(c.key == "aws:userid" && c.values.iter().any(|v| v.starts_with("AROLEID:")))
        }
        Operator::StringLike | Operator::ArnLike => {
            FIXING_KEYS.contains(&c.key.as_str()) && c.values.iter().all(fixed) && c.key != "aws:userid"
        }
        _ => false,
    }
}
