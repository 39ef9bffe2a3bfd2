"""The web console (`s3hpc serve --console-listen`, docs/CONSOLE.md).

Plain-HTTP tests check the session and CSRF protections one by one (each fails without its
protection); browser tests drive Debian's chromium through Selenium and chromium-driver
(scripts/install-test-deps) against the real binary: log in, upload 20 MiB, browse, share link
fetched with curl, malformed policy refused, another user's bucket refused, logout. With
S3HPC_CONSOLE_SCREENSHOTS=DIR the browser tests save screenshots of the main pages there
(docs/console/ holds the ones docs/CONSOLE.md shows).
"""
from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path
from urllib.parse import urlencode

import pytest

from conftest import Server, make_client, wait_until

ALICE = ("consoleAlice01", "alice-secret/1+x")
BOB = ("consoleBob0001", "bob-secret/2+y")
ADMIN = ("consoleAdmin01", "admin-secret/3+z")


def users_toml(alice_secret=ALICE[1]):
    return (f'[[users]]\naccess_key = "{ALICE[0]}"\nsecret_key = "{alice_secret}"\nname = "alice"\n\n'
            f'[[users]]\naccess_key = "{BOB[0]}"\nsecret_key = "{BOB[1]}"\nname = "bob"\n\n'
            f'[[users]]\naccess_key = "{ADMIN[0]}"\nsecret_key = "{ADMIN[1]}"\nname = "operator"\nadmin = true\n')


class Console:
    """A gateway with its console; `url` is the console's base URL."""

    def __init__(self, tmp: Path, extra=()):
        self.cfg = tmp / "users.toml"
        self.cfg.write_text(users_toml())
        root = tmp / "root"
        root.mkdir()
        self.root = root
        self.srv = Server(root, ["--config", str(self.cfg), "--console-listen", "127.0.0.1:0", *extra])
        assert wait_until(lambda: any("console on" in l for l in self.srv.output), 10), "".join(self.srv.output)
        line = next(l for l in self.srv.output if "console on" in l)
        self.url = re.search(r"console on (https?://\S+)", line).group(1)
        u = self.url.split("://", 1)[1]
        self.host, self.port = u.rsplit(":", 1)[0], int(u.rsplit(":", 1)[1])

    def s3(self, who):
        return make_client(self.srv.endpoint, access_key=who[0], secret_key=who[1])

    def stop(self):
        rc = self.srv.stop()
        assert rc == 0, "".join(self.srv.output)[-3000:]


@pytest.fixture(scope="module")
def console(tmp_path_factory):
    c = Console(tmp_path_factory.mktemp("console"))
    yield c
    c.stop()


def req(c, method, path, body=b"", headers=None, cookie=None, csrf=None, conn=None):
    """One request to the console; returns (status, lower-cased headers, body)."""
    h = {"Host": f"{c.host}:{c.port}", **(headers or {})}
    if cookie:
        h["Cookie"] = f"s3hpc_console={cookie}"
    if csrf:
        h["x-csrf-token"] = csrf
    conn = conn or http.client.HTTPConnection(c.host, c.port, timeout=30)
    try:
        conn.request(method, path, body=body, headers=h)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def login(c, who, **kw):
    """Log in; returns (cookie token, csrf token, the JSON answer)."""
    st, h, body = req(c, "POST", "/api/login", json.dumps({"accessKey": who[0], "secretKey": who[1]}).encode(),
                      {"Content-Type": "application/json"}, **kw)
    assert st == 200, body
    m = re.match(r"s3hpc_console=([^;]+);", h["set-cookie"])
    j = json.loads(body)
    return m.group(1), j["csrf"], j


# ---------- plain HTTP: session and CSRF protections ----------

