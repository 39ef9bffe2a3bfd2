/*
 * ior_like: IOR's S3-libs3 access pattern, measured through libs3 and on raw POSIX files.
 *
 * Through libs3 (the target comes from S3HPC_TARGET): one bucket; each transfer is an object
 * named like IOR's fragments ("file" for offset 0, then "file-<offset>-<length>"), written with
 * S3_put_object and a data callback that copies from the transfer buffer (as IOR's does), read
 * back with S3_get_object(0, length); cleanup lists the bucket and deletes from inside the list
 * callback, looping on isTruncated/nextMarker (IOR's S3_Delete).
 * Raw POSIX: the same transfers as files in --dir: open/pwrite/close, open/pread/close, unlink.
 *
 * usage: ior_like [--dir RAWDIR] [-n TRANSFERS] [-s SIZE]... [-r REPEATS] [--probe]
 * Prints, per size, MiB/s and ops/s of each phase for both and the ratio libs3/raw (best of
 * the repeats, phases interleaved so both see the same machine load).
 */
#define _GNU_SOURCE
#include <libs3.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static S3Status last_status;
static S3ErrorDetails last_error;

static S3Status props_cb(const S3ResponseProperties *p, void *d) {
    (void) p, (void) d;
    return S3StatusOK;
}

static void complete_cb(S3Status s, const S3ErrorDetails *e, void *d) {
    (void) d;
    last_status = s;
    if (e) last_error = *e;
}

typedef struct {
    char *buf;
    long long size;
} Dh;

static int put_cb(int n, char *buf, void *d) {
    Dh *dh = d;
    long long k = dh->size > n ? n : dh->size;
    if (k == 0) return 0;
    memcpy(buf, dh->buf, k);
    dh->buf += k;
    dh->size -= k;
    return (int) k;
}

static S3Status get_cb(int n, const char *buf, void *d) {
    Dh *dh = d;
    long long k = dh->size > n ? n : dh->size;
    memcpy(dh->buf, buf, k);
    dh->buf += k;
    dh->size -= k;
    return S3StatusOK;
}

static S3ResponseHandler rh = {props_cb, complete_cb};
static S3PutObjectHandler ph = {{props_cb, complete_cb}, put_cb};
static S3GetObjectHandler gh = {{props_cb, complete_cb}, get_cb};
static S3BucketContext bctx = {"localhost", "ior-like", S3ProtocolHTTP, S3UriStylePath, "AKID", "SECRET", NULL, NULL};

typedef struct {
    int truncated;
    const char *next;
    long deleted;
} DelReq;

static S3Status list_delete_cb(int truncated, const char *next, int n, const S3ListBucketContent *c, int np,
                               const char **p, void *d) {
    DelReq *r = d;
    (void) np, (void) p;
    for (int i = 0; i < n; i++) {
        S3_delete_object(&bctx, c[i].key, NULL, 0, &rh, NULL);
        if (last_status == S3StatusOK) r->deleted++;
    }
    r->truncated = truncated;
    if (truncated) r->next = next;
    return S3StatusOK;
}

static S3ListBucketHandler lh = {{props_cb, complete_cb}, list_delete_cb};

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void die(const char *what) {
    fprintf(stderr, "ior_like: %s failed: %s (%s)\n", what, S3_get_status_name(last_status),
            last_error.message ? last_error.message : "");
    exit(2);
}

static void name_of(char *out, size_t cap, long long offset, long long len) {
    if (offset == 0) snprintf(out, cap, "file");
    else snprintf(out, cap, "file-%lld-%lld", offset, len);
}

/* phase times in seconds: write, read, cleanup */
static void run_lib(int n, long long size, char *buf, double t[3]) {
    char key[128];
    double t0 = now();
    for (int i = 0; i < n; i++) {
        name_of(key, sizeof key, (long long) i * size, size);
        Dh dh = {buf, size};
        S3_put_object(&bctx, key, size, NULL, NULL, 0, &ph, &dh);
        if (last_status != S3StatusOK) die("S3_put_object");
    }
    double t1 = now();
    for (int i = 0; i < n; i++) {
        name_of(key, sizeof key, (long long) i * size, size);
        Dh dh = {buf, size};
        S3_get_object(&bctx, key, NULL, 0, size, NULL, 0, &gh, &dh);
        if (last_status != S3StatusOK || dh.size != 0) die("S3_get_object");
    }
    double t2 = now();
    DelReq r = {0, NULL, 0};
    do {
        S3_list_bucket(&bctx, NULL, r.next, NULL, 2147483647, NULL, 0, &lh, &r);
        if (last_status != S3StatusOK) die("S3_list_bucket");
    } while (r.truncated);
    if (r.deleted != n) {
        fprintf(stderr, "ior_like: deleted %ld of %d objects\n", r.deleted, n);
        exit(2);
    }
    t[0] = t1 - t0, t[1] = t2 - t1, t[2] = now() - t2;
}

