#!/usr/bin/env python3
"""Compare what the test did with what a real Prometheus scraped from
`packwire serve` (t-serve-metrics.sh).

What the test did comes from the clients' side: GIT_TRACE_CURL files of
every stock git command (each request's method, path, Git-Protocol header,
Content-Length and the status it got) and a list of the requests curl made
("METHOD PATH STATUS BODY_BYTES" lines). The numbers come from Prometheus's
HTTP API (/api/v1/query). Prints "ok ..." / "not ok ..." lines.

Usage: metrics-check.py PROM_URL EXPECT_FILE TRACE...
EXPECT_FILE lines: "name value" for single numbers the test knows
(pushes, refusals, dumb bytes, ...), "curl METHOD PATH STATUS BYTES" for
curl's requests.
"""
import json
import re
import sys
import urllib.parse
import urllib.request
from collections import Counter


def query(prom, q):
    url = prom + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=30) as r:
        d = json.load(r)
    if d.get("status") != "success":
        raise SystemExit("not ok query %s failed: %s" % (q, d))
    return [(x["metric"], float(x["value"][1])) for x in d["data"]["result"]]


def service(path):
    p, _, q = path.partition("?")
    if p.endswith("/git-upload-pack"):
        return "upload-pack"
    if p.endswith("/git-receive-pack"):
        return "receive-pack"
    if p.endswith("/info/refs") and re.search(r"(^|&)service=", q):
        return "info/refs"
    return "dumb"


def parse_trace(path, requests, received):
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.search(r"=> Send header: (GET|POST|HEAD) (\S+) HTTP/1\.1", line)
            if m:
                cur = {"svc": service(m.group(2)), "proto": "0", "len": 0}
                continue
            if cur is None:
                continue
            m = re.search(r"=> Send header: Git-Protocol: version=(\d)", line)
            if m:
                cur["proto"] = m.group(1)
                continue
            m = re.search(r"=> Send header: Content-Length: (\d+)", line)
            if m:
                cur["len"] = int(m.group(1))
                continue
            m = re.search(r"<= Recv header: HTTP/1\.1 (\d\d\d)", line)
            if m and not m.group(1).startswith("1"):
                requests[(cur["svc"], cur["proto"], m.group(1))] += 1
                received[cur["svc"]] += cur["len"]
                cur = None


def main():
    prom, expect_file, traces = sys.argv[1], sys.argv[2], sys.argv[3:]
    requests, received, sent_dumb = Counter(), Counter(), 0
    known = {}
    for t in traces:
        parse_trace(t, requests, received)
    with open(expect_file) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "curl":
                requests[(service(w[2]), "0", w[3])] += 1
                if service(w[2]) == "dumb":
                    sent_dumb += int(w[4])
            else:
                known[w[0]] = float(w[1])

    got = Counter()
    for m, v in query(prom, 'packwire_http_requests_total{job="packwire"}'):
        if m["service"] in ("metrics", "healthz"):
            continue
        got[(m["service"], m["protocol"], m["status"])] = int(v)
    for k in sorted(set(requests) | set(got)):
        line = "requests_total{service=%s,protocol=%s,status=%s}: Prometheus %d, the clients made %d" % (
            k + (got[k], requests[k]))
        print(("ok " if got[k] == requests[k] else "not ok ") + line)
    if not requests:
        print("not ok the traces name no request")

    for svc in ("upload-pack", "info/refs", "receive-pack", "dumb"):
        n = sum(v for k, v in requests.items() if k[0] == svc)
        cnt = query(prom, 'packwire_http_request_duration_seconds_count{service="%s"}' % svc)
        inf = query(prom, 'packwire_http_request_duration_seconds_bucket{service="%s",le="+Inf"}' % svc)
        c = int(cnt[0][1]) if cnt else 0
        i = int(inf[0][1]) if inf else 0
        print(("ok " if c == n and i == n else "not ok ")
              + "latency histogram of %s counts %d (+Inf bucket %d), the clients made %d" % (svc, c, i, n))

    for svc in ("upload-pack", "receive-pack"):
        r = query(prom, 'packwire_http_received_bytes_total{service="%s"}' % svc)
        v = int(r[0][1]) if r else -1
        print(("ok " if v == received[svc] else "not ok ")
              + "received bytes of %s: Prometheus %d, the clients' Content-Length %d" % (svc, v, received[svc]))
    r = query(prom, 'packwire_http_sent_bytes_total{service="dumb"}')
    v = int(r[0][1]) if r else -1
    print(("ok " if v == sent_dumb else "not ok ")
          + "sent bytes of the dumb files: Prometheus %d, the files' sizes %d" % (v, sent_dumb))
    r = query(prom, 'packwire_http_sent_bytes_total{service="upload-pack"}')
    v = int(r[0][1]) if r else -1
    print(("ok " if v > 0 else "not ok ") + "sent bytes of upload-pack: %d" % v)

    for name, q in (
        ("pushes_accepted", 'packwire_pushes_total{result="accepted"}'),
        ("pushes_rejected", 'packwire_pushes_total{result="rejected"}'),
        ("refused_queue_full", 'packwire_requests_refused_total{reason="queue_full"}'),
        ("refused_queue_timeout", 'packwire_requests_refused_total{reason="queue_timeout"}'),
        ("jobs_running", "packwire_jobs_running"),
        ("jobs_queued", "packwire_jobs_queued"),
        ("jobs_max", "packwire_jobs_max"),
        ("queue_max", "packwire_queue_max"),
        ("cache_lookups", "sum(packwire_pack_cache_lookups_total)"),
        ("cache_lookup_series", "count(packwire_pack_cache_lookups_total)"),
        ("cache_generated", "packwire_pack_cache_generated_bytes_total"),
        ("cache_served", "packwire_pack_cache_served_bytes_total"),
    ):
        r = query(prom, q)
        v = r[0][1] if r else None
        want = known.get(name)
        print(("ok " if v == want else "not ok ") + "%s: Prometheus %s, expected %s" % (q, v, want))

    cpu = query(prom, "process_cpu_seconds_total")
    rss = query(prom, "process_resident_memory_bytes")
    c = cpu[0][1] if cpu else -1
    m = rss[0][1] if rss else -1
    print(("ok " if 0 < c <= known["cpu_max"] else "not ok ")
          + "process_cpu_seconds_total %.3f is above 0 and at most the %.3f s /proc gave after it" % (c, known["cpu_max"]))
    print(("ok " if known["rss"] / 4 <= m <= known["rss"] * 4 else "not ok ")
          + "process_resident_memory_bytes %d is near the %d of /proc/PID/statm" % (m, known["rss"]))


main()