def test_login_sets_an_httponly_samesite_strict_cookie_and_never_returns_the_secret(console):
    st, h, body = req(console, "POST", "/api/login", json.dumps({"accessKey": ALICE[0], "secretKey": ALICE[1]}).encode(),
                      {"Content-Type": "application/json"})
    assert st == 200, body
    cookie = h["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie, cookie
    assert "Secure" not in cookie  # plain HTTP: a Secure cookie would never come back
    assert ALICE[1].encode() not in body
    j = json.loads(body)
    assert j["accessKey"] == ALICE[0] and j["name"] == "alice" and j["admin"] is False and len(j["csrf"]) >= 32
    token = re.match(r"s3hpc_console=([^;]+);", cookie).group(1)
    st, _, body = req(console, "GET", "/api/session", cookie=token)
    assert st == 200 and ALICE[1].encode() not in body and json.loads(body)["csrf"] == j["csrf"]


def test_wrong_secret_and_unknown_key_are_refused(console):
    for ak, sk in [(ALICE[0], "wrong"), (ALICE[0], ""), ("noSuchKey", ALICE[1]), (ALICE[0], ALICE[1] + "x")]:
        st, h, body = req(console, "POST", "/api/login", json.dumps({"accessKey": ak, "secretKey": sk}).encode(),
                          {"Content-Type": "application/json"})
        assert st == 403 and json.loads(body)["error"] == "InvalidLogin", (ak, sk, body)
        assert "set-cookie" not in h


def test_login_only_as_json_from_the_console_itself(console):
    """A cross-site form cannot log a victim's browser in as the attacker (login CSRF)."""
    form = f"accessKey={ALICE[0]}&secretKey={ALICE[1]}".encode()
    st, h, _ = req(console, "POST", "/api/login", form, {"Content-Type": "application/x-www-form-urlencoded"})
    assert st == 403 and "set-cookie" not in h
    good = json.dumps({"accessKey": ALICE[0], "secretKey": ALICE[1]}).encode()
    st, h, _ = req(console, "POST", "/api/login", good, {"Content-Type": "application/json",
                                                         "Origin": "http://evil.example"})
    assert st == 403 and "set-cookie" not in h
    st, h, _ = req(console, "POST", "/api/login", good, {"Content-Type": "application/json",
                                                         "Sec-Fetch-Site": "cross-site"})
    assert st == 403 and "set-cookie" not in h


def test_s3_and_api_need_a_session(console):
    for path in ["/s3/", "/api/session", "/api/admin/health"]:
        st, _, body = req(console, "GET", path)
        assert st == 401 and json.loads(body)["error"] == "NotLoggedIn", path
        st, _, _ = req(console, "GET", path, cookie="forged-" + uuid.uuid4().hex)
        assert st == 401, path


def test_state_changing_requests_need_the_csrf_token(console):
    cookie, csrf, _ = login(console, ALICE)
    name = "csrf-" + uuid.uuid4().hex[:10]
    for bad in [None, "", "x" * 43, csrf[:-1]]:
        st, _, body = req(console, "PUT", f"/s3/{name}", cookie=cookie, csrf=bad)
        assert st == 403 and json.loads(body)["error"] == "InvalidCsrfToken", bad
    s3 = console.s3(ALICE)
    assert name not in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    # The right token, but a browser saying the request comes from another site.
    for site in ["cross-site", "same-site"]:  # same-site: e.g. an HTML object on the S3 port of this host
        st, _, _ = req(console, "PUT", f"/s3/{name}", cookie=cookie, csrf=csrf, headers={"Sec-Fetch-Site": site})
        assert st == 403, site
    st, _, _ = req(console, "PUT", f"/s3/{name}", cookie=cookie, csrf=csrf, headers={"Origin": "http://evil.example"})
    assert st == 403
    # POSTs of the API too (a DeleteObjects, a share link, logout).
    st, _, _ = req(console, "POST", "/api/presign", json.dumps({"bucket": name, "key": "k"}).encode(), cookie=cookie)
    assert st == 403
    st, _, _ = req(console, "POST", "/api/logout", cookie=cookie)
    assert st == 403
    assert req(console, "GET", "/api/session", cookie=cookie)[0] == 200  # still logged in
    # With the token it works (and the same-origin Origin a browser sends is fine).
    st, _, body = req(console, "PUT", f"/s3/{name}", cookie=cookie, csrf=csrf,
                      headers={"Origin": console.url, "Sec-Fetch-Site": "same-origin"})
    assert st == 200, body
    assert name in [b["Name"] for b in s3.list_buckets()["Buckets"]]
    s3.delete_bucket(Bucket=name)


def test_the_token_of_one_session_does_not_work_for_another(console):
    c1, t1, _ = login(console, ALICE)
    c2, t2, _ = login(console, ALICE)
    assert c1 != c2 and t1 != t2
    st, _, _ = req(console, "PUT", "/s3/cross-" + uuid.uuid4().hex[:8], cookie=c1, csrf=t2)
    assert st == 403


def test_logout_ends_the_session(console):
    cookie, csrf, _ = login(console, ALICE)
    st, h, _ = req(console, "POST", "/api/logout", cookie=cookie, csrf=csrf)
    assert st == 200 and "Max-Age=0" in h["set-cookie"]
    for path in ["/api/session", "/s3/"]:
        assert req(console, "GET", path, cookie=cookie)[0] == 401, path
    assert req(console, "PUT", "/s3/after-logout", cookie=cookie, csrf=csrf)[0] == 401


def test_objects_are_downloaded_as_attachments_never_run_in_the_console_origin(console):
    """An HTML object uploaded by anyone must not run as a page of the console (it could read
    the CSRF token and act as the viewer)."""
    cookie, csrf, _ = login(console, ALICE)
    s3 = console.s3(ALICE)
    b = "html-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="x/page.html", Body=b"<script>alert(1)</script>", ContentType="text/html")
    st, h, body = req(console, "GET", f"/s3/{b}/x/page.html?response-content-disposition=inline", cookie=cookie)
    assert st == 200 and body == b"<script>alert(1)</script>"
    assert h["content-disposition"].startswith("attachment;") and "page.html" in h["content-disposition"]
    assert "sandbox" in h["content-security-policy"]
    assert h["x-content-type-options"] == "nosniff"
    s3.delete_object(Bucket=b, Key="x/page.html")
    s3.delete_bucket(Bucket=b)


def test_console_acts_as_the_account_through_s3_authorization(console):
    a_cookie, a_csrf, _ = login(console, ALICE)
    b_cookie, b_csrf, _ = login(console, BOB)
    bucket = "alice-" + uuid.uuid4().hex[:10]
    assert req(console, "PUT", f"/s3/{bucket}", cookie=a_cookie, csrf=a_csrf)[0] == 200
    assert req(console, "PUT", f"/s3/{bucket}/k.txt", b"mine", cookie=a_cookie, csrf=a_csrf)[0] == 200
    # The object belongs to alice's account, as if she had signed the request.
    assert console.s3(ALICE).get_object(Bucket=bucket, Key="k.txt")["Body"].read() == b"mine"
    # Bob does not see it, cannot list, read, write or delete in it.
    st, _, body = req(console, "GET", "/s3/", cookie=b_cookie)
    assert st == 200 and bucket.encode() not in body
    for method, path in [("GET", f"/s3/{bucket}?list-type=2"), ("GET", f"/s3/{bucket}/k.txt"),
                         ("PUT", f"/s3/{bucket}/evil"), ("DELETE", f"/s3/{bucket}/k.txt"), ("GET", f"/s3/{bucket}?policy")]:
        st, _, body = req(console, method, path, cookie=b_cookie, csrf=b_csrf)
        assert st == 403 and b"<Code>AccessDenied</Code>" in body, (method, path, body)
    # A malformed policy gets S3's own answer.
    st, _, body = req(console, "PUT", f"/s3/{bucket}?policy", b'{"Version":"2012-10-17","Statement":[{"Effect":"Allow"}]}',
                      cookie=a_cookie, csrf=a_csrf)
    assert st == 400 and b"<Code>MalformedPolicy</Code>" in body, body
    s3 = console.s3(ALICE)
    s3.delete_object(Bucket=bucket, Key="k.txt")
    s3.delete_bucket(Bucket=bucket)


def test_share_link_is_presigned_for_the_s3_endpoint(console):
    cookie, csrf, _ = login(console, ALICE)
    s3 = console.s3(ALICE)
    b = "share-" + uuid.uuid4().hex[:10]
    s3.create_bucket(Bucket=b)
    s3.put_object(Bucket=b, Key="dir/a b+c.txt", Body=b"shared bytes")
    st, _, body = req(console, "POST", "/api/presign", json.dumps({"bucket": b, "key": "dir/a b+c.txt", "expires": 120}).encode(),
                      {"Content-Type": "application/json"}, cookie=cookie, csrf=csrf)
    assert st == 200, body
    url = json.loads(body)["url"]
    assert url.startswith(console.srv.endpoint + "/") and "X-Amz-Expires=120" in url
    out = subprocess.run(["curl", "-sf", url], capture_output=True, check=True).stdout
    assert out == b"shared bytes"
    # Longer than S3's 7 days: refused.
    st, _, _ = req(console, "POST", "/api/presign", json.dumps({"bucket": b, "key": "x", "expires": 8 * 86400}).encode(),
                   {"Content-Type": "application/json"}, cookie=cookie, csrf=csrf)
    assert st == 400
    s3.delete_object(Bucket=b, Key="dir/a b+c.txt")
    s3.delete_bucket(Bucket=b)


def test_admin_pages_are_for_administrators_only(console):
    cookie, _, _ = login(console, ALICE)
    for p in ["/api/admin/health", "/api/admin/metrics"]:
        st, _, body = req(console, "GET", p, cookie=cookie)
        assert st == 403 and json.loads(body)["error"] == "AccessDenied"
    cookie, _, j = login(console, ADMIN)
    assert j["admin"] is True
    st, _, body = req(console, "GET", "/api/admin/health", cookie=cookie)
    assert st == 200 and json.loads(body)["ready"] is True
    st, h, body = req(console, "GET", "/api/admin/metrics", cookie=cookie)
    assert st == 200 and b"s3hpc_http_requests_total" in body and b"s3hpc_build_info" in body


def test_a_rotated_key_ends_its_sessions(tmp_path):
    c = Console(tmp_path)
    try:
        cookie, _, _ = login(c, ALICE)
        other, _, _ = login(c, BOB)
        c.cfg.write_text(users_toml(alice_secret="rotated-secret"))
        assert wait_until(lambda: req(c, "GET", "/api/session", cookie=cookie)[0] == 401, 10)
        assert req(c, "GET", "/api/session", cookie=other)[0] == 200
    finally:
        c.stop()


def test_console_listen_in_the_config_files_serve_table(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    cfg = tmp_path / "s3hpc.toml"
    cfg.write_text('[serve]\nconsole-listen = "127.0.0.1:0"\n\n' + users_toml())
    srv = Server(root, ["--config", str(cfg)])
    try:
        assert wait_until(lambda: any("console on http://127.0.0.1:" in l for l in srv.output), 10), srv.output
    finally:
        srv.stop()
    cfg.write_text('[serve]\nconsole-listen = 9001\n\n' + users_toml())
    out = subprocess.run([srv.argv[0], "serve", str(root), "--config", str(cfg)], capture_output=True, text=True, timeout=30)
    assert out.returncode != 0 and "console-listen" in out.stderr and "HOST:PORT" in out.stderr, out.stderr


def test_pages_carry_a_strict_content_security_policy(console):
    st, h, body = req(console, "GET", "/")
    assert st == 200 and b"/assets/app.js" in body
    csp = h["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert h["x-frame-options"] == "DENY"
    assert req(console, "GET", "/assets/app.js")[0] == 200
    assert req(console, "GET", "/assets/../Cargo.toml")[0] == 404


def test_console_over_tls_sets_a_secure_cookie(tmp_path):
    import ssl

    from test_tls import make_ca_and_cert
    ca, cert, key = make_ca_and_cert(tmp_path, "c")
    c = Console(tmp_path, ["--tls-cert", str(cert), "--tls-key", str(key)])
    try:
        assert c.url.startswith("https://")
        ctx = ssl.create_default_context(cafile=str(ca))
        conn = http.client.HTTPSConnection(c.host, c.port, context=ctx, timeout=20)
        st, h, _ = req(c, "POST", "/api/login", json.dumps({"accessKey": ALICE[0], "secretKey": ALICE[1]}).encode(),
                       {"Content-Type": "application/json"}, conn=conn)
        assert st == 200 and "; Secure" in h["set-cookie"], h
    finally:
        c.stop()


def test_first_page_of_100k_keys_is_fast(console):
    """A bucket of 100,000 keys (files made on the root directly, as POSIX tools would): the
    console lists a page at a time with continuation tokens."""
    cookie, csrf, _ = login(console, ALICE)
    b = "big-" + uuid.uuid4().hex[:8]
    assert req(console, "PUT", f"/s3/{b}", cookie=cookie, csrf=csrf)[0] == 200
    d = console.root / b / "runs"
    d.mkdir()
    for i in range(100_000):
        (d / f"out-{i:06d}.dat").write_bytes(b"")
    try:
        times, token, seen = [], None, 0
        for _ in range(3):
            q = {"list-type": "2", "prefix": "runs/", "max-keys": "100", "delimiter": "/"}
            if token:
                q["continuation-token"] = token
            t = time.monotonic()
            st, _, body = req(console, "GET", f"/s3/{b}?{urlencode(q)}", cookie=cookie)
            times.append(time.monotonic() - t)
            assert st == 200, body
            keys = re.findall(rb"<Key>([^<]+)</Key>", body)
            assert len(keys) == 100 and keys[0] == f"runs/out-{seen:06d}.dat".encode()
            seen += 100
            token = re.search(rb"<NextContinuationToken>([^<]+)</NextContinuationToken>", body).group(1).decode()
        print(f"100k keys: first pages listed in {[round(t * 1000) for t in times]} ms")
        assert max(times) < 2.0, times
    finally:
        shutil.rmtree(console.root / b)


# ---------- a real browser ----------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
browser = pytest.mark.skipif(not (CHROMIUM and CHROMEDRIVER), reason="chromium / chromium-driver not installed "
                             "(scripts/install-test-deps)")


def shot(drv, name):
    d = os.environ.get("S3HPC_CONSOLE_SCREENSHOTS")
    if d:
        Path(d).mkdir(parents=True, exist_ok=True)
        drv.save_screenshot(str(Path(d) / f"{name}.png"))


@pytest.fixture
def drv():
    os.environ.setdefault("SE_OFFLINE", "true")  # never let Selenium fetch a browser or driver
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,860",
              "--disable-gpu", "--no-first-run", "--password-store=basic"]:
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    d.implicitly_wait(0)
    yield d
    d.quit()


def wait(drv, cond, timeout=30):
    from selenium.common.exceptions import NoAlertPresentException, NoSuchElementException
    from selenium.webdriver.support.ui import WebDriverWait
    return WebDriverWait(drv, timeout, ignored_exceptions=(NoAlertPresentException, NoSuchElementException)).until(cond)


def by_id(drv, i, timeout=30):
    from selenium.webdriver.common.by import By
    return wait(drv, lambda d: d.find_element(By.ID, i) if d.find_elements(By.ID, i) else False, timeout)


def text_in(drv, i, what, timeout=30):
    from selenium.webdriver.common.by import By
    return wait(drv, lambda d: any(what in e.text for e in d.find_elements(By.ID, i)), timeout)


def browser_login(drv, c, who):
    drv.get(c.url + "/")
    by_id(drv, "login-key").send_keys(who[0])
    by_id(drv, "login-secret").send_keys(who[1])
    by_id(drv, "login-submit").click()


@browser
def test_browser_wrong_secret_is_refused(console, drv):
    browser_login(drv, console, (ALICE[0], "not-the-secret"))
    text_in(drv, "login-error", "wrong")
    assert not drv.get_cookies()
    assert by_id(drv, "login").is_displayed()
    shot(drv, "login")


@browser
def test_browser_upload_browse_share_policy_logout(console, drv, tmp_path):
    from selenium.webdriver.common.by import By

    browser_login(drv, console, ALICE)
    text_in(drv, "who", "alice")
    bucket = "results-" + uuid.uuid4().hex[:6]
    by_id(drv, "new-bucket").send_keys(bucket)
    by_id(drv, "create-bucket").click()
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-bucket="{bucket}"]'))
    s3 = console.s3(ALICE)
    s3.put_object(Bucket=bucket, Key="runs/2026-11-28/summary.json", Body=b'{"ok": true}')
    s3.put_object(Bucket=bucket, Key="README.txt", Body=b"results of the runs\n" * 40)
    drv.find_element(By.CSS_SELECTOR, f'tr[data-bucket="{bucket}"] a').click()
    by_id(drv, "objects")

    # Upload 20 MiB through the file input: multipart (3 parts of 8 MiB), with progress.
    data = os.urandom(20 * 1024 * 1024)
    f = tmp_path / "big input.bin"
    f.write_bytes(data)
    small = tmp_path / "notes.txt"
    small.write_bytes(b"a small file, one PUT\n")
    by_id(drv, "upload-input").send_keys(f"{f}\n{small}")
    wait(drv, lambda d: "done (3 parts)" in d.find_element(By.ID, "uploads").text, 120)
    wait(drv, lambda d: "notes.txt (22 B) done" in d.find_element(By.ID, "uploads").text, 30)
    assert s3.get_object(Bucket=bucket, Key="notes.txt")["Body"].read() == small.read_bytes()
    head = s3.head_object(Bucket=bucket, Key="big input.bin")
    assert head["ContentLength"] == len(data) and head["ETag"].endswith('-3"'), head
    assert hashlib.sha256(s3.get_object(Bucket=bucket, Key="big input.bin")["Body"].read()).digest() == hashlib.sha256(data).digest()

    # Browse: the list shows the folder and the files with sizes.
    row = wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-key="big input.bin"]'))[0]
    assert "20.0 MiB" in row.text
    assert drv.find_elements(By.CSS_SELECTOR, 'tr[data-prefix="runs/"]')
    # New folder.
    by_id(drv, "new-folder").click()
    alert = wait(drv, lambda d: d.switch_to.alert)
    alert.send_keys("inputs")
    alert.accept()
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-prefix="inputs/"]'))
    assert s3.head_object(Bucket=bucket, Key="inputs/")["ContentLength"] == 0
    shot(drv, "objects")
    drv.find_element(By.CSS_SELECTOR, 'tr[data-prefix="runs/"] a').click()
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-key="runs/2026-11-28/"]')
         or d.find_elements(By.CSS_SELECTOR, 'tr[data-prefix="runs/2026-11-28/"]'))
    drv.back()
    row = wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-key="big input.bin"]'))[0]

    # Download link: the page's own fetch of it gives the bytes back.
    href = row.find_element(By.CSS_SELECTOR, "a.file").get_attribute("href")
    n = drv.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0]).then(r => r.arrayBuffer()).then(b => done(b.byteLength));", href)
    assert n == len(data)

    # Share link: created in the dialog, downloaded with curl.
    row.find_element(By.XPATH, ".//button[text()='share']").click()
    by_id(drv, "share-create").click()
    url = wait(drv, lambda d: d.find_element(By.ID, "share-url").get_attribute("value"))
    shot(drv, "share")
    got = subprocess.run(["curl", "-sf", url], capture_output=True, check=True).stdout
    assert hashlib.sha256(got).digest() == hashlib.sha256(data).digest()
    by_id(drv, "share-close").click()

    # Versions of an object: enable versioning in the settings, write twice, see both.
    drv.get(f"{console.url}/#/s/{bucket}")
    by_id(drv, "versioning-enable").click()
    text_in(drv, "versioning-status", "Enabled")
    s3.put_object(Bucket=bucket, Key="README.txt", Body=b"second version\n")
    # Policy editor: not JSON, then malformed for S3, then a good one.
    ta = by_id(drv, "policy-text")
    ta.clear()
    ta.send_keys("{not json")
    by_id(drv, "policy-save").click()
    text_in(drv, "policy-status", "Not JSON")
    ta.clear()
    ta.send_keys('{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject"}]}')
    by_id(drv, "policy-save").click()
    text_in(drv, "policy-status", "MalformedPolicy")
    shot(drv, "policy-error")
    with pytest.raises(Exception):
        s3.get_bucket_policy(Bucket=bucket)
    good = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": [BOB[0]]},
                                                    "Action": "s3:GetObject", "Resource": f"arn:aws:s3:::{bucket}/*"}]}
    ta.clear()
    ta.send_keys(json.dumps(good))
    by_id(drv, "policy-save").click()
    text_in(drv, "policy-status", "Saved")
    assert json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])["Statement"][0]["Action"] == "s3:GetObject"
    drv.find_element(By.ID, "pab-BlockPublicAcls").click()
    by_id(drv, "pab-save").click()
    def pab_set(_):
        try:
            return s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]["BlockPublicAcls"]
        except Exception:
            return False
    wait(drv, pab_set, 10)
    drv.execute_script("window.scrollTo(0, 0)")
    shot(drv, "settings")

    drv.get(f"{console.url}/#/v/{bucket}/README.txt")
    wait(drv, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#versions tr[data-version]")) == 2)
    shot(drv, "versions")

    # Delete: one object, then a folder with what is under it.
    drv.get(f"{console.url}/#/b/{bucket}/")
    row = wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'tr[data-key="notes.txt"]'))[0]
    row.find_element(By.XPATH, ".//button[text()='delete']").click()
    wait(drv, lambda d: d.switch_to.alert).accept()
    wait(drv, lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-key="notes.txt"]'))
    row = drv.find_element(By.CSS_SELECTOR, 'tr[data-prefix="runs/"]')
    row.find_element(By.XPATH, ".//button[text()='delete']").click()
    alert = wait(drv, lambda d: d.switch_to.alert)
    assert "1 object(s)" in alert.text, alert.text
    alert.accept()
    wait(drv, lambda d: not d.find_elements(By.CSS_SELECTOR, 'tr[data-prefix="runs/"]'))
    assert s3.list_objects_v2(Bucket=bucket, Prefix="runs/")["KeyCount"] == 0

    drv.get(f"{console.url}/#/")
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, f'tr[data-bucket="{bucket}"]'))
    shot(drv, "buckets")

    # Logout: the cookie the browser had no longer works.
    cookie = drv.get_cookie("s3hpc_console")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert drv.execute_script("return document.cookie") == ""  # not readable by scripts
    by_id(drv, "logout").click()
    wait(drv, lambda d: d.find_element(By.ID, "login").is_displayed())
    assert req(console, "GET", "/api/session", cookie=cookie["value"])[0] == 401
    assert req(console, "GET", f"/s3/{bucket}?list-type=2", cookie=cookie["value"])[0] == 401
    # Clean up.
    s3.delete_bucket_policy(Bucket=bucket)
    for v in s3.list_object_versions(Bucket=bucket).get("Versions", []) + s3.list_object_versions(Bucket=bucket).get("DeleteMarkers", []):
        s3.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])
    s3.delete_bucket(Bucket=bucket)