static void run_raw(const char *dir, int n, long long size, char *buf, double t[3]) {
    char path[4096], key[128];
    double t0 = now();
    for (int i = 0; i < n; i++) {
        name_of(key, sizeof key, (long long) i * size, size);
        snprintf(path, sizeof path, "%s/%s", dir, key);
        int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
        if (fd < 0 || pwrite(fd, buf, size, 0) != size || close(fd) != 0) {
            perror(path);
            exit(2);
        }
    }
    double t1 = now();
    for (int i = 0; i < n; i++) {
        name_of(key, sizeof key, (long long) i * size, size);
        snprintf(path, sizeof path, "%s/%s", dir, key);
        int fd = open(path, O_RDONLY);
        if (fd < 0 || pread(fd, buf, size, 0) != size || close(fd) != 0) {
            perror(path);
            exit(2);
        }
    }
    double t2 = now();
    DIR *d = opendir(dir);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    t[0] = t1 - t0, t[1] = t2 - t1, t[2] = now() - t2;
}

int main(int argc, char **argv) {
    const char *dir = "/tmp/ior_like_raw";
    int n = 256, reps = 1, probe = 0, nsizes = 0;
    long long sizes[16];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-r") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-s") && i + 1 < argc && nsizes < 16) sizes[nsizes++] = atoll(argv[++i]);
        else if (!strcmp(argv[i], "--probe")) probe = 1;
        else {
            fprintf(stderr, "usage: ior_like [--dir RAWDIR] [-n TRANSFERS] [-s SIZE]... [-r REPEATS] [--probe]\n");
            return 2;
        }
    }
    S3Status st = S3_initialize(NULL, S3_INIT_ALL, "localhost");
    if (probe) return st == S3StatusOK ? 0 : 1;
    if (st != S3StatusOK) {
        fprintf(stderr, "ior_like: S3_initialize: %s\n", S3_get_status_name(st));
        return 2;
    }
    if (nsizes == 0) sizes[nsizes++] = 4096, sizes[nsizes++] = 1 << 20;
    mkdir(dir, 0755);
    S3_create_bucket(S3ProtocolHTTP, "AKID", "SECRET", NULL, NULL, bctx.bucketName, NULL, S3CannedAclPrivate, NULL, NULL,
                     0, &rh, NULL);
    if (last_status != S3StatusOK && last_status != S3StatusErrorBucketAlreadyOwnedByYou) die("S3_create_bucket");

    printf("%-10s %-6s %12s %12s %12s %12s %12s %8s %8s %8s\n", "size", "n", "phase", "lib MiB/s", "raw MiB/s",
           "lib ops/s", "raw ops/s", "ratio", "", "");
    for (int s = 0; s < nsizes; s++) {
        long long size = sizes[s];
        char *buf = malloc(size);
        memset(buf, 'x', size);
        double best_lib[3] = {1e30, 1e30, 1e30}, best_raw[3] = {1e30, 1e30, 1e30}, t[3];
        for (int r = 0; r < reps; r++) {
            run_raw(dir, n, size, buf, t);
            for (int p = 0; p < 3; p++) best_raw[p] = t[p] < best_raw[p] ? t[p] : best_raw[p];
            run_lib(n, size, buf, t);
            for (int p = 0; p < 3; p++) best_lib[p] = t[p] < best_lib[p] ? t[p] : best_lib[p];
        }
        const char *names[3] = {"write", "read", "delete"};
        for (int p = 0; p < 3; p++) {
            double mib = (double) size * n / (1 << 20);
            double ratio = best_raw[p] / best_lib[p];
            printf("%-10lld %-6d %12s %12.1f %12.1f %12.0f %12.0f %8.2f\n", size, n, names[p],
                   p < 2 ? mib / best_lib[p] : 0.0, p < 2 ? mib / best_raw[p] : 0.0, n / best_lib[p],
                   n / best_raw[p], ratio);
        }
        free(buf);
    }
    S3_delete_bucket(S3ProtocolHTTP, S3UriStylePath, "AKID", "SECRET", NULL, NULL, bctx.bucketName, NULL, NULL, 0, &rh,
                     NULL);
    if (last_status != S3StatusOK) die("S3_delete_bucket");
    rmdir(dir);
    S3_deinitialize();
    return 0;
}
