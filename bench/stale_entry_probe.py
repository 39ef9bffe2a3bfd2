#!/usr/bin/env python3
"""Which call makes a node's cached directory entry current again on a file system whose clients
cache entries (docs/DEPLOY.md, "Multi-node test bed"; issue 36).

    scripts/gluster-bed up /tmp/bed
    python3 bench/stale_entry_probe.py /tmp/bed/node1 /tmp/bed/node2 [ROUNDS]

Per round and per method: node 1 creates `key` (A); node 2 reads it (caching the entry); node 1
links A under another name (so it lives on, as a retired version does) and renames B over `key`;
node 2 then tries the method and looks again. Prints, per method, how many rounds node 2 saw
B afterwards. Methods: none, statx with AT_STATX_FORCE_SYNC (os.stat cannot ask for it: ctypes),
mkdir of the name (LOOKUP_EXCL), renameat2(name, name, RENAME_NOREPLACE) (LOOKUP_RENAME_TARGET),
reading the directory (READDIRPLUS), and sleeping past the 1 s FUSE timeouts.
"""
import ctypes
import os
import sys
import time
import uuid

libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, AT_STATX_FORCE_SYNC, AT_SYMLINK_NOFOLLOW, RENAME_NOREPLACE = -100, 0x2000, 0x100, 1


def statx_sync(path):
    buf = ctypes.create_string_buffer(256)
    libc.statx(AT_FDCWD, path.encode(), AT_STATX_FORCE_SYNC | AT_SYMLINK_NOFOLLOW, 0x7FF, buf)


def rename_self(d):
    fd = os.open(d, os.O_PATH | os.O_DIRECTORY)
    try:
        libc.renameat2(fd, b"key", fd, b"key", RENAME_NOREPLACE)
    finally:
        os.close(fd)


def mkdir_name(d):
    try:
        os.mkdir(f"{d}/key")
    except OSError:
        pass


METHODS = {
    "none": lambda d: None,
    "statx FORCE_SYNC": lambda d: statx_sync(f"{d}/key"),
    "mkdir": mkdir_name,
    "renameat2 NOREPLACE": rename_self,
    "readdir": lambda d: [e.name for e in os.scandir(d)],
    "sleep 1.1 s": lambda d: time.sleep(1.1),
}


def main():
    n1, n2 = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    base = f"probe-{uuid.uuid4().hex[:8]}"
    for name, method in METHODS.items():
        fresh = 0
        for i in range(rounds):
            rel = f"{base}/{name.replace(' ', '_')}{i}"
            d1, d2 = f"{n1}/{rel}", f"{n2}/{rel}"
            os.makedirs(d1)
            with open(f"{d1}/key", "w") as f:
                f.write("A")
            time.sleep(0.1)
            os.stat(f"{d2}/key")
            with open(f"{d2}/key") as f:
                f.read()
            os.link(f"{d1}/key", f"{d1}/keep")
            with open(f"{d1}/tmp", "w") as f:
                f.write("B")
            os.rename(f"{d1}/tmp", f"{d1}/key")
            method(d2)
            with open(f"{d2}/key") as f:
                fresh += f.read() == "B"
        print(f"{name:22} node 2 current in {fresh}/{rounds}")


if __name__ == "__main__":
    main()
