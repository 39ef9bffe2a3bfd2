#!/usr/bin/env bash
# Native TLS against plain HTTP in one run: two gateways of the same binary on /dev/shm roots, one
# with --tls-cert/--tls-key (an EC P-256 certificate from a CA made here by openssl), and `s3hpc bench
# sweep` measuring both targets back to back, twice with the order swapped. Then the same for the
# binary protocol: the TLS gateway's tcp:// and tls:// listeners.
#
#   bench/tls_vs_plain.sh BIN [DURATION]     (default 5s per size and phase)
# Env: SIZES (default 4KiB,1MiB), CONC (default 8).
set -euo pipefail
BIN=$1 DUR=${2:-5s}
SIZES=${SIZES:-4KiB,1MiB}
CONC=${CONC:-8}
R=$(mktemp -d /dev/shm/s3hpc-tls.XXXXXX)
mkdir -p "$R/plain" "$R/tls"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj "/CN=bench CA" \
  -keyout "$R/ca.key" -out "$R/ca.pem" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=127.0.0.1 \
  -keyout "$R/key.pem" -out "$R/cert.csr" 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$R/ext"
openssl x509 -req -in "$R/cert.csr" -CA "$R/ca.pem" -CAkey "$R/ca.key" -CAcreateserial -days 1 \
  -extfile "$R/ext" -out "$R/cert.pem" 2>/dev/null
. "$(dirname "$0")/lib.sh"
trap 'bench_stop; rm -rf "$R"' EXIT
gw_start "$R/plain.log" "$BIN" "$R/plain" --durability none --access-key AK --secret-key SKsecret
A=$GW_URL
gw_start "$R/tls.log" "$BIN" "$R/tls" --durability none --access-key AK --secret-key SKsecret \
  --tls-cert "$R/cert.pem" --tls-key "$R/key.pem" --binary tcp://127.0.0.1:0 --binary tls://127.0.0.1:0
B=$GW_URL
C=$(grep -o "tcp://127.0.0.1:[0-9]*" "$R/tls.log" | head -1)
D=$(grep -o "tls://127.0.0.1:[0-9]*" "$R/tls.log" | head -1)
echo "plain: $A   tls: $B   binary plain: $C   binary tls: $D"
for order in "$A $B" "$B $A" "$C $D" "$D $C"; do
  set -- $order
  "$BIN" bench sweep -t "$1" -t "$2" --ca-bundle "$R/ca.pem" --access-key AK --secret-key SKsecret \
    --sizes "$SIZES" --duration "$DUR" -c "$CONC" --bucket "tls-vs-plain-$RANDOM" -q
done
