import os
import subprocess


def test_binary_prints_help():
    out = subprocess.run([os.environ["S3HPC_BIN"], "--help"], capture_output=True, text=True, check=True)
    assert "serve" in out.stdout and "bench" in out.stdout
