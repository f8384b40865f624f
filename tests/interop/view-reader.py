#!/usr/bin/env python3
"""Helper of t-compat-view-lock.sh: a client that stops reading mid-pack.

view-reader.py OUT UPLOAD-PACK-CMD... -- HOOK-CMD...
    Run UPLOAD-PACK-CMD (protocol v0, stateful) and want every advertised
    ref with side-band-64k (and the object-format it advertises). Once the
    first bytes of the pack have arrived, stop reading (upload-pack then
    blocks on the full pipe, in the middle of its pack) and run HOOK-CMD,
    which must succeed; then read the rest. The pack goes to OUT; prints
    "before=N after=M": pack bytes read before and after the hook.
"""
import subprocess
import sys


def pkt_read(f):
    head = f.read(4)
    if len(head) < 4:
        raise SystemExit("upload-pack hung up")
    n = int(head, 16)
    if n < 4:
        return None
    data = f.read(n - 4)
    if len(data) < n - 4:
        raise SystemExit("upload-pack sent a short packet")
    return data


def pkt(data):
    return b"%04x" % (len(data) + 4) + data


def main():
    out, rest = sys.argv[1], sys.argv[2:]
    cut = rest.index("--")
    cmd, hook = rest[:cut], rest[cut + 1:]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    wants, caps = [], b""
    while True:
        line = pkt_read(p.stdout)
        if line is None:
            break
        if b"\0" in line:
            line, caps = line.split(b"\0", 1)
        oid, ref = line.rstrip(b"\n").split(b" ", 1)
        if not ref.endswith(b"^{}") and oid not in wants:
            wants.append(oid)
    mine = b"side-band-64k ofs-delta"
    for c in caps.split():
        if c.startswith(b"object-format="):
            mine += b" " + c
    req = pkt(b"want " + wants[0] + b" " + mine + b"\n")
    req += b"".join(pkt(b"want " + w + b"\n") for w in wants[1:])
    req += b"0000" + pkt(b"done\n")
    p.stdin.write(req)
    p.stdin.close()
    if pkt_read(p.stdout) != b"NAK\n":
        raise SystemExit("no NAK")
    pack, before = bytearray(), None
    while True:
        data = pkt_read(p.stdout)
        if data is None:
            break
        if data[0] == 1:
            pack += data[1:]
            if before is None and len(pack) >= 12:
                before = len(pack)
                subprocess.run(hook, check=True)
        elif data[0] == 3:
            raise SystemExit("upload-pack: " + data[1:].decode(errors="replace"))
    if p.wait():
        raise SystemExit("upload-pack exited with %d" % p.returncode)
    with open(out, "wb") as f:
        f.write(pack)
    print("before=%d after=%d" % (before or 0, len(pack) - (before or 0)))


main()
