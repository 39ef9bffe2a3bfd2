// The floor under staging a PUT body as its user, two ways (issue: hostile local users):
//   staged:  create a temp file in a staging directory (O_CREAT|O_EXCL), write, close, then one
//            renameat into the key's directory (what s3hpc does: ROOT/.s3hpc/staging/tmp/u<uid>);
//   tmpfile: O_TMPFILE in the key's directory, write, linkat to a temp name there (through
//            /proc/self/fd, AT_SYMLINK_FOLLOW), close, then renameat over the key (O_TMPFILE cannot
//            replace an existing name in one step, so a temp name is needed anyway).
// Each writes N objects of SIZE bytes, replacing a set of 64 keys in turn.
//
//   cc -O2 -o /tmp/staging_floor bench/staging_floor.c && /tmp/staging_floor DIR [N] [SIZE]
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [N] [SIZE]\n", argv[0]);
        return 2;
    }
    int n = argc > 2 ? atoi(argv[2]) : 20000;
    size_t size = argc > 3 ? (size_t)atol(argv[3]) : 4096;
    char *buf = calloc(1, size);
    char p[4096];
    snprintf(p, sizeof p, "%s/staging", argv[1]);
    mkdir(argv[1], 0700);
    mkdir(p, 0700);
    snprintf(p, sizeof p, "%s/bucket", argv[1]);
    mkdir(p, 0700);
    int key = open(p, O_RDONLY | O_DIRECTORY);
    snprintf(p, sizeof p, "%s/staging", argv[1]);
    int stage = open(p, O_RDONLY | O_DIRECTORY);
    if (stage < 0 || key < 0) {
        perror("open dirs");
        return 1;
    }
    for (int round = 0; round < 3; round++) {
        double t = now();
        for (int i = 0; i < n; i++) {
            char name[64], k[32];
            snprintf(name, sizeof name, "host.1.%d.%d", round, i);
            snprintf(k, sizeof k, "k%d", i % 64);
            int fd = openat(stage, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, buf, size) != (ssize_t)size) {
                perror("staged");
                return 1;
            }
            close(fd);
            if (renameat(stage, name, key, k) != 0) {
                perror("rename");
                return 1;
            }
        }
        double staged = (now() - t) / n * 1e6;
        t = now();
        for (int i = 0; i < n; i++) {
            char name[64], k[32], proc[64];
            snprintf(name, sizeof name, ".tmp.%d.%d", round, i);
            snprintf(k, sizeof k, "k%d", i % 64);
            int fd = openat(key, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
            if (fd < 0 || write(fd, buf, size) != (ssize_t)size) {
                perror("O_TMPFILE");
                return 1;
            }
            snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
            if (linkat(AT_FDCWD, proc, key, name, AT_SYMLINK_FOLLOW) != 0) {
                perror("linkat");
                return 1;
            }
            close(fd);
            if (renameat(key, name, key, k) != 0) {
                perror("rename");
                return 1;
            }
        }
        double tmpfile = (now() - t) / n * 1e6;
        printf("round %d: %d objects of %zu bytes: staged %.2f us, O_TMPFILE %.2f us, ratio %.2f\n", round, n, size,
               staged, tmpfile, tmpfile / staged);
    }
    return 0;
}
