#!/usr/bin/env python3
"""badpack.py ALGO CASE OUT: write a small pack (good, or broken in one way)."""
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
elif case == "thin":
    data = pack([ref_delta])
else:
    sys.exit("unknown case " + case)
open(out, "wb").write(bytes(data))