@browser
def test_browser_upload_resumes_after_a_reload(console, drv, tmp_path):
    """A multipart upload the page started (its id kept in the browser's localStorage) and that
    was cut off goes on where it stopped when the same file is chosen again: here the first part
    reached the gateway before the "reload"."""
    s3 = console.s3(ALICE)
    bucket = "resume-" + uuid.uuid4().hex[:6]
    s3.create_bucket(Bucket=bucket)
    data = os.urandom(20 * 1024 * 1024)
    f = tmp_path / "resume.bin"
    f.write_bytes(data)
    os.utime(f, (1_790_000_000, 1_790_000_000))  # File.lastModified is then exactly this, in ms
    up = s3.create_multipart_upload(Bucket=bucket, Key="resume.bin")["UploadId"]
    s3.upload_part(Bucket=bucket, Key="resume.bin", UploadId=up, PartNumber=1, Body=data[:8 << 20])
    browser_login(drv, console, ALICE)
    text_in(drv, "who", "alice")
    drv.get(f"{console.url}/#/b/{bucket}/")
    by_id(drv, "objects")
    drv.execute_script("localStorage.setItem(arguments[0], arguments[1])", f"s3hpc-upload:{bucket}/resume.bin",
                       json.dumps({"uploadId": up, "size": len(data), "lastModified": 1_790_000_000_000,
                                   "partSize": 8 << 20}))
    by_id(drv, "upload-input").send_keys(str(f))
    text_in(drv, "uploads", "done (3 parts, 1 already there)", 120)
    head = s3.head_object(Bucket=bucket, Key="resume.bin")
    assert head["ContentLength"] == len(data) and head["ETag"].endswith('-3"')
    assert hashlib.sha256(s3.get_object(Bucket=bucket, Key="resume.bin")["Body"].read()).digest() == hashlib.sha256(data).digest()
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")
    assert drv.execute_script("return localStorage.length") == 0
    s3.delete_object(Bucket=bucket, Key="resume.bin")
    s3.delete_bucket(Bucket=bucket)


