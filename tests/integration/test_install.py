"""`scripts/install --prefix`: the layout an HPC site expects, and a libs3 drop-in that exports
only libs3's symbols (no symbols of Rust dependencies leaking into the programs that load it)."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, s3hpc_bin


def exported(lib: Path) -> list[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(lib)], check=True, capture_output=True, text=True)
    return [line.split()[-1] for line in out.stdout.splitlines() if line.strip()]


def header_functions() -> set[str]:
    text = (REPO / "crates" / "s3hpc-libs3" / "include" / "libs3.h").read_text()
    text = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    return set(re.findall(r"\b(S3_\w+)\s*\(", text))


@pytest.fixture(scope="module")
def built_lib() -> Path:
    lib = Path(s3hpc_bin()).resolve().parent / "libs3.so"
    if not lib.exists():
        subprocess.run(["cargo", "build", "-p", "s3hpc-libs3"], cwd=REPO, check=True)
    return lib


def test_libs3_exports_only_libs3_symbols(built_lib):
    names = exported(built_lib)
    foreign = [n for n in names if not n.startswith("S3_")]
    assert not foreign, f"libs3.so exports {len(foreign)} symbols that are not libs3's: {foreign[:10]}"
    missing = header_functions() - set(names)
    assert not missing, f"functions of libs3.h not exported: {sorted(missing)}"


def test_install_prefix_layout(tmp_path, built_lib):
    prefix = tmp_path / "prefix"
    profile = Path(s3hpc_bin()).resolve().parent.name
    env = {**os.environ, "CARGO_TARGET_DIR": str(Path(s3hpc_bin()).resolve().parent.parent)}
    subprocess.run([str(REPO / "scripts" / "install"), "--prefix", str(prefix), "--profile", profile, "--no-build"],
                   check=True, env=env, capture_output=True)
    assert os.access(prefix / "bin" / "s3hpc", os.X_OK)
    assert (prefix / "lib" / "libs3.so.4").is_file()
    assert os.readlink(prefix / "lib" / "libs3.so") == "libs3.so.4"
    assert (prefix / "include" / "libs3.h").is_file()
    assert (prefix / "share" / "doc" / "s3hpc" / "DEPLOY.md").is_file()
    # The installed unit names this prefix's binary and docs (the repository's names the
    # example prefix of DEPLOY.md, /opt/s3hpc/0.1.0), and nothing under /usr/local.
    unit = (prefix / "share" / "s3hpc" / "deploy" / "s3hpc.service").read_text()
    assert f"ExecStart={prefix}/bin/s3hpc serve " in unit, unit
    assert f"Documentation=file://{prefix}/share/doc/s3hpc/DEPLOY.md" in unit
    assert "/usr/local" not in unit and "/opt/s3hpc/0.1.0" not in unit
    repo_unit = (REPO / "deploy" / "s3hpc.service").read_text()
    assert "ExecStart=/opt/s3hpc/0.1.0/bin/s3hpc serve " in repo_unit and "/usr/local" not in repo_unit
    soname = subprocess.run(["readelf", "-d", str(prefix / "lib" / "libs3.so.4")], check=True, capture_output=True,
                            text=True).stdout
    assert "Library soname: [libs3.so.4]" in soname
    version = subprocess.run([str(prefix / "bin" / "s3hpc"), "--version"], check=True, capture_output=True, text=True)
    assert version.stdout.startswith("s3hpc ")
    # The Lmod module file for this prefix puts the binary and the drop-in on the paths, and
    # unloading takes them off again.
    lmod = Path("/usr/share/lmod/lmod/init/bash")
    if lmod.exists():
        script = (f"source {lmod}; module use {prefix}/share/modulefiles; module load s3hpc; "
                  "command -v s3hpc; echo \"LD=$LD_LIBRARY_PATH\"; s3hpc --version; "
                  "module unload s3hpc; echo \"after=$(command -v s3hpc || true)\"")
        out = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, text=True,
                             env={k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH",)})
        assert out.returncode == 0, out.stderr
        lines = out.stdout.splitlines()
        assert lines[0] == str(prefix / "bin" / "s3hpc"), out.stdout
        assert f"LD={prefix}/lib" in lines[1], out.stdout
        assert lines[2].startswith("s3hpc "), out.stdout
        assert not lines[3].startswith(f"after={prefix}"), out.stdout
    # Refuses to run without a prefix.
    r = subprocess.run([str(REPO / "scripts" / "install")], capture_output=True, text=True)
    assert r.returncode == 2 and "--prefix" in r.stderr
