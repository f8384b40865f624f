#!/usr/bin/env python3
"""Sample the memory of a daemon and every process below it.

usage: daemon-rss.py PID OUTFILE [INTERVAL]

Every INTERVAL seconds (0.2) until PID is gone or SIGTERM arrives, walks
/proc for the processes descended from PID (the daemon, its per-connection
children and what they start: git's upload-pack and pack-objects) and sums
their VmRSS. Writes to OUTFILE, on exit, one line:
"<peak sum KiB> <peak single-process KiB> <most processes at once> <samples>".
The sum counts pages shared between processes (the mmapped pack, the
library) once per process: an upper bound of the memory in use.
"""
import os
import signal
import sys
import time

root = int(sys.argv[1])
out = sys.argv[2]
interval = float(sys.argv[3]) if len(sys.argv) > 3 else 0.2
stop = False


def on_term(_sig, _frm):
    global stop
    stop = True


signal.signal(signal.SIGTERM, on_term)


def snapshot():
    parent, rss = {}, {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/status" % d) as f:
                kib = 0
                ppid = 0
                for line in f:
                    if line.startswith("PPid:"):
                        ppid = int(line.split()[1])
                    elif line.startswith("VmRSS:"):
                        kib = int(line.split()[1])
        except OSError:
            continue
        parent[int(d)] = ppid
        rss[int(d)] = kib
    return parent, rss


peak_sum = peak_one = peak_n = samples = 0
while not stop:
    parent, rss = snapshot()
    if root not in parent:
        break
    tree = {root}
    grew = True
    while grew:
        grew = False
        for p, pp in parent.items():
            if pp in tree and p not in tree:
                tree.add(p)
                grew = True
    total = sum(rss[p] for p in tree)
    peak_sum = max(peak_sum, total)
    peak_one = max(peak_one, max(rss[p] for p in tree))
    peak_n = max(peak_n, len(tree))
    samples += 1
    time.sleep(interval)
with open(out, "w") as f:
    f.write("%d %d %d %d\n" % (peak_sum, peak_one, peak_n, samples))