@browser
def test_browser_user_cannot_see_another_users_bucket(console, drv):
    from selenium.webdriver.common.by import By

    s3 = console.s3(ALICE)
    bucket = "private-" + uuid.uuid4().hex[:6]
    s3.create_bucket(Bucket=bucket)
    s3.put_object(Bucket=bucket, Key="secret.txt", Body=b"alice only")
    browser_login(drv, console, BOB)
    text_in(drv, "who", "bob")
    by_id(drv, "new-bucket")
    assert not drv.find_elements(By.CSS_SELECTOR, f'tr[data-bucket="{bucket}"]')
    drv.get(f"{console.url}/#/b/{bucket}/")
    text_in(drv, "msg", "AccessDenied")
    assert not drv.find_elements(By.CSS_SELECTOR, 'tr[data-key="secret.txt"]')
    # Nor through a crafted request from the page itself.
    st = drv.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch('/s3/' + arguments[0] + '/secret.txt').then(r => done(r.status));", bucket)
    assert st == 403
    s3.delete_object(Bucket=bucket, Key="secret.txt")
    s3.delete_bucket(Bucket=bucket)


@browser
def test_browser_admin_sees_gateway_health_and_metrics(console, drv):
    from selenium.webdriver.common.by import By

    browser_login(drv, console, ADMIN)
    text_in(drv, "who", "admin")
    by_id(drv, "nav-admin").click()
    text_in(drv, "health", "ready")
    assert "S3 requests" in drv.find_element(By.ID, "health").text
    shot(drv, "gateway")
    # Not for others: the link is hidden and the API refuses.
    by_id(drv, "logout").click()
    browser_login(drv, console, BOB)
    text_in(drv, "who", "bob")
    assert not drv.find_element(By.ID, "nav-admin").is_displayed()
    drv.get(f"{console.url}/#/admin")
    text_in(drv, "msg", "AccessDenied")


