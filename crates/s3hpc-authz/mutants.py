#!/usr/bin/env python3
"""Mutation check: removes one authorization rule at a time and runs the crate's tests, which
must fail for each (prints CAUGHT or SURVIVED). Usage: python3 mutants.py [index ...]"""
import subprocess, sys, pathlib
HERE = pathlib.Path(__file__).resolve().parent
root = HERE / 'src'
muts = [
 ('policy.rs', 'if p_neg && effect == Effect::Allow {', 'if false {'),
 ('policy.rs', 'if !action_applies(a, &resource.patterns) {', 'if false {'),
 ('policy.rs', 'if !covers {', 'if false {'),
 ('policy.rs', 'if json::normalized_len(body) > MAX_POLICY_SIZE {', 'if false {'),
 ('policy.rs', 'Some(J::Str(e)) if e == "Allow" => Effect::Allow,', 'Some(J::Str(e)) if e.eq_ignore_ascii_case("Allow") => Effect::Allow,'),
 ('json.rs', 'if v.iter().any(|(name, _)| *name == k) {', 'if false {'),
 ('eval.rs', 'SetQualifier::None => c.if_exists || c.op.is_negated(),', 'SetQualifier::None => c.if_exists,'),
 ('eval.rs', 'SetQualifier::ForAllValues => true,', 'SetQualifier::ForAllValues => false,'),
 ('eval.rs', 'Effect::Deny => return Decision::ExplicitDeny,', 'Effect::Deny => {}'),
 ('eval.rs', '*account == a.id && a.name.as_deref() == Some(name.as_str())', '*account == a.id'),
 ('eval.rs', "if version != Version::V2012_10_17 || !s.contains('$') {", "if !s.contains('$') {"),
 ('bucket.rs', '!(op.is_policy_op() && (is_bucket_owner || who.is_admin()))', 'true'),
 ('bucket.rs', 'let restricted = bucket.pab().restrict_public_buckets &&', 'let restricted = false &&'),
 ('bucket.rs', 'let owned_by_bucket_owner = !on_object || object_owner == bucket_owner;', 'let owned_by_bucket_owner = true;'),
 ('bucket.rs', 'let owned_by_bucket_owner = !on_object || object_owner == bucket_owner;', 'let owned_by_bucket_owner = object_owner == bucket_owner;'),
 ('eval.rs', 'self = self.with_key("s3:max-keys", m.to_string());', 'let _ = m;'),
 ('bucket.rs', 'if op.is_policy_op() {\n                return Err', 'if false {\n                return Err'),
 ('bucket.rs', '(ObjectOwnership::BucketOwnerPreferred, RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl)) => {', '(ObjectOwnership::ObjectWriter, RequestedAcl::Canned(CannedAcl::BucketOwnerFullControl)) => {'),
 ('bucket.rs', 'if self.pab().block_public_policy && policy_is_public(&policy) {', 'if false {'),
 ('bucket.rs', 'if o.acls_disabled() && !self.acl.only_owner(&self.owner().id) {', 'if false {'),
 ('acl.rs', '(Grantee::Group(Group::AllUsers), _) => !ignore_public,', '(Grantee::Group(Group::AllUsers), _) => true,'),
 ('acl.rs', '"emailAddress" => return Err(unresolvable_email()),', '"emailAddress" => out.push(Grantee::Group(Group::AllUsers)),'),
 ('acl.rs', 'self == Permission::FullControl || self == wanted', 'self == wanted'),
 ('public.rs', 'n.prefix() >= 8 } else { n.prefix() >= 32 }', 'true } else { true }'),
 ('public.rs', 'if !open_principal {\n        return false;\n    }', ''),
 ('wildcard.rs', "Some(&c) if c.is_any() || eq(c, tc) => {", "Some(&c) if eq(c, tc) => {"),
 ('bucket.rs', 'list = list.with_key("s3:prefix", k.clone());', 'let _ = k;'),
 ('cidr.rs', "(prefix <= max).then_some(Cidr { addr, prefix })", "Some(Cidr { addr, prefix: prefix.min(max) })"),
 ('ownership.rs', 'Some("true") => Ok(true),', 'Some(_) => Ok(true),'),
 ('policy.rs', '                | DateNotEquals\n', ''),
 ('bucket.rs', '        check_acl_source(requested, body.as_ref())?;\n        let acl = match body {', '        let acl = match body {'),
 ('date.rs', 'if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {', 'if false {'),
 ('eval.rs', 'DateLessThan => date(c, v, |a, b| a < b),', 'DateLessThan => date(c, v, |a, b| a <= b),'),
]
sel = [int(a) for a in sys.argv[1:]] or range(len(muts))
# proptest records failing cases of a mutant in tests/*.proptest-regressions: remove new ones.
before = set((HERE / 'tests').glob('*.proptest-regressions'))
for i in sel:
    f, old, new = muts[i]
    p = root / f
    src = p.read_text()
    if src.count(old) != 1:
        print(i, 'PATTERN COUNT', src.count(old), f, old[:50]); continue
    p.write_text(src.replace(old, new))
    try:
        r = subprocess.run(['cargo', 'test', '-q', '-p', 's3hpc-authz'], cwd=HERE, capture_output=True, text=True, timeout=900)
        out = r.stdout + r.stderr
        failed = [l for l in out.splitlines() if l.startswith('test ') and 'FAILED' in l] or [l for l in out.splitlines() if l.startswith('    ') and '::' not in l and l.strip() and 'failures' not in l][:3]
        status = 'CAUGHT' if r.returncode != 0 else 'SURVIVED'
        comp = 'error[' in out
        print(i, status, f, old[:60].replace('\n',' '), ('(compile error)' if comp else ''), [l.strip() for l in out.splitlines() if l.strip().startswith('---- ')][:4], flush=True)
    finally:
        p.write_text(src)

for f in set((HERE / 'tests').glob('*.proptest-regressions')) - before:
    f.unlink()
