//! Using the posix backend directly, embedded in a program: no server, no HTTP. Objects are
//! plain files under the root directory, so `ls`/`cat` see what the program wrote.
//!
//! ```text
//! cargo run -p s3hpc-posix --example embedded -- /tmp/s3hpc-demo
//! ```

use s3hpc_core::{Body, GetObjectRequest, ListObjectsRequest, ObjectMeta, PutObjectRequest, Store};
use s3hpc_posix::{PosixOptions, PosixStore};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = std::env::args().nth(1).unwrap_or_else(|| "/tmp/s3hpc-embedded-demo".to_string());
    let store = PosixStore::open(&root, PosixOptions::default())?;
    println!("root {} (metadata in {:?})", store.root().display(), store.meta_mode());

    match store.create_bucket("demo").await {
        Ok(()) => println!("created bucket demo"),
        Err(e) if e.code == s3hpc_core::ErrorCode::BucketAlreadyOwnedByYou => println!("bucket demo exists"),
        Err(e) => return Err(e.into()),
    }

    let mut meta = ObjectMeta { content_type: Some("text/plain".into()), ..Default::default() };
    meta.user.insert("written-by".into(), "embedded example".into());
    let req = PutObjectRequest { meta, ..Default::default() };
    let out = store.put_object("demo", "results/run-1/summary.txt", req, Body::from("hello from s3hpc\n")).await?;
    println!("put results/run-1/summary.txt etag {}", out.etag);

    // The object is an ordinary file.
    let path = store.root().join("demo/results/run-1/summary.txt");
    println!("on disk: {} = {:?}", path.display(), std::fs::read_to_string(&path)?);

    // A file written by a POSIX tool is an object too.
    std::fs::write(store.root().join("demo/results/run-1/raw.dat"), b"written with std::fs")?;

    let got = store.get_object("demo", "results/run-1/summary.txt", GetObjectRequest::default()).await?;
    println!("get: {} bytes, content-type {:?}", got.info.size, got.info.meta.content_type);
    let body = got.body.collect().await?;
    print!("body: {}", String::from_utf8_lossy(&body));

    let page = store
        .list_objects("demo", ListObjectsRequest { prefix: "results/".into(), max_keys: 100, ..Default::default() })
        .await?;
    for o in page.objects {
        println!("list: {} {} bytes etag {}", o.key, o.size, o.etag);
    }
    Ok(())
}
