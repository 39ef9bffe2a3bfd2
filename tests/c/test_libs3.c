/*
 * Tests of s3hpc's libs3 (crates/s3hpc-libs3) through its C interface, built against our
 * header and linked against the built libs3.so. The target comes from S3HPC_TARGET (the
 * Makefile runs this once per mode). Prints "N passed, N failed" and exits non-zero on failure.
 */
#define _GNU_SOURCE
#include <libs3.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int passed, failed;

#define CHECK(cond, ...)                                                   \
    do {                                                                   \
        if (cond) {                                                        \
            passed++;                                                      \
        } else {                                                           \
            failed++;                                                      \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                  \
            fprintf(stderr, "\n");                                         \
        }                                                                  \
    } while (0)

#define CHECK_STATUS(got, want) \
    CHECK((got) == (want), "status %s, want %s", S3_get_status_name(got), S3_get_status_name(want))

/* ------------------------------------------------------------------ per-request state */

typedef struct {
    S3Status status;
    int completed;        /* complete callback count */
    int props_calls;
    char etag[128];
    uint64_t content_length;
    int64_t last_modified;
    char content_type[64];
    char meta[256];       /* "name=value;" list */
    char message[256];
    /* put */
    const char *put_data;
    uint64_t put_len, put_pos;
    int put_chunk;        /* max bytes per callback (0 = all offered) */
    int put_abort_at;     /* abort once put_pos >= this (-1 = never) */
    uint64_t put_stop_at; /* return 0 once put_pos >= this (short body) */
    /* get */
    char *get_buf;
    uint64_t get_cap, get_len;
    int get_abort;
    S3Status props_answer; /* what the properties callback returns */
    /* list */
    int list_calls, list_contents, list_prefixes, list_truncated;
    char next_marker[1024];
    char keys[64][64];
    char prefixes[16][64];
    /* multipart */
    char upload_id[256];
    char commit_etag[128];
    int parts_seen;
    char part_etags[8][128];
    int uploads_seen;
    int service_buckets;
} Req;

static void req_init(Req *r) {
    memset(r, 0, sizeof(*r));
    r->status = S3StatusInterrupted;
    r->put_abort_at = -1;
    r->put_stop_at = UINT64_MAX;
    r->props_answer = S3StatusOK;
}

static S3Status props_cb(const S3ResponseProperties *p, void *data) {
    Req *r = data;
    if (!r) return S3StatusOK;
    r->props_calls++;
    snprintf(r->etag, sizeof r->etag, "%s", p->eTag ? p->eTag : "");
    r->content_length = p->contentLength;
    r->last_modified = p->lastModified;
    snprintf(r->content_type, sizeof r->content_type, "%s", p->contentType ? p->contentType : "");
    r->meta[0] = 0;
    for (int i = 0; i < p->metaDataCount; i++) {
        size_t n = strlen(r->meta);
        snprintf(r->meta + n, sizeof r->meta - n, "%s=%s;", p->metaData[i].name, p->metaData[i].value);
    }
    return r->props_answer;
}

static void complete_cb(S3Status status, const S3ErrorDetails *e, void *data) {
    Req *r = data;
    if (!r) return;
    r->status = status;
    r->completed++;
    snprintf(r->message, sizeof r->message, "%s", e && e->message ? e->message : "");
}

static int put_cb(int size, char *buf, void *data) {
    Req *r = data;
    if (r->put_abort_at >= 0 && r->put_pos >= (uint64_t) r->put_abort_at) return -1;
    if (r->put_pos >= r->put_stop_at) return 0;
    uint64_t left = r->put_len - r->put_pos;
    uint64_t n = (uint64_t) size < left ? (uint64_t) size : left;
    if (r->put_chunk && n > (uint64_t) r->put_chunk) n = r->put_chunk;
    if (r->put_pos + n > r->put_stop_at) n = r->put_stop_at - r->put_pos;
    memcpy(buf, r->put_data + r->put_pos, n);
    r->put_pos += n;
    return (int) n;
}

static S3Status get_cb(int size, const char *buf, void *data) {
    Req *r = data;
    if (r->get_abort) return S3StatusAbortedByCallback;
    if (r->get_len + size > r->get_cap) return S3StatusOutOfMemory;
    memcpy(r->get_buf + r->get_len, buf, size);
    r->get_len += size;
    return S3StatusOK;
}

static S3Status list_cb(int truncated, const char *next, int n, const S3ListBucketContent *c, int np,
                        const char **pre, void *data) {
    Req *r = data;
    r->list_calls++;
    r->list_truncated = truncated;
    snprintf(r->next_marker, sizeof r->next_marker, "%s", next ? next : "");
    for (int i = 0; i < n; i++) {
        if (r->list_contents < 64) snprintf(r->keys[r->list_contents], 64, "%s", c[i].key);
        r->list_contents++;
        if (c[i].eTag == NULL || c[i].eTag[0] != '"') r->list_contents += 1000; /* must be quoted */
    }
    for (int i = 0; i < np; i++) {
        if (r->list_prefixes < 16) snprintf(r->prefixes[r->list_prefixes], 64, "%s", pre[i]);
        r->list_prefixes++;
    }
    return n > 32 || np > 8 ? S3StatusInternalError : S3StatusOK; /* libs3 batches */
}

static S3ResponseHandler resp_handler = {props_cb, complete_cb};
static S3PutObjectHandler put_handler = {{props_cb, complete_cb}, put_cb};
static S3GetObjectHandler get_handler = {{props_cb, complete_cb}, get_cb};
static S3ListBucketHandler list_handler = {{props_cb, complete_cb}, list_cb};

