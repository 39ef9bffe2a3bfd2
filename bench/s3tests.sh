#!/usr/bin/env bash
# Scores s3hpc against ceph/s3-tests (https://github.com/ceph/s3-tests), the public S3
# compatibility suite, with three real accounts (main, alt, tenant) in a users file.
#
#   bench/s3tests.sh SUITE_DIR [-- EXTRA_SERVE_ARGS...] [-- PYTEST_ARGS...]
#
#   SUITE_DIR  a checkout of ceph/s3-tests (not vendored, and not run by CI: CI cannot fetch it)
#
# e.g.  bench/s3tests.sh ~/src/s3-tests
#       bench/s3tests.sh ~/src/s3-tests -- --default-object-ownership ObjectWriter
#       bench/s3tests.sh ~/src/s3-tests -- -- -k test_bucket_list_empty
#
# Starts `s3hpc serve` (posix backend) on a fresh temporary root, writes the suite's config for it,
# runs s3tests/functional/test_s3.py and test_headers.py minus what s3hpc does not offer
# (server-side encryption, bucket logging, cloud tiering) and the cases ceph marks
# fails_on_rgw, and prints "s3-tests score: core P/N, all P/N" (core: test_s3.py cases with no
# pytest marker at all; bench/s3tests_score.py) and a second line in issue 37's counting
# (test_s3.py minus fails_on_aws, fails_on_rgw and the two IAM-account cases: 587 at suite
# commit 8f0ae7b; the SSE and bucket-logging cases of it run too, only for that line).
# Per-test outcomes go to $OUT/results.json and
# pytest's log to $OUT/pytest.log (OUT defaults to /tmp/s3tests-out).
# Env: S3HPC_BIN (default target/debug/s3hpc), S3TESTS_PY (a Python with the suite's
# requirements.txt installed; by default a venv at ${S3TESTS_VENV:-/tmp/s3tests-venv} is made and
# filled from PyPI), PORT (default 18000), TEST_TIMEOUT (seconds per test, default 120).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(dirname "$HERE")
SUITE=${1:?usage: bench/s3tests.sh SUITE_DIR [-- SERVE_ARGS...] [-- PYTEST_ARGS...]}
SUITE=$(cd "$SUITE" && pwd)
shift
SERVE_ARGS=()
PYTEST_ARGS=()
if [ "${1:-}" = "--" ]; then
  shift
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do SERVE_ARGS+=("$1"); shift; done
  if [ "${1:-}" = "--" ]; then shift; PYTEST_ARGS=("$@"); fi
fi
S3HPC_BIN=${S3HPC_BIN:-$REPO/target/debug/s3hpc}
PORT=${PORT:-18000}
OUT=${OUT:-/tmp/s3tests-out}
mkdir -p "$OUT"
[ -x "$S3HPC_BIN" ] || { echo "no s3hpc binary at $S3HPC_BIN (cargo build -p s3hpc)" >&2; exit 2; }
[ -f "$SUITE/s3tests/functional/test_s3.py" ] || { echo "$SUITE is not an s3-tests checkout" >&2; exit 2; }

if [ -z "${S3TESTS_PY:-}" ]; then
  VENV=${S3TESTS_VENV:-/tmp/s3tests-venv}
  if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r "$SUITE/requirements.txt" pytest-timeout
  fi
  S3TESTS_PY=$VENV/bin/python
fi

WORK=$(mktemp -d /tmp/s3tests.XXXXXX)
SERVER_PID=
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# The suite's accounts (its s3tests.conf.SAMPLE values), as s3hpc accounts with the same canonical
# ids and display names, so the suite's owner and grant checks compare like with like.
cat > "$WORK/users.toml" <<'TOML'
[[users]]
access_key = "0555b35654ad1656d804"
secret_key = "h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q=="
id = "testid"
name = "M. Tester"

[[users]]
access_key = "NOPQRSTUVWXYZABCDEFG"
secret_key = "nopqrstuvwxyzabcdefghijklmnabcdefghijklm"
id = "56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234"
name = "john.doe"

