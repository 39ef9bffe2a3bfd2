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
    let mut last_is_prefix = false;
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
            // A page that ended at this common prefix goes on after everything under it.
            if page.common_prefixes.last() == Some(&cp) || req.key_marker.as_ref().is_some_and(|km| cp <= *km) {
                continue;
            }
            if count == max {
                page.is_truncated = true;
                break;
            }
            count += 1;
            last_is_prefix = true;
            page.common_prefixes.push(cp);
            continue;
        }
        if count == max {
            page.is_truncated = true;
            break;
        }
        count += 1;
        last_is_prefix = false;
        page.uploads.push(u);
    }
    // A truncated page continues after its last entry: an upload (key and upload id) or a
    // common prefix (its key marker alone), as S3 answers.
    if page.is_truncated {
        if last_is_prefix {
            page.next_key_marker = page.common_prefixes.last().cloned();
        } else if let Some(last) = page.uploads.last() {
            page.next_key_marker = Some(last.key.clone());
            page.next_upload_id_marker = Some(last.upload_id.clone());
        }
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

    #[test]
    fn upload_pages_with_a_delimiter_carry_the_next_key_marker() {
        use crate::types::{ListUploadsRequest, UploadInfo};
        let t = std::time::SystemTime::UNIX_EPOCH;
        let up = |k: &str, id: &str| UploadInfo {
            key: k.into(),
            upload_id: id.into(),
            initiated: t,
            checksum_algorithm: None,
            checksum_type: None,
        };
        let all = vec![up("a", "1"), up("dir/x", "2"), up("dir/y", "3"), up("z", "4")];
        let req = |km: Option<&str>| ListUploadsRequest {
            delimiter: Some("/".into()),
            key_marker: km.map(str::to_owned),
            max_uploads: 2,
            ..Default::default()
        };
        // Ends at a common prefix: its key marker, no upload id marker.
        let p = page_uploads(&req(None), all.clone());
        assert_eq!((p.uploads.len(), p.common_prefixes.clone()), (1, vec!["dir/".to_string()]));
        assert!(p.is_truncated);
        assert_eq!((p.next_key_marker.as_deref(), p.next_upload_id_marker.as_deref()), (Some("dir/"), None));
        // The next page goes on after everything under that prefix.
        let p = page_uploads(&req(Some("dir/")), all.clone());
        assert_eq!(p.uploads.iter().map(|u| u.key.as_str()).collect::<Vec<_>>(), ["z"]);
        assert!(p.common_prefixes.is_empty() && !p.is_truncated);
    }
}
