#!/usr/bin/env bash
# Scores s3hpc against the versitygw integration suite (https://github.com/versity/versitygw,
# tests/: bats files driving the aws CLI, s3cmd, mc, curl/openssl with a Go request generator),
# pointed at s3hpc instead of a versitygw it starts itself.
#
#   bench/versitygw_suite.sh SUITE_DIR [FILE[:FILTER]...]
#
#   SUITE_DIR  a checkout of versity/versitygw (not vendored, and not run by CI: CI cannot fetch it)
#   FILE       test files to run (`test_rest_put_object` or `tests/test_rest_put_object.sh`), each
#              optionally with `:REGEX` (bats -f) to run only matching cases; default: every
#              tests/test_*.sh with @test cases, file by file
#
# e.g.  bench/versitygw_suite.sh /tmp/versitygw
#       bench/versitygw_suite.sh /tmp/versitygw test_rest_head_bucket 'test_rest_put_object:checksum'
#
# What it does:
# - starts `s3hpc serve` (posix backend, fresh temporary root, one account: the suite's root
#   user) on https://127.0.0.1:$PORT with a self-signed certificate (the suite's openssl-driven
#   cases, aws-chunked uploads among them, speak TLS only; its clients skip verification), with
#   the website endpoint on (`--website-domain localhost`): the suite's website case fetches
#   `https://BUCKET.$WEBSITE_DOMAIN$WEBSITE`, so the .env sets WEBSITE_DOMAIN=localhost and
#   WEBSITE=:$PORT (curl resolves every *.localhost name to the loopback address itself);
# - copies the suite's tests/ to a work directory and writes its .env for s3hpc: RUN_VERSITYGW=false,
#   the endpoint, the credentials (an aws CLI profile in a private AWS_CONFIG_FILE, an s3cmd config,
#   an mc alias in a private MC_CONFIG_DIR), RECREATE_BUCKETS=true (each case makes its own buckets),
#   SKIP_USERS_TESTS=true;
# - starts s3hpc with `--idle-timeout 2` (IDLE_TIMEOUT): the suite's openssl-driven cases send a
#   keep-alive request with `openssl s_client -ign_eof` and wait until the server closes the idle
#   connection (their requests carry no `Connection: close`), 30 s each with the default;
# - makes the teardown AWS-faithful: the suite's non-direct teardown puts a bucket policy granting
#   `s3:BypassGovernanceRetention` to Principal "*" (AWS refuses that public policy while Block
#   Public Access is on; the owner needs no grant to bypass governance) and hands every bucket back
#   to the root user with versitygw's admin API (change-bucket-owner); both steps are removed
#   from drivers/user.sh perform_reset (the copy is patched, the checkout is left alone);
# - VERSITY_EXE is a stub that records each call of versitygw's admin API (create-user,
#   list-users, delete-user, change-bucket-owner, ...) with the running case's name and fails.
#   A case "needs versitygw's admin API" when it is skipped with the suite's users-test skip
#   (SKIP_USERS_TESTS=true: "skip(ping) versitygw-specific users tests", "skipping versity-specific
#   users tests") or when it called that stub; such cases are excluded from the score;
# - fits the suite to the tools of the machine (each explained where it is done): silences the
#   aws CLI's InsecureRequestWarning, gives jq 1.6's `@uri` jq 1.7's meaning, gives an aws CLI
#   whose S3 model has no HeadBucket output (2.9) that output (`BucketRegion`) through
#   AWS_DATA_PATH, and has the ranged download's `dd` copy 1 MiB blocks instead of single bytes;
# - runs each file with bats (TAP), one after the other, and prints
#   "versitygw suite: P/N" where N = every case run minus those needing the admin API and P = the
#   cases that passed (cases the suite skips for other reasons count in N, not in P).
#
# Results: $OUT/files/NAME.tap (bats' TAP per file), $OUT/files/NAME.log (the suite's own log),
# $OUT/results.tsv (file, case, outcome: pass/fail/skip/admin), $OUT/server.log,
# $OUT/admin-calls.log. OUT defaults to /tmp/versitygw-suite-out.
# Needs: bats (with bats-support and bats-assert: the apt packages, or BATS_LIB_DIR holding both),
# jq, xmllint, xmlstarlet, uuidgen, xxd, curl, openssl, go (builds the suite's request generator
# once into $CACHE), AWS CLI v2 and s3cmd (see below),
# mc (optional: its cases fail without it). Python's venv module (the suite installs awscrt once
# into $CACHE/pyenv).
# Env: S3HPC_BIN (default target/debug/s3hpc), PORT (default 18070), OUT, CACHE (default
# /tmp/versitygw-suite-cache), CASE_TIMEOUT (seconds per case, default 300; the *_file_count cases,
# 1,001 uploads each, need more on a loaded machine), AWS_REGION (us-east-1),
# IDLE_TIMEOUT (the gateway's --idle-timeout, default 2 s).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
SUITE=${1:?usage: bench/versitygw_suite.sh SUITE_DIR [FILE[:FILTER]...]}
SUITE=$(cd "$SUITE" && pwd)
shift
S3HPC_BIN=${S3HPC_BIN:-$REPO/target/debug/s3hpc}
PORT=${PORT:-18070}
OUT=${OUT:-/tmp/versitygw-suite-out}
CACHE=${CACHE:-/tmp/versitygw-suite-cache}
REGION=${AWS_REGION:-us-east-1}
[ -x "$S3HPC_BIN" ] || { echo "no s3hpc binary at $S3HPC_BIN (cargo build -p s3hpc)" >&2; exit 2; }
[ -f "$SUITE/tests/setup.sh" ] && [ -f "$SUITE/go.mod" ] || { echo "$SUITE is not a versitygw checkout" >&2; exit 2; }
for c in bats jq xmllint xmlstarlet uuidgen xxd curl openssl go python3; do
  command -v "$c" >/dev/null || { echo "missing $c (see the header of $0)" >&2; exit 2; }
