#!/usr/bin/env bash
# FUSE mounts of one bucket side by side over the same s3hpc gateway (posix backend, durability
# none): s3hpc mount over HTTP and over the binary protocol's unix socket, s3fs and rclone when
# installed, and Mountpoint for Amazon S3 when the path of a `mount-s3` binary is given (the
# project does not build it: docs/MOUNT.md, "Mountpoint for Amazon S3 over s3hpc", says how to
# build it from its source, about 45 minutes on a shared 2-core machine). Per client:
#
#   write   sequential write of SIZE_MB MiB (dd bs=1M), then checked in the gateway's root;
#           w_rss: the peak resident memory of the mount's process over a fresh mount and that
#           write (VmHWM, MiB); w_cpu: CPU-seconds (utime+stime) of the gateway / the mount's
#           process over the write
#   read    cold sequential read of a SIZE_MB MiB file written through POSIX (cat); r_cpu as w_cpu
#   rss     peak resident memory of the mount's process (VmHWM, MiB) over a fresh mount and that
#           read (Mountpoint, rclone and s3hpc mount run in the foreground; s3fs's daemon is
#           found by its mount point)
#   big     with RSS_MB set (and not SIZE_MB): a cold read of a further RSS_MB MiB file over a
#           fresh mount, its seconds and the mount's peak RSS (big_rss) over it
#   par     NPAR readers at once, each a cold cat of its own PAR_MB MiB file (written through POSIX)
#   rename  `mv` of the SIZE_MB MiB file the write made (s3hpc: one RenameObject; s3fs, rclone:
#           copy and delete; Mountpoint: its RenameObject where the gateway has it)
#   ls_l    `ls -l` of a directory of NLS files (written through POSIX)
#   creates NSMALL small files created one after another (`echo i > f$i`)
#
# Every mount is fresh before the read and the listing (cold kernel page and attribute caches);
# the gateway's files are in the server's page cache for everyone. Seconds, wall clock.
#
#   bench/mount_compare.sh [S3HPC_BIN] [WORKDIR] [MOUNT_S3_BIN]
#
# The defaults are small (64 MiB, 16 readers of 4 MiB, 500 files, 100 creates), for a quick
# side-by-side that any machine runs in a minute or two; the issue-38 sizes are
#   SIZE_MB=1024 RSS_MB=10240 NPAR=64 PAR_MB=16 NLS=5000 NSMALL=500 bench/mount_compare.sh target/release/s3hpc /tmp/mc /path/to/mount-s3
# (RSS_MB needs that much free disk once, besides SIZE_MB per client and the gateway's files).
# KINDS (e.g. "s3hpc-http mountpoint") runs only those clients, in that order.
# MOUNTPOINT_ARGS adds options to mount-s3 (e.g. "--upload-checksums off"), S3HPC_MOUNT_ARGS to
# s3hpc mount (e.g. "--max-upload-parts 8").
# Needs root (or FUSE for the user) and fuse3.
set -euo pipefail
BIN=${1:-$(dirname "$0")/../target/release/s3hpc}
BIN=$(readlink -f "$BIN")
WORK=${2:-/tmp/s3hpc-mount-compare}
MOUNT_S3=${3:-}
SIZE_MB=${SIZE_MB:-64}
NLS=${NLS:-500}
NSMALL=${NSMALL:-100}
NPAR=${NPAR:-16}
PAR_MB=${PAR_MB:-4}
RSS_MB=${RSS_MB:-}
MOUNTPOINT_ARGS=${MOUNTPOINT_ARGS:-}
S3HPC_MOUNT_ARGS=${S3HPC_MOUNT_ARGS:-}
AK=benchAccessKey01
SK=benchSecretKey01
PORT=${PORT:-9393}
B=bench

cleanup() {
  for m in "$WORK"/mnt-*; do
    [ -d "$m" ] && mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; }
  done
  [ -n "${GW:-}" ] && kill "$GW" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT

if [ -n "$MOUNT_S3" ]; then
  MOUNT_S3=$(readlink -f "$MOUNT_S3")
  [ -x "$MOUNT_S3" ] || { echo "$MOUNT_S3: not an executable" >&2; exit 2; }
fi

rm -rf "$WORK" && mkdir -p "$WORK/root/$B"
"$BIN" serve "$WORK/root" --listen 127.0.0.1:$PORT --durability none --access-key $AK --secret-key $SK \
  --binary "unix://$WORK/gw.sock" > "$WORK/serve.log" 2>&1 &
