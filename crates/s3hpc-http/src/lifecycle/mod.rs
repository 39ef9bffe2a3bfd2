//! Bucket lifecycle: the configuration document (PutBucketLifecycleConfiguration's XML, parsed
//! and validated with AWS's error codes and messages) and, in [`runner`], the background task
//! of `s3hpc serve` that applies it over the Store seam.
//!
//! The document is kept as the bucket configuration `lifecycle` in the form [`LifecycleConfig::to_xml`]
//! writes with `internal = true` (the `x-amz-transition-default-minimum-object-size` value rides
//! along in an element of its own, dropped when the document is answered to a client).
//!
//! [`LifecycleConfig::expiry`] says what the `x-amz-expiration` header of PutObject, GetObject
//! and HeadObject names (the rule that expires an object first); `LifecycleCache` keeps each
//! bucket's parsed configuration for that briefly, per gateway.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use s3hpc_core::{Error, ErrorCode, Result};

use crate::xml::{self, DECL, Elem, NS, elem};

pub mod runner;

/// AWS's limit of rules per configuration.
pub const MAX_RULES: usize = 1000;
/// AWS's limit on a rule ID.
pub const MAX_ID_LEN: usize = 255;
/// The values of `x-amz-transition-default-minimum-object-size`.
pub const MIN_SIZE_VALUES: [&str; 2] = ["all_storage_classes_128K", "varies_by_storage_class"];
/// Its default.
pub const MIN_SIZE_DEFAULT: &str = "all_storage_classes_128K";
/// The element that keeps it in the stored document.
const MIN_SIZE_ELEM: &str = "S3hpcTransitionDefaultMinimumObjectSize";

/// Storage classes AWS accepts in a Transition; s3hpc has one class (STANDARD), so a rule
/// naming one of these is refused as not implemented, anything else as InvalidStorageClass.
const TRANSITION_CLASSES: [&str; 6] =
    ["GLACIER", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "DEEP_ARCHIVE", "GLACIER_IR"];

/// The parsed configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LifecycleConfig {
    pub rules: Vec<Rule>,
    /// `x-amz-transition-default-minimum-object-size`.
    pub min_size: String,
}

/// How a rule names the objects it applies to, as the client wrote it (GET answers the same form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterForm {
    /// The legacy top-level `<Prefix>` (no `<Filter>`).
    LegacyPrefix,
    /// `<Filter/>`: every object.
    Empty,
    Prefix,
    Tag,
    /// `ObjectSizeGreaterThan` and/or `ObjectSizeLessThan` directly under `<Filter>`.
    Size,
    And,
}

/// What a rule applies to: every condition must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub form: FilterForm,
    pub prefix: String,
    pub tags: Vec<(String, String)>,
    pub size_greater_than: Option<u64>,
    pub size_less_than: Option<u64>,
}

impl Filter {
    /// Whether an object of this size matches the size conditions.
    pub fn size_matches(&self, size: u64) -> bool {
        self.size_greater_than.is_none_or(|g| size > g) && self.size_less_than.is_none_or(|l| size < l)
    }

    /// Whether an object with these tags matches the tag conditions.
    pub fn tags_match(&self, tags: &[(String, String)]) -> bool {
        self.tags.iter().all(|t| tags.contains(t))
    }
}

/// The Expiration action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expiration {
    /// Days after creation, rounded up to the next midnight UTC.
    Days(u32),
    /// A midnight UTC, as seconds since the epoch.
    Date(i64),
    /// `ExpiredObjectDeleteMarker` (versioned buckets).
    DeleteMarker(bool),
}

/// NoncurrentVersionExpiration (versioned buckets).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoncurrentExpiration {
    pub days: u32,
    pub newer_versions: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub id: String,
    pub enabled: bool,
    pub filter: Filter,
    pub expiration: Option<Expiration>,
    pub noncurrent_expiration: Option<NoncurrentExpiration>,
    /// AbortIncompleteMultipartUpload's DaysAfterInitiation.
    pub abort_incomplete_days: Option<u32>,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(ErrorCode::InvalidArgument, msg)
}

fn positive(text: &str, what: &str) -> Result<u32> {
    let t = text.trim();
    let n: i64 = t.parse().map_err(|_| xml::malformed(format!("{what} is not an integer")))?;
    if n <= 0 || n > i64::from(i32::MAX) {
        return Err(invalid(format!("'{what}' must be a positive integer")));
    }
    Ok(n as u32)
}

