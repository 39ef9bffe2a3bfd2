//! The `#[repr(C)]` structs of `s3::ffi` and the `S3Status` values against
//! `include/libs3.h`: a C program built here with the system compiler (`cc`, or `$CC`) prints
//! each struct's size and alignment, each field's offset and size, and each status's value,
//! and they must equal what Rust has. A moved, resized, renamed or missing field, or a
//! renumbered status, fails this test.

use std::mem::{align_of, offset_of, size_of};
use std::process::Command;

use s3::ffi::*;

fn field_size<S, F>(_: fn(&S) -> &F) -> usize {
    size_of::<F>()
}

/// For each struct, its fields in C order: the Rust side and the C program come from this list.
macro_rules! layouts {
    ($($S:ident { $($f:ident),* $(,)? })*) => {
        fn rust_side() -> Vec<String> {
            let mut v = Vec::new();
            $(
                v.push(format!("{} size {} align {}", stringify!($S), size_of::<$S>(), align_of::<$S>()));
                $(
                    v.push(format!(
                        "{}.{} offset {} size {}",
                        stringify!($S),
                        stringify!($f),
                        offset_of!($S, $f),
                        field_size(|s: &$S| &s.$f),
                    ));
                )*
            )*
            v
        }

        fn c_side() -> String {
            let mut p = String::new();
            $(
                p += &format!(
                    "    printf(\"{0} size %zu align %zu\\n\", sizeof({0}), (size_t)_Alignof({0}));\n",
                    stringify!($S)
                );
                $(
                    p += &format!(
                        "    printf(\"{0}.{1} offset %zu size %zu\\n\", offsetof({0}, {1}), sizeof((({0} *)0)->{1}));\n",
                        stringify!($S),
                        stringify!($f)
                    );
                )*
            )*
            p
        }
    };
}

layouts! {
    S3NameValue { name, value }
    S3ResponseProperties {
        requestId, requestId2, contentType, contentLength, server, eTag, lastModified, metaDataCount, metaData,
        usesServerSideEncryption,
    }
    S3BucketContext {
        hostName, bucketName, protocol, uriStyle, accessKeyId, secretAccessKey, securityToken, authRegion,
    }
    S3ListBucketContent { key, lastModified, eTag, size, ownerId, ownerDisplayName }
    S3ListMultipartUpload {
        key, uploadId, initiatorId, initiatorDisplayName, ownerId, ownerDisplayName, storageClass, initiated,
    }
    S3ListPart { eTag, lastModified, partNumber, size }
    S3PutProperties {
        contentType, md5, cacheControl, contentDispositionFilename, contentEncoding, expires, cannedAcl,
        metaDataCount, metaData, useServerSideEncryption,
    }
    S3GetConditions { ifModifiedSince, ifNotModifiedSince, ifMatchETag, ifNotMatchETag }
    S3ErrorDetails { message, resource, furtherDetails, extraDetailsCount, extraDetails }
    S3ResponseHandler { propertiesCallback, completeCallback }
    S3ListServiceHandler { responseHandler, listServiceCallback }
    S3ListBucketHandler { responseHandler, listBucketCallback }
    S3PutObjectHandler { responseHandler, putObjectDataCallback }
    S3GetObjectHandler { responseHandler, getObjectDataCallback }
    S3MultipartInitialHandler { responseHandler, responseXmlCallback }
    S3MultipartCommitHandler { responseHandler, putObjectDataCallback, responseXmlCallback }
    S3ListMultipartUploadsHandler { responseHandler, responseXmlCallback }
    S3ListPartsHandler { responseHandler, responseXmlCallback }
    S3AbortMultipartUploadHandler { responseHandler }
}

/// `S3StatusX` = n for every status the Rust side names (from its status table).
fn statuses() -> Vec<(String, i32)> {
    s3::status::STATUS_NAMES.iter().enumerate().map(|(i, n)| (format!("S3Status{n}"), i as i32)).collect()
}

#[test]
fn ffi_layouts_and_statuses_match_libs3_h() {
    let dir = tempfile::tempdir().unwrap();
    let include = concat!(env!("CARGO_MANIFEST_DIR"), "/include");
    let mut prog = String::from("#include <stddef.h>\n#include <stdio.h>\n#include \"libs3.h\"\n\nint main(void)\n{\n");
    prog += &c_side();
    for (name, _) in statuses() {
        prog += &format!("    printf(\"{name} = %d\\n\", (int){name});\n");
    }
    prog += "    return 0;\n}\n";
    let src = dir.path().join("layout.c");
    let exe = dir.path().join("layout");
    std::fs::write(&src, &prog).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc)
        .args(["-std=c11", "-Wall", "-Werror", "-I", include, "-o"])
        .arg(&exe)
        .arg(&src)
        .output()
        .unwrap_or_else(|e| panic!("running the C compiler `{cc}`: {e}"));
    assert!(
        out.status.success(),
        "layout.c does not compile against libs3.h:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let c: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();

    let mut rust = rust_side();
    rust.extend(statuses().into_iter().map(|(n, v)| format!("{n} = {v}")));
    assert_eq!(c.len(), rust.len());
    let differ: Vec<String> =
        c.iter().zip(&rust).filter(|(c, r)| c != r).map(|(c, r)| format!("C: {c}  Rust: {r}")).collect();
    assert!(differ.is_empty(), "libs3.h and s3::ffi disagree:\n{}", differ.join("\n"));
}
