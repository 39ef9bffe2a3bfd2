#!/usr/bin/env bash
# Runs every s3hpc test, installing what the tests need first. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")"
export CARGO_TERM_COLOR=never

echo "== installing test dependencies"
./scripts/install-test-deps

echo "== format and lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings

echo "== build"
cargo build --workspace --all-targets

echo "== Rust tests (unit, conformance, property, concurrency, crash)"
cargo test --workspace -- --test-threads=2

echo "== C tests (libs3 drop-in: embedded and node-local modes)"
make -C tests/c test

echo "== integration tests: the real s3hpc binary driven by boto3, aws CLI, s3cmd, rclone"
export S3HPC_BIN="$PWD/target/debug/s3hpc"
.venv/bin/python -m pytest -q tests/integration
