"""`[serve]` in the `--config` TOML: settings apply, command-line flags override them, unknown keys
are refused by name, `s3hpc user` keeps the table, and SIGHUP says which changes need a restart."""
from __future__ import annotations

import json
import signal
import subprocess
import time

from conftest import ACCESS_KEY, SECRET_KEY, Server, make_client, s3hpc_bin, wait_until

USERS = f'[[users]]\naccess_key = "{ACCESS_KEY}"\nsecret_key = "{SECRET_KEY}"\n'


def test_serve_table_applies_and_flags_override(tmp_path):
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS + '\n[serve]\nadmin-listen = "127.0.0.1:0"\naccess_log = true\nlog-format = "json"\n'
                   'region = "eu-west-1"\n')
    root = tmp_path / "root"
    root.mkdir()
    # --log-format on the command line wins over the file; the rest comes from [serve].
    srv = Server(root, ["--config", str(cfg), "--log-format", "text"])
    try:
        assert wait_until(lambda: any("admin on http://127.0.0.1:" in line for line in srv.output), 10)
        s3 = make_client(srv.endpoint, region_name="eu-west-1")  # AWS refuses another region's scope
        s3.create_bucket(Bucket="cfg-bucket", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        assert s3.get_bucket_location(Bucket="cfg-bucket")["LocationConstraint"] == "eu-west-1"
        # access_log = true from the file; text format from the flag (not JSON).
        assert wait_until(lambda: any("s3hpc::access" in line and "GetBucketLocation" in line
                                      for line in srv.output), 10), "".join(srv.output)
        assert not any(line.startswith("{") for line in srv.output)
        # A changed [serve] setting is named on SIGHUP (it needs a restart).
        cfg.write_text(cfg.read_text().replace('region = "eu-west-1"', 'region = "eu-west-2"'))
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: any("apply at the next restart" in line and "region" in line
                                      for line in srv.output), 10), "".join(srv.output)
        s3.delete_bucket(Bucket="cfg-bucket")
    finally:
        srv.stop()


def test_serve_table_json_logs_and_bad_keys(tmp_path):
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS + '\n[serve]\nlog-format = "json"\naccess-log = true\n')
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, ["--config", str(cfg)])
    try:
        make_client(srv.endpoint).list_buckets()
        assert wait_until(lambda: any(line.startswith("{") and "ListBuckets" in line for line in srv.output), 10)
        line = next(line for line in srv.output if line.startswith("{") and "ListBuckets" in line)
        rec = json.loads(line)
        assert rec["target"] == "s3hpc::access" and len(rec["span"]["id"]) == 16
        assert SECRET_KEY not in "".join(srv.output)
    finally:
        srv.stop()
    for bad, why in [('nosuch = 1', "no setting `nosuch`"), ('max-uploads = "many"', "max-uploads"),
                     ('config = "other.toml"', "cannot set `config`"), ('access-log = "yes"', "true or false"),
                     # A port alone is refused at load, naming the key (it used to fail at bind).
                     ('listen = 9630', '[serve] listen: expected an address string such as "0.0.0.0:9630"'),
                     ('admin-listen = "9100"', "[serve] admin-listen: expected an address string HOST:PORT")]:
        cfg.write_text(USERS + f"\n[serve]\n{bad}\n")
        r = subprocess.run([s3hpc_bin(), "serve", str(root), "--config", str(cfg), "--listen", "127.0.0.1:0"],
                           capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and why in r.stderr, (bad, r.stderr)


def _idle_close_after(srv) -> float:
    """Seconds from a keep-alive response until the gateway closes the idle connection (the
    versitygw suite's `openssl s_client -ign_eof` waits for exactly that)."""
    import socket
    s = socket.create_connection(srv.host_port, timeout=60)
    try:
        s.sendall(b"GET /no-such-bucket-idle HTTP/1.1\r\nHost: x\r\n\r\n")
        buf = b""
        while b"\r\n\r\n" not in buf:
            buf += s.recv(4096)
        t0 = time.monotonic()
        while s.recv(4096):
            pass
        return time.monotonic() - t0
    finally:
        s.close()


def test_idle_timeout_flag_and_config_key(tmp_path):
    """`--idle-timeout SECS` (or `idle-timeout` in [serve]) closes idle keep-alive connections
    after that long; the default stays 30 s."""
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY, "--idle-timeout", "1.5"])
    try:
        took = _idle_close_after(srv)
        assert 1.0 <= took < 5, took
    finally:
        srv.stop()
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS + "\n[serve]\nidle-timeout = 1\n")
    srv = Server(root, ["--config", str(cfg)])
    try:
        took = _idle_close_after(srv)
        assert 0.5 <= took < 5, took
    finally:
        srv.stop()
    for bad in ["0", "-1", "1e9"]:
        r = subprocess.run([s3hpc_bin(), "serve", str(root), "--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY,
                            "--listen", "127.0.0.1:0", f"--idle-timeout={bad}"], capture_output=True, text=True, timeout=30)
        assert r.returncode != 0 and "--idle-timeout" in r.stderr, (bad, r.stderr)


