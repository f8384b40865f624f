#!/usr/bin/env python3
"""badpack.py ALGO CASE OUT: write a small pack (good, or broken in one way).

Cases named odb-* also write the .idx beside OUT (a valid index, so the pack
can sit in a repository without index-pack having seen it) and print
"NAME OID" lines for the objects a test should read."""
import hashlib, struct, sys, zlib

algo, case, out = sys.argv[1], sys.argv[2], sys.argv[3]
H = hashlib.sha1 if algo == "sha1" else hashlib.sha256
OTHER = hashlib.sha256 if algo == "sha1" else hashlib.sha1
RAW = H().digest_size


def oid(kind, data, h=H):
    return h(b"%s %d\0" % (kind.encode(), len(data)) + data).digest()


def hdr(t, size):
    c = (t << 4) | (size & 15)
    size >>= 4
    b = bytearray()
    while size:
        b.append(c | 0x80)
        c = size & 0x7F
        size >>= 7
    b.append(c)
    return bytes(b)


def ofs(dist):
    b = [dist & 0x7F]
    dist >>= 7
    while dist:
        dist -= 1
        b.insert(0, 0x80 | (dist & 0x7F))
        dist >>= 7
    return bytes(b)


def varint(n):
    b = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        b.append(c | (0x80 if n else 0))
        if not n:
            return bytes(b)


def delta(base, result):
    # copy the whole base, then insert the tail
    d = varint(len(base)) + varint(len(result))
    d += bytes([0x80 | 0x10 | 0x20, len(base) & 0xFF, len(base) >> 8])
    tail = result[len(base):]
    d += bytes([len(tail)]) + tail
    return d


def pack(entries, count=None, h=H):
    body = b"PACK" + struct.pack(">II", 2, len(entries) if count is None else count)
    body += b"".join(entries)
    return body + h(body).digest()


base = b"hello base object\n" * 4
res = base + b"and more\n"
blob = hdr(3, len(base)) + zlib.compress(base)
first = 12
d = delta(base, res)
ofs_delta = hdr(6, len(d)) + ofs(len(blob)) + zlib.compress(d)
ref_delta = hdr(7, len(d)) + oid("blob", base) + zlib.compress(d)


# Hostile sizes (issue 17): nothing here may make a reader allocate what the
# bytes cannot justify. The fuzz-delta finding: 8 bytes of delta over an
# empty base that claim a 2.4 GB result.
OOM_DELTA = bytes([0x00, 0xA8, 0xF8, 0xC0, 0xF8, 0x08, 0xF5, 0x62])
empty = hdr(3, 0) + zlib.compress(b"")
HUGE = 1 << 62  # more bits than an entry header's size may have
BIG = 1 << 59  # fits, and is just as absurd


def claim(base_len, size, ops=b""):
    return varint(base_len) + varint(size) + ops


def write_idx(path, objs, pack_bytes):
    # objs: (raw oid, offset, raw entry bytes); idx v2, 32-bit offsets
    objs = sorted(objs)
    fan, n = [], 0
    for i in range(256):
        while n < len(objs) and objs[n][0][0] <= i:
            n += 1
        fan.append(n)
    b = b"\377tOc" + struct.pack(">I", 2) + struct.pack(">256I", *fan)
    b += b"".join(o[0] for o in objs)
    b += b"".join(struct.pack(">I", zlib.crc32(o[2])) for o in objs)
    b += b"".join(struct.pack(">I", o[1]) for o in objs)
    b += pack_bytes[-RAW:]
    open(path, "wb").write(b + H(b).digest())


