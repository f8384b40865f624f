#!/usr/bin/env python3
"""A misbehaving upload-pack for client tests: hostile-upload-pack.py MODE REPO.

It advertises REPO's refs (protocol v0, or v2 when GIT_PROTOCOL asks and the
mode is a v2 one) and then breaks the protocol the way MODE says."""
import os
import signal
import subprocess
import sys

signal.signal(signal.SIGPIPE, signal.SIG_DFL)
mode, repo = sys.argv[1], sys.argv[2]
out = sys.stdout.buffer
inp = sys.stdin.buffer


def git(*args, data=None):
    return subprocess.run(["git", "-C", repo] + list(args), input=data,
                          stdout=subprocess.PIPE, check=True).stdout


def pkt(data):
    if isinstance(data, str):
        data = data.encode()
    out.write(b"%04x" % (len(data) + 4) + data)


def flush():
    out.write(b"0000")
    out.flush()


def read_pkt():
    hdr = inp.read(4)
    if len(hdr) < 4:
        return None
    n = int(hdr, 16)
    if n < 4:
        return b""  # flush / delim
    return inp.read(n - 4)


algo = git("rev-parse", "--show-object-format").decode().strip()
refs = [l.split(" ", 1) for l in git("for-each-ref", "--format=%(objectname) %(refname)",
                                     "refs/heads/").decode().split("\n") if l]
head = git("rev-parse", "HEAD").decode().strip()
caps = ("multi_ack_detailed side-band-64k thin-pack ofs-delta no-progress include-tag "
        "shallow object-format=%s agent=hostile" % algo)


def advertise(first_oid=None, fmt=None):
    c = caps if fmt is None else caps.replace("object-format=" + algo, "object-format=" + fmt)
    pkt("%s HEAD\0%s\n" % (first_oid or head, c))
    for oid, name in refs:
        pkt("%s %s\n" % (oid, name))
    flush()


def read_request():
    wants = []
    while True:
        p = read_pkt()
        if p is None:
            sys.exit(0)
        if p == b"":
            break
        if p.startswith(b"want "):
            wants.append(p.split()[1].decode())
    while True:  # haves until done
        p = read_pkt()
        if p is None:
            sys.exit(0)
        if p.startswith(b"done"):
            break
        if p == b"":
            pkt("NAK\n")
            out.flush()
    pkt("NAK\n")
    return wants


def send_sideband(data, band=1):
    for i in range(0, len(data), 65515):
        pkt(bytes([band]) + data[i:i + 65515])


def pack_of(wants):
    return git("pack-objects", "--stdout", "--revs", "-q",
               data=("\n".join(wants) + "\n").encode())


if mode == "mixed-oids":
    pkt("%s HEAD\0%s\n" % (head, caps))
    other = "1" * (104 - len(head))  # the other algorithm's length
    pkt("%s refs/heads/evil\n" % other)
    flush()
elif mode == "format-mismatch":
    advertise(fmt="sha256" if algo == "sha1" else "sha1")
elif mode == "unknown-format":
    advertise(fmt="md5")
elif mode == "v2-no-format":
    # v2 capabilities without object-format: a sha1-only server
    pkt("version 2\n")
    pkt("agent=hostile\n")
    pkt("ls-refs\n")
    pkt("fetch=shallow\n")
    flush()
    read_pkt()
    sys.exit(0)
elif mode == "empty-v0":
    zero = "0" * len(head)
    pkt("%s capabilities^{}\0%s\n" % (zero, caps))
    flush()
    read_pkt()
    sys.exit(0)
else:
    advertise()
    wants = read_request()
    if mode == "missing-objects":
        # a valid pack, but of one blob, not of what was asked for
        blob = git("rev-parse", "HEAD:a.txt").decode().strip()
        send_sideband(git("pack-objects", "--stdout", "-q", data=(blob + "\n").encode()))
        flush()
    elif mode in ("missing-blob", "missing-commit", "missing-tree"):
        # everything wanted is in the pack except one object deep inside:
        # index-pack cannot vouch for the pack, the history walk must notice
        drop = {"missing-blob": "HEAD:a.txt", "missing-commit": "HEAD~1",
                "missing-tree": "HEAD~1^{tree}"}[mode]
        drop = git("rev-parse", drop).decode().strip()
        listed = git("rev-list", "--objects", *wants).decode().split("\n")
        keep = [l.split(" ")[0] for l in listed if l and not l.startswith(drop)]
        send_sideband(git("pack-objects", "--stdout", "-q",
                          data=("\n".join(keep) + "\n").encode()))
        flush()
    elif mode == "truncated-pack":
        data = pack_of(wants)
        send_sideband(data[: len(data) // 2])
        flush()
    elif mode == "sideband-error":
        data = pack_of(wants)
        send_sideband(data[:100])
        send_sideband(b"error: upload-pack went wrong\n", band=3)
        out.flush()
    elif mode == "stop-mid-stream":
        data = pack_of(wants)
        send_sideband(data[: len(data) // 3])
        out.flush()
        os._exit(0)
    elif mode == "bad-checksum":
        data = bytearray(pack_of(wants))
        data[-1] ^= 0xff
        send_sideband(bytes(data))
        flush()
    elif mode == "good":
        send_sideband(pack_of(wants))
        flush()
    elif mode == "huge-count":
        # a pack header claiming 2^32-1 objects, then 48 MiB of the smallest
        # entries there are (an empty blob: 9 bytes), then the end
        import zlib
        entry = b"\x30" + zlib.compress(b"")
        send_sideband(b"PACK\0\0\0\2\xff\xff\xff\xff")
        chunk = entry * (65515 // len(entry))
        for _ in range((48 << 20) // len(chunk)):
            pkt(b"\1" + chunk)
        flush()
    elif mode == "endless-progress":
        # 256 MiB of progress that never ends its line, then the pack
        line = b"a" * 65515
        for _ in range(4097):
            pkt(b"\2" + line)
        send_sideband(pack_of(wants))
        flush()
out.flush()
