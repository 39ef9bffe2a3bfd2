#!/usr/bin/env python3
"""Scores a bench/versitygw_suite.sh run: reads OUT/files/*.tap (bats TAP, one file per suite file)
and OUT/admin-calls.log (the cases that called versitygw's admin CLI stub), writes
OUT/results.tsv (file, case, outcome) and prints "versitygw suite: P/N".

Outcomes: pass; fail; skip (skipped by the suite for another reason: counted in N, not in P);
admin (needs versitygw's own admin API: skipped with the suite's users-test skip under
SKIP_USERS_TESTS=true, or called the admin stub; not counted).

    python3 bench/versitygw_suite_score.py OUT [--by-file]
"""
import re
import sys
from pathlib import Path

USERS_SKIP = re.compile(r"versity(gw)?-specific users tests", re.I)
TAP = re.compile(r"^(ok|not ok) (\d+) (.*?)(?: # (skip|SKIP)(?: \(?(.*?)\)?)?)?\s*$")


def bats_encode_name(name: str) -> str:
    """bats' bats_encode_test_name (bats-preprocess), the name in TEST_ID: a name of only
    alphanumerics, spaces, `_` and `-` has `_` -> `-5f`, then `-` -> `-2d` (the first's dash
    too: `_` ends as `-2d5f`), ' ' -> '_'; any other name has ' ' -> '_' and every
    non-alphanumeric character -> `-XX` (hex)."""
    if re.fullmatch(r"[A-Za-z0-9 _-]*", name):
        return "test_" + name.replace("_", "-5f").replace("-", "-2d").replace(" ", "_")
    out = []
    for ch in name:
        if ch == " ":
            out.append("_")
        elif ch.isalnum():
            out.append(ch)
        else:
            out.append("".join(f"-{b:02x}" for b in ch.encode()))
    return "test_" + "".join(out)


def admin_cases(out: Path) -> set:
    """(file stem, encoded case name) of each case that called the admin stub. TEST_ID is
    DATE-TIME.FILE.sh.ENCODED_NAME (see bats_encode_name)."""
    found = set()
    log = out / "admin-calls.log"
    if not log.exists():
        return found
    for line in log.read_text(errors="replace").splitlines():
        test_id = line.split("\t", 1)[0]
        m = re.match(r"^[0-9-]+\.(test_[A-Za-z0-9_]+)\.sh\.(test_.*)$", test_id)
        if m:
            found.add((m.group(1), m.group(2)))
    return found


def main() -> int:
    out = Path(sys.argv[1])
    by_file = "--by-file" in sys.argv
    admin = admin_cases(out)
    rows = []
    for tap in sorted((out / "files").glob("*.tap")):
        stem = tap.stem
        for line in tap.read_text(errors="replace").splitlines():
            m = TAP.match(line)
            if not m:
                continue
            status, _, name, skip, reason = m.groups()
            name = name.strip()
            if (stem, bats_encode_name(name)) in admin:
                outcome = "admin"
            elif skip:
                outcome = "admin" if reason and USERS_SKIP.search(reason) else "skip"
            elif status == "ok":
                outcome = "pass"
            else:
                outcome = "fail"
            rows.append((stem, name, outcome))
    with open(out / "results.tsv", "w") as f:
        for r in rows:
            f.write("\t".join(r) + "\n")
    count = {k: sum(1 for r in rows if r[2] == k) for k in ("pass", "fail", "skip", "admin")}
    if by_file:
        for stem in sorted({r[0] for r in rows}):
            c = {k: sum(1 for r in rows if r[0] == stem and r[2] == k) for k in count}
            print(f"{stem:48} pass {c['pass']:3} fail {c['fail']:3} skip {c['skip']:3} admin {c['admin']:3}")
    n = count["pass"] + count["fail"] + count["skip"]
    print(f"versitygw suite: {count['pass']}/{n} ({len(rows)} cases run: {count['pass']} passed, "
          f"{count['fail']} failed, {count['skip']} skipped by the suite, {count['admin']} need "
          f"versitygw's admin API and are not counted)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