GW=$!
for _ in $(seq 100); do grep -q "listening on" "$WORK/serve.log" && break; sleep 0.1; done
grep -q "listening on" "$WORK/serve.log" || { echo "the gateway did not start:" >&2; cat "$WORK/serve.log" >&2; exit 1; }
EP=http://127.0.0.1:$PORT

# Data written through POSIX into the gateway's root: a file to read, a directory to list.
dd if=/dev/urandom of="$WORK/root/$B/read.bin" bs=1M count="$SIZE_MB" status=none
mkdir -p "$WORK/root/$B/ls" "$WORK/root/$B/par"
for i in $(seq "$NPAR"); do dd if=/dev/urandom of="$WORK/root/$B/par/p$i" bs=1M count="$PAR_MB" status=none; done
for i in $(seq "$NLS"); do echo "$i" > "$WORK/root/$B/ls/f$i"; done
if [ -n "$RSS_MB" ]; then
  # RSS_MB of random data without RSS_MB of /dev/urandom: the read file, repeated.
  : > "$WORK/root/$B/big.bin"
  for _ in $(seq $(((RSS_MB + SIZE_MB - 1) / SIZE_MB))); do cat "$WORK/root/$B/read.bin" >> "$WORK/root/$B/big.bin"; done
  truncate -s $((RSS_MB << 20)) "$WORK/root/$B/big.bin"
fi
echo "$AK:$SK" > "$WORK/passwd" && chmod 600 "$WORK/passwd"

now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$2-$1:.2f}')"; }

# mount_it KIND DIR: mount the bucket at DIR with KIND; MPID is the serving process when known.
mount_it() {
  local kind=$1 dir=$2
  mkdir -p "$dir"
  MPID=""
  case $kind in
    s3hpc-http|s3hpc-unix)
      local ep=$EP
      [ "$kind" = s3hpc-unix ] && ep="unix://$WORK/gw.sock"
      # shellcheck disable=SC2086 # S3HPC_MOUNT_ARGS is a list of options
      S3HPC_ACCESS_KEY=$AK S3HPC_SECRET_KEY=$SK "$BIN" mount $B "$dir" --endpoint "$ep" --allow-delete \
        --allow-overwrite --foreground $S3HPC_MOUNT_ARGS > "$WORK/$kind.log" 2>&1 &
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
    mountpoint)
      # shellcheck disable=SC2086 # MOUNTPOINT_ARGS is a list of options
      env -u AWS_CA_BUNDLE AWS_ACCESS_KEY_ID=$AK AWS_SECRET_ACCESS_KEY=$SK AWS_REGION=us-east-1 \
        "$MOUNT_S3" $B "$dir" --endpoint-url "$EP" --force-path-style --allow-delete --allow-overwrite \
        --foreground $MOUNTPOINT_ARGS > "$WORK/mountpoint.log" 2>&1 &
      MPID=$!
      ;;
  esac
  for _ in $(seq 150); do mountpoint -q "$dir" && return 0; sleep 0.1; done
  echo "$kind: mount failed (see $WORK/$kind.log)" >&2
  [ -n "$MPID" ] && kill "$MPID" 2>/dev/null || true
  return 1
}

# peak_rss DIR: the peak resident memory (MiB) of the process serving the mount at DIR.
peak_rss() {
  local pid=$MPID
  [ -n "$pid" ] || pid=$(pgrep -n -f -- "$1" || true)
  [ -n "$pid" ] && awk '/^VmHWM/ {printf "%d", $2 / 1024}' "/proc/$pid/status" 2>/dev/null || echo "?"
}

# cpu PID: utime+stime of PID in clock ticks (0 when it is gone).
cpu() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# cpu_pair GW0 FS0 FSPID: "gateway/mount" CPU-seconds since the ticks GW0 and FS0.
cpu_pair() {
  local hz
  hz=$(getconf CLK_TCK)
  python3 -c "print(f'{($(cpu "$GW") - $1) / $hz:.2f}/{($(cpu "$3") - $2) / $hz:.2f}')"
}
mount_pid() {
  local pid=$MPID
  [ -n "$pid" ] || pid=$(pgrep -n -f -- "$1" || true)
  echo "$pid"
}

unmount_it() {
  local dir=$1
  fusermount3 -u "$dir" 2>/dev/null || umount -l "$dir"
  [ -n "$MPID" ] && wait "$MPID" 2>/dev/null || true
  sleep 0.2
}

