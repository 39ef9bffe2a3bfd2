#!/usr/bin/env bash
# s3hpc mount (over HTTP and over the binary protocol's unix socket) against s3fs (and rclone
# mount when it works) on the same s3hpc gateway, durability none: write 1 GiB, cold read 1 GiB,
# `ls -l` of 5,000 files, 500 small creates, and the mount's peak RSS during a 10 GiB read.
#
#   bench/mount_vs_s3fs.sh [S3HPC_BIN] [WORKDIR]
#
# Every mount is fresh before each read and listing, so the kernel page cache of the mount is
# cold; the gateway's files stay in the server's page cache (the same for every client).
# Needs root (or FUSE for the user), s3fs, fuse3; rclone optional.
set -euo pipefail
BIN=${1:-$(dirname "$0")/../target/release/s3hpc}
BIN=$(readlink -f "$BIN")
WORK=${2:-/tmp/s3hpc-mount-bench}
SIZE_MB=${SIZE_MB:-1024}
NLS=${NLS:-5000}
NSMALL=${NSMALL:-500}
BIG_GB=${BIG_GB:-10}
AK=benchAccessKey01
SK=benchSecretKey01
PORT=${PORT:-9391}
B=bench

cleanup() {
  for m in "$WORK"/mnt-*; do
    [ -d "$m" ] && mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; }
  done
  [ -n "${GW:-}" ] && kill "$GW" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

rm -rf "$WORK" && mkdir -p "$WORK/root/$B"
"$BIN" serve "$WORK/root" --listen 127.0.0.1:$PORT --durability none --access-key $AK --secret-key $SK \
  --binary "unix://$WORK/gw.sock" > "$WORK/serve.log" 2>&1 &
GW=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
EP=http://127.0.0.1:$PORT

# Data written through POSIX into the gateway's root: a file to read, a directory to list, a
# sparse file for the long read.
dd if=/dev/urandom of="$WORK/root/$B/read.bin" bs=1M count="$SIZE_MB" status=none
mkdir -p "$WORK/root/$B/ls"
for i in $(seq "$NLS"); do echo "$i" > "$WORK/root/$B/ls/f$i"; done
truncate -s "${BIG_GB}G" "$WORK/root/$B/big.bin"
echo "$AK:$SK" > "$WORK/passwd" && chmod 600 "$WORK/passwd"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2-$1:.2f}')"; }

# mount KIND DIR: mounts and sets MPID (the process serving the mount, when known).
mount_it() {
  local kind=$1 dir=$2
  mkdir -p "$dir"
  MPID=""
  case $kind in
    s3hpc-http|s3hpc-unix)
      local ep=$EP
      [ "$kind" = s3hpc-unix ] && ep="unix://$WORK/gw.sock"
      S3HPC_ACCESS_KEY=$AK S3HPC_SECRET_KEY=$SK "$BIN" mount $B "$dir" --endpoint "$ep" --allow-delete \
        --foreground > "$WORK/$kind.log" 2>&1 &
      MPID=$!
      ;;
    s3fs)
      s3fs $B "$dir" -o url=$EP -o use_path_request_style -o passwd_file="$WORK/passwd" -o max_stat_cache_size=100000
      ;;
    rclone)
      env -u AWS_CA_BUNDLE RCLONE_CONFIG_GW_TYPE=s3 RCLONE_CONFIG_GW_PROVIDER=Other RCLONE_CONFIG_GW_ENDPOINT=$EP \
      RCLONE_CONFIG_GW_ACCESS_KEY_ID=$AK RCLONE_CONFIG_GW_SECRET_ACCESS_KEY=$SK \
        rclone mount gw:$B "$dir" --vfs-cache-mode writes > "$WORK/rclone.log" 2>&1 &
      MPID=$!
      ;;
  esac
  for _ in $(seq 100); do mountpoint -q "$dir" && return 0; sleep 0.1; done
  echo "$kind: mount failed" >&2
  return 1
}

unmount_it() {
  local dir=$1
  fusermount3 -u "$dir" 2>/dev/null || umount -l "$dir"
  [ -n "$MPID" ] && wait "$MPID" 2>/dev/null || true
  sleep 0.2
}

printf "%-12s %12s %12s %12s %12s %12s\n" client "write_1GiB_s" "read_1GiB_s" "ls_l_${NLS}_s" "creates_${NSMALL}_s" "rss_10GiB_MiB"
kinds=(s3hpc-http s3hpc-unix s3fs)
command -v rclone > /dev/null && kinds+=(rclone)
for kind in "${kinds[@]}"; do
  d=$WORK/mnt-$kind
  # write
  mount_it "$kind" "$d" || { printf "%-12s %s\n" "$kind" "mount failed"; continue; }
  t0=$(now); dd if=/dev/zero of="$d/w-$kind.bin" bs=1M count="$SIZE_MB" status=none; t1=$(now)
  w=$(elapsed "$t0" "$t1")
  [ "$(stat -c %s "$WORK/root/$B/w-$kind.bin")" = $((SIZE_MB << 20)) ] || w="$w(incomplete)"
  unmount_it "$d"
  # cold read
  mount_it "$kind" "$d"
  t0=$(now); cat "$d/read.bin" > /dev/null; t1=$(now)
  r=$(elapsed "$t0" "$t1")
  unmount_it "$d"
  # ls -l
  mount_it "$kind" "$d"
  t0=$(now); n=$(ls -l "$d/ls" | wc -l); t1=$(now)
  l=$(elapsed "$t0" "$t1")
  [ "$n" -gt "$NLS" ] || l="$l(saw $n)"
  # small creates
  mkdir -p "$d/small-$kind"
  t0=$(now); for i in $(seq "$NSMALL"); do echo "$i" > "$d/small-$kind/f$i"; done; t1=$(now)
  c=$(elapsed "$t0" "$t1")
  unmount_it "$d"
  # peak RSS during a long sequential read (processes we started only)
  rss=n/a
  if [ "$kind" != s3fs ]; then
    mount_it "$kind" "$d"
    cat "$d/big.bin" > /dev/null
    rss=$(awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$MPID/status")
    unmount_it "$d"
  fi
  printf "%-12s %12s %12s %12s %12s %12s\n" "$kind" "$w" "$r" "$l" "$c" "$rss"
done
