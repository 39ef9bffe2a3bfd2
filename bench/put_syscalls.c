/* The system calls of the posix store's 4 KiB PUT, timed one by one in a bare C loop: what a PUT
 * that never shows a partial object costs the kernel before any s3hpc code runs.
 *
 *   cc -O2 -o /tmp/put_syscalls bench/put_syscalls.c && /tmp/put_syscalls /dev/shm/put-syscalls [PUTS]
 *
 * The directory given (created if missing; it must not hold anything else) gets the layout the
 * store uses: BUCKET/.s3hpc/tmp for temp files and BUCKET/o4096/ for the objects. Each PUT:
 * openat2 of the key's directory beneath the root (the store's path check), openat2 creating the
 * temp file beneath the root, write 4 KiB, fstat (inode, size, mtime for the record), fsetxattr
 * (the record), renameat over an existing object (after the first 1024), fstat and fgetxattr
 * (the store caches the record it published), close both. Prints microseconds per call, averaged.
 * PERFORMANCE.md ("Fourteenth round") quotes it. The tree is removed at the end. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void die(const char *what) {
    fprintf(stderr, "put_syscalls: %s: %s\n", what, strerror(errno));
    exit(1);
}

static void mkdir_at(int dfd, const char *name) {
    if (mkdirat(dfd, name, 0755) != 0 && errno != EEXIST) die(name);
}

static int openat2_beneath(int root, const char *path, int flags, int mode) {
    struct open_how how = {.flags = (unsigned long long)flags, .mode = (unsigned long long)mode,
                           .resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS};
    return (int)syscall(SYS_openat2, root, path, &how, sizeof how);
}

enum { KEYS = 1024, STEPS = 10 };

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: put_syscalls DIR [PUTS]\n");
        return 2;
    }
    int puts_n = argc > 2 ? atoi(argv[2]) : 20000;
    if (puts_n < 1) puts_n = 1;
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) die(argv[1]);
    int root = open(argv[1], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) die(argv[1]);
    mkdir_at(root, "b");
    mkdir_at(root, "b/.s3hpc");
    mkdir_at(root, "b/.s3hpc/tmp");
    mkdir_at(root, "b/o4096");

    char body[4096];
    memset(body, 0x5a, sizeof body);
    char rec[96];
    memset(rec, 7, sizeof rec);
    double t[STEPS] = {0};
    unsigned long long seq = (unsigned long long)getpid() << 32;
    for (int i = 0; i < puts_n; i++) {
        char tmp[64], key[16], back[256];
        struct stat st;
        snprintf(tmp, sizeof tmp, "b/.s3hpc/tmp/t%016llx", seq++);
        snprintf(key, sizeof key, "%d", i % KEYS);
        double a = now_ns(), b;
        int dir = openat2_beneath(root, "b/o4096", O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
        if (dir < 0) die("openat2 directory");
        b = now_ns(); t[0] += b - a;
        int fd = openat2_beneath(root, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) die("openat2 create");
        a = now_ns(); t[1] += a - b;
        if (write(fd, body, sizeof body) != (ssize_t)sizeof body) die("write");
        b = now_ns(); t[2] += b - a;
        if (fstat(fd, &st) != 0) die("fstat");
        a = now_ns(); t[3] += a - b;
        if (fsetxattr(fd, "user.s3hpc", rec, sizeof rec, 0) != 0) die("fsetxattr");
        b = now_ns(); t[4] += b - a;
        if (renameat(root, tmp, dir, key) != 0) die("renameat");
        a = now_ns(); t[5] += a - b;
        if (fstat(fd, &st) != 0) die("fstat");
        b = now_ns(); t[6] += b - a;
        if (fgetxattr(fd, "user.s3hpc", back, sizeof back) < 0) die("fgetxattr");
        a = now_ns(); t[7] += a - b;
        close(fd);
        b = now_ns(); t[8] += b - a;
        close(dir);
        a = now_ns(); t[9] += a - b;
    }
    static const char *names[STEPS] = {"openat2 key directory", "openat2 create temp", "write 4 KiB",
                                       "fstat", "fsetxattr record", "renameat into place",
                                       "fstat after rename", "fgetxattr read-back", "close temp",
                                       "close directory"};
    double total = 0;
    for (int s = 0; s < STEPS; s++) {
        printf("%-24s %6.2f us\n", names[s], t[s] / puts_n / 1000);
        total += t[s];
    }
    printf("%-24s %6.2f us (%d PUTs over %d keys)\n", "total", total / puts_n / 1000, puts_n, KEYS);

    for (int k = 0; k < KEYS && k < puts_n; k++) {
        char key[32];
        snprintf(key, sizeof key, "b/o4096/%d", k);
        unlinkat(root, key, 0);
    }
    unlinkat(root, "b/o4096", AT_REMOVEDIR);
    unlinkat(root, "b/.s3hpc/tmp", AT_REMOVEDIR);
    unlinkat(root, "b/.s3hpc", AT_REMOVEDIR);
    unlinkat(root, "b", AT_REMOVEDIR);
    close(root);
    rmdir(argv[1]);
    return 0;
}