/// A `Date` of an Expiration: ISO 8601 at midnight UTC (`2030-01-01`, `2030-01-01T00:00:00Z`,
/// `...T00:00:00.000Z`, `...+00:00`). Any other time of day: AWS's InvalidArgument.
pub fn parse_midnight(text: &str) -> Result<i64> {
    let t = text.trim();
    let bad = || invalid("Invalid date");
    let (date, time) = t.split_once('T').unwrap_or((t, ""));
    let mut it = date.splitn(3, '-');
    let (y, m, d) = (it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?, it.next().ok_or_else(bad)?);
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let num = |s: &str| s.parse::<u32>().map_err(|_| bad());
    let (y, m, d) = (num(y)? as i64, num(m)?, num(d)?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) {
        return Err(bad());
    }
    if !time.is_empty() {
        let zone_at = time.find(['Z', '+', '-']).unwrap_or(time.len());
        let (clock, zone) = time.split_at(zone_at);
        if !matches!(zone, "" | "Z" | "+00:00" | "-00:00") {
            return Err(invalid("'Date' must be at midnight GMT"));
        }
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, ""));
        let parts: Vec<&str> = hms.split(':').collect();
        if parts.len() != 3 || parts.iter().any(|p| p.len() != 2 || p.parse::<u32>().is_err()) {
            return Err(bad());
        }
        if !frac.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        if parts.iter().any(|p| *p != "00") || frac.bytes().any(|b| b != b'0') {
            return Err(invalid("'Date' must be at midnight GMT"));
        }
    }
    Ok(days_from_civil(y, m, d) * 86_400)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn parse_tag(t: &Elem) -> Result<(String, String)> {
    let k = t.child_text("Key").ok_or_else(|| xml::malformed("Tag without Key"))?;
    let v = t.child_text("Value").unwrap_or("");
    Ok((k.to_string(), v.to_string()))
}

fn parse_size(e: &Elem, what: &str) -> Result<u64> {
    let n: i64 = e.text.trim().parse().map_err(|_| xml::malformed(format!("{what} is not an integer")))?;
    u64::try_from(n).map_err(|_| invalid(format!("'{what}' should be a non-negative integer")))
}

fn check_tags(tags: &[(String, String)]) -> Result<()> {
    for (i, (k, _)) in tags.iter().enumerate() {
        if tags[..i].iter().any(|(k2, _)| k2 == k) {
            return Err(invalid("Duplicate Tag Keys are not allowed."));
        }
    }
    s3hpc_core::names::validate_tags(tags, s3hpc_core::names::MAX_OBJECT_TAGS)
}

fn parse_filter(rule: &Elem) -> Result<Filter> {
    let mut f = Filter {
        form: FilterForm::Empty,
        prefix: String::new(),
        tags: vec![],
        size_greater_than: None,
        size_less_than: None,
    };
    match (rule.child("Filter"), rule.child("Prefix")) {
        (Some(_), Some(_)) => return Err(xml::malformed("a rule has both Filter and Prefix")),
        (None, None) => return Err(xml::malformed("a rule needs a Filter or a Prefix")),
        (None, Some(p)) => {
            f.form = FilterForm::LegacyPrefix;
            f.prefix = p.text.clone();
            return Ok(f);
        }
        (Some(filter), None) => {
            let known = ["Prefix", "Tag", "ObjectSizeGreaterThan", "ObjectSizeLessThan", "And"];
            let conds: Vec<&Elem> = filter.children.iter().filter(|c| known.contains(&c.name.as_str())).collect();
            let sizes_only = conds.iter().all(|c| c.name.starts_with("ObjectSize"));
            if conds.len() > 1 && !(sizes_only && conds.len() == 2 && conds[0].name != conds[1].name) {
                return Err(xml::malformed("a Filter holds one condition; combine several with And"));
            }
            let Some(c) = conds.first() else { return Ok(f) };
            match c.name.as_str() {
                "Prefix" => {
                    f.form = FilterForm::Prefix;
                    f.prefix = c.text.clone();
                }
                "Tag" => {
                    f.form = FilterForm::Tag;
                    f.tags.push(parse_tag(c)?);
                }
                "And" => {
                    f.form = FilterForm::And;
                    if let Some(p) = c.child("Prefix") {
                        f.prefix = p.text.clone();
                    }
                    for t in c.children("Tag") {
                        f.tags.push(parse_tag(t)?);
                    }
                    if let Some(g) = c.child("ObjectSizeGreaterThan") {
                        f.size_greater_than = Some(parse_size(g, "ObjectSizeGreaterThan")?);
                    }
                    if let Some(l) = c.child("ObjectSizeLessThan") {
                        f.size_less_than = Some(parse_size(l, "ObjectSizeLessThan")?);
                    }
                    let n = usize::from(c.child("Prefix").is_some())
                        + f.tags.len()
                        + usize::from(f.size_greater_than.is_some())
                        + usize::from(f.size_less_than.is_some());
                    if n == 0 {
                        return Err(xml::malformed("And holds no condition"));
                    }
                }
                _ => {
                    f.form = FilterForm::Size;
                    for s in &conds {
                        let v = parse_size(s, &s.name)?;
                        if s.name == "ObjectSizeGreaterThan" {
                            f.size_greater_than = Some(v);
                        } else {
                            f.size_less_than = Some(v);
                        }
                    }
                }
            }
        }
    }
    check_tags(&f.tags)?;
    if let (Some(g), Some(l)) = (f.size_greater_than, f.size_less_than)
        && g >= l
    {
        return Err(invalid(format!("ObjectSizeGreaterThan ({g}) must be less than ObjectSizeLessThan ({l})")));
    }
    Ok(f)
}

