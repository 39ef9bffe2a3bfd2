//! OwnershipControls and PublicAccessBlock documents, and "is public" for policies.

use s3hpc_authz::{ErrorCode, ObjectOwnership, Policy, PublicAccessBlock, policy_is_public, policy_status_xml};

#[test]
fn ownership_xml() {
    for o in
        [ObjectOwnership::BucketOwnerEnforced, ObjectOwnership::BucketOwnerPreferred, ObjectOwnership::ObjectWriter]
    {
        assert_eq!(ObjectOwnership::from_xml(o.to_xml().as_bytes()).unwrap(), o);
    }
    let doc = r#"<OwnershipControls xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>"#;
    assert_eq!(ObjectOwnership::from_xml(doc.as_bytes()).unwrap(), ObjectOwnership::ObjectWriter);
    assert_eq!(ObjectOwnership::default(), ObjectOwnership::BucketOwnerEnforced);
    for bad in [
        "",
        "<OwnershipControls/>",
        "<OwnershipControls><Rule/></OwnershipControls>",
        "<OwnershipControls><Rule><ObjectOwnership>objectwriter</ObjectOwnership></Rule></OwnershipControls>",
        "<OwnershipControls><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></OwnershipControls>",
        "<Other><Rule><ObjectOwnership>ObjectWriter</ObjectOwnership></Rule></Other>",
    ] {
        let e = ObjectOwnership::from_xml(bad.as_bytes()).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedXML, "{bad}");
    }
}

#[test]
fn public_access_block_xml() {
    let all = PublicAccessBlock::ALL_BLOCKED;
    assert_eq!(PublicAccessBlock::from_xml(all.to_xml().as_bytes()).unwrap(), all);
    let doc =
        "<PublicAccessBlockConfiguration><IgnorePublicAcls>true</IgnorePublicAcls></PublicAccessBlockConfiguration>";
    let p = PublicAccessBlock::from_xml(doc.as_bytes()).unwrap();
    assert_eq!(p, PublicAccessBlock { ignore_public_acls: true, ..Default::default() });
    for bad in [
        "<PublicAccessBlockConfiguration><BlockPublicAcls>TRUE</BlockPublicAcls></PublicAccessBlockConfiguration>",
        "<PublicAccessBlockConfiguration><BlockPublicPolicy>1</BlockPublicPolicy></PublicAccessBlockConfiguration>",
        "<Nope/>",
        "<PublicAccessBlockConfiguration>",
    ] {
        assert_eq!(PublicAccessBlock::from_xml(bad.as_bytes()).unwrap_err().code, ErrorCode::MalformedXML, "{bad}");
    }
}

#[test]
fn policy_status_document() {
    assert!(policy_status_xml(true).contains("<IsPublic>true</IsPublic>"));
    assert!(policy_status_xml(false).contains("<IsPublic>false</IsPublic>"));
}

fn public(stmt: &str) -> bool {
    let t = format!(r#"{{"Version":"2012-10-17","Statement":[{stmt}]}}"#);
    policy_is_public(&Policy::parse(&t, "bkt").unwrap_or_else(|e| panic!("{e}")))
}

fn allow_get(principal: &str, condition: &str) -> String {
    let c = if condition.is_empty() { String::new() } else { format!(r#","Condition":{condition}"#) };
    format!(
        r#"{{"Effect":"Allow","Principal":{principal},"Action":"s3:GetObject","Resource":"arn:aws:s3:::bkt/*"{c}}}"#
    )
}

#[test]
fn open_principal_is_public() {
    assert!(public(&allow_get(r#""*""#, "")));
    assert!(public(&allow_get(r#"{"AWS":"*"}"#, "")));
    assert!(public(&allow_get(r#"{"AWS":["alice","*"]}"#, "")));
}

#[test]
fn fixed_principals_are_not_public() {
    assert!(!public(&allow_get(r#"{"AWS":"alice"}"#, "")));
    assert!(!public(&allow_get(r#"{"CanonicalUser":"alice"}"#, "")));
}

#[test]
fn deny_statements_are_not_public() {
    assert!(!public(r#"{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}"#));
    assert!(public(&format!(
        r#"{{"Effect":"Deny","Principal":"*","Action":"s3:*","Resource":"arn:aws:s3:::bkt/*"}},{}"#,
        allow_get(r#""*""#, "")
    )));
}

#[test]
fn only_bad_actions_make_it_public() {
    assert!(!public(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:BypassGovernanceRetention","Resource":"arn:aws:s3:::bkt/*"}"#
    ));
    assert!(public(
        r#"{"Effect":"Allow","Principal":"*","Action":"s3:AbortMultipartUpload","Resource":"arn:aws:s3:::bkt/*"}"#
    ));
    assert!(public(r#"{"Effect":"Allow","Principal":"*","Action":"s3:List*","Resource":"arn:aws:s3:::bkt"}"#));
    assert!(public(r#"{"Effect":"Allow","Principal":"*","Action":"*","Resource":"arn:aws:s3:::bkt"}"#));
}

#[test]
fn source_ip_narrow_enough_is_not_public() {
    assert!(!public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":"10.0.0.0/32"}}"#)));
    assert!(!public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":["192.0.2.0/24","10.0.0.0/8"]}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":"10.0.0.0/7"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":["192.0.2.0/24","0.0.0.0/0"]}}"#)));
    assert!(!public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":"2001:db8::/32"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"IpAddress":{"aws:SourceIp":"2001:db8::/31"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"NotIpAddress":{"aws:SourceIp":"10.0.0.0/8"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"IpAddressIfExists":{"aws:SourceIp":"10.0.0.0/8"}}"#)));
}

#[test]
fn fixed_source_values_are_not_public() {
    assert!(!public(&allow_get(r#""*""#, r#"{"StringEquals":{"aws:SourceVpc":"vpc-1"}}"#)));
    assert!(!public(&allow_get(r#""*""#, r#"{"StringEquals":{"aws:SourceAccount":"111122223333"}}"#)));
    assert!(!public(&allow_get(r#""*""#, r#"{"ArnEquals":{"aws:SourceArn":"arn:aws:cloudtrail:::x"}}"#)));
    assert!(!public(&allow_get(r#""*""#, r#"{"StringEquals":{"aws:userid":"alice"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"StringLike":{"aws:SourceVpc":"vpc-*"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"StringEquals":{"aws:userid":"AROLEID:x"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"StringEquals":{"aws:SourceVpc":"${aws:username}"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"StringEquals":{"s3:prefix":"x"}}"#)));
    assert!(public(&allow_get(r#""*""#, r#"{"StringNotEquals":{"aws:SourceVpc":"vpc-1"}}"#)));
}
