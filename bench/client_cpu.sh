#!/usr/bin/env bash
# Where the CPU of an `s3hpc bench` run against the noop gateway goes: client vs server (vs
# nginx), per request, from /proc/PID/stat (server, nginx) and /usr/bin/time (client).
#
#   bench/client_cpu.sh [SIZE] [--tls]        e.g.  bench/client_cpu.sh 4KiB --tls
#
# Runs `s3hpc bench sweep --sizes SIZE --duration 2s -c 8` against: noop:// (in-process, the
# harness alone), the gateway over http:// (noop backend serving SIZE-byte GETs), and with --tls
# also nginx (deploy/nginx-tls.conf, a throwaway CA made with openssl) over plain http and over
# https in front of the same gateway. Needs a release build (cargo build --release -p s3hpc);
# S3HPC=path overrides the binary. Everything started is stopped on exit.
set -euo pipefail
SIZE=${1:-4KiB}
TLS=${2:-}
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${S3HPC:-$REPO/target/release/s3hpc}
W=$(mktemp -d /tmp/s3hpc-client-cpu.XXXXXX)
export AWS_ACCESS_KEY_ID=CPUSPLITKEY AWS_SECRET_ACCESS_KEY=cpu-split-secret-0123456789
unset AWS_CA_BUNDLE AWS_PROFILE
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$W"
}
trap cleanup EXIT
BYTES=$(python3 -c "
s='$SIZE'.lower(); u={'k':1<<10,'kib':1<<10,'m':1<<20,'mib':1<<20,'b':1,'':1}
n=s.rstrip('kimb'); print(int(float(n)*u[s[len(n):]]))")

. "$REPO/bench/lib.sh"
gw_start "$W/srv.out" "$B" "$W/srv" --backend noop --noop-object-size "$BYTES" \
    --access-key "$AWS_ACCESS_KEY_ID" --secret-key "$AWS_SECRET_ACCESS_KEY"
SPID=$GW_PID; PIDS+=("$SPID")
GW=$GW_URL

ticks() { local t=0 p; for p in "$@"; do t=$((t + $(awk '{print $14+$15}' "/proc/$p/stat"))); done; echo $t; }

# run LABEL TARGET [args]: one sweep, then its CPU per request
run() {
    local label=$1 target=$2; shift 2
    local s0 n0 s1 n1
    s0=$(ticks "$SPID"); n0=$(ticks ${NGINX_WORKERS:-})
    /usr/bin/time -f "%U %S" -o "$W/$label.time" "$B" bench sweep -t "$target" -q --json "$W/$label.json" \
        --sizes "$SIZE" --duration 2s -c 8 "$@" >/dev/null
    s1=$(ticks "$SPID"); n1=$(ticks ${NGINX_WORKERS:-})
    python3 - "$label" "$W/$label.json" "$W/$label.time" $((s1 - s0)) $((n1 - n0)) "$(getconf CLK_TCK)" <<'PY'
import json, sys
label, jf, tf, srv, ngx, hz = sys.argv[1:]
r = json.load(open(jf))["results"][0]
u, s = map(float, open(tf).read().split()[-2:])
ops = sum(p["ops"] for p in r["phases"]); secs = sum(p["seconds"] for p in r["phases"])
srv, ngx = int(srv) / int(hz), int(ngx) / int(hz)
us = lambda c: f"{1e6 * c / ops:7.1f}"
print(f"{label:<14} {r['errors']:>3} {ops / secs:>10.0f} {us(u + s)} ({us(s).strip()} sys) {us(srv)}"
      + (f" {us(ngx)}" if ngx else "     -"))
PY
}

echo "size $SIZE; $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "target         err      ops/s  client us/req (sys)  server us/req  nginx us/req"
run noop noop://$SIZE
run http "$GW"
if [ "$TLS" = --tls ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/ca.key" \
        -out "$W/ca.pem" -days 1 -subj "/CN=client_cpu CA" -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$W/srv.key" \
        -out "$W/srv.csr" -subj /CN=s3.localhost 2>/dev/null
    printf 'subjectAltName=DNS:s3.localhost,DNS:*.s3.localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' >"$W/ext"
    openssl x509 -req -days 1 -set_serial 2 -in "$W/srv.csr" -CA "$W/ca.pem" -CAkey "$W/ca.key" \
        -out "$W/srv.pem" -extfile "$W/ext" 2>/dev/null
    P=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
    python3 - "${GW#http://}" "$P" "$W" "$REPO/deploy/nginx-tls.conf" <<'PY'
import sys
gw, port, d, src = sys.argv[1:]
s = open(src).read()
s = s.replace("        server 10.0.0.11:9000 max_fails=3 fail_timeout=10s;\n"
              "        server 10.0.0.12:9000 max_fails=3 fail_timeout=10s;\n", f"        server {gw};\n")
s = s.replace("worker_processes auto;", "worker_processes 1;")
s = s.replace("listen 443 ssl;", f"listen 127.0.0.1:{port} ssl;\n        listen 127.0.0.1:{int(port) + 1};")
s = s.replace("/etc/nginx/tls/s3.example.org.crt", f"{d}/srv.pem").replace("/etc/nginx/tls/s3.example.org.key", f"{d}/srv.key")
s = s.replace("/var/log/nginx/s3hpc-tls-access.log s3hpc_tls", "off")
s = s.replace("http {\n", "http {\n" + "".join(f"    {t}_temp_path {d}/{t};\n" for t in
              ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]), 1)
open(f"{d}/nginx.conf", "w").write(s)
PY
    G="daemon off; pid $W/nginx.pid;"; [ "$(id -u)" = 0 ] && G="$G user root;"
    nginx -p "$W" -c "$W/nginx.conf" -e "$W/error.log" -g "$G" &
    NPID=$!; PIDS+=("$NPID")
    for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$P") 2>/dev/null && break; sleep 0.1; done
    NGINX_WORKERS=$(pgrep -P "$NPID" | tr '\n' ' ')
    run nginx-http "http://127.0.0.1:$((P + 1))"
    run nginx-https "https://127.0.0.1:$P" --ca-bundle "$W/ca.pem"
fi