fn parse_rule(e: &Elem) -> Result<Rule> {
    let id = match e.child_text("ID") {
        Some(id) if id.chars().count() > MAX_ID_LEN => {
            return Err(invalid(format!("ID length should not exceed allowed limit of {MAX_ID_LEN}")));
        }
        Some(id) if !id.is_empty() => id.to_string(),
        // AWS names a rule without an ID itself.
        _ => generated_id(),
    };
    let enabled = match e.child_text("Status") {
        Some("Enabled") => true,
        Some("Disabled") => false,
        _ => return Err(xml::malformed("Status must be Enabled or Disabled")),
    };
    let filter = parse_filter(e)?;
    let has_tags = !filter.tags.is_empty();
    let has_size = filter.size_greater_than.is_some() || filter.size_less_than.is_some();
    let expiration = match e.child("Expiration") {
        None => None,
        Some(x) => {
            let fields: Vec<&Elem> = x
                .children
                .iter()
                .filter(|c| matches!(c.name.as_str(), "Days" | "Date" | "ExpiredObjectDeleteMarker"))
                .collect();
            if fields.len() != 1 {
                return Err(xml::malformed("Expiration takes exactly one of Days, Date, ExpiredObjectDeleteMarker"));
            }
            let f = fields[0];
            Some(match f.name.as_str() {
                "Days" => {
                    let n: i64 = f.text.trim().parse().map_err(|_| xml::malformed("Days is not an integer"))?;
                    if n <= 0 || n > i64::from(i32::MAX) {
                        return Err(invalid("'Days' for Expiration action must be a positive integer"));
                    }
                    Expiration::Days(n as u32)
                }
                "Date" => Expiration::Date(parse_midnight(&f.text)?),
                _ => {
                    let v = match f.text.trim() {
                        "true" => true,
                        "false" => false,
                        _ => return Err(xml::malformed("ExpiredObjectDeleteMarker must be true or false")),
                    };
                    if has_tags {
                        return Err(invalid("ExpiredObjectDeleteMarker cannot be specified with object tags"));
                    }
                    Expiration::DeleteMarker(v)
                }
            })
        }
    };
    let noncurrent_expiration = match e.child("NoncurrentVersionExpiration") {
        None => None,
        Some(x) => {
            let days = x.child_text("NoncurrentDays").ok_or_else(|| xml::malformed("NoncurrentDays is missing"))?;
            let days = positive(days, "NoncurrentDays").map_err(|e| {
                if e.code == ErrorCode::InvalidArgument {
                    invalid("'NoncurrentDays' for NoncurrentVersionExpiration action must be a positive integer")
                } else {
                    e
                }
            })?;
            let newer_versions = match x.child_text("NewerNoncurrentVersions") {
                None => None,
                Some(t) => {
                    let n = positive(t, "NewerNoncurrentVersions")?;
                    if n > 100 {
                        return Err(invalid("'NewerNoncurrentVersions' must be less than or equal to 100"));
                    }
                    Some(n)
                }
            };
            Some(NoncurrentExpiration { days, newer_versions })
        }
    };
    let abort_incomplete_days = match e.child("AbortIncompleteMultipartUpload") {
        None => None,
        Some(x) => {
            let d =
                x.child_text("DaysAfterInitiation").ok_or_else(|| xml::malformed("DaysAfterInitiation is missing"))?;
            let d = positive(d, "DaysAfterInitiation").map_err(|e| {
                if e.code == ErrorCode::InvalidArgument {
                    invalid(
                        "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer",
                    )
                } else {
                    e
                }
            })?;
            if has_tags {
                return Err(invalid("AbortIncompleteMultipartUpload cannot be specified with Tags."));
            }
            if has_size {
                return Err(invalid("AbortIncompleteMultipartUpload cannot be specified with an object size filter."));
            }
            Some(d)
        }
    };
    // A transition's timing is validated as AWS does before it is refused as not implemented (a
    // Date not at midnight is 400 InvalidArgument, not 501).
    for t in e.children.iter().filter(|c| c.name == "Transition" || c.name == "NoncurrentVersionTransition") {
        check_transition_timing(t)?;
    }
    if let Some(t) = e.children.iter().find(|c| c.name == "Transition" || c.name == "NoncurrentVersionTransition") {
        let class = t.child_text("StorageClass").unwrap_or("");
        if !TRANSITION_CLASSES.contains(&class) {
            return Err(Error::new(ErrorCode::InvalidStorageClass, "The storage class you specified is not valid"));
        }
        return Err(Error::not_implemented(format!(
            "s3hpc has one storage class (STANDARD): a {} to {class} is not supported",
            t.name
        )));
    }
    if expiration.is_none() && noncurrent_expiration.is_none() && abort_incomplete_days.is_none() {
        return Err(invalid("At least one action needs to be specified in a rule"));
    }
    Ok(Rule { id, enabled, filter, expiration, noncurrent_expiration, abort_incomplete_days })
}

