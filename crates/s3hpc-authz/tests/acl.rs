//! ACL data model, canned ACLs, the AccessControlPolicy document and grant headers.

use s3hpc_authz::acl::{ALL_USERS_URI, AUTHENTICATED_USERS_URI, EC2_CANONICAL_ID, LOG_DELIVERY_URI, parse_grantees};
use s3hpc_authz::{
    Acl, AclHeaders, CannedAcl, ErrorCode, Grant, Grantee, Group, Owner, Permission, Principal, RequestedAcl,
};

fn user(id: &str) -> Grantee {
    Grantee::CanonicalUser { id: id.into(), display_name: None }
}

fn g(grantee: Grantee, permission: Permission) -> Grant {
    Grant { grantee, permission }
}

#[test]
fn canned_acls_expand_as_s3() {
    let o = Owner::new("obj-owner");
    let b = Owner::new("bkt-owner");
    let fc = g(user("obj-owner"), Permission::FullControl);
    let cases: Vec<(CannedAcl, Vec<Grant>)> = vec![
        (CannedAcl::Private, vec![fc.clone()]),
        (CannedAcl::PublicRead, vec![fc.clone(), g(Grantee::Group(Group::AllUsers), Permission::Read)]),
        (
            CannedAcl::PublicReadWrite,
            vec![
                fc.clone(),
                g(Grantee::Group(Group::AllUsers), Permission::Read),
                g(Grantee::Group(Group::AllUsers), Permission::Write),
            ],
        ),
        (
            CannedAcl::AuthenticatedRead,
            vec![fc.clone(), g(Grantee::Group(Group::AuthenticatedUsers), Permission::Read)],
        ),
        (
            CannedAcl::AwsExecRead,
            vec![
                fc.clone(),
                g(
                    Grantee::CanonicalUser { id: EC2_CANONICAL_ID.into(), display_name: Some("za-team".into()) },
                    Permission::Read,
                ),
            ],
        ),
        (CannedAcl::BucketOwnerRead, vec![fc.clone(), g(user("bkt-owner"), Permission::Read)]),
        (CannedAcl::BucketOwnerFullControl, vec![fc.clone(), g(user("bkt-owner"), Permission::FullControl)]),
        (
            CannedAcl::LogDeliveryWrite,
            vec![
                fc.clone(),
                g(Grantee::Group(Group::LogDelivery), Permission::Write),
                g(Grantee::Group(Group::LogDelivery), Permission::ReadAcp),
            ],
        ),
    ];
    for (c, want) in cases {
        let acl = c.expand(&o, &b, true);
        assert_eq!(acl.owner, o, "{c:?}");
        assert_eq!(acl.grants, want, "{c:?}");
        assert_eq!(CannedAcl::parse(c.as_str()).unwrap(), c);
    }
}

#[test]
fn bucket_owner_canned_acls_are_private_on_buckets_and_for_the_owner() {
    let o = Owner::new("o");
    for c in [CannedAcl::BucketOwnerRead, CannedAcl::BucketOwnerFullControl] {
        assert_eq!(c.expand(&o, &o, false), Acl::private(o.clone()));
        assert_eq!(c.expand(&o, &Owner::new("b"), false), Acl::private(o.clone()));
        assert_eq!(c.expand(&o, &o, true), Acl::private(o.clone()));
    }
}

#[test]
fn unknown_canned_acl_is_invalid_argument() {
    for s in ["Private", "public", "", "public-read "] {
        let e = CannedAcl::parse(s).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{s:?}");
        assert_eq!(e.message, "");
        assert_eq!(e.argument(), Some(("x-amz-acl", s)));
    }
}

#[test]
fn grants_decide_access() {
    let acl = Acl {
        owner: Owner::new("o"),
        grants: vec![
            g(user("o"), Permission::FullControl),
            g(user("r"), Permission::Read),
            g(Grantee::Group(Group::AuthenticatedUsers), Permission::ReadAcp),
            g(Grantee::Group(Group::AllUsers), Permission::Write),
            g(Grantee::Group(Group::LogDelivery), Permission::FullControl),
        ],
    };
    let r = Principal::account("r");
    let x = Principal::account("x");
    assert!(acl.allows(&Principal::account("o"), Permission::WriteAcp, false), "FULL_CONTROL implies all");
    assert!(acl.allows(&r, Permission::Read, false));
    assert!(!acl.allows(&r, Permission::WriteAcp, false), "READ is not WRITE_ACP");
    assert!(!acl.allows(&x, Permission::Read, false));
    assert!(acl.allows(&x, Permission::ReadAcp, false), "AuthenticatedUsers covers accounts");
    assert!(!acl.allows(&Principal::Anonymous, Permission::ReadAcp, false), "not anonymous");
    assert!(acl.allows(&Principal::Anonymous, Permission::Write, false), "AllUsers covers anonymous");
    assert!(!acl.allows(&Principal::Anonymous, Permission::Write, true), "IgnorePublicAcls");
    assert!(!acl.allows(&x, Permission::ReadAcp, true), "IgnorePublicAcls");
    assert!(acl.allows(&r, Permission::Read, true), "user grants survive IgnorePublicAcls");
    assert!(!acl.allows(&x, Permission::FullControl, false), "LogDelivery holds no s3hpc principal");
    assert!(acl.is_public());
    assert!(!Acl::private(Owner::new("o")).is_public());
    assert!(Acl::private(Owner::new("o")).only_owner("o"));
    assert!(!acl.only_owner("o"));
}