static const char *BUCKET = "libs3-test";
static S3BucketContext bctx = {"ignored.example", "libs3-test", S3ProtocolHTTP, S3UriStylePath,
                               "AKIDTEST", "secret-test", NULL, "us-east-1"};

static S3Status put(const char *key, const char *data, uint64_t len, const S3PutProperties *pp, Req *r) {
    req_init(r);
    r->put_data = data;
    r->put_len = len;
    S3_put_object(&bctx, key, len, pp, NULL, 0, &put_handler, r);
    return r->status;
}

static S3Status get(const char *key, const S3GetConditions *c, uint64_t start, uint64_t count, char *buf,
                    uint64_t cap, Req *r) {
    req_init(r);
    r->get_buf = buf;
    r->get_cap = cap;
    S3_get_object(&bctx, key, c, start, count, NULL, 0, &get_handler, r);
    return r->status;
}

static S3Status head(const char *key, Req *r) {
    req_init(r);
    S3_head_object(&bctx, key, NULL, 0, &resp_handler, r);
    return r->status;
}

static S3Status del(const char *key) {
    Req r;
    req_init(&r);
    S3_delete_object(&bctx, key, NULL, 0, &resp_handler, &r);
    return r.status;
}

static S3Status list(const char *prefix, const char *marker, const char *delim, int max, Req *r) {
    req_init(r);
    S3_list_bucket(&bctx, prefix, marker, delim, max, NULL, 0, &list_handler, r);
    return r->status;
}

static char *pattern(size_t n, unsigned seed) {
    char *p = malloc(n ? n : 1);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (char) x;
    }
    return p;
}

/* ------------------------------------------------------------------ tests */

static void test_library(void) {
    CHECK(strcmp(S3_get_status_name(S3StatusOK), "OK") == 0, "OK name");
    CHECK(strcmp(S3_get_status_name(S3StatusErrorNoSuchKey), "ErrorNoSuchKey") == 0, "name");
    CHECK(strcmp(S3_get_status_name((S3Status) 9999), "Unknown") == 0, "unknown name");
    CHECK(S3StatusErrorNoSuchKey == 102 && S3StatusHttpErrorUnknown == 134, "enum values");
    CHECK(S3_status_is_retryable(S3StatusErrorInternalError) == 1, "retryable");
    CHECK(S3_status_is_retryable(S3StatusErrorNoSuchKey) == 0, "not retryable");
    CHECK_STATUS(S3_validate_bucket_name("good-bucket", S3UriStyleVirtualHost), S3StatusOK);
    CHECK_STATUS(S3_validate_bucket_name("ab", S3UriStylePath), S3StatusInvalidBucketNameTooShort);
    CHECK_STATUS(S3_validate_bucket_name("a_b", S3UriStyleVirtualHost), S3StatusInvalidBucketNameCharacter);
    CHECK_STATUS(S3_validate_bucket_name("10.0.0.1", S3UriStylePath), S3StatusInvalidBucketNameDotQuadNotation);
    CHECK_STATUS(S3_validate_bucket_name("a/b/c", S3UriStylePath), S3StatusInvalidBucketNameCharacter);
}

