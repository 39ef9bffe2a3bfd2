//! Listing cases: order, delimiters, pagination, special keys, key length, directory objects.

use super::*;

/// A key set with directories, names that sort around '/', and multi-byte UTF-8.
pub(crate) fn listing_keys() -> Vec<&'static str> {
    vec![
        "a-b",
        "a.txt",
        "a/1",
        "a/2/x",
        "a/2/y",
        "a/3",
        "a0",
        "b/c/d/e",
        "photos/2024/jan.jpg",
        "photos/2024/feb.jpg",
        "photos/2025/mar.jpg",
        "photos/index.html",
        "z",
        "zé",
        "zz/é/1",
        "Z-upper",
    ]
}

pub(crate) async fn listing_order_and_delimiters(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let keys = listing_keys();
    for k in &keys {
        put(&s, &b, k, k.as_bytes().to_vec()).await?;
    }
    let mut sorted: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    sorted.sort();
    let (all, cps) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(all, sorted);
    ensure!(cps.is_empty(), "common prefixes without delimiter");

    let (top, cps) = list_all(&s, &b, "", Some("/"), 1000).await?;
    ensure_eq!(top, vec!["Z-upper", "a-b", "a.txt", "a0", "z", "zé"]);
    ensure_eq!(cps, vec!["a/", "b/", "photos/", "zz/"]);

    let (ks, cps) = list_all(&s, &b, "photos/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["photos/index.html"]);
    ensure_eq!(cps, vec!["photos/2024/", "photos/2025/"]);

    let (ks, cps) = list_all(&s, &b, "photos/2024/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["photos/2024/feb.jpg", "photos/2024/jan.jpg"]);
    ensure!(cps.is_empty(), "unexpected prefixes");

    // A prefix that is not a directory boundary.
    let (ks, cps) = list_all(&s, &b, "a", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["a-b", "a.txt", "a0"]);
    ensure_eq!(cps, vec!["a/"]);
    let (ks, _) = list_all(&s, &b, "photos/20", None, 1000).await?;
    ensure_eq!(ks.len(), 3);
    // Delimiter other than '/'.
    let (ks, cps) = list_all(&s, &b, "", Some("."), 1000).await?;
    ensure!(cps.contains(&"a.".to_string()), "'.' delimiter prefixes: {cps:?}");
    ensure!(ks.contains(&"a-b".to_string()) && !ks.contains(&"a.txt".to_string()), "'.' delimiter keys: {ks:?}");
    // start_after in the middle, and after a common prefix.
    let p = ok(
        s.list_objects(&b, ListObjectsRequest { start_after: Some("a/2".into()), max_keys: 3, ..Default::default() })
            .await,
        "start_after",
    )?;
    let got: Vec<&str> = p.objects.iter().map(|o| o.key.as_str()).collect();
    ensure_eq!(got, vec!["a/2/x", "a/2/y", "a/3"]);
    ensure!(p.is_truncated, "should be truncated");
    let p = ok(
        s.list_objects(
            &b,
            ListObjectsRequest {
                start_after: Some("a/".into()),
                delimiter: Some("/".into()),
                max_keys: 1000,
                ..Default::default()
            },
        )
        .await,
        "start_after common prefix",
    )?;
    ensure!(!p.common_prefixes.contains(&"a/".to_string()), "common prefix repeated after marker");
    ensure_eq!(p.objects.first().map(|o| o.key.as_str()), Some("a0"));
    // Summaries carry size and etag.
    let p = ok(
        s.list_objects(&b, ListObjectsRequest { prefix: "a.txt".into(), max_keys: 10, ..Default::default() }).await,
        "list one",
    )?;
    ensure_eq!(p.objects.len(), 1);
    ensure_eq!(p.objects[0].size, 5);
    let head = ok(s.head_object(&b, "a.txt", GetObjectRequest::default()).await, "head")?;
    ensure_eq!(p.objects[0].etag, head.etag);
    // max_keys 0.
    let p = ok(s.list_objects(&b, ListObjectsRequest { max_keys: 0, ..Default::default() }).await, "max_keys 0")?;
    ensure!(p.objects.is_empty() && p.common_prefixes.is_empty(), "max_keys 0 returned entries");
    Ok(())
}

pub(crate) async fn listing_pagination(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut expected = Vec::new();
    for d in 0..5 {
        for f in 0..7 {
            let k = format!("dir{d}/file{f:02}");
            put(&s, &b, &k, Bytes::new()).await?;
            expected.push(k);
        }
    }
    for f in 0..4 {
        let k = format!("top{f}");
        put(&s, &b, &k, Bytes::new()).await?;
        expected.push(k);
    }
    expected.sort();
    for page in [1, 2, 3, 7, 1000] {
        let (ks, _) = list_all(&s, &b, "", None, page).await?;
        ensure!(ks == expected, "page size {page}: {ks:?}");
        let (ks, cps) = list_all(&s, &b, "", Some("/"), page).await?;
        ensure!(ks == vec!["top0", "top1", "top2", "top3"], "page size {page} keys {ks:?}");
        ensure!(cps == vec!["dir0/", "dir1/", "dir2/", "dir3/", "dir4/"], "page size {page} prefixes {cps:?}");
        let (ks, _) = list_all(&s, &b, "dir3/", None, page).await?;
        ensure_eq!(ks.len(), 7);
    }
    // Capped at 1000.
    let p = ok(s.list_objects(&b, ListObjectsRequest { max_keys: 5000, ..Default::default() }).await, "max_keys 5000")?;
    ensure_eq!(p.objects.len(), expected.len());
    Ok(())
}

pub(crate) async fn special_keys(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let keys = [
        "with space",
        "plus+sign",
        "percent%20literal",
        "question?mark",
        "hash#tag",
        "amp&er=sand",
        "colon:semi;",
        "quote'\"",
        "unicode/日本語/ファイル",
        "emoji-🦀",
        "tilde~star*",
        "brackets[]{}",
        "comma,dollar$at@",
        "back\\slash",
        "trailing.dot.",
        "ends-with-space ",
    ];
    for k in keys {
        let (r, _) = (put(&s, &b, k, k.as_bytes().to_vec()).await, ());
        r.map_err(|e| format!("key {k:?}: {e}"))?;
    }
    for k in keys {
        let (_, got) = get(&s, &b, k).await?;
        ensure!(got == k.as_bytes(), "key {k:?} content differs");
    }
    let (listed, _) = list_all(&s, &b, "", None, 1000).await?;
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    ensure_eq!(listed, want);
    Ok(())
}

pub(crate) async fn key_length(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let long = format!("{}/{}", "d".repeat(200), "k".repeat(200));
    put(&s, &b, &long, "ok").await?;
    let too_long =
        format!("{}/{}/{}/{}/{}", "a".repeat(205), "b".repeat(205), "c".repeat(205), "d".repeat(205), "e".repeat(205));
    ensure!(too_long.len() > 1024, "test key too short");
    expect_code(
        s.put_object(&b, &too_long, PutObjectRequest::default(), Body::from("x")).await,
        ErrorCode::KeyTooLongError,
        "1025+ byte key",
    )?;
    Ok(())
}

pub(crate) async fn directory_objects(s: DynStore, _c: Caps, b: String) -> R {
    ok(s.create_bucket(&b).await, "create")?;
    let mut meta = ObjectMeta::default();
    meta.user.insert("kind".into(), "folder".into());
    let req = PutObjectRequest { meta: meta.clone(), ..Default::default() };
    ok(s.put_object(&b, "folder/", req, Body::Empty).await, "put folder/")?;
    put(&s, &b, "folder/inner", "in").await?;
    let head = ok(s.head_object(&b, "folder/", GetObjectRequest::default()).await, "head folder/")?;
    ensure_eq!(head.size, 0);
    ensure_eq!(head.meta, meta);
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(ks, vec!["folder/", "folder/inner"]);
    let (ks, cps) = list_all(&s, &b, "folder/", Some("/"), 1000).await?;
    ensure_eq!(ks, vec!["folder/", "folder/inner"]);
    ensure!(cps.is_empty(), "prefixes {cps:?}");
    ok(s.delete_object(&b, "folder/inner").await, "delete inner")?;
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure_eq!(ks, vec!["folder/"]);
    ok(s.delete_object(&b, "folder/").await, "delete folder/")?;
    let (ks, _) = list_all(&s, &b, "", None, 1000).await?;
    ensure!(ks.is_empty(), "left {ks:?}");
    // Implicit directories are not objects.
    put(&s, &b, "p/q/r", "x").await?;
    expect_code(
        s.head_object(&b, "p/", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "implicit dir is no object",
    )?;
    expect_code(
        s.head_object(&b, "p/q", GetObjectRequest::default()).await,
        ErrorCode::NoSuchKey,
        "implicit dir without slash",
    )?;
    Ok(())
}
