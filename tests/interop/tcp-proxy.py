#!/usr/bin/env python3
"""tcp-proxy.py PORTFILE TARGET_HOST TARGET_PORT [LISTEN_PORT]: forward every
connection to 127.0.0.1:LISTEN_PORT (0 or absent: a free port, written to
PORTFILE) to the target, both ways, until killed. The cluster tests put it
between one node and etcd, and kill it to cut that node off (a partition)."""
import socket
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def main():
    portfile, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    listen = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", listen))
    ls.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write("%d\n" % ls.getsockname()[1])
    import os
    os.rename(portfile + ".tmp", portfile)
    while True:
        c, _ = ls.accept()
        try:
            u = socket.create_connection((host, port), timeout=5)
            u.settimeout(None)
        except OSError:
            c.close()
            continue
        for a, b in ((c, u), (u, c)):
            threading.Thread(target=pipe, args=(a, b), daemon=True).start()


main()
