//! Just enough XML for S3 responses: a small element tree built with quick-xml, and writers.

use quick_xml::events::Event;
use s3hpc_core::{Error, ErrorCode, Result};

/// An element: local name, concatenated text, children.
#[derive(Debug, Default, Clone)]
pub struct Node {
    pub name: String,
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    pub fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }

    /// Text of a child element.
    pub fn text_of(&self, name: &str) -> Option<&str> {
        self.child(name).map(|c| c.text.as_str())
    }

    pub fn bool_of(&self, name: &str) -> bool {
        self.text_of(name).is_some_and(|t| t.trim().eq_ignore_ascii_case("true"))
    }
}

fn malformed(msg: impl std::fmt::Display) -> Error {
    Error::new(ErrorCode::InternalError, format!("malformed XML in the server's response: {msg}"))
}

fn predefined(name: &str) -> Option<char> {
    Some(match name {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "apos" => '\'',
        "quot" => '"',
        _ => return None,
    })
}

/// Parse a document into its root element.
pub fn parse(doc: &[u8]) -> Result<Node> {
    let s = std::str::from_utf8(doc).map_err(malformed)?;
    let mut r = quick_xml::Reader::from_str(s);
    let mut stack: Vec<Node> = Vec::new();
    loop {
        match r.read_event().map_err(malformed)? {
            Event::Start(e) => {
                stack.push(Node { name: e.local_name().as_ref().to_string(), ..Default::default() });
            }
            Event::Empty(e) => {
                let n = Node { name: e.local_name().as_ref().to_string(), ..Default::default() };
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None => return Ok(n),
                }
            }
            Event::End(_) => {
                let n = stack.pop().ok_or_else(|| malformed("unbalanced end tag"))?;
                match stack.last_mut() {
                    Some(p) => p.children.push(n),
                    None => return Ok(n),
                }
            }
            Event::Text(t) => {
                if let Some(n) = stack.last_mut() {
                    n.text.push_str(&t.xml10_content());
                }
            }
            Event::CData(t) => {
                if let Some(n) = stack.last_mut() {
                    n.text.push_str(&t);
                }
            }
            Event::GeneralRef(e) => {
                let c = match e.resolve_char_ref().map_err(malformed)? {
                    Some(c) => c,
                    None => predefined(&e).ok_or_else(|| malformed(format!("unknown entity &{};", &*e)))?,
                };
                if let Some(n) = stack.last_mut() {
                    n.text.push(c);
                }
            }
            Event::Eof => return Err(malformed("document ended early")),
            _ => {}
        }
    }
}

/// Append `s` escaped for XML text.
pub fn escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
}

/// `<name>escaped text</name>`.
pub fn elem(out: &mut String, name: &str, text: &str) {
    out.push('<');
    out.push_str(name);
    out.push('>');
    escape_into(text, out);
    out.push_str("</");
    out.push_str(name);
    out.push('>');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_entities_and_nesting() {
        let doc = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
  <Contents><Key>a &amp; b&#x20;&lt;c&gt;</Key><Size>5</Size></Contents>
  <Contents><Key><![CDATA[x<y]]></Key></Contents><IsTruncated>true</IsTruncated><Empty/></ListBucketResult>"#;
        let n = parse(doc).unwrap();
        assert_eq!(n.name, "ListBucketResult");
        let keys: Vec<&str> = n.children("Contents").filter_map(|c| c.text_of("Key")).collect();
        assert_eq!(keys, vec!["a & b <c>", "x<y"]);
        assert!(n.bool_of("IsTruncated"));
        assert!(parse(b"<a><b></a>").is_err());
        assert!(parse(b"<a>").is_err());
        let mut s = String::new();
        elem(&mut s, "Key", "a<&>\"'");
        assert_eq!(parse(s.as_bytes()).unwrap().text, "a<&>\"'");
    }
}