# ---------- my keys, and the administrators' accounts, usage and reports pages ----------

KALICE, KBOB = "s3hpc-calice", "s3hpc-cbob"
PALICE = ("consolePAlice01", "palice-secret/4+w")
PBOB = ("consolePBob0001", "pbob-secret/5+v")
needs_users = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("useradd") is None,
                                 reason="needs root and useradd to create the test users")


@pytest.fixture(scope="module")
def kconsole(tmp_path_factory):
    """A console with self-service keys (`--user-keys`): alice and bob are users-file accounts
    bound to real Unix users; ADMIN is bound to none; usage is counted every second."""
    from conftest import ensure_user
    ensure_user(KALICE)
    ensure_user(KBOB)
    tmp = tmp_path_factory.mktemp("kconsole")
    c = Console(tmp, ["--user-keys", "--usage-interval", "1", "--lifecycle-interval", "0"])
    c.cfg.write_text(users_toml() + f'\n[[users]]\naccess_key = "{PALICE[0]}"\nsecret_key = "{PALICE[1]}"\n'
                     f'name = "palice"\nuser = "{KALICE}"\n\n[[users]]\naccess_key = "{PBOB[0]}"\n'
                     f'secret_key = "{PBOB[1]}"\nname = "pbob"\nuser = "{KBOB}"\n')
    # The gateway reloads the users file within a second.
    assert wait_until(lambda: _can_login(c, PBOB), 10)
    yield c
    c.stop()