done
# The suite wants AWS CLI v2 (`aws configure list-profiles`, newer s3api flags): AWS_CLI, else the
# first `aws` on PATH (or /usr/bin/aws, /usr/local/bin/aws) that is v2. s3cmd from PATH or this
# repo's .venv.
if [ -d "$REPO/.venv/bin" ]; then PATH="$PATH:$REPO/.venv/bin"; fi
if [ -z "${AWS_CLI:-}" ]; then
  for a in $(type -ap aws) /usr/local/bin/aws /usr/bin/aws; do
    if [ -x "$a" ] && "$a" --version 2>&1 | grep -q '^aws-cli/2'; then AWS_CLI=$a; break; fi
  done
fi
[ -n "${AWS_CLI:-}" ] || { echo "no AWS CLI v2 found (apt-get install awscli on Debian 12, or AWS_CLI=PATH)" >&2; exit 2; }
command -v s3cmd >/dev/null || { echo "missing s3cmd" >&2; exit 2; }
LIB=${BATS_LIB_DIR:-}
if [ -z "$LIB" ]; then
  for d in /usr/lib/bats /usr/local/lib/bats /usr/share/bats "$SUITE/tests"; do
    if [ -f "$d/bats-support/load.bash" ] && [ -f "$d/bats-assert/load.bash" ]; then LIB=$d; break; fi
  done
fi
[ -n "$LIB" ] || { echo "bats-support and bats-assert not found (apt-get install bats-support bats-assert, or BATS_LIB_DIR)" >&2; exit 2; }

