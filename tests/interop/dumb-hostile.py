#!/usr/bin/env python3
"""A hostile dumb-HTTP server for t-dumb-http-hostile.sh.

usage: dumb-hostile.py PORTFILE REPO OTHER-ALGO-REPO
Serves REPO's files for any /<mode>/<name>.git/<file> (no smart answer:
text/plain everywhere), with one lie per mode:
  ok          the files as they are
  garbage     info/refs is an HTML page
  badlen      info/refs ids of 50 hex digits
  mixedlen    info/refs: a SHA-1 id, then a SHA-256 one
  badhead     HEAD is garbage
  badpacks    objects/info/packs names "../../config"
  truncpack   every .pack is cut in half
  otheridx    every .idx is OTHER-ALGO-REPO's (the other algorithm)
  missing     the loose object of HEAD:loose.txt is not found (404)
  badloose    HEAD:loose.txt's file holds the bytes of the HEAD commit's
  bomb        HEAD:loose.txt's file is 512 KiB of zlib declaring (and
              inflating to) a 512 MiB blob, which is not that object
  altloop     no objects; http-alternates of a.git names b.git's, and b's a's
"""
import http.server
import os
import socket
import subprocess
import sys
import zlib

portfile, repo, other = sys.argv[1], sys.argv[2], sys.argv[3]


def rev(r, what):
    return subprocess.run(["git", "-C", r, "rev-parse", what], check=True,
                          capture_output=True, text=True).stdout.strip()


def loose_path(oid):
    return "objects/%s/%s" % (oid[:2], oid[2:])


blob = loose_path(rev(repo, "HEAD:loose.txt"))
commit = loose_path(rev(repo, "HEAD"))
other_idx = [os.path.join(other, "objects/pack", f)
             for f in sorted(os.listdir(os.path.join(other, "objects/pack")))
             if f.endswith(".idx")][0]


_bomb = []


def bomb():
    """zlib of "blob 536870912\\0" and 512 MiB of zeros (made once)"""
    if not _bomb:
        z = zlib.compressobj(9)
        parts = [z.compress(b"blob %d\0" % (512 << 20))]
        mib = bytes(1 << 20)
        for _ in range(512):
            parts.append(z.compress(mib))
        parts.append(z.flush())
        _bomb.append(b"".join(parts))
    return _bomb[0]


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, body):
        self.send_response(code)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        parts = path.split("/")
        mode, name, rest = parts[1], parts[2], "/".join(parts[3:])
        if ".." in parts:
            return self.send(404, b"no\n")
        if mode == "garbage" and rest == "info/refs":
            return self.send(200, b"<html><body>It works!</body></html>\n")
        if mode == "badlen" and rest == "info/refs":
            return self.send(200, b"1" * 50 + b"\trefs/heads/main\n")
        if mode == "mixedlen" and rest == "info/refs":
            return self.send(200, b"1" * 40 + b"\trefs/heads/a\n" + b"2" * 64 + b"\trefs/heads/b\n")
        if mode == "badhead" and rest == "HEAD":
            return self.send(200, b"\x00\x01garbage\n")
        if mode == "badpacks" and rest == "objects/info/packs":
            return self.send(200, b"P ../../config\n\n")
        if mode == "missing" and rest == blob:
            return self.send(404, b"no\n")
        if mode == "badloose" and rest == blob:
            rest = commit
        if mode == "bomb" and rest == blob:
            return self.send(200, bomb())
        if mode == "altloop":
            if rest == "objects/info/http-alternates":
                peer = "b.git" if name == "a.git" else "a.git"
                host = self.headers.get("Host")
                return self.send(200, b"http://%s/altloop/%s/objects\n" % (host.encode(), peer.encode()))
            if rest.startswith("objects/"):
                return self.send(404, b"no\n")
        f = os.path.join(repo, rest)
        if mode == "otheridx" and rest.endswith(".idx"):
            f = other_idx
        try:
            with open(f, "rb") as fh:
                body = fh.read()
        except OSError:
            return self.send(404, b"no\n")
        if mode == "truncpack" and rest.endswith(".pack"):
            body = body[: len(body) // 2]
        self.send(200, body)


class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET


srv = S(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