def test_user_commands_keep_the_serve_table(tmp_path):
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS + '\n[serve]\nlisten = "127.0.0.1:9999"\nbinary = ["unix:///tmp/x.sock"]\n')
    subprocess.run([s3hpc_bin(), "user", "add", "--config", str(cfg), "--access-key", "secondKey01"],
                   check=True, capture_output=True, timeout=30)
    text = cfg.read_text()
    assert "secondKey01" in text and "[serve]" in text and 'listen = "127.0.0.1:9999"' in text
    assert "unix:///tmp/x.sock" in text


def test_sighup_applies_a_changed_log_level(tmp_path, monkeypatch):
    """`log-level` in [serve] is applied again on SIGHUP (no restart): the access log, off under
    "warn", appears once the file says "warn,s3hpc::access=info"; a filter that does not parse is
    refused with the old one kept, and log-level is not among the settings that need a restart."""
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS + '\n[serve]\naccess-log = true\nlog-level = "warn"\n')
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.delenv("RUST_LOG", raising=False)  # it would set the level instead of the file
    srv = Server(root, ["--config", str(cfg)])
    try:
        s3 = make_client(srv.endpoint)
        s3.list_buckets()
        time.sleep(0.3)
        assert not any("s3hpc::access" in line for line in srv.output), "".join(srv.output)
        cfg.write_text(cfg.read_text().replace('log-level = "warn"', 'log-level = "warn,s3hpc::access=info"'))
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: any("log level now" in line for line in srv.output), 10), "".join(srv.output)
        s3.list_buckets()
        assert wait_until(lambda: any("s3hpc::access" in line and "ListBuckets" in line for line in srv.output),
                          10), "".join(srv.output)
        assert not any("apply at the next restart" in line for line in srv.output), "".join(srv.output)
        cfg.write_text(cfg.read_text().replace('log-level = "warn,s3hpc::access=info"', 'log-level = "warn,[[["'))
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: any("not applied" in line for line in srv.output), 10), "".join(srv.output)
        n = sum("s3hpc::access" in line for line in srv.output)
        s3.list_buckets()
        assert wait_until(lambda: sum("s3hpc::access" in line for line in srv.output) > n, 10), "old filter kept"
    finally:
        srv.stop()


def test_log_lines_carry_the_request_id(tmp_path):
    """Lines logged while a request is handled carry the id the client got in x-amz-request-id:
    `request{id=...}:` in text, `"span":{"id":...}` in JSON (DEPLOY.md, Logs)."""
    for fmt in ("text", "json"):
        root = tmp_path / fmt
        root.mkdir()
        cfg = tmp_path / f"{fmt}.toml"
        cfg.write_text(USERS)
        srv = Server(root, ["--config", str(cfg), "--access-log", "--log-format", fmt])
        try:
            s3 = make_client(srv.endpoint)
            rid = s3.list_buckets()["ResponseMetadata"]["RequestId"]
            assert len(rid) == 16
            assert wait_until(lambda: any(rid in line and "ListBuckets" in line for line in srv.output), 10)
            line = next(line for line in srv.output if rid in line and "ListBuckets" in line)
            if fmt == "text":
                assert f" INFO request{{id={rid}}}: s3hpc::access: {rid} GET / ListBuckets 200" in line, line
            else:
                rec = json.loads(line)
                assert rec["span"] == {"id": rid, "name": "request"}, rec
                assert rec["target"] == "s3hpc::access" and rec["level"] == "INFO", rec
        finally:
            srv.stop()


def test_text_logs_have_no_colour_codes_off_a_terminal(tmp_path):
    """Logs written to a pipe or file (the journal, `2>log`) are plain text: no ANSI escapes."""
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text(USERS)
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, ["--config", str(cfg), "--access-log"])
    try:
        make_client(srv.endpoint).list_buckets()
        assert wait_until(lambda: any("ListBuckets" in line for line in srv.output), 10)
        # A line with a field (`users=1`): its name was set in italics.
        srv.proc.send_signal(signal.SIGHUP)
        assert wait_until(lambda: any("accounts reloaded" in line for line in srv.output), 10)
    finally:
        srv.stop()
    out = "".join(srv.output)
    assert "s3hpc::access" in out and "users=1" in out, out[-2000:]
    assert "\x1b[" not in out, out[-2000:]
