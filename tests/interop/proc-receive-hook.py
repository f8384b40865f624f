#!/usr/bin/env python3
# A proc-receive hook for t-conf-recv-proc.sh: speaks the hook protocol
# (version, commands, push options, report) and behaves as the file
# "proc-mode" in the repository says: rewrite (review-server style: a
# refs/for/<x> push becomes refs/changes/N, "/bad" is refused, "/fall" is
# handed back), die (exits during the handshake), lie (reports on a ref it
# was not given), silent (reports nothing).
import os
import subprocess
import sys

inp, out = sys.stdin.buffer, sys.stdout.buffer


def read_pkt():
    head = inp.read(4)
    if len(head) < 4:
        return None
    n = int(head, 16)
    if n == 0:
        return b""
    return inp.read(n - 4)


def until_flush():
    lines = []
    while True:
        p = read_pkt()
        if not p:
            return lines
        lines.append(p.rstrip(b"\n"))


def write_pkt(s):
    b = s.encode() if isinstance(s, str) else s
    out.write(b"%04x" % (len(b) + 4) + b)


def flush():
    out.write(b"0000")
    out.flush()


mode = open("proc-mode").read().strip()
version = until_flush()
with open("proc.log", "ab") as log:
    log.write(b"version: " + version[0].replace(b"\0", b" | ") + b"\n")
if mode == "die":
    sys.stderr.write("proc-receive: giving up\n")
    sys.exit(1)
write_pkt(b"version=1\0push-options")
flush()
cmds = until_flush()
opts = until_flush()
with open("proc.log", "ab") as log:
    for c in cmds:
        log.write(b"cmd: " + c + b"\n")
    for o in opts:
        log.write(b"option: " + o + b"\n")
sys.stderr.write("proc-receive: %d command(s)\n" % len(cmds))
if mode == "silent":
    flush()
    sys.exit(0)
if mode == "lie":
    write_pkt("ok refs/heads/never-pushed")
    flush()
    sys.exit(0)
n = 0
for c in cmds:
    old, new, ref = c.decode().split(" ", 2)
    if ref.endswith("/bad"):
        write_pkt("ng %s rejected by review" % ref)
    elif ref.endswith("/fall"):
        write_pkt("ok %s" % ref)
        write_pkt("option fall-through")
    else:
        n += 1
        change = "refs/changes/%d" % n
        subprocess.run(["git", "update-ref", change, new], check=True)
        write_pkt("ok %s" % ref)
        write_pkt("option refname %s" % change)
        write_pkt("option new-oid %s" % new)
flush()
