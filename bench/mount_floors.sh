#!/usr/bin/env bash
# What the machine allows a FUSE mount of an S3 gateway, and where `s3hpc mount` stands, in one
# run (docs/MOUNT.md, "Performance"):
#
#   1. the FUSE floor: examples/nullfs.rs (the mount's FUSE options and kernel settings, reads
#      answered from a static zeroed buffer, writes discarded) read with `cat` and `dd bs=1M`,
#      written with `dd bs=1M`;
#   2. the gateway alone: `s3hpc bench sweep` GET and PUT of 8 MiB objects, 8 in flight (the
#      prefetcher's largest request and window / the writer's part size), over HTTP and over
#      the binary protocol's unix socket;
#   3. `s3hpc mount` (HTTP and unix socket) and s3fs: write 1 GiB (`dd bs=1M`), cold read 1 GiB
#      (`cat`), each on a fresh mount, with the CPU seconds (utime+stime, /proc/PID/stat) of the
#      gateway, the mount and the program.
#
#   cargo build --release -p s3hpc && cargo build --release -p s3hpc-mount --example nullfs
#   bench/mount_floors.sh [S3HPC_BIN] [NULLFS_BIN] [WORKDIR]
#
# Needs root (or FUSE for the user), fuse3, s3fs. Everything started is stopped on exit.
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
BIN=$(readlink -f "${1:-$REPO/target/release/s3hpc}")
NULLFS=$(readlink -f "${2:-$REPO/target/release/examples/nullfs}")
WORK=${3:-/tmp/s3hpc-mount-floors}
SIZE_MB=${SIZE_MB:-1024}
CLIENTS=${CLIENTS:-"s3hpc-http s3hpc-unix s3fs"}
MOUNT_ARGS=${MOUNT_ARGS:-}
AK=benchAccessKey01
SK=benchSecretKey01
PORT=${PORT:-9393}
B=bench
HZ=$(getconf CLK_TCK)

cleanup() {
  for m in "$WORK"/mnt-*; do
    [ -d "$m" ] && mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; }
  done
  [ -n "${GW:-}" ] && kill "$GW" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

ticks() { awk '{print $14+$15}' "/proc/$1/stat"; }
secs() { python3 -c "print(f'{($2-$1)/$HZ:.2f}')"; }
# timed CMD...: runs CMD, sets T (wall seconds) and C (its utime+stime)
timed() {
  /usr/bin/time -f "%e %U %S" -o "$WORK/time.out" "$@"
  read -r T u s < "$WORK/time.out"
  C=$(python3 -c "print(f'{$u+$s:.2f}')")
}
rate() { python3 -c "print(f'{$SIZE_MB/$1:.0f}')"; }

rm -rf "$WORK" && mkdir -p "$WORK/root/$B"
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), kernel $(uname -r)"
echo "# s3hpc $(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo '?'), mount args: ${MOUNT_ARGS:-none}"
printf "%-34s %9s %7s %8s %8s %8s\n" what seconds MiB/s cpu_gw cpu_fs cpu_app

# 1. the FUSE floor
d=$WORK/mnt-null
mkdir -p "$d"
"$NULLFS" "$d" $((SIZE_MB / 1024 > 0 ? SIZE_MB / 1024 : 1)) > "$WORK/nullfs.log" 2>&1 &
NPID=$!
for _ in $(seq 100); do mountpoint -q "$d" && break; sleep 0.1; done
for what in "cat" "dd-read" "dd-write"; do
  n0=$(ticks $NPID)
  case $what in
    cat) timed sh -c "cat '$d/zero' > /dev/null" ;;
    dd-read) timed dd if="$d/zero" of=/dev/null bs=1M count="$SIZE_MB" status=none ;;
    dd-write) timed dd if=/dev/zero of="$d/sink" bs=1M count="$SIZE_MB" status=none ;;
  esac
  printf "%-34s %9s %7s %8s %8s %8s\n" "null FUSE: $what" "$T" "$(rate "$T")" - "$(secs "$n0" "$(ticks $NPID)")" "$C"
