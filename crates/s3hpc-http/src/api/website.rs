//! Get/Put/DeleteBucketWebsite (`?website`): the website configuration document, validated as
//! AWS validates it, kept through the Store seam as the bucket configuration `website` and
//! returned as stored. The website endpoint (`s3hpc serve --website-domain`) that serves it is
//! [`super::website_serve`].

use http::StatusCode;

use s3hpc_core::*;

use super::Req;
use super::request::*;
use super::response::*;
use crate::body::ReqBody;
use crate::xml::{self, DECL, Elem, NS, elem};

/// The bucket configuration name the document is kept under.
pub(super) const CONFIG: &str = "website";

/// A redirect: of every request (`RedirectAllRequestsTo`) or of a routing rule.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Redirect {
    pub host_name: Option<String>,
    pub http_redirect_code: Option<String>,
    pub protocol: Option<String>,
    pub replace_key_prefix_with: Option<String>,
    pub replace_key_with: Option<String>,
}

#[derive(Debug, PartialEq, Eq)]
pub(super) struct RoutingRule {
    /// `KeyPrefixEquals`, `HttpErrorCodeReturnedEquals`.
    pub condition: Option<(Option<String>, Option<String>)>,
    pub redirect: Redirect,
}

/// A WebsiteConfiguration.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Website {
    pub redirect_all: Option<Redirect>,
    pub index_suffix: Option<String>,
    pub error_key: Option<String>,
    pub routing_rules: Vec<RoutingRule>,
}

fn invalid_request(msg: &str) -> Error {
    Error::new(ErrorCode::InvalidRequest, msg)
}

fn text(e: &Elem, name: &str) -> Option<String> {
    e.child_text(name).map(|t| t.trim().to_string())
}

fn check_protocol(p: &Option<String>) -> Result<()> {
    match p.as_deref() {
        None | Some("http") | Some("https") => Ok(()),
        Some(_) => Err(invalid_request(
            "Invalid protocol, protocol can be http or https. If not defined the protocol will be selected \
             automatically.",
        )),
    }
}

fn redirect(e: &Elem) -> Result<Redirect> {
    let r = Redirect {
        host_name: text(e, "HostName"),
        http_redirect_code: text(e, "HttpRedirectCode"),
        protocol: text(e, "Protocol"),
        replace_key_prefix_with: text(e, "ReplaceKeyPrefixWith"),
        replace_key_with: text(e, "ReplaceKeyWith"),
    };
    check_protocol(&r.protocol)?;
    Ok(r)
}

impl Website {
    pub(super) fn parse(data: &[u8]) -> Result<Website> {
        let root = xml::parse_tree(data)?;
        xml::expect_root(&root, "WebsiteConfiguration")?;
        let mut w = Website::default();
        if let Some(all) = root.child("RedirectAllRequestsTo") {
            if ["IndexDocument", "ErrorDocument", "RoutingRules"].iter().any(|n| root.child(n).is_some()) {
                return Err(Error::invalid_arg(
                    "RedirectAllRequestsTo cannot be provided in conjunction with other Routing Rules.",
                    "RedirectAllRequestsTo",
                    "not null",
                ));
            }
            let r = redirect(all)?;
            if r.host_name.as_deref().is_none_or(str::is_empty) {
                return Err(xml::malformed("RedirectAllRequestsTo needs a HostName"));
            }
            w.redirect_all = Some(Redirect { host_name: r.host_name, protocol: r.protocol, ..Default::default() });
            return Ok(w);
        }
        let Some(index) = root.child("IndexDocument") else {
            return Err(Error::invalid_arg(
                "A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty",
                "IndexDocument",
                "null",
            ));
        };
        let suffix = text(index, "Suffix").unwrap_or_default();
        if suffix.is_empty() || suffix.contains('/') {
            return Err(Error::invalid_arg("The IndexDocument Suffix is not well formed", "IndexDocument", &suffix));
        }
        w.index_suffix = Some(suffix);
        if let Some(e) = root.child("ErrorDocument") {
            let key = text(e, "Key").filter(|k| !k.is_empty());
            w.error_key = Some(key.ok_or_else(|| xml::malformed("ErrorDocument needs a Key"))?);
        }
        if let Some(rules) = root.child("RoutingRules") {
            let rules: Vec<&Elem> = rules.children("RoutingRule").collect();
            if rules.is_empty() {
                return Err(xml::malformed("RoutingRules needs at least one RoutingRule"));
            }
            for rule in rules {
                let condition = match rule.child("Condition") {
                    None => None,
                    Some(c) => {
                        let c = (text(c, "KeyPrefixEquals"), text(c, "HttpErrorCodeReturnedEquals"));
                        if c == (None, None) {
                            return Err(invalid_request(
                                "Condition cannot be empty. To redirect all requests without a condition, the \
                                 condition element shouldn't be present.",
                            ));
                        }
                        Some(c)
                    }
                };
                let r =
                    redirect(rule.child("Redirect").ok_or_else(|| xml::malformed("a RoutingRule needs a Redirect"))?)?;
                if r.replace_key_prefix_with.is_some() && r.replace_key_with.is_some() {
                    return Err(invalid_request("You can only define ReplaceKeyPrefix or ReplaceKey but not both."));
                }
                w.routing_rules.push(RoutingRule { condition, redirect: r });
            }
        }
        Ok(w)
    }

