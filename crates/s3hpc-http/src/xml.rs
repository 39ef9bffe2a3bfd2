//! S3 XML: request document parsers (fuzzed, see `fuzz/`) and small response-writing helpers.
//!
//! Parsers build a tiny element tree with hard limits (depth, element count, text size) and then
//! pick the fields S3 defines; namespaces and unknown elements are ignored, as AWS does. Every
//! failure is `MalformedXML` (or the specific S3 code where AWS has one), never a panic.

use quick_xml::Reader;
use quick_xml::events::Event;
use s3hpc_core::{Checksum, ChecksumAlgorithm, CompletePart, Error, ErrorCode, Result, Tags};

/// The error type of the parsers (an S3 error: `MalformedXML` or `MaxMessageLengthExceeded`).
pub type ParseError = Error;

/// Largest XML request document accepted (DeleteObjects with 1000 long keys fits).
pub const MAX_XML_BODY: usize = 2 * 1024 * 1024;
const MAX_DEPTH: usize = 16;
const MAX_ELEMENTS: usize = 40_000;

pub(crate) fn malformed(why: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::MalformedXML, format!("{}: {why}", ErrorCode::MalformedXML.default_message()))
}

/// One parsed element: local name, concatenated text, children.
#[derive(Debug, Default)]
pub(crate) struct Elem {
    pub(crate) name: String,
    pub(crate) text: String,
    pub(crate) children: Vec<Elem>,
}

impl Elem {
    pub(crate) fn child(&self, name: &str) -> Option<&Elem> {
        self.children.iter().find(|c| c.name == name)
    }
    pub(crate) fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Elem> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
    pub(crate) fn child_text(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }
}

fn local_name(raw: &str) -> Result<String> {
    Ok(raw.rsplit_once(':').map_or(raw, |(_, l)| l).to_string())
}

/// Parse a whole document into its root element.
pub(crate) fn parse_tree(data: &[u8]) -> Result<Elem> {
    if data.len() > MAX_XML_BODY {
        return Err(Error::code(ErrorCode::MaxMessageLengthExceeded));
    }
    let mut reader = Reader::from_reader(data);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Elem> = Vec::new();
    let mut root: Option<Elem> = None;
    let mut count = 0usize;
    loop {
        let ev = reader.read_event().map_err(malformed)?;
        match ev {
            Event::Start(_) | Event::Empty(_) if root.is_some() => {
                return Err(malformed("content after the root element"));
            }
            Event::Start(e) => {
                count += 1;
                if count > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    return Err(malformed("document too large or too deep"));
                }
                stack.push(Elem { name: local_name(e.name().as_ref())?, ..Default::default() });
            }
            Event::Empty(e) => {
                count += 1;
                if count > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    return Err(malformed("document too large or too deep"));
                }
                let el = Elem { name: local_name(e.name().as_ref())?, ..Default::default() };
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::End(e) => {
                let el = stack.pop().ok_or_else(|| malformed("unbalanced end tag"))?;
                if local_name(e.name().as_ref())? != el.name {
                    return Err(malformed("mismatched end tag"));
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(el),
                    None => root = Some(el),
                }
            }
            Event::Text(t) => {
                push_text(&mut stack, &t.xml10_content())?;
            }
            Event::GeneralRef(r) => {
                let name = r.into_inner();
                let resolved = resolve_entity(&name).ok_or_else(|| malformed("unknown entity"))?;
                let mut buf = [0u8; 4];
                push_text(&mut stack, resolved.encode_utf8(&mut buf))?;
            }
            Event::CData(c) => {
                push_text(&mut stack, c.as_ref())?;
            }
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
            Event::DocType(_) => return Err(malformed("DOCTYPE is not allowed")),
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(malformed("unexpected end of document"));
    }
    root.ok_or_else(|| malformed("empty document"))
}

fn push_text(stack: &mut [Elem], s: &str) -> Result<()> {
    match stack.last_mut() {
        Some(el) => {
            if el.text.len() + s.len() > 64 * 1024 {
                return Err(malformed("text too long"));
            }
            el.text.push_str(s);
            Ok(())
        }
        None if s.trim().is_empty() => Ok(()),
        None => Err(malformed("text outside the root element")),
    }
}

fn resolve_entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code)
        }
    }
}

pub(crate) fn expect_root(el: &Elem, name: &str) -> Result<()> {
    if el.name == name { Ok(()) } else { Err(malformed(format!("expected <{name}>, found <{}>", el.name))) }
}

