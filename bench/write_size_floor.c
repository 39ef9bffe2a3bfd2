// The floor under the gateway's write of upload parts that `s3hpc mount` passes through the binary
// protocol's upload slots (docs/MOUNT.md, "The unix socket's write, fixed"), in bare C: a child
// process (the mount) fills 16 memfd slots of 8 MiB with 1 MiB memcpys and hands them over a
// pipe; NW writer threads of the parent (the gateway) each take a slot, write it into a new file
// of DIR in calls of PIECE_KIB (one call of 8 MiB was the gateway's way before the fix, 1 MiB
// after), start its write-back (sync_file_range, as the gateway does after a part), and give the
// slot back; a thread per part reads the slot meanwhile (the MD5 service's read). Prints the
// parent's CPU-seconds (writers and readers) for SIZE_MIB written.
//   mode slot: write from the parent's read-only mapping of the slot (the gateway's)
//   mode own:  write from a private buffer of the writer (anonymous memory), same sizes
// Files stay until the end (the gateway keeps parts until the upload completes).
//
//   cc -O2 -pthread -o /tmp/write_size_floor bench/write_size_floor.c
//   for p in 1024 8192 1024 8192; do /tmp/write_size_floor slot /tmp/wsf 1024 16 $p; done
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PART (8 << 20)
#define NSLOT 16

static unsigned char *ro[NSLOT], *rw[NSLOT];
static int req[2], ack[2], nparts, taken, own_mode;
static size_t piece;
static const char *dir;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}

static void *reader(void *a) {
    const unsigned char *p = a;
    unsigned long s = 0;
    for (size_t i = 0; i < PART; i += 8) s += *(const unsigned long *)(p + i);
    sink += s;
    return NULL;
}

static void *writer(void *unused) {
    (void)unused;
    unsigned char *own = aligned_alloc(4096, PART);
    memset(own, 3, PART);
    for (;;) {
        int s, k;
        pthread_mutex_lock(&mu);
        if (taken >= nparts || read(req[0], &s, sizeof s) != sizeof s) {
            pthread_mutex_unlock(&mu);
            break;
        }
        k = taken++;
        pthread_mutex_unlock(&mu);
        char path[4096];
        snprintf(path, sizeof path, "%s/part.%d", dir, k);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) { perror(path); exit(1); }
        pthread_t th;
        pthread_create(&th, NULL, reader, ro[s]);
        const unsigned char *src = own_mode ? own : ro[s];
        for (size_t o = 0; o < PART; o += piece)
            if (write(fd, src + o, piece) != (ssize_t)piece) { perror("write"); exit(1); }
        pthread_join(th, NULL);
        sync_file_range(fd, 0, 0, SYNC_FILE_RANGE_WRITE);
        close(fd);
        if (write(ack[1], &s, sizeof s) != sizeof s) exit(1);
    }
    free(own);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 6 || (strcmp(argv[1], "slot") && strcmp(argv[1], "own"))) {
        fprintf(stderr, "usage: %s slot|own DIR SIZE_MIB NW PIECE_KIB\n", argv[0]);
        return 2;
    }
    own_mode = !strcmp(argv[1], "own");
    dir = argv[2];
    nparts = atoi(argv[3]) / 8;
    int nw = atoi(argv[4]);
    piece = (size_t)atoi(argv[5]) << 10;
    if (nw < 1 || nw > 64 || piece == 0 || PART % piece) { fprintf(stderr, "bad NW or PIECE_KIB\n"); return 2; }
    mkdir(dir, 0700);
    for (int i = 0; i < NSLOT; i++) {
        int fd = memfd_create("slot", MFD_CLOEXEC);
        if (fd < 0 || ftruncate(fd, PART)) { perror("memfd"); return 1; }
        rw[i] = mmap(NULL, PART, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
        ro[i] = mmap(NULL, PART, PROT_READ, MAP_SHARED, fd, 0);
        if (rw[i] == MAP_FAILED || ro[i] == MAP_FAILED) { perror("mmap"); return 1; }
    }
    if (pipe(req) || pipe(ack)) { perror("pipe"); return 1; }
    pid_t child = fork();
    if (child == 0) {
        unsigned char *chunk = malloc(1 << 20);
        memset(chunk, 7, 1 << 20);
        int freeq[NSLOT], nf = NSLOT;
        for (int i = 0; i < NSLOT; i++) freeq[i] = i;
        for (int p = 0; p < nparts; p++) {
            if (nf == 0 && read(ack[0], &freeq[nf++], sizeof(int)) != sizeof(int)) _exit(1);
            int s = freeq[--nf];
            for (size_t o = 0; o < PART; o += 1 << 20) {
                chunk[0] = (unsigned char)p;
                memcpy(rw[s] + o, chunk, 1 << 20);
            }
            if (write(req[1], &s, sizeof s) != sizeof s) _exit(1);
        }
        _exit(0);
    }
    double t0 = now(), c0 = cpu();
    pthread_t w[64];
    for (int i = 0; i < nw; i++) pthread_create(&w[i], NULL, writer, NULL);
    for (int i = 0; i < nw; i++) pthread_join(w[i], NULL);
    double t1 = now(), c1 = cpu();
    printf("%s writers %d pieces %zu KiB %d MiB: wall %.2f s, writers' process %.2f CPU-s\n", argv[1], nw,
           piece >> 10, nparts * 8, t1 - t0, c1 - c0);
    waitpid(child, NULL, 0);
    for (int k = 0; k < nparts; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/part.%d", dir, k);
        unlink(path);
    }
    return 0;
}
