# shellcheck shell=bash
# Start-up shared by the bench scripts: a gateway, a port, a mount. Source it:
#
#   . "$(dirname "$0")/lib.sh"
#
#   gw_start LOG BIN ROOT [serve args...]
#       Starts `BIN serve ROOT [args]` in the background with its output in LOG (adding
#       `--listen 127.0.0.1:0` when the args name no --listen), waits until it says "listening on"
#       (and, with `--binary unix://PATH`, until PATH is a socket), and sets GW_PID and GW_URL
#       (http://127.0.0.1:PORT, the address it printed). Exits with the log on stderr when the
#       gateway dies or does not come up within 10 s. Every started process is in BENCH_PIDS.
#       GW_WRAP (an array, e.g. `GW_WRAP=(taskset -c 0)`) runs the gateway through a command.
#   wait_port PORT          waits (10 s at most) until 127.0.0.1:PORT accepts connections.
#   wait_mount DIR [PID]    waits (15 s at most) until DIR is a mount point; 1 if PID died first.
#   bench_stop              kills and reaps everything in BENCH_PIDS (for the script's EXIT trap).

BENCH_PIDS=()

gw_start() {
  local log=$1 bin=$2 root=$3
  shift 3
  local args=("$@") a listen=0 sock="" prev=""
  for a in "${args[@]}"; do
    [ "$a" = "--listen" ] && listen=1
    case "$a" in --listen=*) listen=1 ;; esac
    if [ "$prev" = "--binary" ]; then
      case "$a" in unix://*) sock=${a#unix://} ;; esac
    fi
    prev=$a
  done
  [ "$listen" = 1 ] || args=(--listen 127.0.0.1:0 "${args[@]}")
  ${GW_WRAP[@]+"${GW_WRAP[@]}"} "$bin" serve "$root" "${args[@]}" >"$log" 2>&1 &
  GW_PID=$!
  BENCH_PIDS+=("$GW_PID")
  GW_URL=
  local _
  for _ in $(seq 100); do
    if ! kill -0 "$GW_PID" 2>/dev/null; then
      echo "the gateway exited at start-up ($bin serve $root ${args[*]}):" >&2
      cat "$log" >&2
      exit 1
    fi
    if grep -q "listening on" "$log" && { [ -z "$sock" ] || [ -S "$sock" ]; }; then
      GW_URL=$(grep -oE 'https?://[0-9.]+:[0-9]+' "$log" | head -1)
      [ -n "$GW_URL" ] && return 0
    fi
    sleep 0.1
  done
  echo "the gateway did not come up within 10 s ($bin serve $root ${args[*]}):" >&2
  cat "$log" >&2
  exit 1
}

wait_port() {
  local _
  for _ in $(seq 100); do
    (echo >/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing accepts connections on 127.0.0.1:$1" >&2
  return 1
}

wait_mount() {
  local dir=$1 pid=${2:-} _
  for _ in $(seq 150); do
    mountpoint -q "$dir" && return 0
    if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

bench_stop() {
  local p
  for p in "${BENCH_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${BENCH_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  BENCH_PIDS=()
}