static void test_buckets(void) {
    Req r;
    req_init(&r);
    S3_create_bucket(S3ProtocolHTTP, "AKIDTEST", "secret-test", NULL, "h", BUCKET, "us-east-1", S3CannedAclPrivate,
                     NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(r.completed == 1, "complete once: %d", r.completed);
    req_init(&r);
    S3_create_bucket(S3ProtocolHTTP, "AKIDTEST", "secret-test", NULL, "h", BUCKET, NULL, S3CannedAclPrivate, NULL,
                     NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorBucketAlreadyOwnedByYou);
    req_init(&r);
    S3_create_bucket(S3ProtocolHTTP, "AKIDTEST", "secret-test", NULL, "h", "../escape", NULL, S3CannedAclPrivate,
                     NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusInvalidBucketNameFirstCharacter);
    req_init(&r);
    S3_create_bucket(S3ProtocolHTTP, "AKIDTEST", "secret-test", NULL, "h", "Upper_Case", NULL, S3CannedAclPrivate,
                     NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorInvalidBucketName);

    char loc[64] = "junk";
    req_init(&r);
    S3_test_bucket(S3ProtocolHTTP, S3UriStylePath, "AKIDTEST", "secret-test", NULL, "h", BUCKET, NULL, sizeof loc, loc,
                   NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(loc[0] == 0, "location constraint cleared: %s", loc);
    req_init(&r);
    S3_test_bucket(S3ProtocolHTTP, S3UriStylePath, "AKIDTEST", "secret-test", NULL, "h", "no-such-bucket-x", NULL, 0,
                   NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNoSuchBucket);
}

static S3Status service_cb(const char *owner, const char *display, const char *name, int64_t created, void *data) {
    Req *r = data;
    (void) owner, (void) display;
    if (strcmp(name, BUCKET) == 0 && created > 0) r->service_buckets++;
    return S3StatusOK;
}

static void test_service(void) {
    S3ListServiceHandler h = {{props_cb, complete_cb}, service_cb};
    Req r;
    req_init(&r);
    S3_list_service(S3ProtocolHTTP, "AKIDTEST", "secret-test", NULL, "h", NULL, NULL, 0, &h, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(r.service_buckets == 1, "our bucket listed once: %d", r.service_buckets);
}

static void test_objects(void) {
    Req r;
    const size_t n = 100000;
    char *data = pattern(n, 1);
    S3NameValue md[2] = {{"Color", "blue"}, {"size", "xl"}};
    S3PutProperties pp = {"application/x-test", NULL, NULL, NULL, NULL, -1, S3CannedAclPrivate, 2, md, 0};

    /* put in small chunks */
    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_chunk = 777;
    S3_put_object(&bctx, "dir/obj1", n, &pp, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(r.props_calls == 1 && r.completed == 1, "callbacks %d %d", r.props_calls, r.completed);
    CHECK(r.etag[0] == '"' && strlen(r.etag) > 2, "quoted etag %s", r.etag);
    char put_etag[128];
    strcpy(put_etag, r.etag);

    /* head */
    CHECK_STATUS(head("dir/obj1", &r), S3StatusOK);
    CHECK(r.content_length == n, "head length %llu", (unsigned long long) r.content_length);
    CHECK(strcmp(r.etag, put_etag) == 0, "head etag %s vs %s", r.etag, put_etag);
    CHECK(strcmp(r.content_type, "application/x-test") == 0, "content type %s", r.content_type);
    CHECK(strstr(r.meta, "color=blue;") && strstr(r.meta, "size=xl;"), "meta %s", r.meta);
    CHECK(r.last_modified > 1600000000, "mtime %lld", (long long) r.last_modified);
    CHECK_STATUS(head("dir/missing", &r), S3StatusHttpErrorNotFound);

    /* get whole, ranges */
    char *buf = malloc(n);
    CHECK_STATUS(get("dir/obj1", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == n && memcmp(buf, data, n) == 0, "whole object, %llu bytes", (unsigned long long) r.get_len);
    CHECK(r.content_length == n, "get length");
    CHECK_STATUS(get("dir/obj1", NULL, 1000, 5000, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 5000 && memcmp(buf, data + 1000, 5000) == 0, "range, %llu bytes", (unsigned long long) r.get_len);
    CHECK(r.content_length == 5000, "range length %llu", (unsigned long long) r.content_length);
    CHECK_STATUS(get("dir/obj1", NULL, n - 10, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 10 && memcmp(buf, data + n - 10, 10) == 0, "open range");
    CHECK_STATUS(get("dir/obj1", NULL, n + 10, 5, buf, n, &r), S3StatusErrorInvalidRange);
    CHECK_STATUS(get("dir/missing", NULL, 0, 0, buf, n, &r), S3StatusErrorNoSuchKey);
    CHECK(strlen(r.message) > 0, "error message present");

    /* conditions */
    S3GetConditions c = {-1, -1, put_etag, NULL};
    CHECK_STATUS(get("dir/obj1", &c, 0, 0, buf, n, &r), S3StatusOK);
    c.ifMatchETag = "\"0000\"";
    CHECK_STATUS(get("dir/obj1", &c, 0, 0, buf, n, &r), S3StatusErrorPreconditionFailed);
    CHECK(r.get_len == 0, "no data on failed condition");
    S3GetConditions c2 = {-1, -1, NULL, put_etag};
    CHECK_STATUS(get("dir/obj1", &c2, 0, 0, buf, n, &r), S3StatusHttpErrorUnknown); /* 304, as libs3 */
    S3GetConditions c3 = {-1, 1000000000, NULL, NULL}; /* unmodified since 2001: fails */
    CHECK_STATUS(get("dir/obj1", &c3, 0, 0, buf, n, &r), S3StatusErrorPreconditionFailed);
    S3GetConditions c4 = {1000000000, -1, NULL, NULL}; /* modified since 2001: ok */
    CHECK_STATUS(get("dir/obj1", &c4, 0, 0, buf, n, &r), S3StatusOK);

    /* zero-length object, overwrite */
    CHECK_STATUS(put("empty", NULL, 0, NULL, &r), S3StatusOK);
    CHECK_STATUS(get("empty", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 0 && r.content_length == 0, "empty object");
    CHECK_STATUS(put("empty", "x", 1, NULL, &r), S3StatusOK);
    CHECK_STATUS(head("empty", &r), S3StatusOK);
    CHECK(r.content_length == 1, "overwritten");

    /* copy (metadata copied), copy with replaced metadata */
    int64_t lm = 0;
    char etag[64] = "";
    req_init(&r);
    S3_copy_object(&bctx, "dir/obj1", NULL, "copy1", NULL, &lm, sizeof etag, etag, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(lm > 1600000000 && etag[0] == '"', "copy outputs %lld %s", (long long) lm, etag);
    CHECK_STATUS(get("copy1", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == n && memcmp(buf, data, n) == 0, "copied bytes");
    CHECK(strstr(r.meta, "color=blue;") != NULL, "copied meta %s", r.meta);
    S3NameValue md2[1] = {{"new", "1"}};
    S3PutProperties pp2 = {"text/plain", NULL, NULL, NULL, NULL, -1, S3CannedAclPrivate, 1, md2, 0};
    req_init(&r);
    S3_copy_object(&bctx, "dir/obj1", BUCKET, "copy2", &pp2, NULL, 0, NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK_STATUS(head("copy2", &r), S3StatusOK);
    CHECK(strcmp(r.meta, "new=1;") == 0 && strcmp(r.content_type, "text/plain") == 0, "replaced %s %s", r.meta,
          r.content_type);
    char small[4];
    req_init(&r);
    S3_copy_object(&bctx, "dir/missing", NULL, "copy3", NULL, NULL, sizeof small, small, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNoSuchKey);

    /* delete (idempotent) */
    CHECK_STATUS(del("copy1"), S3StatusOK);
    CHECK_STATUS(del("copy1"), S3StatusOK);
    CHECK_STATUS(head("copy1", &r), S3StatusHttpErrorNotFound);
    CHECK_STATUS(del("copy2"), S3StatusOK);
    CHECK_STATUS(del("empty"), S3StatusOK);
    free(buf);
    free(data);
}

static void test_bad_input(void) {
    Req r;
    const size_t n = 50000;
    char *data = pattern(n, 2);
    char *buf = malloc(n);

    /* the put callback aborts half way: AbortedByCallback, nothing stored */
    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_chunk = 4096, r.put_abort_at = 20000;
    S3_put_object(&bctx, "aborted", n, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusAbortedByCallback);
    CHECK(r.props_calls == 0, "no properties on failure");
    CHECK_STATUS(head("aborted", &r), S3StatusHttpErrorNotFound);

    /* fewer bytes than promised: IncompleteBody, nothing stored (also not the old version) */
    CHECK_STATUS(put("short", "old", 3, NULL, &r), S3StatusOK);
    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_stop_at = 1234;
    S3_put_object(&bctx, "short", n, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorIncompleteBody);
    CHECK_STATUS(get("short", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 3 && memcmp(buf, "old", 3) == 0, "old version kept");
    CHECK_STATUS(del("short"), S3StatusOK);

    /* the same for bodies the store pulls in pieces while it writes (embedded, > 256 KiB): the
       failure comes after some pieces were written; still nothing stored, the old version kept */
    {
        const size_t big = (1 << 20) + 5;
        char *bdata = pattern(big, 3);
        char *bbuf = malloc(big);
        req_init(&r);
        r.put_data = bdata, r.put_len = big, r.put_chunk = 65536, r.put_abort_at = 600000;
        S3_put_object(&bctx, "aborted-big", big, NULL, NULL, 0, &put_handler, &r);
        CHECK_STATUS(r.status, S3StatusAbortedByCallback);
        CHECK(r.props_calls == 0, "no properties on failure (big)");
        CHECK_STATUS(head("aborted-big", &r), S3StatusHttpErrorNotFound);
        CHECK_STATUS(put("short-big", "old", 3, NULL, &r), S3StatusOK);
        req_init(&r);
        r.put_data = bdata, r.put_len = big, r.put_stop_at = 700000;
        S3_put_object(&bctx, "short-big", big, NULL, NULL, 0, &put_handler, &r);
        CHECK_STATUS(r.status, S3StatusErrorIncompleteBody);
        CHECK_STATUS(get("short-big", NULL, 0, 0, bbuf, big, &r), S3StatusOK);
        CHECK(r.get_len == 3 && memcmp(bbuf, "old", 3) == 0, "old version kept (big)");
        /* and a whole one reads back byte for byte */
        CHECK_STATUS(put("short-big", bdata, big, NULL, &r), S3StatusOK);
        CHECK_STATUS(get("short-big", NULL, 0, 0, bbuf, big, &r), S3StatusOK);
        CHECK(r.get_len == big && memcmp(bbuf, bdata, big) == 0, "big body intact");
        CHECK_STATUS(del("short-big"), S3StatusOK);
        free(bbuf);
        free(bdata);
    }

    /* a NULL data callback with a non-zero length */
    S3PutObjectHandler nodata = {{props_cb, complete_cb}, NULL};
    req_init(&r);
    S3_put_object(&bctx, "nodata", 10, NULL, NULL, 0, &nodata, &r);
    CHECK_STATUS(r.status, S3StatusErrorIncompleteBody);

    /* the get data callback aborts; the properties callback refuses */
    CHECK_STATUS(put("g", data, n, NULL, &r), S3StatusOK);
    req_init(&r);
    r.get_buf = buf, r.get_cap = n, r.get_abort = 1;
    S3_get_object(&bctx, "g", NULL, 0, 0, NULL, 0, &get_handler, &r);
    CHECK_STATUS(r.status, S3StatusAbortedByCallback);
    req_init(&r);
    r.get_buf = buf, r.get_cap = n, r.props_answer = S3StatusInterrupted;
    S3_get_object(&bctx, "g", NULL, 0, 0, NULL, 0, &get_handler, &r);
    CHECK_STATUS(r.status, S3StatusInterrupted);
    CHECK(r.get_len == 0, "no data after a refused properties callback");
    CHECK_STATUS(del("g"), S3StatusOK);

    /* NULL arguments: no crash, a clear status */
    req_init(&r);
    S3_put_object(NULL, "k", 0, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorInvalidArgument);
    req_init(&r);
    S3_get_object(&bctx, NULL, NULL, 0, 0, NULL, 0, &get_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorInvalidArgument);
    req_init(&r);
    S3_delete_object(&bctx, "", NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorInvalidArgument);
    S3_delete_object(&bctx, "x", NULL, 0, NULL, NULL); /* NULL handler: runs, reports nothing */
    S3ResponseHandler nocb = {NULL, NULL};
    S3_head_object(&bctx, "x", NULL, 0, &nocb, NULL);
    S3BucketContext nob = bctx;
    nob.bucketName = NULL;
    req_init(&r);
    S3_head_object(&nob, "x", NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusInvalidBucketNameTooShort);
    nob.bucketName = "no-such-bucket-y";
    req_init(&r);
    S3_put_object(&nob, "k", 1, NULL, NULL, 0, &put_handler, &r); /* callback gives nothing */
    CHECK_STATUS(r.status, S3StatusErrorIncompleteBody);
    req_init(&r);
    r.put_data = "k", r.put_len = 1;
    S3_put_object(&nob, "k", 1, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNoSuchBucket);

    /* keys that try to leave the bucket */
    const char *evil[] = {"../escape", "a/../../escape", "/abs", "a//b", ".", "a/./b"};
    const char *target = getenv("S3HPC_TARGET");
    int on_posix = target && strncmp(target, "file://", 7) == 0;
    for (size_t i = 0; i < sizeof evil / sizeof *evil; i++) {
        S3Status st = put(evil[i], "x", 1, NULL, &r);
        if (on_posix) {
            CHECK_STATUS(st, S3StatusErrorInvalidArgument);
        } else if (st == S3StatusOK) {
            /* accepted as a plain key: it must read back as such and stay in the bucket */
            CHECK_STATUS(get(evil[i], NULL, 0, 0, buf, n, &r), S3StatusOK);
            CHECK(r.get_len == 1, "key %s reads back", evil[i]);
            CHECK_STATUS(del(evil[i]), S3StatusOK);
        } else {
            CHECK(st == S3StatusErrorInvalidArgument || st == S3StatusErrorKeyTooLong ||
                      st == S3StatusErrorInvalidRequest,
                  "key %s: %s", evil[i], S3_get_status_name(st));
        }
    }
    if (on_posix) {
        char path[4096];
        struct stat sb;
        snprintf(path, sizeof path, "%s/escape", target + 7);
        CHECK(stat(path, &sb) != 0, "nothing written outside the bucket: %s", path);
        snprintf(path, sizeof path, "%s/../escape", target + 7);
        CHECK(stat(path, &sb) != 0, "nothing written outside the root: %s", path);
    }
    char longkey[1100];
    memset(longkey, 'k', sizeof longkey - 1);
    longkey[sizeof longkey - 1] = 0;
    CHECK_STATUS(put(longkey, "x", 1, NULL, &r), S3StatusErrorKeyTooLong);

    /* the node-local gateway refuses unknown credentials */
    if (target && (strncmp(target, "unix://", 7) == 0 || strncmp(target, "tcp://", 6) == 0)) {
        S3BucketContext badc = bctx;
        badc.secretAccessKey = "wrong-secret";
        req_init(&r);
        S3_head_object(&badc, "x", NULL, 0, &resp_handler, &r);
        CHECK(r.status != S3StatusOK && r.completed == 1, "bad credentials: %s", S3_get_status_name(r.status));
        fprintf(stderr, "(bad credentials give %s: %s)\n", S3_get_status_name(r.status), r.message);
    }

    /* unimplemented calls answer, they do not crash */
    req_init(&r);
    int count = 7;
    S3_get_acl(&bctx, "k", NULL, NULL, &count, NULL, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    req_init(&r);
    S3_set_lifecycle(&bctx, "<x/>", NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    S3AclGrant grants[2];
    req_init(&r);
    S3_set_acl(&bctx, "k", "owner", "Owner", 0, grants, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    char lifecycle[64];
    req_init(&r);
    S3_get_lifecycle(&bctx, lifecycle, sizeof lifecycle, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    char tb[S3_MAX_BUCKET_NAME_SIZE], tp[S3_MAX_KEY_SIZE];
    req_init(&r);
    S3_get_server_access_logging(&bctx, tb, tp, &count, grants, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    req_init(&r);
    S3_set_server_access_logging(&bctx, "logs", "p/", 0, grants, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    char owner[S3_MAX_GRANTEE_USER_ID_SIZE], display[S3_MAX_GRANTEE_DISPLAY_NAME_SIZE];
    char aclxml[] = "<AccessControlPolicy/>";
    count = 5;
    CHECK_STATUS(S3_convert_acl(aclxml, owner, display, &count, grants), S3StatusErrorNotImplemented);
    CHECK(count == 0, "no grants converted");
    /* with a context the not-implemented answer arrives when the context runs */
    S3RequestContext *ctx = NULL;
    S3_create_request_context(&ctx);
    req_init(&r);
    S3_get_acl(&bctx, "k", owner, display, &count, grants, ctx, 0, &resp_handler, &r);
    CHECK(r.completed == 0, "queued");
    S3_runall_request_context(ctx);
    CHECK_STATUS(r.status, S3StatusErrorNotImplemented);
    S3_destroy_request_context(ctx);
    char qs[S3_MAX_AUTHENTICATED_QUERY_STRING_SIZE];
    CHECK_STATUS(S3_generate_authenticated_query_string(qs, &bctx, "k", 60, NULL, "GET"), S3StatusErrorNotImplemented);
    free(buf);
    free(data);
}

/* IOR's cleanup: list with a marker loop and delete from inside the list callback */
typedef struct {
    int truncated;
    const char *next;
    int deleted;
} DelReq;

static S3Status list_delete_cb(int truncated, const char *next, int n, const S3ListBucketContent *c, int np,
                               const char **pre, void *data) {
    DelReq *d = data;
    (void) np, (void) pre;
    for (int i = 0; i < n; i++) {
        if (del(c[i].key) == S3StatusOK) d->deleted++;
    }
    d->truncated = truncated;
    if (truncated) d->next = next; /* kept by pointer across calls, as IOR does */
    return S3StatusOK;
}

static void test_listing(void) {
    Req r;
    char key[64];
    for (int i = 0; i < 40; i++) {
        snprintf(key, sizeof key, "list/f%02d", i);
        CHECK_STATUS(put(key, key, strlen(key), NULL, &r), S3StatusOK);
    }
    for (int i = 0; i < 3; i++) {
        snprintf(key, sizeof key, "list/sub%d/x", i);
        CHECK_STATUS(put(key, "x", 1, NULL, &r), S3StatusOK);
    }
    CHECK_STATUS(list("list/", NULL, NULL, 0, &r), S3StatusOK);
    CHECK(r.list_contents == 43 && r.list_prefixes == 0, "all %d %d", r.list_contents, r.list_prefixes);
    CHECK(r.list_calls == 2, "batched in 32s: %d calls", r.list_calls);
    CHECK(!r.list_truncated, "not truncated");
    CHECK(strcmp(r.keys[0], "list/f00") == 0 && strcmp(r.keys[39], "list/f39") == 0, "order %s %s", r.keys[0],
          r.keys[39]);

    CHECK_STATUS(list("list/", NULL, "/", 0, &r), S3StatusOK);
    CHECK(r.list_contents == 40 && r.list_prefixes == 3, "delimited %d %d", r.list_contents, r.list_prefixes);
    CHECK(strcmp(r.prefixes[0], "list/sub0/") == 0, "prefix %s", r.prefixes[0]);

    /* pages of 10 with nextMarker */
    int total = 0, pages = 0;
    char marker[1024] = "";
    do {
        CHECK_STATUS(list("list/f", marker[0] ? marker : NULL, NULL, 10, &r), S3StatusOK);
        total += r.list_contents;
        pages++;
        snprintf(marker, sizeof marker, "%s", r.next_marker);
    } while (r.list_truncated && pages < 10);
    CHECK(total == 40 && pages == 4, "paged %d in %d", total, pages);

    CHECK_STATUS(list("list/f1", NULL, NULL, 0, &r), S3StatusOK);
    CHECK(r.list_contents == 10, "prefix f1: %d", r.list_contents);
    CHECK_STATUS(list("nothing/", NULL, NULL, 0, &r), S3StatusOK);
    CHECK(r.list_calls == 0, "no callback for an empty listing");

    /* IOR's pattern: INT_MAX keys, delete inside the callback, loop on truncated */
    DelReq d = {0, NULL, 0};
    S3ListBucketHandler h = {{props_cb, complete_cb}, list_delete_cb};
    int rounds = 0;
    do {
        Req lr;
        req_init(&lr);
        S3_list_bucket(&bctx, "list/", d.next, NULL, 2147483647, NULL, 0, &h, &d);
        rounds++;
    } while (d.truncated && rounds < 100);
    CHECK(d.deleted == 43, "deleted %d", d.deleted);
    CHECK_STATUS(list("list/", NULL, NULL, 0, &r), S3StatusOK);
    CHECK(r.list_contents == 0, "all gone: %d", r.list_contents);
}

/* ------------------------------------------------------------------ multipart */

static S3Status mp_init_cb(const char *id, void *data) {
    Req *r = data;
    snprintf(r->upload_id, sizeof r->upload_id, "%s", id);
    return S3StatusOK;
}

static S3Status mp_commit_cb(const char *location, const char *etag, void *data) {
    Req *r = data;
    (void) location;
    snprintf(r->commit_etag, sizeof r->commit_etag, "%s", etag);
    return S3StatusOK;
}

static S3Status parts_cb(int truncated, const char *next, const char *iid, const char *idn, const char *oid,
                         const char *odn, const char *sc, int n, int last, const S3ListPart *parts, void *data) {
    Req *r = data;
    (void) truncated, (void) next, (void) iid, (void) idn, (void) oid, (void) odn, (void) sc, (void) last;
    for (int i = 0; i < n; i++) {
        if (r->parts_seen < 8) snprintf(r->part_etags[r->parts_seen], 128, "%s#%llu", parts[i].eTag,
                                        (unsigned long long) parts[i].partNumber);
        r->parts_seen++;
    }
    return S3StatusOK;
}

static S3Status uploads_cb(int truncated, const char *nk, const char *nu, int n, const S3ListMultipartUpload *u,
                           int np, const char **pre, void *data) {
    Req *r = data;
    (void) truncated, (void) nk, (void) nu, (void) np, (void) pre;
    for (int i = 0; i < n; i++)
        if (strcmp(u[i].uploadId, r->upload_id) == 0) r->uploads_seen++;
    return S3StatusOK;
}

static void test_multipart(void) {
    Req r, ir;
    const size_t p1 = 5 * 1024 * 1024, p2 = 300000, n = p1 + p2;
    char *data = pattern(n, 3);
    S3MultipartInitialHandler ih = {{props_cb, complete_cb}, mp_init_cb};

    req_init(&ir);
    S3_initiate_multipart(&bctx, "mp/obj", NULL, &ih, NULL, 0, &ir);
    CHECK_STATUS(ir.status, S3StatusOK);
    CHECK(strlen(ir.upload_id) > 8, "upload id %s", ir.upload_id);

    char etags[3][128];
    for (int part = 1; part <= 2; part++) {
        req_init(&r);
        r.put_data = data + (part == 1 ? 0 : p1);
        r.put_len = part == 1 ? p1 : p2;
        r.put_chunk = 65536;
        S3_upload_part(&bctx, "mp/obj", NULL, &put_handler, part, ir.upload_id, (int) r.put_len, NULL, 0, &r);
        CHECK_STATUS(r.status, S3StatusOK);
        snprintf(etags[part], 128, "%s", r.etag);
    }

    S3ListPartsHandler lph = {{props_cb, complete_cb}, parts_cb};
    req_init(&r);
    S3_list_parts(&bctx, "mp/obj", NULL, ir.upload_id, NULL, 0, NULL, 0, &lph, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(r.parts_seen == 2, "parts %d", r.parts_seen);
    char want[160];
    snprintf(want, sizeof want, "%s#2", etags[2]);
    CHECK(strcmp(r.part_etags[1], want) == 0, "part 2 %s vs %s", r.part_etags[1], want);

    S3ListMultipartUploadsHandler luh = {{props_cb, complete_cb}, uploads_cb};
    req_init(&r);
    strcpy(r.upload_id, ir.upload_id);
    S3_list_multipart_uploads(&bctx, "mp/", NULL, NULL, NULL, NULL, 0, NULL, 0, &luh, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(r.uploads_seen == 1, "upload listed %d", r.uploads_seen);

    /* not visible before completion */
    CHECK_STATUS(head("mp/obj", &r), S3StatusHttpErrorNotFound);

    /* a wrong part list is refused */
    char xml[1024];
    snprintf(xml, sizeof xml,
             "<CompleteMultipartUpload><Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part>"
             "<Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>",
             etags[2], etags[1]);
    S3MultipartCommitHandler ch = {{props_cb, complete_cb}, put_cb, mp_commit_cb};
    req_init(&r);
    r.put_data = xml, r.put_len = strlen(xml);
    S3_complete_multipart_upload(&bctx, "mp/obj", &ch, ir.upload_id, (int) strlen(xml), NULL, 0, &r);
    CHECK_STATUS(r.status, S3StatusErrorInvalidPartOrder);
    req_init(&r);
    r.put_data = "<nope", r.put_len = 5;
    S3_complete_multipart_upload(&bctx, "mp/obj", &ch, ir.upload_id, 5, NULL, 0, &r);
    CHECK_STATUS(r.status, S3StatusErrorMalformedXML);

    snprintf(xml, sizeof xml,
             "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
             "<Part><PartNumber>2</PartNumber><ETag>%s</ETag></Part></CompleteMultipartUpload>",
             etags[1], etags[2]);
    req_init(&r);
    r.put_data = xml, r.put_len = strlen(xml);
    S3_complete_multipart_upload(&bctx, "mp/obj", &ch, ir.upload_id, (int) strlen(xml), NULL, 0, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK(strstr(r.commit_etag, "-2\"") != NULL, "multipart etag %s", r.commit_etag);

    char *buf = malloc(n);
    CHECK_STATUS(get("mp/obj", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == n && memcmp(buf, data, n) == 0, "assembled object, %llu bytes", (unsigned long long) r.get_len);
    CHECK_STATUS(get("mp/obj", NULL, p1 - 100, 200, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 200 && memcmp(buf, data + p1 - 100, 200) == 0, "range across parts");

    /* part copy from a range of an object (libs3: count is the inclusive end offset delta) */
    req_init(&ir);
    S3_initiate_multipart(&bctx, "mp/copy", NULL, &ih, NULL, 0, &ir);
    CHECK_STATUS(ir.status, S3StatusOK);
    char cetag[128] = "";
    req_init(&r);
    S3_copy_object_range(&bctx, "mp/obj", BUCKET, "mp/copy", 1, ir.upload_id, 10, 999, NULL, NULL, sizeof cetag,
                         cetag, NULL, 0, &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    snprintf(xml, sizeof xml,
             "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>%s</ETag></Part>"
             "</CompleteMultipartUpload>",
             cetag);
    req_init(&r);
    r.put_data = xml, r.put_len = strlen(xml);
    S3_complete_multipart_upload(&bctx, "mp/copy", &ch, ir.upload_id, (int) strlen(xml), NULL, 0, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK_STATUS(get("mp/copy", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == 1000 && memcmp(buf, data + 10, 1000) == 0, "part copy %llu", (unsigned long long) r.get_len);

    /* abort: the upload disappears */
    req_init(&ir);
    S3_initiate_multipart(&bctx, "mp/aborted", NULL, &ih, NULL, 0, &ir);
    S3AbortMultipartUploadHandler ah = {{props_cb, complete_cb}};
    S3_abort_multipart_upload(&bctx, "mp/aborted", ir.upload_id, 0, &ah);
    req_init(&r);
    r.put_data = data, r.put_len = 10;
    S3_upload_part(&bctx, "mp/aborted", NULL, &put_handler, 1, ir.upload_id, 10, NULL, 0, &r);
    CHECK_STATUS(r.status, S3StatusErrorNoSuchUpload);

    CHECK_STATUS(del("mp/obj"), S3StatusOK);
    CHECK_STATUS(del("mp/copy"), S3StatusOK);
    free(buf);
    free(data);
}

/* ------------------------------------------------------------------ big objects (streamed) */

static void test_large(void) {
    Req r;
    const size_t n = 24 * 1024 * 1024 + 12345; /* above the library's 16 MiB inline limit */
    char *data = pattern(n, 4);
    char *buf = malloc(n);
    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_chunk = 1 << 20;
    S3_put_object(&bctx, "large", n, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    CHECK_STATUS(get("large", NULL, 0, 0, buf, n, &r), S3StatusOK);
    CHECK(r.get_len == n && memcmp(buf, data, n) == 0, "large object round trip");

    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_chunk = 1 << 20, r.put_abort_at = 20 * 1024 * 1024;
    S3_put_object(&bctx, "large2", n, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusAbortedByCallback);
    CHECK_STATUS(head("large2", &r), S3StatusHttpErrorNotFound);
    req_init(&r);
    r.put_data = data, r.put_len = n, r.put_stop_at = 18 * 1024 * 1024;
    S3_put_object(&bctx, "large", n, NULL, NULL, 0, &put_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorIncompleteBody);
    CHECK_STATUS(head("large", &r), S3StatusOK);
    CHECK(r.content_length == n, "old large object kept");
    CHECK_STATUS(del("large"), S3StatusOK);
    free(buf);
    free(data);
}

/* ------------------------------------------------------------------ request contexts */

static void test_contexts(void) {
    S3RequestContext *ctx = NULL;
    CHECK_STATUS(S3_create_request_context(&ctx), S3StatusOK);
    Req r[4];
    const char *keys[3] = {"ctx/a", "ctx/b", "ctx/c"};
    for (int i = 0; i < 3; i++) {
        req_init(&r[i]);
        r[i].put_data = keys[i], r[i].put_len = strlen(keys[i]);
        S3_put_object(&bctx, keys[i], r[i].put_len, NULL, ctx, 0, &put_handler, &r[i]);
        CHECK(r[i].completed == 0, "queued, not run");
    }
    CHECK_STATUS(S3_runall_request_context(ctx), S3StatusOK);
    for (int i = 0; i < 3; i++) CHECK_STATUS(r[i].status, S3StatusOK);

    /* runonce loop with the fdset/timeout calls a select() loop makes */
    for (int i = 0; i < 3; i++) {
        req_init(&r[i]);
        S3_delete_object(&bctx, keys[i], ctx, 0, &resp_handler, &r[i]);
    }
    int remaining = 1, loops = 0;
    while (remaining && loops < 10) {
        fd_set rd, wr, ex;
        FD_ZERO(&rd);
        FD_ZERO(&wr);
        FD_ZERO(&ex);
        int maxfd = 99;
        CHECK_STATUS(S3_get_request_context_fdsets(ctx, &rd, &wr, &ex, &maxfd), S3StatusOK);
        CHECK(maxfd == -1, "no fds");
        CHECK(S3_get_request_context_timeout(ctx) >= 0, "timeout");
        CHECK_STATUS(S3_runonce_request_context(ctx, &remaining), S3StatusOK);
        loops++;
    }
    CHECK(loops == 3 && remaining == 0, "runonce %d loops", loops);
    for (int i = 0; i < 3; i++) CHECK_STATUS(r[i].status, S3StatusOK);

    /* destroying a context completes what is still queued with Interrupted */
    req_init(&r[3]);
    S3_head_object(&bctx, "ctx/a", ctx, 0, &resp_handler, &r[3]);
    S3_destroy_request_context(ctx);
    CHECK_STATUS(r[3].status, S3StatusInterrupted);
    CHECK(r[3].completed == 1, "completed once");

    /* argument errors are reported at once, even with a context */
    CHECK_STATUS(S3_create_request_context_ex(&ctx, NULL, NULL, NULL), S3StatusOK);
    req_init(&r[0]);
    S3_head_object(&bctx, NULL, ctx, 0, &resp_handler, &r[0]);
    CHECK_STATUS(r[0].status, S3StatusErrorInvalidArgument);
    S3_set_request_context_verify_peer(ctx, 1);
    CHECK_STATUS(S3_process_request_context(ctx), S3StatusOK);
    S3_destroy_request_context(ctx);
}

/* ------------------------------------------------------------------ threads */

static void *worker(void *arg) {
    long id = (long) arg;
    char key[64], buf[4096];
    int bad = 0;
    for (int i = 0; i < 50; i++) {
        Req r;
        snprintf(key, sizeof key, "threads/%ld/%d", id, i);
        char *data = pattern(4096, (unsigned) (id * 1000 + i));
        S3Status st;
        if ((st = put(key, data, 4096, NULL, &r)) != S3StatusOK) {
            bad++;
            fprintf(stderr, "thread put %s: %s %s\n", key, S3_get_status_name(st), r.message);
        }
        if ((st = get(key, NULL, 0, 0, buf, sizeof buf, &r)) != S3StatusOK || r.get_len != 4096 ||
            memcmp(buf, data, 4096)) {
            bad++;
            fprintf(stderr, "thread get %s: %s %s\n", key, S3_get_status_name(st), r.message);
        }
        if ((st = del(key)) != S3StatusOK) {
            bad++;
            fprintf(stderr, "thread delete %s: %s\n", key, S3_get_status_name(st));
        }
        free(data);
    }
    return (void *) (long) bad;
}

static void test_threads(void) {
    /* A sentinel keeps "threads/" non-empty. Without it the posix backend (at the time of
       writing) can prune the shared parent directory of one thread's deleted object while
       another thread publishes under it, and that PUT fails with NoSuchKey: reported to the
       posix backend's owner; set S3HPC_TEST_PRUNE_RACE=1 to run without the sentinel. */
    Req sr;
    int sentinel = getenv("S3HPC_TEST_PRUNE_RACE") == NULL;
    if (sentinel) CHECK_STATUS(put("threads/keep", "k", 1, NULL, &sr), S3StatusOK);
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, worker, (void *) i);
    long bad_total = 0;
    for (int i = 0; i < 4; i++) {
        void *bad;
        pthread_join(t[i], &bad);
        bad_total += (long) bad;
    }
    CHECK(bad_total == 0, "%ld failures in threads", bad_total);
    if (sentinel) CHECK_STATUS(del("threads/keep"), S3StatusOK);
}

static void test_cleanup(void) {
    Req r;
    CHECK_STATUS(put("left", "x", 1, NULL, &r), S3StatusOK);
    req_init(&r);
    S3_delete_bucket(S3ProtocolHTTP, S3UriStylePath, "AKIDTEST", "secret-test", NULL, "h", BUCKET, NULL, NULL, 0,
                     &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorBucketNotEmpty);
    CHECK_STATUS(del("left"), S3StatusOK);
    CHECK_STATUS(del("dir/obj1"), S3StatusOK);
    req_init(&r);
    S3_delete_bucket(S3ProtocolHTTP, S3UriStylePath, "AKIDTEST", "secret-test", NULL, "h", BUCKET, NULL, NULL, 0,
                     &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusOK);
    req_init(&r);
    S3_delete_bucket(S3ProtocolHTTP, S3UriStylePath, "AKIDTEST", "secret-test", NULL, "h", BUCKET, NULL, NULL, 0,
                     &resp_handler, &r);
    CHECK_STATUS(r.status, S3StatusErrorNoSuchBucket);
}

int main(void) {
    S3Status st = S3_initialize("s3hpc-test", S3_INIT_ALL, NULL);
    CHECK_STATUS(st, S3StatusOK);
    if (st != S3StatusOK) {
        printf("%d passed, %d failed\n", passed, failed);
        return 1;
    }
    test_library();
    test_buckets();
    test_service();
    test_objects();
    test_bad_input();
    test_listing();
    test_multipart();
    test_large();
    test_contexts();
    test_threads();
    test_cleanup();
    S3_deinitialize();
    printf("test_libs3 with S3HPC_TARGET=%s\n", getenv("S3HPC_TARGET"));
    printf("test_libs3: %d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