def odb_hostile():
    # a tree and a commit, then objects whose headers lie about their size
    # under made-up ids: only the index says what they are
    tree = b""
    commit = b"tree %s\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\n\nc\n" % (
        oid("tree", tree).hex().encode())
    ents = [(oid("tree", tree), hdr(2, 0) + zlib.compress(tree)),
            (oid("commit", commit), hdr(1, len(commit)) + zlib.compress(commit))]
    commit_at = 12 + len(ents[0][1])
    names, at = [], {}
    # 64 kB that do not compress: what follows a lying entry can no longer
    # vouch for it (the entry's own bytes must)
    pad = b"".join(H(b"%d" % i).digest() for i in range(65536 // RAW))
    for name in ["delta-oom", "huge-entry", "huge-delta", "big-entry", "big-delta", "empty",
                 "delta-over-empty", "claim-40m", "padding"]:
        here = 12 + sum(len(e[1]) for e in ents)
        raw = H(b"hostile " + name.encode()).digest()
        if name == "delta-oom":  # over the commit, one short copy
            dd = claim(len(commit), 2400000000, bytes([0x91, 0, 5]))
            e = hdr(6, len(dd)) + ofs(here - commit_at) + zlib.compress(dd)
        elif name.endswith("-entry"):
            e = hdr(1, HUGE if name[0] == "h" else BIG) + zlib.compress(commit)
        elif name.endswith("-delta"):
            dd = claim(len(commit), len(commit), bytes([0x90, len(commit)]))
            e = hdr(6, HUGE if name[0] == "h" else BIG) + ofs(here - commit_at) + zlib.compress(dd)
        elif name == "empty":
            e, raw = empty, oid("blob", b"")
        elif name == "claim-40m":
            e = hdr(3, 40 << 20) + zlib.compress(b"x")
        elif name == "padding":
            e, raw = hdr(3, len(pad)) + zlib.compress(pad), oid("blob", pad)
        else:  # the fuzz input itself, over the empty blob
            e = hdr(6, len(OOM_DELTA)) + ofs(here - at["empty"]) + zlib.compress(OOM_DELTA)
        at[name] = here
        ents.append((raw, e))
        names.append((name, raw))
    data = pack([e for _, e in ents])
    objs, off = [], 12
    for raw, e in ents:
        objs.append((raw, off, e))
        off += len(e)
    write_idx((out[:-5] if out.endswith(".pack") else out) + ".idx", objs, data)
    for name, raw in names:
        print(name, raw.hex())
    return data

if case == "good":
    data = pack([blob, ofs_delta])
elif case == "truncated":
    data = pack([blob, ofs_delta])[:40]
elif case == "bad-checksum":
    data = bytearray(pack([blob, ofs_delta]))
    data[-1] ^= 1
elif case == "count-high":
    data = pack([blob, ofs_delta], count=3)
elif case == "count-low":
    data = pack([blob, ofs_delta], count=1)
elif case == "missing-base":
    other = hdr(7, len(d)) + H(b"nothing").digest() + zlib.compress(d)
    data = pack([blob, other])
elif case == "ofs-outside":
    e = hdr(6, len(d)) + ofs(len(blob) + 100) + zlib.compress(d)
    data = pack([blob, e])
elif case == "ofs-self":
    e = hdr(6, len(d)) + ofs(0) + zlib.compress(d)
    data = pack([blob, e])
elif case == "ofs-middle":
    e = hdr(6, len(d)) + ofs(len(blob) - 3) + zlib.compress(d)
    data = pack([blob, e])
elif case == "delta-result-size":
    bad = varint(len(base)) + varint(len(res) + 5) + d[len(varint(len(base)) + varint(len(res))):]
    e = hdr(6, len(bad)) + ofs(len(blob)) + zlib.compress(bad)
    data = pack([blob, e])
elif case == "size-mismatch":
    data = pack([hdr(3, len(base) + 3) + zlib.compress(base)])
elif case == "bomb":
    data = pack([hdr(3, 10) + zlib.compress(b"\0" * (16 << 20), 9)])
elif case == "bomb-delta":
    data = pack([blob, hdr(6, 10) + ofs(len(blob)) + zlib.compress(b"\0" * (16 << 20), 9)])
elif case == "bad-type":
    data = pack([hdr(5, len(base)) + zlib.compress(base)])
elif case == "duplicate":
    data = pack([blob, blob])
elif case == "bad-zlib":
    z = bytearray(zlib.compress(base))
    z[5] ^= 0xFF
    data = pack([hdr(3, len(base)) + bytes(z)])
elif case == "other-algo":
    # a pack made for the other algorithm: REF_DELTA with its id length
    e = hdr(7, len(d)) + oid("blob", base, OTHER) + zlib.compress(d)
    data = pack([blob, e], h=OTHER)
elif case == "other-algo-ofs":
    data = pack([blob, ofs_delta], h=OTHER)
elif case == "junk":
    data = pack([blob, ofs_delta]) + b"junk"
elif case == "many-one-bad":
    # enough deltas for several resolver threads; one of them is broken
    ents, off = [blob], len(blob)
    for i in range(200):
        r = base + b"variant %d\n" % i
        dd = delta(base, r)
        if i == 150:
            dd = varint(len(base)) + varint(len(r) + 1) + dd[len(varint(len(base)) + varint(len(r))):]
        e = hdr(6, len(dd)) + ofs(off) + zlib.compress(dd)
        ents.append(e)
        off += len(e)
    data = pack(ents)
elif case == "many-good":
    # chains of three deltas, each chain based on the blob
    ents, pos, prev, prev_pos = [blob], 12 + len(blob), base, 12
    for i in range(200):
        cont = i % 3 != 0
        b0, bpos = (prev, prev_pos) if cont else (base, 12)
        r = b0 + b"variant %d\n" % i
        dd = delta(b0, r)
        e = hdr(6, len(dd)) + ofs(pos - bpos) + zlib.compress(dd)
        ents.append(e)
        prev, prev_pos = r, pos
        pos += len(e)
    data = pack(ents)
elif case == "bad-commit":
    c = b"tree nothex\nauthor A <a> 1 +0000\ncommitter A <a> 1 +0000\n\nmsg\n"
    data = pack([hdr(1, len(c)) + zlib.compress(c)])
elif case == "bad-tree":
    t = b"10x644 name\0" + b"\1" * RAW
    data = pack([hdr(2, len(t)) + zlib.compress(t)])
elif case == "dangling-tree":
    t = b"100644 name\0" + H(b"absent").digest()
    data = pack([hdr(2, len(t)) + zlib.compress(t)])
elif case == "thin":
    data = pack([ref_delta])
elif case == "delta-oom":
    data = pack([empty, hdr(6, len(OOM_DELTA)) + ofs(len(empty)) + zlib.compress(OOM_DELTA)])
elif case == "delta-oom-base":
    bad = claim(len(base), 2400000000, bytes([0x91, 0, 5]))
    data = pack([blob, hdr(6, len(bad)) + ofs(len(blob)) + zlib.compress(bad)])
elif case in ("huge-entry", "big-entry"):
    data = pack([hdr(3, HUGE if case[0] == "h" else BIG) + zlib.compress(base)])
elif case in ("huge-delta-entry", "big-delta-entry"):
    data = pack([blob, hdr(6, HUGE if case[0] == "h" else BIG) + ofs(len(blob)) + zlib.compress(d)])
elif case == "big-ref-delta-entry":
    data = pack([blob, hdr(7, BIG) + oid("blob", base) + zlib.compress(d)])
elif case == "huge-count":
    data = pack([blob, ofs_delta], count=0xFFFFFFFF)
elif case == "bomb-big":
    # a 3 GB claim that its compressed bytes could never produce
    data = pack([hdr(3, 3 << 30) + zlib.compress(b"\0" * (1 << 20), 9)])
elif case == "odb-hostile":
    data = odb_hostile()
else:
    sys.exit("unknown case " + case)
open(out, "wb").write(bytes(data))