    fn to_xml(&self) -> String {
        let opt = |s: &mut String, name: &str, v: &Option<String>| {
            if let Some(v) = v {
                elem(s, name, v);
            }
        };
        let mut s = String::from(DECL);
        s.push_str(&format!("<WebsiteConfiguration xmlns=\"{NS}\">"));
        if let Some(r) = &self.redirect_all {
            s.push_str("<RedirectAllRequestsTo>");
            opt(&mut s, "HostName", &r.host_name);
            opt(&mut s, "Protocol", &r.protocol);
            s.push_str("</RedirectAllRequestsTo>");
        }
        if let Some(x) = &self.index_suffix {
            s.push_str("<IndexDocument>");
            elem(&mut s, "Suffix", x);
            s.push_str("</IndexDocument>");
        }
        if let Some(k) = &self.error_key {
            s.push_str("<ErrorDocument>");
            elem(&mut s, "Key", k);
            s.push_str("</ErrorDocument>");
        }
        if !self.routing_rules.is_empty() {
            s.push_str("<RoutingRules>");
            for rule in &self.routing_rules {
                s.push_str("<RoutingRule>");
                if let Some((prefix, code)) = &rule.condition {
                    s.push_str("<Condition>");
                    opt(&mut s, "KeyPrefixEquals", prefix);
                    opt(&mut s, "HttpErrorCodeReturnedEquals", code);
                    s.push_str("</Condition>");
                }
                let r = &rule.redirect;
                s.push_str("<Redirect>");
                opt(&mut s, "HostName", &r.host_name);
                opt(&mut s, "HttpRedirectCode", &r.http_redirect_code);
                opt(&mut s, "Protocol", &r.protocol);
                opt(&mut s, "ReplaceKeyPrefixWith", &r.replace_key_prefix_with);
                opt(&mut s, "ReplaceKeyWith", &r.replace_key_with);
                s.push_str("</Redirect>");
                s.push_str("</RoutingRule>");
            }
            s.push_str("</RoutingRules>");
        }
        s.push_str("</WebsiteConfiguration>");
        s
    }
}

/// GET `?website`: the stored document; none: 404 NoSuchWebsiteConfiguration.
pub(super) async fn get(r: &Req<'_>) -> Result<Resp> {
    let Some(doc) = store(r).get_bucket_config(&r.bucket, CONFIG).await? else {
        return Ok(crate::error_response_raw(
            404,
            "NoSuchWebsiteConfiguration",
            "The specified bucket does not have a website configuration",
            Some(&r.bucket),
            &[("BucketName", r.bucket.clone())],
            false,
            r.parts.uri.path(),
            r.rid,
        ));
    };
    Ok(xml_ok(String::from_utf8_lossy(&doc).into_owned()))
}

/// PUT `?website` (200): validated, then kept in the canonical form GET answers.
pub(super) async fn put(r: &Req<'_>, body: ReqBody) -> Result<Resp> {
    let data = small_body(r, body, false).await.and_then(nonempty)?;
    let doc = Website::parse(&data)?.to_xml();
    store(r).put_bucket_config(&r.bucket, CONFIG, Some(doc.into_bytes())).await?;
    Ok(empty(StatusCode::OK))
}

