#!/usr/bin/env bash
# Rename of a directory holding a 1 GiB file through `s3hpc mount` on an s3hpc gateway (one
# RenameObject of the prefix, one rename(2) on the gateway's root), over HTTP and over the
# binary protocol's unix socket: REPS renames each way, each timed around os.rename alone.
#
#   bench/mount_dir_rename.sh [S3HPC_BIN] [WORKDIR]
#
# Needs FUSE (fuse3) and python3.
set -euo pipefail
BIN=${1:-$(dirname "$0")/../target/release/s3hpc}
BIN=$(readlink -f "$BIN")
WORK=${2:-/tmp/s3hpc-dirrename-bench}
REPS=${REPS:-20}
AK=benchAccessKey01
SK=benchSecretKey01
PORT=${PORT:-9392}
B=bench

cleanup() {
  for m in "$WORK"/mnt-*; do
    [ -d "$m" ] && mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; }
  done
  [ -n "${GW:-}" ] && kill "$GW" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

rm -rf "$WORK" && mkdir -p "$WORK/root/$B/d0/sub"
"$BIN" serve "$WORK/root" --listen 127.0.0.1:$PORT --durability none --access-key $AK --secret-key $SK \
  --binary "unix://$WORK/gw.sock" > "$WORK/serve.log" 2>&1 &
GW=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
# The 1 GiB file, written on the gateway's root (POSIX), and a few small ones.
dd if=/dev/zero of="$WORK/root/$B/d0/big" bs=1M count=1024 status=none
for i in $(seq 10); do echo "$i" > "$WORK/root/$B/d0/sub/f$i"; done

for ep in http://127.0.0.1:$PORT unix://$WORK/gw.sock; do
  name=$(echo "$ep" | cut -d: -f1)
  M="$WORK/mnt-$name"
  mkdir -p "$M"
  S3HPC_ACCESS_KEY=$AK S3HPC_SECRET_KEY=$SK "$BIN" mount $B "$M" --endpoint "$ep" --log-file "$WORK/mount-$name.log"
  python3 - "$M" "$WORK/root/$B" "$REPS" "$name" <<'PY'
import os, statistics, sys, time
m, root, reps, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
cur = next(d for d in os.listdir(m) if d.startswith("d"))
ino = os.stat(os.path.join(root, cur)).st_ino
os.listdir(os.path.join(m, cur))  # looked up, as mv would have it
times = []
for i in range(reps):
    new = f"d{name}{i}"
    t = time.perf_counter()
    os.rename(os.path.join(m, cur), os.path.join(m, new))
    times.append((time.perf_counter() - t) * 1000)
    cur = new
    assert os.stat(os.path.join(root, cur)).st_ino == ino, "copied"
    assert os.stat(os.path.join(m, cur, "big")).st_size == 1 << 30
times.sort()
print(f"{name}: rename of a directory holding 1 GiB, {reps} runs: median {statistics.median(times):.2f} ms, "
      f"min {times[0]:.2f} ms, max {times[-1]:.2f} ms")
PY
  fusermount3 -u "$M"
done
