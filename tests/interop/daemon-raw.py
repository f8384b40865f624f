#!/usr/bin/env python3
"""Hostile git:// clients for the daemon tests.

usage: daemon-raw.py PORT MODE [ARGS]
  send ARG...           send each ARG (Python escapes: \\0, \\n, \\xNN; an ARG
                        starting "pkt:" goes in one pkt-line), print
                        the answer one packet per line (text before the
                        first NUL), "flush" for 0000, then "closed"
  silent SECS           connect, say nothing; print "closed" when the server
                        hangs up within SECS seconds, else "still open"
  flood N SECS          open N silent connections at once, hold them SECS
                        seconds; print how many the server closed early
  midpack PATH          ask upload-pack (v0) for the first ref, read part of
                        the pack, vanish
  midpush PATH PACK NEW REF
                        push PACK (creating REF at NEW) to receive-pack,
                        vanish halfway through the pack
"""
import socket
import sys
import time


def pkt(data):
    if isinstance(data, str):
        data = data.encode()
    return b"%04x" % (len(data) + 4) + data


def request(service, path, extra=b""):
    return pkt(b"git-%s %s\0host=127.0.0.1\0%s" % (service.encode(), path.encode(), extra))


def conn(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    return s


def read_exact(s, n):
    b = b""
    while len(b) < n:
        d = s.recv(n - len(b))
        if not d:
            return None
        b += d
    return b


def read_pkt(s):
    h = read_exact(s, 4)
    if h is None:
        return None
    n = int(h, 16)
    if n == 0:
        return b""
    return read_exact(s, n - 4)


def show(s):
    while True:
        try:
            p = read_pkt(s)
        except (socket.timeout, ConnectionResetError, ValueError):
            p = None
        if p is None:
            print("closed")
            return
        if p == b"":
            print("flush")
            continue
        line = p.split(b"\0")[0].rstrip(b"\n")
        print(line.decode("utf-8", "replace"))


def read_adv(s):
    refs = []
    while True:
        p = read_pkt(s)
        if p is None:
            raise SystemExit("no advertisement")
        if p == b"":
            return refs
        refs.append(p.split(b"\0")[0].rstrip(b"\n").split(b" ", 1))


def main():
    port = int(sys.argv[1])
    mode = sys.argv[2]
    if mode == "send":
        data = b""
        for a in sys.argv[3:]:
            p = a.startswith("pkt:")
            b = a[4 if p else 0:].encode().decode("unicode_escape").encode("latin-1")
            data += pkt(b) if p else b
        s = conn(port)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        show(s)
    elif mode == "silent":
        s = conn(port)
        s.settimeout(float(sys.argv[3]))
        try:
            d = s.recv(1)
            print("closed" if not d else "data")
        except socket.timeout:
            print("still open")
        except ConnectionResetError:
            print("closed")
    elif mode == "flood":
        n, hold = int(sys.argv[3]), float(sys.argv[4])
        socks = [conn(port) for _ in range(n)]
        time.sleep(0.5)
        closed = 0
        for s in socks:
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    closed += 1
            except BlockingIOError:
                pass
            except ConnectionResetError:
                closed += 1
        time.sleep(max(0.0, hold - 0.5))
        for s in socks:
            s.close()
        print(closed)
    elif mode == "midpack":
        s = conn(port)
        s.sendall(request("upload-pack", sys.argv[3]))
        refs = read_adv(s)
        want = refs[0][0]
        s.sendall(pkt(b"want %s side-band-64k ofs-delta\n" % want) + b"0000" + pkt(b"done\n"))
        got = s.recv(300)
        s.close()
        print("read %d bytes, vanished" % len(got))
    elif mode == "midpush":
        path, packfile, new, ref = sys.argv[3:7]
        s = conn(port)
        s.sendall(request("receive-pack", path))
        refs = read_adv(s)
        zero = b"0" * len(refs[0][0])
        pack = open(packfile, "rb").read()
        algo = b"sha256" if len(zero) == 64 else b"sha1"
        s.sendall(pkt(b"%s %s %s\0report-status object-format=%s" % (zero, new.encode(), ref.encode(), algo)) + b"0000")
        try:
            s.sendall(pack[: len(pack) // 2])
            time.sleep(0.2)
        except (BrokenPipeError, ConnectionResetError) as e:
            print("server hung up: %s" % e)
        s.close()
        print("sent %d of %d pack bytes, vanished" % (len(pack) // 2, len(pack)))
    else:
        raise SystemExit(__doc__)


main()