/// `<CompleteMultipartUpload><Part><PartNumber/><ETag/>[<ChecksumCRC32/>...]</Part>...`
pub fn parse_complete_multipart_upload(data: &[u8]) -> Result<Vec<CompletePart>> {
    let root = parse_tree(data)?;
    expect_root(&root, "CompleteMultipartUpload")?;
    let mut parts = Vec::new();
    for p in root.children("Part") {
        let n = p.child_text("PartNumber").ok_or_else(|| malformed("Part without PartNumber"))?;
        let part_number: u32 = n.trim().parse().map_err(|_| malformed("PartNumber is not a number"))?;
        let etag = p.child_text("ETag").ok_or_else(|| malformed("Part without ETag"))?.trim().to_string();
        let mut checksum = None;
        for alg in ChecksumAlgorithm::ALL {
            if let Some(v) = p.child_text(checksum_element(alg)) {
                checksum = Some(Checksum { algorithm: alg, value: v.trim().to_string() });
            }
        }
        parts.push(CompletePart { part_number, etag, checksum });
    }
    if parts.is_empty() {
        return Err(malformed("no parts"));
    }
    Ok(parts)
}

/// The parsed `<Delete>` document of DeleteObjects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRequest {
    pub quiet: bool,
    /// Keys with their optional VersionId.
    pub objects: Vec<(String, Option<String>)>,
}

/// Most keys one DeleteObjects may name.
pub const MAX_DELETE_KEYS: usize = 1000;

/// `<Delete><Quiet>true</Quiet><Object><Key/><VersionId/></Object>...</Delete>`
pub fn parse_delete_objects(data: &[u8]) -> Result<DeleteRequest> {
    let root = parse_tree(data)?;
    expect_root(&root, "Delete")?;
    let quiet = match root.child_text("Quiet").map(str::trim) {
        None => false,
        Some(q) if q.eq_ignore_ascii_case("true") => true,
        Some(q) if q.eq_ignore_ascii_case("false") => false,
        Some(_) => return Err(malformed("Quiet must be true or false")),
    };
    let mut objects = Vec::new();
    for o in root.children("Object") {
        let key = o.child_text("Key").ok_or_else(|| malformed("Object without Key"))?.to_string();
        let version = o.child_text("VersionId").map(|v| v.trim().to_string());
        objects.push((key, version));
        if objects.len() > MAX_DELETE_KEYS {
            return Err(malformed("more than 1000 keys"));
        }
    }
    if objects.is_empty() {
        return Err(malformed("no objects"));
    }
    Ok(DeleteRequest { quiet, objects })
}

/// `<VersioningConfiguration><Status/><MfaDelete/></VersioningConfiguration>`: the status and
/// the MFA delete setting as given (`None` when absent).
pub fn parse_versioning(data: &[u8]) -> Result<(Option<String>, Option<String>)> {
    let root = parse_tree(data)?;
    expect_root(&root, "VersioningConfiguration")?;
    let text = |n: &str| root.child_text(n).map(|s| s.trim().to_string());
    Ok((text("Status"), text("MfaDelete")))
}

/// `<Tagging><TagSet><Tag><Key/><Value/></Tag>...</TagSet></Tagging>`
pub fn parse_tagging(data: &[u8]) -> Result<Tags> {
    let root = parse_tree(data)?;
    expect_root(&root, "Tagging")?;
    let set = root.child("TagSet").ok_or_else(|| malformed("Tagging without TagSet"))?;
    let mut tags = Vec::new();
    for t in set.children("Tag") {
        let k = t.child_text("Key").ok_or_else(|| malformed("Tag without Key"))?;
        let v = t.child_text("Value").ok_or_else(|| malformed("Tag without Value"))?;
        tags.push((k.to_string(), v.to_string()));
    }
    Ok(tags)
}

/// `<CreateBucketConfiguration><LocationConstraint/></CreateBucketConfiguration>`: the location
/// constraint, if any. An empty body is not parsed here (the caller treats it as none).
/// The `LocationConstraint` of a `CreateBucketConfiguration`: `None` without the element,
/// `Some("")` for an empty one.
pub fn parse_create_bucket_configuration(data: &[u8]) -> Result<Option<String>> {
    let root = parse_tree(data)?;
    expect_root(&root, "CreateBucketConfiguration")?;
    Ok(root.child("LocationConstraint").map(|c| c.text.trim().to_string()))
}

/// The `<Tags><Tag><Key/><Value/></Tag>...</Tags>` of a `CreateBucketConfiguration` (empty
/// when there are none).
pub fn parse_create_bucket_tags(data: &[u8]) -> Result<Tags> {
    let root = parse_tree(data)?;
    expect_root(&root, "CreateBucketConfiguration")?;
    let mut tags = Vec::new();
    if let Some(set) = root.child("Tags") {
        for t in set.children("Tag") {
            let k = t.child_text("Key").ok_or_else(|| malformed("Tag without Key"))?;
            let v = t.child_text("Value").ok_or_else(|| malformed("Tag without Value"))?;
            tags.push((k.to_string(), v.to_string()));
        }
    }
    Ok(tags)
}