def _can_login(c, who):
    st, _, _ = req(c, "POST", "/api/login", json.dumps({"accessKey": who[0], "secretKey": who[1]}).encode(),
                   {"Content-Type": "application/json"})
    return st == 200


@needs_users
def test_my_keys_are_made_listed_and_revoked_for_ones_own_posix_user(kconsole):
    from botocore.exceptions import ClientError
    cookie, csrf, j = login(kconsole, PALICE)
    assert j["keys"] is True
    # State-changing key requests need the CSRF token, as every other.
    body = json.dumps({"expiresSeconds": 3600, "description": "notebook"}).encode()
    st, _, b = req(kconsole, "POST", "/api/keys", body, {"Content-Type": "application/json"}, cookie=cookie)
    assert st == 403 and json.loads(b)["error"] == "InvalidCsrfToken"
    st, _, b = req(kconsole, "POST", "/api/keys", body, {"Content-Type": "application/json"}, cookie=cookie,
                   csrf=csrf)
    assert st == 200, b
    k = json.loads(b)
    assert k["user"] == KALICE and k["description"] == "notebook" and len(k["secretKey"]) == 40
    # The key acts as alice's account: her bucket, owned by her account.
    s3 = make_client(kconsole.srv.endpoint, k["accessKey"], k["secretKey"])
    bucket = "pkeys-" + uuid.uuid4().hex[:6]
    s3.create_bucket(Bucket=bucket)
    assert kconsole.s3(PALICE).list_objects_v2(Bucket=bucket)["KeyCount"] == 0
    with pytest.raises(ClientError):
        kconsole.s3(PBOB).list_objects_v2(Bucket=bucket)
    # Listed without its secret; never shown again.
    st, _, b = req(kconsole, "GET", "/api/keys", cookie=cookie)
    assert st == 200 and k["accessKey"] in b.decode() and k["secretKey"] not in b.decode()
    # Bob neither sees nor revokes it.
    bcookie, bcsrf, _ = login(kconsole, PBOB)
    st, _, b = req(kconsole, "GET", "/api/keys", cookie=bcookie)
    assert st == 200 and k["accessKey"] not in b.decode()
    st, _, b = req(kconsole, "DELETE", f"/api/keys/{k['accessKey']}", cookie=bcookie, csrf=bcsrf)
    assert st == 403 and json.loads(b)["error"] == "AccessDenied", b
    s3.list_buckets()
    # An account bound to no POSIX user has no keys (even an administrator).
    acookie, acsrf, aj = login(kconsole, ADMIN)
    assert aj["keys"] is False
    st, _, b = req(kconsole, "POST", "/api/keys", body, {"Content-Type": "application/json"}, cookie=acookie,
                   csrf=acsrf)
    assert st == 403 and json.loads(b)["error"] == "NoPosixUser", b
    # Revoke: CSRF-protected, then the key is refused.
    st, _, b = req(kconsole, "DELETE", f"/api/keys/{k['accessKey']}", cookie=cookie)
    assert st == 403 and json.loads(b)["error"] == "InvalidCsrfToken"
    st, _, b = req(kconsole, "DELETE", f"/api/keys/{k['accessKey']}", cookie=cookie, csrf=csrf)
    assert st == 200, b
    with pytest.raises(ClientError) as e:
        s3.list_buckets()
    assert e.value.response["Error"]["Code"] == "InvalidAccessKeyId"
    kconsole.s3(PALICE).delete_bucket(Bucket=bucket)