/// A Transition's one `Days` (zero or more) or `Date` (a midnight UTC); a
/// NoncurrentVersionTransition's `NoncurrentDays` (zero or more).
fn check_transition_timing(t: &Elem) -> Result<()> {
    let nonnegative = |text: &str, what: &str| -> Result<()> {
        let n: i64 = text.trim().parse().map_err(|_| xml::malformed(format!("{what} is not an integer")))?;
        if n < 0 || n > i64::from(i32::MAX) {
            return Err(invalid(format!("'{what}' in {} action must be nonnegative", t.name)));
        }
        Ok(())
    };
    if t.name == "NoncurrentVersionTransition" {
        let days = t.child_text("NoncurrentDays").ok_or_else(|| xml::malformed("NoncurrentDays is missing"))?;
        return nonnegative(days, "NoncurrentDays");
    }
    let fields: Vec<&Elem> = t.children.iter().filter(|c| matches!(c.name.as_str(), "Days" | "Date")).collect();
    match fields.as_slice() {
        [f] if f.name == "Days" => nonnegative(&f.text, "Days"),
        [f] => parse_midnight(&f.text).map(|_| ()),
        _ => Err(xml::malformed("Transition takes exactly one of Days, Date")),
    }
}

fn generated_id() -> String {
    let n = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_nanos();
    let mut x = (n as u64) ^ 0x9E37_79B9_7F4A_7C15 ^ u64::from(std::process::id()).rotate_left(32);
    let mut s = String::with_capacity(48);
    for _ in 0..3 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        s.push_str(&format!("{x:016x}"));
    }
    s
}

impl LifecycleConfig {
    /// Parse and validate a PutBucketLifecycleConfiguration body (or a stored document), with
    /// the `x-amz-transition-default-minimum-object-size` header's value if one was sent.
    pub fn parse(data: &[u8], min_size: Option<&str>) -> Result<LifecycleConfig> {
        let root = xml::parse_tree(data)?;
        xml::expect_root(&root, "LifecycleConfiguration")?;
        let stored = root.child_text(MIN_SIZE_ELEM);
        let min_size = match min_size.or(stored) {
            None => MIN_SIZE_DEFAULT.to_string(),
            Some(v) if MIN_SIZE_VALUES.contains(&v) => v.to_string(),
            Some(v) => {
                return Err(invalid(format!("Invalid value for x-amz-transition-default-minimum-object-size: {v}")));
            }
        };
        let rules: Vec<&Elem> = root.children("Rule").collect();
        if rules.is_empty() {
            return Err(xml::malformed("a lifecycle configuration needs at least one Rule"));
        }
        if rules.len() > MAX_RULES {
            return Err(invalid(format!(
                "The number of lifecycle rules should not exceed allowed limit of {MAX_RULES} rules"
            )));
        }
        let mut out = Vec::with_capacity(rules.len());
        for r in rules {
            let rule = parse_rule(r)?;
            if out.iter().any(|o: &Rule| o.id == rule.id) {
                return Err(invalid("Rule ID must be unique. Found same ID for more than one rule"));
            }
            out.push(rule);
        }
        Ok(LifecycleConfig { rules: out, min_size })
    }

