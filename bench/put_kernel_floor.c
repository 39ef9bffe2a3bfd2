/* The kernel's share of a PUT, measured with no S3 code at all: a bare server that receives each
 * body from a TCP socket on 127.0.0.1, writes it into a new temp file and renames that over one
 * of KEYS existing objects (as s3hpc publishes, so the replaced object's pages are freed), then
 * answers one byte. Clients are separate processes (one per connection) sending back-to-back
 * bodies. Prints the server's CPU (utime + stime from getrusage) per MiB received: the floor a
 * gateway cannot go under without hashing anything, for comparison with `bench/put_cpu.py`.
 *
 *   cc -O2 -o /tmp/put_kernel_floor bench/put_kernel_floor.c
 *   /tmp/put_kernel_floor /dev/shm/pkf [SIZE_KIB=1024] [CONNS=8] [SECONDS=5] [KEYS=64]
 *
 * The directory given is created (it must not hold anything else) and removed at the end. The
 * server handles its connections with one thread each, like a gateway's workers; each receive
 * is a 256 KiB recv() into a buffer, then a write() of what came, so every byte is copied out
 * of the socket once and into the page cache once. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *dir;
static size_t body_size;
static int keys;
static atomic_long bytes_in, puts_done;

static void die(const char *what) {
    perror(what);
    exit(1);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double cpu_s(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec + u.ru_stime.tv_usec / 1e6;
}

/* One connection: bodies of body_size bytes, each published as a file, one byte answered. */
static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    size_t bufsz = 256 << 10;
    char *buf = malloc(bufsz);
    long n = 0;
    char tmp[4096], dst[4096];
    for (;;) {
        snprintf(tmp, sizeof tmp, "%s/tmp.%d.%ld", dir, fd, n);
        snprintf(dst, sizeof dst, "%s/obj.%ld", dir, (long)((fd * 7919 + n) % keys));
        int out = -1;
        size_t left = body_size;
        while (left > 0) {
            ssize_t r = recv(fd, buf, left < bufsz ? left : bufsz, 0);
            if (r <= 0) {
                if (out >= 0) {
                    close(out);
                    unlink(tmp);
                }
                free(buf);
                close(fd);
                return NULL;
            }
            if (out < 0 && (out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) die("open");
            if (write(out, buf, r) != r) die("write");
            left -= r;
        }
        close(out);
        if (rename(tmp, dst) != 0) die("rename");
        atomic_fetch_add(&bytes_in, body_size);
        atomic_fetch_add(&puts_done, 1);
        if (send(fd, "k", 1, MSG_NOSIGNAL) != 1) break;
        n++;
    }
    free(buf);
    close(fd);
    return NULL;
}

static void client(int port, double until) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char *body = malloc(body_size);
    memset(body, 'x', body_size);
    while (now_s() < until) {
        size_t off = 0;
        while (off < body_size) {
            ssize_t w = send(fd, body + off, body_size - off, MSG_NOSIGNAL);
            if (w <= 0) exit(0);
            off += w;
        }
        char k;
        if (recv(fd, &k, 1, 0) != 1) exit(0);
    }
    close(fd);
    exit(0);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [SIZE_KIB] [CONNS] [SECONDS] [KEYS]\n", argv[0]);
        return 2;
    }
    dir = argv[1];
    body_size = (size_t)(argc > 2 ? atol(argv[2]) : 1024) << 10;
    int conns = argc > 3 ? atoi(argv[3]) : 8;
    double secs = argc > 4 ? atof(argv[4]) : 5;
    keys = argc > 5 ? atoi(argv[5]) : 64;
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) die("mkdir");

    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(l, (struct sockaddr *)&a, sizeof a) != 0 || listen(l, 128) != 0) die("listen");
    socklen_t al = sizeof a;
    getsockname(l, (struct sockaddr *)&a, &al);
    int port = ntohs(a.sin_port);

    /* Warm up: the objects exist before timing (every timed PUT replaces one). */
    char *zero = calloc(1, body_size);
    for (int k = 0; k < keys; k++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/obj.%d", dir, k);
        int f = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (f < 0 || write(f, zero, body_size) != (ssize_t)body_size) die("prefill");
        close(f);
    }
    free(zero);

    double t0 = now_s(), c0 = cpu_s();
    double until = t0 + secs;
    for (int i = 0; i < conns; i++)
        if (fork() == 0) client(port, until);
    for (int i = 0; i < conns; i++) {
        int fd = accept(l, NULL, NULL);
        if (fd < 0) die("accept");
        pthread_t t;
        pthread_create(&t, NULL, serve, (void *)(intptr_t)fd);
        pthread_detach(t);
    }
    while (wait(NULL) > 0) {
    }
    usleep(100 * 1000);
    double t1 = now_s(), c1 = cpu_s();
    double mib = atomic_load(&bytes_in) / 1048576.0;
    printf("size %zu KiB, %d connections, %.1f s: %ld PUTs, %.0f MiB/s, server CPU %.3f ms/MiB\n",
           body_size >> 10, conns, t1 - t0, atomic_load(&puts_done), mib / (t1 - t0), (c1 - c0) * 1000 / mib);

    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    return 0;
}
