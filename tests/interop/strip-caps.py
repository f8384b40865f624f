#!/usr/bin/env python3
"""Run an upload-pack command and take capabilities out of what it
advertises: a server that lacks them, for the client's refusals.

usage: strip-caps.py CAP... -- CMD...

The v0/v1 capability list (after the NUL of the first ref line) and the
value of a v2 "fetch=" line lose every CAP named; everything else passes
through unchanged in both directions. Exits with the command's status.
"""
import os
import subprocess
import sys
import threading


def read_exact(f, n):
    out = b""
    while len(out) < n:
        chunk = f.read(n - len(out))
        if not chunk:
            return None
        out += chunk
    return out


def read_pkt(f):
    head = read_exact(f, 4)
    if head is None:
        return None, None
    n = int(head, 16)
    if n < 4:
        return head, None
    return head, read_exact(f, n - 4)


def pkt(data):
    return b"%04x" % (len(data) + 4) + data


def strip(words, caps):
    return b" ".join(w for w in words.split(b" ") if w.split(b"=")[0] not in caps)


def main():
    i = sys.argv.index("--")
    caps = {c.encode() for c in sys.argv[1:i]}
    child = subprocess.Popen(sys.argv[i + 1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             bufsize=0)
    out = sys.stdout.buffer

    def pump_in():
        src = sys.stdin.buffer
        while True:
            data = os.read(src.fileno(), 65536)
            if not data:
                break
            child.stdin.write(data)
            child.stdin.flush()
        child.stdin.close()

    threading.Thread(target=pump_in, daemon=True).start()
    v2 = False
    while True:
        head, data = read_pkt(child.stdout)
        if head is None:
            break
        if data is None:
            out.write(head)
            out.flush()
            if not v2:
                break
            if head == b"0000":
                break
            continue
        if data == b"version 2\n":
            v2 = True
        elif v2 and data.startswith(b"fetch="):
            data = b"fetch=" + strip(data[6:].rstrip(b"\n"), caps) + b"\n"
        elif not v2 and b"\0" in data:
            ref, rest = data.split(b"\0", 1)
            data = ref + b"\0" + strip(rest.rstrip(b"\n"), caps) + b"\n"
            out.write(pkt(data))
            out.flush()
            break
        out.write(pkt(data))
        out.flush()
    while True:
        data = os.read(child.stdout.fileno(), 65536)
        if not data:
            break
        out.write(data)
        out.flush()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