    /// The document: as GetBucketLifecycleConfiguration answers it, or (`internal`) as stored.
    pub fn to_xml(&self, internal: bool) -> String {
        let mut s = String::from(DECL);
        s.push_str(&format!("<LifecycleConfiguration xmlns=\"{NS}\">"));
        for r in &self.rules {
            s.push_str("<Rule>");
            elem(&mut s, "ID", &r.id);
            let f = &r.filter;
            let tag = |s: &mut String, (k, v): &(String, String)| {
                s.push_str("<Tag>");
                elem(s, "Key", k);
                elem(s, "Value", v);
                s.push_str("</Tag>");
            };
            let sizes = |s: &mut String| {
                if let Some(g) = f.size_greater_than {
                    elem(s, "ObjectSizeGreaterThan", &g.to_string());
                }
                if let Some(l) = f.size_less_than {
                    elem(s, "ObjectSizeLessThan", &l.to_string());
                }
            };
            match f.form {
                FilterForm::LegacyPrefix => elem(&mut s, "Prefix", &f.prefix),
                FilterForm::Empty => s.push_str("<Filter></Filter>"),
                FilterForm::Prefix => {
                    s.push_str("<Filter>");
                    elem(&mut s, "Prefix", &f.prefix);
                    s.push_str("</Filter>");
                }
                FilterForm::Tag => {
                    s.push_str("<Filter>");
                    tag(&mut s, &f.tags[0]);
                    s.push_str("</Filter>");
                }
                FilterForm::Size => {
                    s.push_str("<Filter>");
                    sizes(&mut s);
                    s.push_str("</Filter>");
                }
                FilterForm::And => {
                    s.push_str("<Filter><And>");
                    if !f.prefix.is_empty() {
                        elem(&mut s, "Prefix", &f.prefix);
                    }
                    for t in &f.tags {
                        tag(&mut s, t);
                    }
                    sizes(&mut s);
                    s.push_str("</And></Filter>");
                }
            }
            elem(&mut s, "Status", if r.enabled { "Enabled" } else { "Disabled" });
            match &r.expiration {
                None => {}
                Some(Expiration::Days(d)) => s.push_str(&format!("<Expiration><Days>{d}</Days></Expiration>")),
                Some(Expiration::Date(t)) => {
                    let date = crate::util::iso8601(UNIX_EPOCH + Duration::from_secs((*t).max(0) as u64));
                    s.push_str(&format!("<Expiration><Date>{date}</Date></Expiration>"));
                }
                Some(Expiration::DeleteMarker(b)) => s.push_str(&format!(
                    "<Expiration><ExpiredObjectDeleteMarker>{b}</ExpiredObjectDeleteMarker></Expiration>"
                )),
            }
            if let Some(n) = &r.noncurrent_expiration {
                s.push_str(&format!("<NoncurrentVersionExpiration><NoncurrentDays>{}</NoncurrentDays>", n.days));
                if let Some(v) = n.newer_versions {
                    elem(&mut s, "NewerNoncurrentVersions", &v.to_string());
                }
                s.push_str("</NoncurrentVersionExpiration>");
            }
            if let Some(d) = r.abort_incomplete_days {
                s.push_str(&format!(
                    "<AbortIncompleteMultipartUpload><DaysAfterInitiation>{d}</DaysAfterInitiation></AbortIncompleteMultipartUpload>"
                ));
            }
            s.push_str("</Rule>");
        }
        if internal {
            elem(&mut s, MIN_SIZE_ELEM, &self.min_size);
        }
        s.push_str("</LifecycleConfiguration>");
        s
    }
}

/// What the `x-amz-expiration` header of PutObject, GetObject and HeadObject says.
impl LifecycleConfig {
    fn expiring_rules<'s, 'k>(&'s self, key: &'k str, size: u64) -> impl Iterator<Item = &'s Rule> + use<'s, 'k> {
        self.rules.iter().filter(move |r| {
            r.enabled
                && matches!(r.expiration, Some(Expiration::Days(_) | Expiration::Date(_)))
                && key.starts_with(r.filter.prefix.as_str())
                && r.filter.size_matches(size)
        })
    }

    /// Whether answering [`LifecycleConfig::expiry`] for this object needs its tags.
    pub fn expiry_needs_tags(&self, key: &str, size: u64) -> bool {
        self.expiring_rules(key, size).any(|r| !r.filter.tags.is_empty())
    }

    /// When a current object is due: among the enabled rules with an Expiration by `Days` or
    /// `Date` whose filter takes the object (prefix, size, tags), the one that expires it first,
    /// as `(when, rule id)` (`when`: seconds since the epoch, a midnight UTC). `tags`: the
    /// object's tags, `None` when the caller has not read them (rules with a tag condition are
    /// then passed over: see [`LifecycleConfig::expiry_needs_tags`]); `day`: seconds to a
    /// lifecycle day ([`runner::day_seconds`]).
    pub fn expiry(
        &self,
        key: &str,
        size: u64,
        created: i64,
        tags: Option<&[(String, String)]>,
        day: u64,
    ) -> Option<(i64, &str)> {
        self.expiring_rules(key, size)
            .filter(|r| match tags {
                Some(t) => r.filter.tags_match(t),
                None => r.filter.tags.is_empty(),
            })
            .filter_map(|r| match r.expiration {
                Some(Expiration::Days(d)) => Some((due_after_days(created, d, day), r.id.as_str())),
                Some(Expiration::Date(t)) => Some((t, r.id.as_str())),
                _ => None,
            })
            .min_by_key(|(t, _)| *t)
    }
}