def test_my_keys_need_user_keys(console):
    cookie, csrf, j = login(console, ALICE)
    assert j["keys"] is False
    st, _, b = req(console, "GET", "/api/keys", cookie=cookie)
    assert st == 404 and json.loads(b)["error"] == "NotEnabled"


@needs_users
def test_accounts_and_usage_are_for_administrators_only(kconsole):
    cookie, _, _ = login(kconsole, PALICE)
    for p in ["/api/admin/accounts", "/api/admin/usage"]:
        st, _, b = req(kconsole, "GET", p, cookie=cookie)
        assert st == 403 and json.loads(b)["error"] == "AccessDenied", (p, b)
    kconsole.s3(ALICE).create_bucket(Bucket="usage-alice")
    kconsole.s3(ALICE).put_object(Bucket="usage-alice", Key="a", Body=b"x" * 1234)
    acookie, _, _ = login(kconsole, ADMIN)
    st, _, b = req(kconsole, "GET", "/api/admin/accounts", cookie=acookie)
    assert st == 200, b
    accts = json.loads(b)
    assert {a["accessKey"] for a in accts["accounts"]} >= {ALICE[0], BOB[0], ADMIN[0], PALICE[0], PBOB[0]}
    assert ALICE[1] not in b.decode()

    def counted():
        st, _, b = req(kconsole, "GET", "/api/admin/usage", cookie=acookie)
        u = json.loads(b)
        return [x for x in u["buckets"] if x["name"] == "usage-alice" and x["objects"] == 1]
    assert wait_until(lambda: counted(), 15, 0.3)
    assert counted()[0]["bytes"] == 1234


