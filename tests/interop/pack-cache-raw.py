#!/usr/bin/env python3
"""Helpers of t-pack-cache.sh.

fetch OUT CAPS CMD...: run CMD (an upload-pack, protocol v0, stateful) and
    ask for every advertised ref (only the first one, HEAD, when CAPS holds
    "head-only", which is not sent) with the capabilities CAPS (space
    separated, may be empty); write the pack it sends to OUT, however it is
    framed (side-band, side-band-64k or none), and print the largest
    side-band packet (0 without side-band).
types PACK RAWSZ: print the count of each entry type in a pack file
    ("commit 3 tree 5 blob 7 tag 1 ofs-delta 2 ref-delta 0").
"""
import subprocess
import sys
import zlib


def pkt_read(f):
    head = f.read(4)
    if len(head) < 4:
        raise SystemExit("upload-pack hung up")
    n = int(head, 16)
    if n < 4:
        return None  # flush (or delim)
    data = f.read(n - 4)
    if len(data) < n - 4:
        raise SystemExit("upload-pack sent a short packet")
    return data


def pkt(data):
    return b"%04x" % (len(data) + 4) + data


def fetch(out, caps, cmd):
    head_only = "head-only" in caps.split()
    caps = " ".join(c for c in caps.split() if c != "head-only")
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    wants = []
    while True:
        line = pkt_read(p.stdout)
        if line is None:
            break
        oid = line.split(b" ", 1)[0]
        if oid not in wants and not line.rstrip(b"\n").endswith(b"^{}"):
            wants.append(oid)
    if head_only:
        wants = wants[:1]
    req = b""
    for i, oid in enumerate(wants):
        tail = (b" " + caps.encode()) if (i == 0 and caps) else b""
        req += pkt(b"want " + oid + tail + b"\n")
    req += b"0000" + pkt(b"done\n")
    p.stdin.write(req)
    p.stdin.close()
    nak = pkt_read(p.stdout)
    if nak != b"NAK\n":
        raise SystemExit("expected NAK, got %r" % nak)
    sideband = "side-band" in caps.split() or "side-band-64k" in caps.split()
    pack = b""
    largest = 0
    if sideband:
        while True:
            head = p.stdout.read(4)
            if len(head) < 4 or head == b"0000":
                break
            n = int(head, 16)
            largest = max(largest, n)
            data = p.stdout.read(n - 4)
            if data[:1] == b"\x01":
                pack += data[1:]
            elif data[:1] == b"\x03":
                raise SystemExit("error from upload-pack: %r" % data[1:])
    else:
        pack = p.stdout.read()
    if p.wait() != 0:
        raise SystemExit("upload-pack exited %d" % p.returncode)
    with open(out, "wb") as f:
        f.write(pack)
    print(largest)


def types(path, rawsz):
    data = open(path, "rb").read()
    if data[:4] != b"PACK":
        raise SystemExit("not a pack")
    count = int.from_bytes(data[8:12], "big")
    names = {1: "commit", 2: "tree", 3: "blob", 4: "tag", 6: "ofs-delta", 7: "ref-delta"}
    seen = {n: 0 for n in names.values()}
    off = 12
    for _ in range(count):
        c = data[off]
        off += 1
        t = (c >> 4) & 7
        while c & 0x80:
            c = data[off]
            off += 1
        if t == 6:
            while data[off] & 0x80:
                off += 1
            off += 1
        elif t == 7:
            off += rawsz
        d = zlib.decompressobj()
        d.decompress(data[off:])
        off = len(data) - len(d.unused_data)
        seen[names[t]] += 1
    print(" ".join("%s %d" % kv for kv in seen.items()))


if __name__ == "__main__":
    if sys.argv[1] == "fetch":
        fetch(sys.argv[2], sys.argv[3], sys.argv[4:])
    elif sys.argv[1] == "types":
        types(sys.argv[2], int(sys.argv[3]))
    else:
        raise SystemExit(__doc__)