/// DELETE `?website` (204, also when there was none).
pub(super) async fn delete(r: &Req<'_>) -> Result<Resp> {
    match store(r).put_bucket_config(&r.bucket, CONFIG, None).await {
        Ok(()) => {}
        Err(e) if e.code == ErrorCode::NoSuchKey => {}
        Err(e) => return Err(e),
    }
    Ok(empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Website> {
        Website::parse(format!("<WebsiteConfiguration xmlns=\"{NS}\">{body}</WebsiteConfiguration>").as_bytes())
    }

    fn refused(body: &str) -> (ErrorCode, String) {
        let e = parse(body).unwrap_err();
        (e.code, e.message)
    }

    #[test]
    fn documents_round_trip() {
        let w = parse(
            "<IndexDocument><Suffix>index.html</Suffix></IndexDocument><ErrorDocument><Key>err.html</Key>\
             </ErrorDocument><RoutingRules><RoutingRule><Condition><KeyPrefixEquals>docs/</KeyPrefixEquals>\
             </Condition><Redirect><ReplaceKeyPrefixWith>documents/</ReplaceKeyPrefixWith></Redirect>\
             </RoutingRule></RoutingRules>",
        )
        .unwrap();
        assert_eq!(Website::parse(w.to_xml().as_bytes()).unwrap(), w);
        let all = parse(
            "<RedirectAllRequestsTo><HostName>example.com</HostName><Protocol>https</Protocol></RedirectAllRequestsTo>",
        )
        .unwrap();
        assert!(all.to_xml().contains(
            "<RedirectAllRequestsTo><HostName>example.com</HostName><Protocol>https</Protocol></RedirectAllRequestsTo>"
        ));
    }

    #[test]
    fn refused_as_aws_refuses() {
        let arg = ErrorCode::InvalidArgument;
        assert_eq!(
            refused(""),
            (arg, "A value for IndexDocument Suffix must be provided if RedirectAllRequestsTo is empty".into())
        );
        for suffix in ["", "a/index.html"] {
            let body = format!("<IndexDocument><Suffix>{suffix}</Suffix></IndexDocument>");
            assert_eq!(refused(&body), (arg, "The IndexDocument Suffix is not well formed".into()));
        }
        assert_eq!(
            refused(
                "<RedirectAllRequestsTo><HostName>h</HostName></RedirectAllRequestsTo>\
                 <IndexDocument><Suffix>i</Suffix></IndexDocument>"
            ),
            (arg, "RedirectAllRequestsTo cannot be provided in conjunction with other Routing Rules.".into())
        );
        let idx = "<IndexDocument><Suffix>i</Suffix></IndexDocument>";
        let req = ErrorCode::InvalidRequest;
        assert_eq!(
            refused(&format!(
                "{idx}<RoutingRules><RoutingRule><Redirect><ReplaceKeyPrefixWith>a</ReplaceKeyPrefixWith>\
                 <ReplaceKeyWith>b</ReplaceKeyWith></Redirect></RoutingRule></RoutingRules>"
            )),
            (req, "You can only define ReplaceKeyPrefix or ReplaceKey but not both.".into())
        );
        assert_eq!(
            refused(&format!(
                "{idx}<RoutingRules><RoutingRule><Condition></Condition><Redirect><HostName>h</HostName>\
                 </Redirect></RoutingRule></RoutingRules>"
            ))
            .0,
            req
        );
        assert_eq!(
            refused("<RedirectAllRequestsTo><HostName>h</HostName><Protocol>ftp</Protocol></RedirectAllRequestsTo>").0,
            req
        );
        for body in [
            "<RedirectAllRequestsTo><Protocol>http</Protocol></RedirectAllRequestsTo>".to_string(),
            format!("{idx}<ErrorDocument></ErrorDocument>"),
            format!("{idx}<RoutingRules></RoutingRules>"),
            format!("{idx}<RoutingRules><RoutingRule></RoutingRule></RoutingRules>"),
        ] {
            assert_eq!(refused(&body).0, ErrorCode::MalformedXML, "{body}");
        }
    }
}