FAKE_REPORT = b"""<!DOCTYPE html><html><head><title>s3hpc bench: mixed</title>
<script>document.title = 'script ran';</script></head><body>
<h1>s3hpc bench mixed</h1><p><code>s3hpc bench --workload mixed --sizes 4KiB,1MiB --report out</code></p>
<table><tr><th class=l>phase</th><th>size</th><th>ops/s</th><th>MiB/s</th><th>p50</th></tr>
<tr><td class=l>put</td><td>4 KiB</td><td>9120</td><td>35.6</td><td>0.41 ms</td></tr>
<tr><td class=l>put</td><td>1 MiB</td><td>412</td><td>412.0</td><td>9.6 ms</td></tr>
<tr><td class=l>get</td><td>4 KiB</td><td>15870</td><td>62.0</td><td>0.22 ms</td></tr>
<tr><td class=l>get</td><td>1 MiB</td><td>1104</td><td>1104.0</td><td>3.5 ms</td></tr></table>
<h2>Throughput vs object size</h2><img src="throughput.svg" alt="Throughput vs object size" onerror="document.title='handler ran'">
</body></html>"""

FAKE_SVG = b"""<svg xmlns="http://www.w3.org/2000/svg" width="480" height="240"><rect width="480" height="240" fill="#fff"/>
<polyline fill="none" stroke="#1f77b4" stroke-width="3" points="40,200 160,150 280,90 440,40"/>
<polyline fill="none" stroke="#ff7f0e" stroke-width="3" points="40,210 160,180 280,130 440,70"/>
<text x="40" y="230" font-size="12">4 KiB</text><text x="400" y="230" font-size="12">1 MiB</text>
<script>alert(1)</script></svg>"""


@browser
@needs_users
def test_browser_my_keys_page(kconsole, drv):
    from selenium.webdriver.common.by import By

    browser_login(drv, kconsole, PALICE)
    text_in(drv, "who", "palice")
    by_id(drv, "nav-keys").click()
    by_id(drv, "key-description").send_keys("laptop")
    by_id(drv, "key-create").click()
    text_in(drv, "key-secret", "SecretAccessKey: ")
    secret_text = by_id(drv, "key-secret").text
    ak = re.search(r"AccessKeyId: (\S+)", secret_text).group(1)
    sk = re.search(r"SecretAccessKey: (\S+)", secret_text).group(1)
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, f'button[data-key="{ak}"]'))
    make_client(kconsole.srv.endpoint, ak, sk).list_buckets()
    shot(drv, "my-keys")
    # Shown once: a reload of the page lists the key, not its secret.
    drv.refresh()
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, f'button[data-key="{ak}"]'))
    assert sk not in drv.page_source
    drv.find_element(By.CSS_SELECTOR, f'button[data-key="{ak}"]').click()
    wait(drv, lambda d: d.switch_to.alert).accept()
    wait(drv, lambda d: not d.find_elements(By.CSS_SELECTOR, f'button[data-key="{ak}"]'))
    text_in(drv, "msg", f"revoked {ak}")


@browser
@needs_users
def test_browser_admin_accounts_usage_and_reports(kconsole, drv):
    from selenium.webdriver.common.by import By

    for who, b, n, size in [(ALICE, "alice-runs", 12, 300_000), (BOB, "bob-scratch", 3, 2_000_000)]:
        c = kconsole.s3(who)
        c.create_bucket(Bucket=b)
        for i in range(n):
            c.put_object(Bucket=b, Key=f"run-{i:03d}.dat", Body=b"r" * size)
    s3 = kconsole.s3(ADMIN)
    s3.create_bucket(Bucket="bench-reports")
    s3.put_object(Bucket="bench-reports", Key="2026-11-28-nvme/index.html", Body=FAKE_REPORT, ContentType="text/html")
    s3.put_object(Bucket="bench-reports", Key="2026-11-28-nvme/throughput.svg", Body=FAKE_SVG,
                  ContentType="image/svg+xml")
    browser_login(drv, kconsole, ADMIN)
    text_in(drv, "who", "admin")
    assert not drv.find_element(By.ID, "nav-keys").is_displayed()
    by_id(drv, "nav-accounts").click()
    text_in(drv, "accounts", PALICE[0])
    assert KALICE in by_id(drv, "accounts").text
    shot(drv, "accounts")
    by_id(drv, "nav-usage").click()
    wait(drv, lambda d: "bob-scratch" in d.find_element(By.TAG_NAME, "main").text or (d.refresh() and False), 30)
    text_in(drv, "usage-age", "s ago")
    shot(drv, "usage")
    by_id(drv, "nav-reports").click()
    wait(drv, lambda d: d.find_elements(By.CSS_SELECTOR, 'button[data-report="2026-11-28-nvme/"]'))
    drv.find_element(By.CSS_SELECTOR, 'button[data-report="2026-11-28-nvme/"]').click()
    text_in(drv, "report", "1104.0")
    wait(drv, lambda d: d.execute_script(
        "const i = document.querySelector('#report img'); return i && i.complete && i.naturalWidth > 0 && i.src.startsWith('data:image/svg+xml');"))
    # Nothing of the report's own markup runs in the console: no script, no handler.
    assert drv.title == "s3hpc console"
    assert drv.execute_script("return document.querySelectorAll('#report script, #report [onerror]').length") == 0
    shot(drv, "reports")
    # Not for others.
    by_id(drv, "logout").click()
    browser_login(drv, kconsole, PALICE)
    text_in(drv, "who", "palice")
    assert not drv.find_element(By.ID, "nav-accounts").is_displayed()
    drv.get(f"{kconsole.url}/#/usage")
    text_in(drv, "msg", "AccessDenied")