#[test]
fn xml_round_trip() {
    let acl = Acl {
        owner: Owner { id: "o<&>".into(), display_name: Some("Owner Name".into()) },
        grants: vec![
            g(
                Grantee::CanonicalUser { id: "o<&>".into(), display_name: Some("Owner Name".into()) },
                Permission::FullControl,
            ),
            g(user("r"), Permission::Read),
            g(Grantee::Group(Group::AllUsers), Permission::Read),
            g(Grantee::Group(Group::AuthenticatedUsers), Permission::WriteAcp),
            g(Grantee::Group(Group::LogDelivery), Permission::Write),
        ],
    };
    let xml = acl.to_xml();
    assert!(xml.contains(r#"xsi:type="Group"><URI>http://acs.amazonaws.com/groups/global/AllUsers</URI>"#), "{xml}");
    assert!(xml.contains("<ID>o&lt;&amp;&gt;</ID>"), "{xml}");
    assert_eq!(Acl::from_xml(xml.as_bytes(), None).unwrap(), acl);
}

#[test]
fn xml_as_clients_send_it() {
    let doc = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<AccessControlPolicy xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Owner><ID>o</ID></Owner>
  <AccessControlList>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="CanonicalUser"><ID> r </ID><DisplayName></DisplayName></Grantee>
      <Permission>READ</Permission>
    </Grant>
    <Grant>
      <Grantee xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:type="Group"><URI>{ALL_USERS_URI}</URI></Grantee>
      <Permission>READ_ACP</Permission>
    </Grant>
  </AccessControlList>
</AccessControlPolicy>"#
    );
    let acl = Acl::from_xml(doc.as_bytes(), None).unwrap();
    assert_eq!(acl.owner, Owner::new("o"));
    assert_eq!(
        acl.grants,
        vec![g(user("r"), Permission::Read), g(Grantee::Group(Group::AllUsers), Permission::ReadAcp)]
    );
}

fn acl_doc(grant: &str) -> String {
    format!(
        r#"<AccessControlPolicy><Owner><ID>o</ID></Owner><AccessControlList><Grant>{grant}</Grant></AccessControlList></AccessControlPolicy>"#
    )
}

const XSI: &str = r#"xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance""#;

#[test]
fn xml_errors() {
    let malformed = [
        "".to_string(),
        "<AccessControlPolicy>".into(),
        "<Other/>".into(),
        "<AccessControlPolicy><AccessControlList/></AccessControlPolicy>".into(),
        "<AccessControlPolicy><Owner><ID></ID></Owner></AccessControlPolicy>".into(),
        "<!DOCTYPE x [<!ENTITY a 'b'>]><AccessControlPolicy/>".into(),
        acl_doc(&format!(
            r#"<Grantee {XSI} xsi:type="CanonicalUser"><ID>r</ID></Grantee><Permission>read</Permission>"#
        )),
        acl_doc(&format!(r#"<Grantee {XSI} xsi:type="CanonicalUser"><ID>r</ID></Grantee>"#)),
        acl_doc(r#"<Grantee><ID>r</ID></Grantee><Permission>READ</Permission>"#),
        acl_doc(&format!(r#"<Grantee {XSI} xsi:type="Robot"><ID>r</ID></Grantee><Permission>READ</Permission>"#)),
        acl_doc(&format!(r#"<Grantee {XSI} xsi:type="CanonicalUser"></Grantee><Permission>READ</Permission>"#)),
        acl_doc("<Permission>READ</Permission>"),
    ];
    for d in &malformed {
        let e = Acl::from_xml(d.as_bytes(), None).unwrap_err();
        assert_eq!(e.code, ErrorCode::MalformedACLError, "{d}");
        assert_eq!(e.http_status(), 400);
    }
    let bad_uri = acl_doc(&format!(
        r#"<Grantee {XSI} xsi:type="Group"><URI>http://x/y</URI></Grantee><Permission>READ</Permission>"#
    ));
    let e = Acl::from_xml(bad_uri.as_bytes(), None).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "Invalid group uri"));
    assert_eq!(e.argument(), Some(("Group/URI", "http://x/y")));
    let email = acl_doc(&format!(
        r#"<Grantee {XSI} xsi:type="AmazonCustomerByEmail"><EmailAddress>a@b.c</EmailAddress></Grantee><Permission>READ</Permission>"#
    ));
    assert_eq!(Acl::from_xml(email.as_bytes(), None).unwrap_err().code, ErrorCode::UnresolvableGrantByEmailAddress);
    let unknown = acl_doc(&format!(
        r#"<Grantee {XSI} xsi:type="CanonicalUser"><ID>nobody</ID></Grantee><Permission>READ</Permission>"#
    ));
    let exists = |id: &str| id == "r";
    let e = Acl::from_xml(unknown.as_bytes(), Some(&exists)).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "Invalid id"));
    assert_eq!(e.argument(), Some(("CanonicalUser/ID", "nobody")));
    assert!(Acl::from_xml(unknown.as_bytes(), None).is_ok());
}

#[test]
fn grant_headers() {
    let h = "x-amz-grant-read";
    let v = format!(r#"id="a", id=b ,uri="{AUTHENTICATED_USERS_URI}""#);
    assert_eq!(
        parse_grantees(h, &v, None).unwrap(),
        vec![user("a"), user("b"), Grantee::Group(Group::AuthenticatedUsers)]
    );
    assert_eq!(
        parse_grantees(h, &format!("uri={LOG_DELIVERY_URI}"), None).unwrap(),
        vec![Grantee::Group(Group::LogDelivery)]
    );
    for bad in ["", "a", r#"id="""#, r#"id="a"#, r#"name="a""#, ",", r#"ID="a""#] {
        let e = parse_grantees(h, bad, None).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidArgument, "Argument format not recognized"),
            "{bad:?}"
        );
        assert_eq!(e.argument().map(|(n, _)| n), Some(h), "{bad:?}");
    }
    let e = parse_grantees(h, r#"uri="http://x""#, None).unwrap_err();
    assert_eq!((e.message.as_str(), e.argument()), ("Invalid group uri", Some(("uri", "http://x"))));
    assert_eq!(
        parse_grantees(h, r#"emailAddress="x@example.com""#, None).unwrap_err().code,
        ErrorCode::UnresolvableGrantByEmailAddress
    );
    let exists = |id: &str| id == "a";
    let e = parse_grantees(h, r#"id="zz""#, Some(&exists)).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "Invalid id"));
    assert_eq!(e.argument(), Some(("id", "zz")));
    // The header named is the one at fault.
    let hs = AclHeaders { grant_read: Some(r#"id="a""#), grant_write_acp: Some("junk"), ..Default::default() };
    let e = hs.parse(None).unwrap_err();
    assert_eq!(e.argument(), Some(("x-amz-grant-write-acp", "junk")));
}

#[test]
fn acl_headers_combine_as_s3() {
    let h = AclHeaders { canned: Some("public-read"), grant_read: Some(r#"id="a""#), ..Default::default() };
    let e = h.parse(None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidRequest);
    assert_eq!(e.message, "Specifying both Canned ACLs and Header Grants is not allowed");
    assert_eq!(AclHeaders::default().parse(None).unwrap(), RequestedAcl::None);
    assert!(AclHeaders::default().is_empty());
    let h = AclHeaders { canned: Some("public-read"), ..Default::default() };
    assert_eq!(h.parse(None).unwrap(), RequestedAcl::Canned(CannedAcl::PublicRead));
    let h = AclHeaders { canned: Some("nope"), ..Default::default() };
    assert_eq!(h.parse(None).unwrap_err().code, ErrorCode::InvalidArgument);
    let h = AclHeaders {
        grant_read: Some(r#"id="a""#),
        grant_write: Some(r#"id="b""#),
        grant_read_acp: Some(r#"id="c""#),
        grant_write_acp: Some(r#"id="d""#),
        grant_full_control: Some(r#"id="e""#),
        ..Default::default()
    };
    assert_eq!(
        h.parse(None).unwrap(),
        RequestedAcl::Grants(vec![
            g(user("a"), Permission::Read),
            g(user("b"), Permission::Write),
            g(user("c"), Permission::ReadAcp),
            g(user("d"), Permission::WriteAcp),
            g(user("e"), Permission::FullControl),
        ])
    );
}

#[test]
fn serde_round_trip() {
    let acl = CannedAcl::PublicReadWrite.expand(&Owner::new("o"), &Owner::new("o"), false);
    let j = serde_json::to_string(&acl).unwrap();
    assert_eq!(serde_json::from_str::<Acl>(&j).unwrap(), acl);
}