mkdir -p "$OUT/files" "$CACHE"
rm -f "$OUT"/files/*.tap "$OUT"/files/*.log "$OUT/results.tsv"
GEN="$CACHE/generateCommand"
if [ ! -x "$GEN" ] || [ "$SUITE/tests/rest_scripts/generateCommand.go" -nt "$GEN" ]; then
  (cd "$SUITE" && go build -o "$GEN" ./tests/rest_scripts/generateCommand.go)
fi

WORK=$(mktemp -d /tmp/versitygw-suite.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The suite's tree: tests/ copied (to be patched), the Go module files linked (the suite `go run`s
# its checker), bats-support/bats-assert linked where the files `load` them.
S="$WORK/suite"
mkdir -p "$S"
cp -r "$SUITE/tests" "$S/tests"
ln -s "$SUITE/go.mod" "$S/go.mod"
ln -s "$SUITE/go.sum" "$S/go.sum"
rm -rf "$S/tests/bats-support" "$S/tests/bats-assert"
ln -s "$LIB/bats-support" "$S/tests/bats-support"
ln -s "$LIB/bats-assert" "$S/tests/bats-assert"

# AWS-faithful teardown (see the header).
RESET="$S/tests/drivers/user.sh"
sed -i -e 's/if \[\[ "\$DIRECT" != "true" \]\] && ! add_governance_bypass_policy/if false \&\& ! add_governance_bypass_policy/' \
  -e 's/if \[ "\$RUN_USERS" == "true" \] && \[ "\$DIRECT" != "true" \] && ! change_bucket_owner/if false \&\& ! change_bucket_owner/' "$RESET"
if [ "$(grep -c 'if false && ! \(add_governance_bypass_policy\|change_bucket_owner\)' "$RESET")" != 2 ]; then
  echo "could not patch the teardown in tests/drivers/user.sh (perform_reset changed upstream?)" >&2
  exit 2
fi

# jq before 1.7 leaves `!*'()` unencoded in `@uri` (1.7 encodes every reserved character, as
# RFC 3986 and SigV4 want); the suite's REST scripts sign the key as @uri encodes it, so with jq
# 1.6 (Debian 12) a key holding `*` is signed unencoded while the request's canonical path
# encodes it: SignatureDoesNotMatch, and once such a key cannot be deleted every later case's
# bucket reset fails. Give @uri jq 1.7's meaning in the copy.
if [ "$(printf '*' | jq -sRr @uri)" = "*" ]; then
  uri='@uri|gsub("[*]";"%2A")|gsub("[!]";"%21")|gsub("\\u0027";"%27")|gsub("[(]";"%28")|gsub("[)]";"%29")'
  grep -rl '@uri' "$S/tests" --include='*.sh' | while IFS= read -r f; do
    sed -i -e "s/jq -sRr @uri)/jq -sRr '@uri')/g" -e "s/@uri/${uri//&/\\&}/g" "$f"
  done
fi

# The ranged download (`get_object_with_ranged_download`, e.g. test_rest_get_object "range
# download and compare": a 160 MB object in 2 MB ranges) places each range with `dd bs=1`, two
# syscalls a byte: about 4.4 s a range on the shared development machine, 350 s for the file,
# past the case timeout before any request is judged. GNU dd writes the same bytes at the same
# offset with byte-counted seek and count in 1 MiB blocks.
if dd --version 2>/dev/null | grep -q GNU; then
  sed -i -e 's/ bs=1 seek="\$file_byte_idx" count="\$7" conv=notrunc/ bs=1M iflag=count_bytes oflag=seek_bytes seek="$file_byte_idx" count="$7" conv=notrunc/' \
    "$S/tests/util/util_object.sh"
fi

# The stub standing in for versitygw's admin CLI.
cat > "$WORK/versitygw" <<EOF
#!/usr/bin/env bash
printf '%s\t%s\n' "\${TEST_ID:-?}" "\$*" >> "$OUT/admin-calls.log"
echo "versitygw admin API: not offered by s3hpc" >&2
exit 1
EOF
chmod +x "$WORK/versitygw"
: > "$OUT/admin-calls.log"

ACCESS=ABCDEFGHIJKLMNOPQRST
SECRET=ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn
cat > "$WORK/users.toml" <<TOML
[[users]]
access_key = "$ACCESS"
secret_key = "$SECRET"
name = "versity-root"
TOML
cat > "$WORK/s3cfg" <<CFG
[default]
host_base = 127.0.0.1:$PORT
host_bucket = 127.0.0.1:$PORT
bucket_location = $REGION
use_https = True
signurl_use_https = True
check_ssl_certificate = False
check_ssl_hostname = False
signature_v2 = False
CFG
if [ ! -s "$CACHE/key.pem" ] || [ ! -s "$CACHE/cert.pem" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -keyout "$CACHE/key.pem" -out "$CACHE/cert.pem" -days 3650 \
    -subj "/CN=127.0.0.1" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" >/dev/null 2>&1
fi
mkdir -p "$WORK/files" "$WORK/aws" "$WORK/mc" "$WORK/bin"
# AWS CLI v2 before 2.13 ignores AWS_ENDPOINT_URL, which the suite relies on: pass it explicitly.
# With --no-verify-ssl, an aws CLI running on the system's Python (Debian's awscli 2.9) prints
# urllib3's InsecureRequestWarning as two lines (the warning and the source line
# `  warnings.warn(`); the suite merges stderr into what it hands jq and strips only the first
# line (the official bundled CLI prints just that one), so jq failed ("parse error: Invalid
# numeric literal") in most s3api cases: silence that warning.
# Debian's aws CLI 2.9 models HeadBucket with no output: `aws s3api head-bucket` prints nothing
# where newer CLIs print `BucketRegion` (from `x-amz-bucket-region`, which s3hpc sends), so the
# suite's "test_head_bucket" read an empty region. Such a CLI gets its own S3 model with that
# output added, through AWS_DATA_PATH (a copy under $WORK; the installed CLI is left alone).
AWS_DATA="" AWS_PY=""
first=$(head -c 200 "$AWS_CLI" | head -1 | tr -d '\0')
if [[ $first == '#!'*python* ]]; then AWS_PY=${first#\#!}; fi
# shellcheck disable=SC2086  # the interpreter line may be "/usr/bin/env python3"
if [ -n "$AWS_PY" ] && $AWS_PY - "$WORK/awsdata" <<'PY' 2>/dev/null
import json, os, sys
import awscli
src = os.path.join(os.path.dirname(awscli.__file__), "botocore", "data", "s3", "2006-03-01", "service-2.json")
model = json.load(open(src))
if "output" in model["operations"]["HeadBucket"]:
    sys.exit(1)
model["operations"]["HeadBucket"]["output"] = {"shape": "HeadBucketOutput"}
model["shapes"]["HeadBucketOutput"] = {"type": "structure", "members": {
    "BucketRegion": {"shape": "BucketRegion", "location": "header", "locationName": "x-amz-bucket-region"}}}
model["shapes"].setdefault("BucketRegion", {"type": "string"})
out = os.path.join(sys.argv[1], "s3", "2006-03-01")
os.makedirs(out, exist_ok=True)
json.dump(model, open(os.path.join(out, "service-2.json"), "w"))
PY
then AWS_DATA="$WORK/awsdata"; fi
cat > "$WORK/bin/aws" <<WRAP
#!/usr/bin/env bash
export PYTHONWARNINGS="ignore:Unverified HTTPS request"
${AWS_DATA:+export AWS_DATA_PATH="$AWS_DATA"}
if [ -n "\${AWS_ENDPOINT_URL:-}" ] && [ "\${1:-}" != configure ]; then
  exec "$AWS_CLI" --endpoint-url "\$AWS_ENDPOINT_URL" "\$@"
fi
exec "$AWS_CLI" "\$@"
WRAP
chmod +x "$WORK/bin/aws"
PATH="$WORK/bin:$PATH"
cat > "$WORK/env" <<ENV
AWS_PROFILE=versity
AWS_ENDPOINT_URL=https://127.0.0.1:$PORT
AWS_REGION=$REGION
AWS_ACCESS_KEY_ID=$ACCESS
AWS_SECRET_ACCESS_KEY=$SECRET
VERSITY_EXE=$WORK/versitygw
RUN_VERSITYGW=false
BACKEND=posix
IAM_TYPE=folder
DIRECT=false
BUCKET_ONE_NAME=versity-gwtest-bucket-one
BUCKET_TWO_NAME=versity-gwtest-bucket-two
RECREATE_BUCKETS=true
DELETE_BUCKETS_AFTER_TEST=true
SKIP_USERS_TESTS=true
AUTOGENERATE_USERS=true
S3CMD_CONFIG=$WORK/s3cfg
MC_ALIAS=s3hpc-vgw-suite
LOG_LEVEL=4
TEST_FILE_FOLDER=$WORK/files
REMOVE_TEST_FILE_FOLDER=true
PYTHON_ENV_FOLDER=$CACHE/pyenv
GO_COMMAND_GENERATOR_EXECUTABLE=$GEN
TEMPLATE_MATRIX_FILE=$S/tests/templates/matrix.yaml
QUICK_COMPARE_SIZE=1048576
WEBSITE_DOMAIN=localhost
WEBSITE=:$PORT
ENV
# The suite's python helper venv, made once here rather than by the first case that needs it.
if [ ! -x "$CACHE/pyenv/bin/python3" ]; then
  python3 -m venv "$CACHE/pyenv"
  "$CACHE/pyenv/bin/pip" install -q awscrt
fi

mkdir "$WORK/root"
"$S3HPC_BIN" serve "$WORK/root" --backend posix --listen "127.0.0.1:$PORT" --config "$WORK/users.toml" \
  --region "$REGION" --tls-cert "$CACHE/cert.pem" --tls-key "$CACHE/key.pem" --idle-timeout "${IDLE_TIMEOUT:-2}" \
  --website-domain localhost >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  grep -q "listening on" "$OUT/server.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done

FILES=()
if [ $# -gt 0 ]; then
  FILES=("$@")
else
  while IFS= read -r f; do
    grep -q '^@test' "$f" && FILES+=("$(basename "$f" .sh)")
  done < <(find "$S/tests" -maxdepth 1 -name 'test_*.sh' | sort)
  # mc's files last (mc is the one client that may still be building)
  rest=() mcs=()
  for f in "${FILES[@]}"; do if [[ $f == test_mc* ]]; then mcs+=("$f"); else rest+=("$f"); fi; done
  FILES=("${rest[@]}" ${mcs[@]+"${mcs[@]}"})
fi

export VERSITYGW_TEST_ENV="$WORK/env"
export AWS_CONFIG_FILE="$WORK/aws/config" AWS_SHARED_CREDENTIALS_FILE="$WORK/aws/credentials"
export MC_CONFIG_DIR="$WORK/mc"
unset AWS_CA_BUNDLE  # the clients skip verification of the self-signed certificate
aws configure set aws_access_key_id "$ACCESS" --profile versity
aws configure set aws_secret_access_key "$SECRET" --profile versity
aws configure set region "$REGION" --profile versity

cd "$S"
for spec in "${FILES[@]}"; do
  name=${spec%%:*}
  filter=
  [ "$name" != "$spec" ] && filter=${spec#*:}
  name=$(basename "$name" .sh)
  [ -f "tests/$name.sh" ] || { echo "no tests/$name.sh in the suite" >&2; continue; }
  args=(--tap)
  [ -n "$filter" ] && args+=(-f "$filter")
  echo "== $name${filter:+ ($filter)}" >&2
  set +e
  TEST_LOG_FILE= BATS_TEST_TIMEOUT=${CASE_TIMEOUT:-300} bats "${args[@]}" "tests/$name.sh" \
    >"$OUT/files/$name.tap" 2>"$OUT/files/$name.log"
  set -e
  # per-file summary as it goes
  printf '   %s ok, %s not ok\n' "$(grep -c '^ok ' "$OUT/files/$name.tap" || true)" \
    "$(grep -c '^not ok ' "$OUT/files/$name.tap" || true)" >&2
done
cd "$REPO"
python3 "$HERE/versitygw_suite_score.py" "$OUT"