/// XML element name of a checksum: `ChecksumCRC32`, ...
pub fn checksum_element(alg: ChecksumAlgorithm) -> &'static str {
    match alg {
        ChecksumAlgorithm::Crc32 => "ChecksumCRC32",
        ChecksumAlgorithm::Crc32c => "ChecksumCRC32C",
        ChecksumAlgorithm::Crc64Nvme => "ChecksumCRC64NVME",
        ChecksumAlgorithm::Sha1 => "ChecksumSHA1",
        ChecksumAlgorithm::Sha256 => "ChecksumSHA256",
        ChecksumAlgorithm::Sha512 => "ChecksumSHA512",
        ChecksumAlgorithm::Md5 => "ChecksumMD5",
        ChecksumAlgorithm::Xxhash64 => "ChecksumXXHASH64",
        ChecksumAlgorithm::Xxhash3 => "ChecksumXXHASH3",
        ChecksumAlgorithm::Xxhash128 => "ChecksumXXHASH128",
    }
}

// ---- writing ----

/// The XML declaration every response document starts with.
pub const DECL: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
/// The S3 namespace.
pub const NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

/// Append `s` escaped for XML text (control characters as numeric references, as S3 does).
pub fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 => {
                use std::fmt::Write;
                let _ = write!(out, "&#x{:X};", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// Append `<name>escaped text</name>`.
pub fn elem(out: &mut String, name: &str, text: &str) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    escape_into(out, text);
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_multipart() {
        let doc = br#"<?xml version="1.0" encoding="UTF-8"?>
<CompleteMultipartUpload xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
  <Part><PartNumber>1</PartNumber><ETag>"abc"</ETag><ChecksumCRC32>AAAAAA==</ChecksumCRC32></Part>
  <Part><ETag>&quot;def&quot;</ETag><PartNumber>2</PartNumber></Part>
</CompleteMultipartUpload>"#;
        let parts = parse_complete_multipart_upload(doc).unwrap();
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].part_number, 1);
        assert_eq!(parts[0].etag, "\"abc\"");
        assert_eq!(parts[0].checksum.as_ref().unwrap().algorithm, ChecksumAlgorithm::Crc32);
        assert_eq!(parts[1].etag, "\"def\"");
        assert!(parts[1].checksum.is_none());
    }

    #[test]
    fn delete_objects_with_entities() {
        let doc = b"<Delete><Quiet>true</Quiet><Object><Key>a&amp;b&#x0D;c</Key></Object>\
                    <Object><Key>x</Key><VersionId>null</VersionId></Object></Delete>";
        let d = parse_delete_objects(doc).unwrap();
        assert!(d.quiet);
        assert_eq!(d.objects, vec![("a&b\rc".to_string(), None), ("x".to_string(), Some("null".to_string()))]);
    }

    #[test]
    fn too_many_delete_keys() {
        let mut doc = String::from("<Delete>");
        for i in 0..1001 {
            doc.push_str(&format!("<Object><Key>k{i}</Key></Object>"));
        }
        doc.push_str("</Delete>");
        assert_eq!(parse_delete_objects(doc.as_bytes()).unwrap_err().code, ErrorCode::MalformedXML);
    }

    #[test]
    fn tagging_and_location() {
        let t = parse_tagging(b"<Tagging><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value></Value></Tag></TagSet></Tagging>").unwrap();
        assert_eq!(t, vec![("a".into(), "1".into()), ("b".into(), "".into())]);
        let l = parse_create_bucket_configuration(
            b"<CreateBucketConfiguration><LocationConstraint>eu-west-1</LocationConstraint></CreateBucketConfiguration>",
        )
        .unwrap();
        assert_eq!(l.as_deref(), Some("eu-west-1"));
    }

    #[test]
    fn garbage_is_malformed() {
        for doc in [
            &b""[..],
            b"not xml",
            b"<Delete><Object><Key>a</Key></Object>",
            b"<Delete><Object><Key>a</Wrong></Object></Delete>",
            b"<Other/>",
            b"<Delete></Delete>",
            b"<!DOCTYPE x [<!ENTITY a 'b'>]><Delete><Object><Key>&a;</Key></Object></Delete>",
            b"<Delete><Object><Key>a</Key></Object></Delete><Delete/>",
            b"<Delete><Quiet>maybe</Quiet><Object><Key>a</Key></Object></Delete>",
            b"\xff\xfe<Delete/>",
        ] {
            let e = parse_delete_objects(doc).unwrap_err();
            assert_eq!(e.code, ErrorCode::MalformedXML, "{:?}", String::from_utf8_lossy(doc));
        }
        let deep = "<a>".repeat(100) + &"</a>".repeat(100);
        assert!(parse_tagging(deep.as_bytes()).is_err());
        assert!(parse_complete_multipart_upload(b"<CompleteMultipartUpload><Part><PartNumber>x</PartNumber><ETag>e</ETag></Part></CompleteMultipartUpload>").is_err());
    }

    #[test]
    fn escaping() {
        let mut s = String::new();
        elem(&mut s, "Key", "a<b>&\"c'\u{1}");
        assert_eq!(s, "<Key>a&lt;b&gt;&amp;&quot;c&apos;&#x1;</Key>");
    }
}