/// Per-gateway cache of buckets' lifecycle configurations, so that the `x-amz-expiration` of
/// PUT, GET and HEAD costs a map lookup, and one read of the configuration per bucket and
/// [`CACHE_TTL`](crate::bucket_cache::CACHE_TTL) at most.
pub(crate) type LifecycleCache = crate::bucket_cache::BucketConfigCache<LifecycleConfig>;

/// When an object (or upload) created at `created` (seconds since the epoch) is due under a
/// rule of `days` days: `created + days` rounded up to the next midnight UTC, as AWS does, with
/// `day` seconds to a day (86,400; shorter only under the test knob, see [`runner`]).
pub fn due_after_days(created: i64, days: u32, day: u64) -> i64 {
    let day = day.max(1) as i64;
    let t = created + i64::from(days) * day;
    t.div_euclid(day) * day + if t.rem_euclid(day) == 0 { 0 } else { day }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(rules: &str) -> String {
        format!("<LifecycleConfiguration xmlns=\"{NS}\">{rules}</LifecycleConfiguration>")
    }

    fn err(rules: &str) -> Error {
        LifecycleConfig::parse(doc(rules).as_bytes(), None).unwrap_err()
    }

    const EXP: &str = "<Expiration><Days>1</Days></Expiration>";

    #[test]
    fn expiry_is_the_earliest_matching_enabled_rule() {
        let c = LifecycleConfig::parse(
            doc(&"<Rule><ID>all</ID><Filter/><Status>Enabled</Status><Expiration><Days>30</Days></Expiration></Rule>\
                 <Rule><ID>logs</ID><Filter><Prefix>logs/</Prefix></Filter><Status>Enabled</Status>{EXP}</Rule>\
                 <Rule><ID>off</ID><Filter><Prefix>off/</Prefix></Filter><Status>Disabled</Status>{EXP}</Rule>\
                 <Rule><ID>tag</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><Expiration><Days>2</Days></Expiration></Rule>\
                 <Rule><ID>big</ID><Filter><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan></Filter><Status>Enabled</Status><Expiration><Date>1970-01-20</Date></Expiration></Rule>\
                 <Rule><ID>dm</ID><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>"
                .replace("{EXP}", EXP))
            .as_bytes(),
            None,
        )
        .unwrap();
        let day = 86_400;
        let t = 10 * day as i64 + 3600; // day 10, 01:00 UTC
        // Days: creation + days, rounded up to the next midnight.
        assert_eq!(c.expiry("logs/a", 1, t, Some(&[]), day), Some((12 * day as i64, "logs")));
        assert_eq!(c.expiry("off/a", 1, t, Some(&[]), day), Some((41 * day as i64, "all")));
        let tags = [("k".to_string(), "v".to_string())];
        assert_eq!(c.expiry("x", 1, t, Some(&tags), day), Some((13 * day as i64, "tag")));
        // Tags not read: tag rules are passed over, and the caller is told it would need them.
        assert_eq!(c.expiry("x", 1, t, None, day), Some((41 * day as i64, "all")));
        assert!(c.expiry_needs_tags("x", 1));
        assert_eq!(c.expiry("x", 11, t, Some(&[]), day), Some((19 * day as i64, "big")));
        let none = LifecycleConfig::parse(
            doc("<Rule><ID>p</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>{EXP}</Rule>"
                .replace("{EXP}", EXP)
                .as_str())
            .as_bytes(),
            None,
        )
        .unwrap();
        assert_eq!(none.expiry("q/a", 1, t, Some(&[]), day), None);
        assert!(!none.expiry_needs_tags("p/a", 1));
    }

    #[test]
    fn parses_every_filter_form_and_round_trips() {
        let rules = [
            format!("<Rule><ID>a</ID><Prefix>logs/</Prefix><Status>Enabled</Status>{EXP}</Rule>"),
            format!("<Rule><ID>b</ID><Filter></Filter><Status>Disabled</Status>{EXP}</Rule>"),
            format!("<Rule><ID>c</ID><Filter><Prefix>x/</Prefix></Filter><Status>Enabled</Status>{EXP}</Rule>"),
            format!("<Rule><ID>d</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>{EXP}</Rule>"),
            format!("<Rule><ID>e</ID><Filter><ObjectSizeGreaterThan>10</ObjectSizeGreaterThan><ObjectSizeLessThan>20</ObjectSizeLessThan></Filter><Status>Enabled</Status>{EXP}</Rule>"),
            "<Rule><ID>f</ID><Filter><And><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>k2</Key><Value>v2</Value></Tag><ObjectSizeGreaterThan>5</ObjectSizeGreaterThan></And></Filter><Status>Enabled</Status><Expiration><Date>2030-01-01T00:00:00Z</Date></Expiration></Rule>".to_string(),
            "<Rule><ID>g</ID><Filter/><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>3</DaysAfterInitiation></AbortIncompleteMultipartUpload><NoncurrentVersionExpiration><NoncurrentDays>4</NoncurrentDays><NewerNoncurrentVersions>2</NewerNoncurrentVersions></NoncurrentVersionExpiration></Rule>".to_string(),
            "<Rule><ID>h</ID><Filter/><Status>Enabled</Status><Expiration><ExpiredObjectDeleteMarker>true</ExpiredObjectDeleteMarker></Expiration></Rule>".to_string(),
        ];
        let c = LifecycleConfig::parse(doc(&rules.concat()).as_bytes(), Some("varies_by_storage_class")).unwrap();
        assert_eq!(c.rules.len(), 8);
        assert_eq!(c.rules[0].filter.form, FilterForm::LegacyPrefix);
        assert_eq!(c.rules[0].filter.prefix, "logs/");
        assert!(!c.rules[1].enabled);
        assert_eq!(c.rules[4].filter.size_greater_than, Some(10));
        assert_eq!(c.rules[5].filter.tags.len(), 2);
        assert_eq!(c.rules[5].expiration, Some(Expiration::Date(1_893_456_000)));
        assert_eq!(c.rules[6].abort_incomplete_days, Some(3));
        assert_eq!(c.rules[6].noncurrent_expiration, Some(NoncurrentExpiration { days: 4, newer_versions: Some(2) }));
        assert_eq!(c.rules[7].expiration, Some(Expiration::DeleteMarker(true)));
        // Stored and read back: the same configuration, the header value included.
        let again = LifecycleConfig::parse(c.to_xml(true).as_bytes(), None).unwrap();
        assert_eq!(again, c);
        assert!(!c.to_xml(false).contains(MIN_SIZE_ELEM));
        assert!(c.to_xml(false).contains("<Date>2030-01-01T00:00:00.000Z</Date>"));
    }

    #[test]
    fn refuses_what_aws_refuses() {
        let long = "x".repeat(256);
        let e = err(&format!("<Rule><ID>{long}</ID><Filter/><Status>Enabled</Status>{EXP}</Rule>"));
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidArgument, "ID length should not exceed allowed limit of 255")
        );
        let e = err(&format!(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status>{EXP}</Rule><Rule><ID>a</ID><Filter/><Status>Enabled</Status>{EXP}</Rule>"
        ));
        assert_eq!(e.message, "Rule ID must be unique. Found same ID for more than one rule");
        let e = err("<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Expiration><Days>0</Days></Expiration></Rule>");
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidArgument, "'Days' for Expiration action must be a positive integer")
        );
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration></Rule>",
        );
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "'Date' must be at midnight GMT"));
        let e = err("<Rule><ID>a</ID><Filter/><Status>Enabled</Status></Rule>");
        assert_eq!(
            (e.code, e.message.as_str()),
            (ErrorCode::InvalidArgument, "At least one action needs to be specified in a rule")
        );
        let e = err(&format!("<Rule><ID>a</ID><Status>Enabled</Status>{EXP}</Rule>"));
        assert_eq!(e.code, ErrorCode::MalformedXML);
        let e = err(&format!("<Rule><ID>a</ID><Prefix/><Filter/><Status>Enabled</Status>{EXP}</Rule>"));
        assert_eq!(e.code, ErrorCode::MalformedXML);
        let e = err(&format!("<Rule><ID>a</ID><Filter/><Status>On</Status>{EXP}</Rule>"));
        assert_eq!(e.code, ErrorCode::MalformedXML);
        let e = err(&format!(
            "<Rule><ID>a</ID><Filter><Prefix>a</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>{EXP}</Rule>"
        ));
        assert_eq!(e.code, ErrorCode::MalformedXML);
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Expiration><Days>1</Days><Date>2030-01-01</Date></Expiration></Rule>",
        );
        assert_eq!(e.code, ErrorCode::MalformedXML);
        let e = err(&format!(
            "<Rule><ID>a</ID><Filter><And><ObjectSizeGreaterThan>9</ObjectSizeGreaterThan><ObjectSizeLessThan>9</ObjectSizeLessThan></And></Filter><Status>Enabled</Status>{EXP}</Rule>"
        ));
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = err(
            "<Rule><ID>a</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>",
        );
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><AbortIncompleteMultipartUpload><DaysAfterInitiation>-1</DaysAfterInitiation></AbortIncompleteMultipartUpload></Rule>",
        );
        assert_eq!(
            e.message,
            "'DaysAfterInitiation' for AbortIncompleteMultipartUpload action must be a positive integer"
        );
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>",
        );
        assert_eq!(e.code, ErrorCode::NotImplemented);
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Transition><Days>1</Days><StorageClass>NOPE</StorageClass></Transition></Rule>",
        );
        assert_eq!(e.code, ErrorCode::InvalidStorageClass);
        // The timing is checked first: a Date not at midnight is AWS's 400, not 501.
        let e = err(&format!(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status>{EXP}<Transition><Date>1970-08-23T01:08:47Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>"
        ));
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidArgument, "'Date' must be at midnight GMT"));
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Transition><Days>-1</Days><StorageClass>GLACIER</StorageClass></Transition></Rule>",
        );
        assert_eq!(e.message, "'Days' in Transition action must be nonnegative");
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><NoncurrentVersionTransition><NoncurrentDays>-2</NoncurrentDays><StorageClass>GLACIER</StorageClass></NoncurrentVersionTransition></Rule>",
        );
        assert_eq!(e.message, "'NoncurrentDays' in NoncurrentVersionTransition action must be nonnegative");
        let e = err(
            "<Rule><ID>a</ID><Filter/><Status>Enabled</Status><Transition><Date>2030-01-01T00:00:00Z</Date><StorageClass>GLACIER</StorageClass></Transition></Rule>",
        );
        assert_eq!(e.code, ErrorCode::NotImplemented);
        let e = err(&format!(
            "<Rule><ID>a</ID><Filter><And><Tag><Key>k</Key><Value>v</Value></Tag><Tag><Key>k</Key><Value>w</Value></Tag></And></Filter><Status>Enabled</Status>{EXP}</Rule>"
        ));
        assert_eq!(e.code, ErrorCode::InvalidArgument);
        assert_eq!(LifecycleConfig::parse(doc("").as_bytes(), None).unwrap_err().code, ErrorCode::MalformedXML);
        assert_eq!(LifecycleConfig::parse(b"<Nope/>", None).unwrap_err().code, ErrorCode::MalformedXML);
        let ok = doc(&format!("<Rule><Filter/><Status>Enabled</Status>{EXP}</Rule>"));
        assert_eq!(LifecycleConfig::parse(ok.as_bytes(), Some("bogus")).unwrap_err().code, ErrorCode::InvalidArgument);
        // No ID: one is made up.
        assert!(!LifecycleConfig::parse(ok.as_bytes(), None).unwrap().rules[0].id.is_empty());
    }

    #[test]
    fn dates_and_rounding() {
        assert_eq!(parse_midnight("1970-01-02").unwrap(), 86_400);
        assert_eq!(parse_midnight("2024-02-29T00:00:00.000Z").unwrap(), 1_709_164_800);
        assert_eq!(parse_midnight("2024-02-29T00:00:00+00:00").unwrap(), 1_709_164_800);
        assert!(parse_midnight("2023-02-29").is_err());
        assert!(parse_midnight("2024-01-01T00:00:01Z").is_err());
        assert!(parse_midnight("garbage").is_err());
        // Created 10:30 on day 0, 3 days: due at midnight starting day 4.
        assert_eq!(due_after_days(37_800, 3, 86_400), 4 * 86_400);
        // Exactly at midnight: that midnight.
        assert_eq!(due_after_days(0, 1, 86_400), 86_400);
        assert_eq!(due_after_days(5, 1, 2), 8);
    }

    #[test]
    fn filter_matching() {
        let f = Filter {
            form: FilterForm::And,
            prefix: "p".into(),
            tags: vec![("k".into(), "v".into())],
            size_greater_than: Some(10),
            size_less_than: Some(20),
        };
        assert!(f.size_matches(11) && f.size_matches(19));
        assert!(!f.size_matches(10) && !f.size_matches(20));
        assert!(f.tags_match(&[("a".into(), "b".into()), ("k".into(), "v".into())]));
        assert!(!f.tags_match(&[("k".into(), "w".into())]));
    }
}