[[users]]
access_key = "HIJKLMNOPQRSTUVWXYZA"
secret_key = "opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab"
id = "9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
name = "testx$tenanteduser"
TOML
cat > "$WORK/s3tests.conf" <<CONF
[DEFAULT]
host = 127.0.0.1
port = $PORT
is_secure = False
ssl_verify = False
[fixtures]
bucket prefix = s3t-{random}-
[s3 main]
display_name = M. Tester
user_id = testid
email = tester@ceph.com
api_name = default
access_key = 0555b35654ad1656d804
secret_key = h7GhxuBLTrlhVUyxSPUKUV8r/2EI4ngqJxD7iBdBYLhwluN30JaT3Q==
[s3 alt]
display_name = john.doe
email = john.doe@example.com
user_id = 56789abcdef0123456789abcdef0123456789abcdef0123456789abcdef01234
access_key = NOPQRSTUVWXYZABCDEFG
secret_key = nopqrstuvwxyzabcdefghijklmnabcdefghijklm
[s3 tenant]
display_name = testx\$tenanteduser
user_id = 9876543210abcdef0123456789abcdef0123456789abcdef0123456789abcdef
access_key = HIJKLMNOPQRSTUVWXYZA
secret_key = opqrstuvwxyzabcdefghijklmnopqrstuvwxyzab
email = tenanteduser@example.com
tenant = testx
# The suite reads these sections even when no IAM/STS test runs; s3hpc has no such accounts.
[iam]
email = s3@example.com
user_id = 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef
access_key = ABCDEFGHIJKLMNOPQRST
secret_key = abcdefghijklmnopqrstuvwxyzabcdefghijklmn
display_name = youruseridhere
[iam root]
access_key = AAAAAAAAAAAAAAAAAAaa
secret_key = aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
user_id = RGW11111111111111111
email = account1@ceph.com
[iam alt root]
access_key = BBBBBBBBBBBBBBBBBBbb
secret_key = bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
user_id = RGW22222222222222222
email = account2@ceph.com
CONF

mkdir "$WORK/root"
"$S3HPC_BIN" serve "$WORK/root" --backend posix --listen "127.0.0.1:$PORT" --config "$WORK/users.toml" \
  ${SERVE_ARGS[@]+"${SERVE_ARGS[@]}"} >"$OUT/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
  grep -qs "listening on" "$OUT/server.log" && break
  kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUT/server.log" >&2; exit 1; }
  sleep 0.1
done

# The script's selection ("all"): both files minus these markers. Issue 37's counting (587 cases)
# also takes the test_s3.py cases these markers drop that are not fails_on_aws (SSE, bucket
# logging); they run too, so one run prints both scores (bench/s3tests_score.py).
EXCLUDE="encryption or sse_s3 or bucket_encryption or bucket_logging or bucket_logging_cleanup"
EXCLUDE="$EXCLUDE or fails_without_logging_rollover or cloud_transition or cloud_restore or fails_on_rgw"
ISSUE37="not fails_on_aws and not fails_on_rgw and not iam_account and not iam_user"
export S3TESTS_EXCLUDE_MARKS="${EXCLUDE// or / }"
TIMEOUT_ARGS=()
if "$S3TESTS_PY" -c "import pytest_timeout" 2>/dev/null; then TIMEOUT_ARGS=(--timeout "${TEST_TIMEOUT:-120}"); fi
cd "$SUITE"
set +e
S3TEST_CONF="$WORK/s3tests.conf" S3TESTS_RESULTS="$OUT/results.json" PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}" \
  "$S3TESTS_PY" -m pytest -p s3tests_score -q -rf --no-header --tb=native --durations=20 -o cache_dir="$WORK/.pytest_cache" \
  ${TIMEOUT_ARGS[@]+"${TIMEOUT_ARGS[@]}"} -m "not ($EXCLUDE) or ($ISSUE37)" \
  s3tests/functional/test_s3.py s3tests/functional/test_headers.py \
  ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"} >"$OUT/pytest.log" 2>&1
rc=$?
set -e
grep -E "^s3-tests score" "$OUT/pytest.log" || { tail -30 "$OUT/pytest.log"; exit 1; }
tail -1 "$OUT/pytest.log"
exit 0
