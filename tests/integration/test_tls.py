"""Native TLS (`--tls-cert`/`--tls-key`) against the real binary, with CAs made by openssl in the
test: boto3 and curl over https, a file body (sendfile path) and an upload through TLS, an
untrusted certificate refused, and SIGHUP swapping the certificate for new connections while an
open connection keeps working."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import ssl
import subprocess
import time
import uuid

import pytest

from conftest import ACCESS_KEY, SECRET_KEY, Server, sign_headers

CREDS = ["--access-key", ACCESS_KEY, "--secret-key", SECRET_KEY]


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def make_ca_and_cert(d, name):
    """A CA `name`-ca.pem and a server certificate `name`.pem/.key for 127.0.0.1 and localhost."""
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", f"/CN={name} test CA",
            "-keyout", f"{name}-ca.key", "-out", f"{name}-ca.pem", cwd=d)
    (d / f"{name}.ext").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                                   "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                                   "extendedKeyUsage=serverAuth\n")
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{name}-ca.pem", "-CAkey", f"{name}-ca.key",
            "-CAcreateserial", "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.pem", cwd=d)
    return d / f"{name}-ca.pem", d / f"{name}.pem", d / f"{name}.key"


@pytest.fixture
def tls_server(tmp_path):
    ca, cert, key = make_ca_and_cert(tmp_path, "one")
    live_cert, live_key = tmp_path / "server.pem", tmp_path / "server.key"
    live_cert.write_bytes(cert.read_bytes())
    live_key.write_bytes(key.read_bytes())
    root = tmp_path / "root"
    root.mkdir()
    srv = Server(root, [*CREDS, "--tls-cert", str(live_cert), "--tls-key", str(live_key)])
    srv.tmp, srv.ca, srv.live = tmp_path, ca, (live_cert, live_key)
    yield srv
    rc = srv.stop()
    assert rc == 0, "".join(srv.output)[-3000:]


def tls_client(endpoint, verify=None):
    import boto3
    from botocore.config import Config

    cfg = Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, signature_version="s3v4")
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY,
                        region_name="us-east-1", config=cfg, verify=verify)


def tls_conn(srv, ca):
    host, port = srv.host_port
    ctx = ssl.create_default_context(cafile=str(ca))
    return http.client.HTTPSConnection(host, port, context=ctx, timeout=20)


def signed(conn, srv, method, path, body=b""):
    hdrs = sign_headers(method, f"{srv.endpoint}{path}", body)
    conn.request(method, path, body=body, headers=hdrs)
    r = conn.getresponse()
    return r.status, r.read()


def test_boto3_and_curl_over_tls(tls_server):
    srv = tls_server
    assert srv.endpoint.startswith("https://")
    s3 = tls_client(srv.endpoint, verify=str(srv.ca))
    b = "tls-" + uuid.uuid4().hex[:8]
    s3.create_bucket(Bucket=b)
    small = os.urandom(4096)
    big = os.urandom((3 << 20) + 12345)
    s3.put_object(Bucket=b, Key="small", Body=small)
    s3.put_object(Bucket=b, Key="big", Body=big)
    assert s3.get_object(Bucket=b, Key="small")["Body"].read() == small
    assert s3.get_object(Bucket=b, Key="big")["Body"].read() == big  # a file body: read + encrypt
    got = s3.get_object(Bucket=b, Key="big", Range="bytes=1000-1999")["Body"].read()
    assert got == big[1000:2000]
    s3.upload_fileobj(__import__("io").BytesIO(big * 3), b, "mp",
                      Config=__import__("boto3").s3.transfer.TransferConfig(multipart_threshold=5 << 20,
                                                                            multipart_chunksize=5 << 20))
    assert s3.get_object(Bucket=b, Key="mp")["Body"].read() == big * 3
    # curl: an unsigned request gets the S3 error document, over a verified TLS connection.
    out = subprocess.run(["curl", "-sS", "--cacert", str(srv.ca), f"{srv.endpoint}/{b}/small"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "<Code>AccessDenied</Code>" in out.stdout
    # A client that does not trust the CA is refused; plain HTTP on the TLS port gets a 400
    # (test_plain_http_on_the_tls_port_gets_a_400_saying_so).
    untrusted = tls_client(srv.endpoint)
    with pytest.raises(Exception) as e:
        untrusted.list_buckets()
    assert "CERTIFICATE_VERIFY_FAILED" in str(e.value) or "SSL" in str(e.value)
    host, port = srv.host_port
    with socket.create_connection((host, port), timeout=5) as s:
        s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(100).startswith(b"HTTP/1.1 400 ")
    s3.list_buckets()  # still serving


def test_sighup_reloads_certificate_without_dropping_connections(tls_server):
    srv = tls_server
    b = "hup-" + uuid.uuid4().hex[:8]
    old = tls_conn(srv, srv.ca)
    assert signed(old, srv, "PUT", f"/{b}")[0] == 200
    assert signed(old, srv, "PUT", f"/{b}/k", b"v1")[0] == 200
    ca2, cert2, key2 = make_ca_and_cert(srv.tmp, "two")
    live_cert, live_key = srv.live
    live_cert.write_bytes(cert2.read_bytes())
    live_key.write_bytes(key2.read_bytes())
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not any("TLS certificate and key reloaded" in line for line in srv.output):
        assert time.monotonic() < deadline, "".join(srv.output)
        time.sleep(0.05)
    # The connection opened before the reload goes on.
    assert signed(old, srv, "GET", f"/{b}/k") == (200, b"v1")
    # New connections get the new certificate: trusted through the new CA, refused through the old.
    new = tls_conn(srv, ca2)
    assert signed(new, srv, "GET", f"/{b}/k") == (200, b"v1")
    with pytest.raises(ssl.SSLCertVerificationError):
        signed(tls_conn(srv, srv.ca), srv, "GET", f"/{b}/k")
    # A broken key file on reload keeps the working certificate.
    live_key.write_text("not a key\n")
    srv.proc.send_signal(signal.SIGHUP)
    deadline = time.monotonic() + 10
    while not any("TLS certificate NOT reloaded" in line for line in srv.output):
        assert time.monotonic() < deadline, "".join(srv.output)
        time.sleep(0.05)
    assert signed(tls_conn(srv, ca2), srv, "GET", f"/{b}/k") == (200, b"v1")
    assert signed(old, srv, "DELETE", f"/{b}/k")[0] == 204
    assert signed(new, srv, "DELETE", f"/{b}")[0] == 204


def test_plain_http_on_the_tls_port_gets_a_400_saying_so(tls_server):
    """A client configured with http:// against the TLS port gets an answer it can show (400
    BadRequest naming HTTPS), not a bare close ("Connection was closed")."""
    srv = tls_server
    host, port = srv.host_port
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(b"GET /some-bucket?list-type=2 HTTP/1.1\r\nHost: x\r\nUser-Agent: t\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert data.startswith(b"HTTP/1.1 400 Bad Request\r\n"), data
    assert b"<Code>BadRequest</Code>" in data and b"https://" in data and b"connection: close" in data.lower()
    from botocore.exceptions import ClientError
    plain = tls_client(f"http://{host}:{port}")
    with pytest.raises(ClientError) as e:
        plain.list_buckets()
    assert e.value.response["Error"]["Code"] == "BadRequest"
    assert "plain HTTP" in e.value.response["Error"]["Message"]
    # TLS clients are served as before.
    assert "Buckets" in tls_client(srv.endpoint, verify=str(srv.ca)).list_buckets()


def test_idle_connection_closed_with_close_notify(tls_server):
    """A kept-alive connection the gateway closes (here at shutdown; likewise after the idle
    timeout) ends with TLS close_notify, not a bare TCP close: clients that read to the end
    (`openssl s_client -ign_eof`, the versitygw suite's aws-chunked cases) otherwise report
    "unexpected eof while reading"."""
    srv = tls_server
    host, port = srv.host_port
    ctx = ssl.create_default_context(cafile=str(srv.ca))
    raw = socket.create_connection((host, port), timeout=20)
    s = ctx.wrap_socket(raw, server_hostname="127.0.0.1", suppress_ragged_eofs=False)
    try:
        s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        data = b""
        while b"\r\n\r\n" not in data:
            data += s.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(line.split(b":", 1)[1] for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:")))
        while len(body) < length:
            body += s.recv(65536)
        assert b"connection: close" not in head.lower()  # kept alive
        srv.stop()
        # close_notify: a clean end of stream (b""); a bare close raises SSLEOFError here.
        assert s.recv(65536) == b""
    finally:
        s.close()