done
fusermount3 -u "$d"; wait $NPID || true

# 2. the gateway alone
"$BIN" serve "$WORK/root" --listen 127.0.0.1:$PORT --durability none --access-key $AK --secret-key $SK \
  --binary "unix://$WORK/gw.sock" > "$WORK/serve.log" 2>&1 &
GW=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
EP=http://127.0.0.1:$PORT
for target in "$EP" "unix://$WORK/gw.sock"; do
  tr=http; [ "${target#unix}" != "$target" ] && tr=unix
  g0=$(ticks $GW)
  AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK "$BIN" bench sweep -t "$target" --sizes 8MiB -c 8 --count 128 \
    --no-head -q --json "$WORK/sweep-$tr.json" > "$WORK/sweep-$tr.out" 2>&1
  python3 - "$WORK/sweep-$tr.json" "$(secs "$g0" "$(ticks $GW)")" "$tr" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
for p in r["phases"]:
    if p["op"] in ("get", "put"):
        what = f"gateway alone ({sys.argv[3]}): {p['op']} 8MiB x8"
        print(f"{what:<34} {p['seconds']:9.2f} {p['mib_per_sec']:7.0f} {'-':>8} {'-':>8} {'-':>8}")
print(f"{'  (gateway CPU, put+get+delete)':<34} {'-':>9} {'-':>7} {sys.argv[2]:>8} {'-':>8} {'-':>8}")
PY
done

# 3. the mounts
dd if=/dev/urandom of="$WORK/root/$B/read.bin" bs=1M count="$SIZE_MB" status=none
echo "$AK:$SK" > "$WORK/passwd" && chmod 600 "$WORK/passwd"
mount_it() {
  local kind=$1 dir=$2
  mkdir -p "$dir"
  MPID=""
  case $kind in
    s3hpc-http|s3hpc-unix)
      local ep=$EP
      [ "$kind" = s3hpc-unix ] && ep="unix://$WORK/gw.sock"
      # shellcheck disable=SC2086
      S3HPC_ACCESS_KEY=$AK S3HPC_SECRET_KEY=$SK "$BIN" mount $B "$dir" --endpoint "$ep" --allow-delete \
        --allow-overwrite --foreground $MOUNT_ARGS > "$WORK/$kind.log" 2>&1 &
      MPID=$!
      ;;
    s3fs)
      s3fs $B "$dir" -o url=$EP -o use_path_request_style -o passwd_file="$WORK/passwd"
      ;;
  esac
  for _ in $(seq 100); do mountpoint -q "$dir" && break; sleep 0.1; done
  if [ -z "$MPID" ]; then MPID=$(pgrep -n -x s3fs); fi
}
unmount_it() {
  fusermount3 -u "$1" 2>/dev/null || umount -l "$1"
  wait "$MPID" 2>/dev/null || true
  sleep 0.2
}
for kind in $CLIENTS; do
  d=$WORK/mnt-$kind
  for what in write read; do
    mount_it "$kind" "$d"
    g0=$(ticks $GW); m0=$(ticks "$MPID")
    if [ $what = write ]; then
      timed dd if=/dev/zero of="$d/w-$kind.bin" bs=1M count="$SIZE_MB" status=none
      [ "$(stat -c %s "$WORK/root/$B/w-$kind.bin")" = $((SIZE_MB << 20)) ] || T="$T(incomplete)"
    else
      timed sh -c "cat '$d/read.bin' > /dev/null"
    fi
    g1=$(ticks $GW); m1=$(ticks "$MPID")
    printf "%-34s %9s %7s %8s %8s %8s\n" "$kind: $what 1GiB" "$T" "$(rate "${T%%(*}")" "$(secs "$g0" "$g1")" \
      "$(secs "$m0" "$m1")" "$C"
    unmount_it "$d"
  done
done
