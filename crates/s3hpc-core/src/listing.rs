//! S3 listing rules over a stream of keys offered in ascending byte order. Backends feed keys
//! from their own ordered walk; this decides what becomes an object entry, what rolls up into a
//! common prefix, where the page ends, and which subtrees the walk may skip.

use crate::types::{ListObjectsPage, ListObjectsRequest, MAX_KEYS, ObjectSummary};

/// What the walk should do after a key was offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// Offer the next key.
    Continue,
    /// Every key starting with this string is irrelevant (rolled into a common prefix already
    /// listed, or before the start marker): the walk may skip them all.
    SkipPrefix(String),
    /// The page is complete; stop walking.
    Done,
}

/// Builds one listing page.
pub struct Lister {
    prefix: String,
    delimiter: Option<String>,
    start_after: Option<String>,
    /// Common prefix named by `start_after`, whose whole subtree is skipped.
    skip_under: Option<String>,
    max_keys: usize,
    page: ListObjectsPage,
    last_prefix: Option<String>,
    count: usize,
    done: bool,
}

impl Lister {
    pub fn new(req: &ListObjectsRequest) -> Self {
        let delimiter = req.delimiter.clone().filter(|d| !d.is_empty());
        let skip_under = match (&delimiter, &req.start_after) {
            (Some(d), Some(sa)) => sa
                .strip_prefix(req.prefix.as_str())
                .and_then(|rest| rest.find(d.as_str()).map(|i| (rest, i)))
                .filter(|(rest, i)| i + d.len() == rest.len())
                .map(|_| sa.clone()),
            _ => None,
        };
        Lister {
            prefix: req.prefix.clone(),
            delimiter,
            start_after: req.start_after.clone(),
            skip_under,
            max_keys: req.max_keys.min(MAX_KEYS),
            page: ListObjectsPage::default(),
            last_prefix: None,
            count: 0,
            done: req.max_keys == 0,
        }
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn delimiter(&self) -> Option<&str> {
        self.delimiter.as_deref()
    }

    /// The smallest key that can still matter: walks may seek here first.
    pub fn start_after(&self) -> Option<&str> {
        self.start_after.as_deref()
    }

    pub fn is_done(&self) -> bool {
        self.done
    }

    /// How many more entries (objects or common prefixes) this page can take.
    pub fn remaining(&self) -> usize {
        if self.done { 0 } else { self.max_keys - self.count }
    }

    /// Offer the next key (strictly greater than every key offered before). `summary` is called
    /// only if the key becomes an object entry of this page; it returns `None` when the object
    /// vanished meanwhile, and the key is then skipped.
    pub fn offer(&mut self, key: &str, summary: impl FnOnce() -> Option<ObjectSummary>) -> Flow {
        if self.done {
            return Flow::Done;
        }
        if !key.starts_with(self.prefix.as_str()) {
            return if key > self.prefix.as_str() { self.finish_walk() } else { Flow::Continue };
        }
        if let Some(sa) = &self.start_after
            && key <= sa.as_str()
        {
            return Flow::Continue;
        }
        if let Some(skip) = &self.skip_under
            && key.starts_with(skip.as_str())
        {
            return Flow::SkipPrefix(skip.clone());
        }
        if let Some(d) = &self.delimiter {
            let rest = &key[self.prefix.len()..];
            if let Some(i) = rest.find(d.as_str()) {
                let cp = &key[..self.prefix.len() + i + d.len()];
                if self.last_prefix.as_deref() == Some(cp) {
                    return Flow::SkipPrefix(cp.to_string());
                }
                if self.count == self.max_keys {
                    self.page.is_truncated = true;
                    return self.finish_walk();
                }
                self.count += 1;
                self.page.common_prefixes.push(cp.to_string());
                self.page.next_marker = Some(cp.to_string());
                self.last_prefix = Some(cp.to_string());
                return Flow::SkipPrefix(cp.to_string());
            }
        }
        if self.count == self.max_keys {
            self.page.is_truncated = true;
            return self.finish_walk();
        }
        if let Some(s) = summary() {
            self.count += 1;
            self.page.next_marker = Some(s.key.clone());
            self.page.objects.push(s);
        }
        Flow::Continue
    }

    fn finish_walk(&mut self) -> Flow {
        self.done = true;
        Flow::Done
    }

    /// The page. `next_marker` is kept only when the page is truncated.
    pub fn finish(mut self) -> ListObjectsPage {
        if !self.page.is_truncated {
            self.page.next_marker = None;
        }
        self.page
    }
}

/// One page of ListMultipartUploads from every upload of a bucket (key, upload id, initiation
/// time): S3's order (key, then initiation), prefix, delimiter roll-up, key/upload-id markers and
/// the 1000 cap. Shared by the backends so they page identically.
pub fn page_uploads(
    req: &crate::types::ListUploadsRequest,
    mut all: Vec<crate::types::UploadInfo>,
) -> crate::types::ListUploadsPage {
    use crate::types::ListUploadsPage;
    all.retain(|u| u.key.starts_with(req.prefix.as_str()));
    all.sort_by(|a, b| (&a.key, a.initiated, &a.upload_id).cmp(&(&b.key, b.initiated, &b.upload_id)));
    let marker_pos = req
        .upload_id_marker
        .as_ref()
        .and_then(|um| all.iter().find(|u| &u.upload_id == um).map(|u| (u.initiated, u.upload_id.clone())));
    let max = if req.max_uploads == 0 { MAX_KEYS } else { req.max_uploads.min(MAX_KEYS) };
    let mut page = ListUploadsPage::default();
    let mut count = 0;
    let delim = req.delimiter.as_deref().filter(|d| !d.is_empty());
    for u in all {
        let (key, id, initiated) = (&u.key, &u.upload_id, u.initiated);
        if let Some(km) = &req.key_marker {
            match &marker_pos {
                // Within the marker key, continue after the marker upload.
                Some(mt) if key == km && (initiated, id.as_str()) <= (mt.0, mt.1.as_str()) => continue,
                Some(_) if key == km => {}
                _ if key.as_str() <= km.as_str() => continue,
                _ => {}
            }
        }
        if let Some(d) = delim
            && let Some(i) = key[req.prefix.len()..].find(d)
        {
            let cp = key[..req.prefix.len() + i + d.len()].to_string();
            if page.common_prefixes.last() == Some(&cp) {
                continue;
            }
            if count == max {
                page.is_truncated = true;
                break;
            }
            count += 1;
            page.common_prefixes.push(cp);
            continue;
        }
        if count == max {
            page.is_truncated = true;
            break;
        }
        count += 1;
        page.uploads.push(u);
    }
    if page.is_truncated
        && let Some(last) = page.uploads.last()
    {
        page.next_key_marker = Some(last.key.clone());
        page.next_upload_id_marker = Some(last.upload_id.clone());
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    fn list(keys: &[&str], req: ListObjectsRequest) -> ListObjectsPage {
        let mut sorted: Vec<&str> = keys.to_vec();
        sorted.sort();
        let mut l = Lister::new(&req);
        let mut skip: Option<String> = None;
        for k in sorted {
            if let Some(s) = &skip
                && k.starts_with(s.as_str())
            {
                continue;
            }
            match l.offer(k, || {
                Some(ObjectSummary {
                    key: k.into(),
                    size: 0,
                    etag: String::new(),
                    last_modified: SystemTime::UNIX_EPOCH,
                })
            }) {
                Flow::Continue => skip = None,
                Flow::SkipPrefix(p) => skip = Some(p),
                Flow::Done => break,
            }
        }
        l.finish()
    }

    fn keys(p: &ListObjectsPage) -> Vec<&str> {
        p.objects.iter().map(|o| o.key.as_str()).collect()
    }

    #[test]
    fn delimiter_and_pagination() {
        let all = ["a/1", "a/2", "b", "c/x/y", "d"];
        let req = ListObjectsRequest { delimiter: Some("/".into()), max_keys: 2, ..Default::default() };
        let p = list(&all, req.clone());
        assert_eq!(p.common_prefixes, vec!["a/"]);
        assert_eq!(keys(&p), vec!["b"]);
        assert!(p.is_truncated);
        assert_eq!(p.next_marker.as_deref(), Some("b"));
        let p2 = list(&all, ListObjectsRequest { start_after: Some("b".into()), ..req.clone() });
        assert_eq!(p2.common_prefixes, vec!["c/"]);
        assert_eq!(keys(&p2), vec!["d"]);
        assert!(!p2.is_truncated);
        // Continuing from a common prefix skips its subtree.
        let p3 = list(&all, ListObjectsRequest { start_after: Some("a/".into()), max_keys: 1000, ..req });
        assert_eq!(p3.common_prefixes, vec!["c/"]);
        assert_eq!(keys(&p3), vec!["b", "d"]);
    }

    #[test]
    fn prefix_and_exact_fill_is_not_truncated() {
        let all = ["x/a", "x/b", "y"];
        let p = list(&all, ListObjectsRequest { prefix: "x/".into(), max_keys: 2, ..Default::default() });
        assert_eq!(keys(&p), vec!["x/a", "x/b"]);
        assert!(!p.is_truncated);
        assert_eq!(p.next_marker, None);
    }

    #[test]
    fn zero_max_keys() {
        let p = list(&["a"], ListObjectsRequest { max_keys: 0, ..Default::default() });
        assert!(p.objects.is_empty() && !p.is_truncated);
    }
}