kinds=(s3hpc-http s3hpc-unix)
command -v s3fs > /dev/null && kinds+=(s3fs)
command -v rclone > /dev/null && kinds+=(rclone)
[ -n "$MOUNT_S3" ] && kinds+=(mountpoint)
# shellcheck disable=SC2206 # KINDS is a list of names
[ -n "${KINDS:-}" ] && kinds=($KINDS)
echo "# $(date -u +%FT%TZ) $(uname -r) $(nproc) CPUs SIZE_MB=$SIZE_MB RSS_MB=${RSS_MB:--} NPAR=$NPAR PAR_MB=$PAR_MB NLS=$NLS NSMALL=$NSMALL load $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-12s %14s %6s %11s %14s %6s %11s %16s %12s %12s %14s %12s %8s\n" client "write_${SIZE_MB}MiB_s" w_rss \
  w_cpu_gw/fs "read_${SIZE_MB}MiB_s" rss r_cpu_gw/fs "par_${NPAR}x${PAR_MB}MiB_s" rename_s "ls_l_${NLS}_s" \
  "creates_${NSMALL}_s" "big_${RSS_MB:-0}MiB_s" big_rss
for kind in "${kinds[@]}"; do
  d=$WORK/mnt-$kind
  if ! mount_it "$kind" "$d"; then
    printf "%-12s %s\n" "$kind" "mount failed"
    continue
  fi
  fp=$(mount_pid "$d"); g0=$(cpu "$GW"); f0=$(cpu "$fp")
  t0=$(now); dd if=/dev/zero of="$d/w-$kind.bin" bs=1M count="$SIZE_MB" status=none; t1=$(now)
  w=$(elapsed "$t0" "$t1")
  wcpu=$(cpu_pair "$g0" "$f0" "$fp")
  wrss=$(peak_rss "$d")
  unmount_it "$d"
  got=$(stat -c %s "$WORK/root/$B/w-$kind.bin" 2>/dev/null || echo 0)
  [ "$got" = $((SIZE_MB << 20)) ] || w="$w(size $got)"
  mount_it "$kind" "$d"
  fp=$(mount_pid "$d"); g0=$(cpu "$GW"); f0=$(cpu "$fp")
  t0=$(now); cat "$d/read.bin" > /dev/null; t1=$(now)
  r=$(elapsed "$t0" "$t1")
  rcpu=$(cpu_pair "$g0" "$f0" "$fp")
  rss=$(peak_rss "$d")
  unmount_it "$d"
  big="-" brss="-"
  if [ -n "$RSS_MB" ]; then
    mount_it "$kind" "$d"
    t0=$(now); cat "$d/big.bin" > /dev/null; t1=$(now)
    big=$(elapsed "$t0" "$t1")
    brss=$(peak_rss "$d")
    unmount_it "$d"
  fi
  mount_it "$kind" "$d"
  t0=$(now)
  pids=()
  for i in $(seq "$NPAR"); do cat "$d/par/p$i" > /dev/null & pids+=($!); done
  wait "${pids[@]}" || p_failed=1
  t1=$(now)
  p=$(elapsed "$t0" "$t1")
  [ -z "${p_failed:-}" ] || p="$p(failed)"
  p_failed=""
  t0=$(now); mv "$d/w-$kind.bin" "$d/w-$kind.moved" 2>/dev/null && t1=$(now) && mvt=$(elapsed "$t0" "$t1") || mvt="failed"
  unmount_it "$d"
  mount_it "$kind" "$d"
  t0=$(now); n=$(ls -l "$d/ls" | wc -l); t1=$(now)
  l=$(elapsed "$t0" "$t1")
  [ "$n" -gt "$NLS" ] || l="$l(saw $((n - 1)))"
  mkdir -p "$d/small-$kind"
  t0=$(now); for i in $(seq "$NSMALL"); do echo "$i" > "$d/small-$kind/f$i"; done; t1=$(now)
  c=$(elapsed "$t0" "$t1")
  unmount_it "$d"
  # (rclone uploads after close, in the background: what was not there at unmount shows)
  made=$( (find "$WORK/root/$B/small-$kind" -type f 2>/dev/null || true) | wc -l)
  [ "$made" = "$NSMALL" ] || c="$c(made $made)"
  printf "%-12s %14s %6s %11s %14s %6s %11s %16s %12s %12s %14s %12s %8s\n" "$kind" "$w" "$wrss" "$wcpu" "$r" \
    "$rss" "$rcpu" "$p" "$mvt" "$l" "$c" "$big" "$brss"
done
