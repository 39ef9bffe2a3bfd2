"""Accounts: `s3hpc user add|list|remove|rotate` edit the users file safely, and a running
gateway reloads it on SIGHUP or when the file changes, without dropping requests in flight; a
broken file is refused and the old accounts stay in force."""
from __future__ import annotations

import http.client
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from conftest import Server, err_code, make_client, s3hpc_bin, sign_headers, wait_until


def user_cmd(cfg, *args, check=True):
    p = subprocess.run([s3hpc_bin(), "user", *args, "--config", str(cfg)], capture_output=True, text=True,
                       timeout=30)
    if check:
        assert p.returncode == 0, p.stderr
    return p


def keys_of(out: str):
    ak = re.search(r"access key: (\S+)", out).group(1)
    sk = re.search(r"secret key: (\S+)", out).group(1)
    return ak, sk


def test_user_command_round_trip(tmp_path):
    cfg = tmp_path / "users.toml"
    a = keys_of(user_cmd(cfg, "add", "--uid", "4242", "--gid", "4242", "--name", "Alice").stdout)
    b = keys_of(user_cmd(cfg, "add", "--admin", "--access-key", "ADMINKEY0000000000001").stdout)
    assert b[0] == "ADMINKEY0000000000001"
    assert stat.S_IMODE(os.stat(cfg).st_mode) == 0o600
    listed = user_cmd(cfg, "list").stdout
    assert a[0] in listed and "uid=4242" in listed and 'name="Alice"' in listed
    assert "ADMINKEY0000000000001" in listed and "admin" in listed
    assert a[1] not in listed and b[1] not in listed, "list must not print secrets"
    # A duplicate key and an unknown login are refused; the file is unchanged.
    before = cfg.read_text()
    p = user_cmd(cfg, "add", "--access-key", "ADMINKEY0000000000001", check=False)
    assert p.returncode != 0 and "exists already" in p.stderr
    p = user_cmd(cfg, "add", "--user", "no-such-login-s3hpc", check=False)
    assert p.returncode != 0 and "no such user" in p.stderr
    assert cfg.read_text() == before
    rotated = keys_of(user_cmd(cfg, "rotate", a[0]).stdout)
    assert rotated[0] == a[0] and rotated[1] != a[1]
    assert rotated[1] in cfg.read_text() and a[1] not in cfg.read_text()
    user_cmd(cfg, "remove", a[0])
    assert a[0] not in user_cmd(cfg, "list").stdout
    p = user_cmd(cfg, "remove", a[0], check=False)
    assert p.returncode != 0 and "no user" in p.stderr
    assert not list(tmp_path.glob(".users.toml.*.tmp")), "temp files left behind"


@pytest.mark.skipif(os.geteuid() != 0, reason="changing owners needs root")
def test_user_commands_run_as_root_keep_the_files_owner_group_and_mode(tmp_path):
    """The systemd unit's sequence: root runs `s3hpc user add --config FILE NAME` in the
    service user's directory; the file must stay readable by the gateway's user after every
    add, rotate and remove (it used to become root's, 0600)."""
    etc = tmp_path / "etc-s3hpc"
    etc.mkdir(mode=0o700)
    os.chown(etc, 4242, 4343)
    cfg = etc / "users.toml"
    # Created: mode 0600, owned by the directory's owner and group; the positional NAME works.
    a = keys_of(user_cmd(cfg, "add", "--uid", "4242", "--gid", "4343", "alice").stdout)
    st = os.stat(cfg)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4242, 4343, 0o600)
    assert 'name="alice"' in user_cmd(cfg, "list").stdout
    # A site's own choice (group-readable, another group) survives every change.
    os.chown(cfg, 4242, 4444)
    os.chmod(cfg, 0o640)
    b = keys_of(user_cmd(cfg, "add", "--name", "bob").stdout)
    user_cmd(cfg, "rotate", a[0])
    user_cmd(cfg, "remove", b[0])
    st = os.stat(cfg)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (4242, 4444, 0o640)
    assert a[0] in cfg.read_text() and b[0] not in cfg.read_text()
    # NAME and --name together are refused.
    p = user_cmd(cfg, "add", "--name", "x", "carol", check=False)
    assert p.returncode != 0 and "cannot be used with" in p.stderr
    assert not list(etc.glob(".users.toml.*.tmp")), "temp files left behind"


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_user_command_not_run_by_the_files_owner_warns():
    """Someone other than root and the file's owner (allowed by the directory) still edits it,
    and is told the owner could not be kept."""
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="s3hpc-users-"))   # pytest's tmp_path is private to root
    os.chmod(d, 0o777)
    cfg = d / "users.toml"
    user_cmd(cfg, "add", "--name", "first")
    os.chown(cfg, 4242, 4242)
    os.chmod(cfg, 0o666)
    p = subprocess.run(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups", s3hpc_bin(), "user",
                        "add", "--config", str(cfg), "second"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    assert "could not be kept" in p.stderr and "4242:4242" in p.stderr
    st = os.stat(cfg)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (65534, 0o666)
    assert 'name = "second"' in cfg.read_text()
    shutil.rmtree(d)


def test_reload_on_sighup_and_on_change_keeps_requests_in_flight(tmp_path):
    cfg = tmp_path / "users.toml"
    a = keys_of(user_cmd(cfg, "add").stdout)
    srv = Server(tmp_path / "root", extra=["--config", str(cfg), "--durability", "none"])
    try:
        ca = make_client(srv.endpoint, *a)
        ca.create_bucket(Bucket="reload")
        # An upload in flight across the reload: headers and half the body now, the rest later.
        body = b"x" * (256 << 10)
        url = f"{srv.endpoint}/reload/inflight"
        hdrs = sign_headers("PUT", url, body, access_key=a[0], secret_key=a[1])
        host, port = srv.host_port
        conn = http.client.HTTPConnection(host, port, timeout=30)
        conn.putrequest("PUT", "/reload/inflight", skip_accept_encoding=True)
        for k, v in hdrs.items():
            conn.putheader(k, v)
        conn.putheader("Content-Length", str(len(body)))
        conn.endheaders()
        conn.send(body[: len(body) // 2])

        # A new account, picked up by SIGHUP.
        b = keys_of(user_cmd(cfg, "add").stdout)
        cb = make_client(srv.endpoint, *b)
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: _works(cb), timeout=10), "the new account was not picked up"

        conn.send(body[len(body) // 2:])
        r = conn.getresponse()
        r.read()
        assert r.status == 200, "the upload in flight failed across the reload"
        conn.close()
        assert ca.head_object(Bucket="reload", Key="inflight")["ContentLength"] == len(body)

        # A broken file is refused; the accounts in force stay.
        good = cfg.read_text()
        cfg.write_text(good + '\n[[users]]\naccess_key = "X"\nsecret_key = "y"\nshell = "bash"\n')
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: any("NOT reloaded" in line for line in srv.output), timeout=10), srv.output
        assert _works(cb) and _works(ca)

        # Without a signal, a changed file is picked up too: rotating A's secret locks the old one out.
        cfg.write_text(good)
        rotated = keys_of(user_cmd(cfg, "rotate", a[0]).stdout)
        assert wait_until(lambda: not _works(ca), timeout=10), "the rotated secret still works"
        assert _works(make_client(srv.endpoint, *rotated))
    finally:
        srv.stop()


def _works(client) -> bool:
    try:
        client.list_buckets()
        return True
    except ClientError as e:
        assert err_code(e) in ("InvalidAccessKeyId", "SignatureDoesNotMatch"), e
        return False
