//! A small element tree over quick-xml for the ACL, ownership and public-access documents,
//! with limits on size, depth and element count. No DOCTYPE, no custom entities.

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

const MAX_DOC: usize = 1024 * 1024;
const MAX_DEPTH: usize = 12;
const MAX_ELEMENTS: usize = 20_000;
const MAX_TEXT: usize = 16 * 1024;

/// One element: local name, local-named attributes, text and children.
#[derive(Debug, Default)]
pub(crate) struct Node {
    pub name: String,
    pub attrs: Vec<(String, String)>,
    pub text: String,
    pub children: Vec<Node>,
}

impl Node {
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }
    pub fn children_named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + 'a {
        self.children.iter().filter(move |c| c.name == name)
    }
    pub fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
    pub fn trimmed(&self) -> &str {
        self.text.trim()
    }
}

fn local(name: &str) -> String {
    name.rsplit_once(':').map_or(name, |(_, l)| l).to_owned()
}

fn node(e: &BytesStart<'_>) -> Option<Node> {
    let mut attrs = Vec::new();
    for a in e.attributes() {
        let a = a.ok()?;
        let key: &str = a.key.as_ref();
        if key == "xmlns" || key.starts_with("xmlns:") {
            continue;
        }
        let v = a.normalized_value(XmlVersion::Implicit1_0).ok()?;
        attrs.push((local(key), v.into_owned()));
    }
    Some(Node { name: local(e.name().as_ref()), attrs, ..Default::default() })
}

/// Parses `doc` into its root element; `None` for anything not well-formed or over a limit.
pub(crate) fn parse(doc: &[u8]) -> Option<Node> {
    if doc.len() > MAX_DOC {
        return None;
    }
    let mut reader = Reader::from_reader(doc);
    reader.config_mut().trim_text(false);
    let mut stack: Vec<Node> = Vec::new();
    let mut root: Option<Node> = None;
    let mut count = 0usize;
    loop {
        let ev = reader.read_event().ok()?;
        match ev {
            Event::Start(e) | Event::Empty(e) if root.is_some() => {
                let _ = e;
                return None;
            }
            Event::Start(e) => {
                count += 1;
                if count > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    return None;
                }
                stack.push(node(&e)?);
            }
            Event::Empty(e) => {
                count += 1;
                if count > MAX_ELEMENTS || stack.len() >= MAX_DEPTH {
                    return None;
                }
                let n = node(&e)?;
                match stack.last_mut() {
                    Some(parent) => parent.children.push(n),
                    None => root = Some(n),
                }
            }
            Event::End(e) => {
                let n = stack.pop()?;
                if local(e.name().as_ref()) != n.name {
                    return None;
                }
                match stack.last_mut() {
                    Some(parent) => parent.children.push(n),
                    None => root = Some(n),
                }
            }
            Event::Text(t) => push_text(&mut stack, &t.xml10_content())?,
            Event::CData(c) => push_text(&mut stack, &c.into_inner())?,
            Event::GeneralRef(r) => {
                let c = match r.resolve_char_ref() {
                    Ok(Some(c)) => c,
                    Ok(None) => match r.into_inner().as_ref() {
                        "amp" => '&',
                        "lt" => '<',
                        "gt" => '>',
                        "quot" => '"',
                        "apos" => '\'',
                        _ => return None,
                    },
                    Err(_) => return None,
                };
                let mut buf = [0u8; 4];
                push_text(&mut stack, c.encode_utf8(&mut buf))?;
            }
            Event::Decl(_) | Event::Comment(_) | Event::PI(_) => {}
            Event::DocType(_) => return None,
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return None;
    }
    root
}

fn push_text(stack: &mut [Node], s: &str) -> Option<()> {
    match stack.last_mut() {
        Some(n) => {
            if n.text.len() + s.len() > MAX_TEXT {
                return None;
            }
            n.text.push_str(s);
            Some(())
        }
        None if s.trim().is_empty() => Some(()),
        None => None,
    }
}

/// Escapes text for element content and attribute values.
pub(crate) fn esc(s: &str) -> std::borrow::Cow<'_, str> {
    quick_xml::escape::escape(s)
}

/// The S3 namespace of response documents.
pub(crate) const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
