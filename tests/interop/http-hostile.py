#!/usr/bin/env python3
"""A hostile smart-HTTP server for the client tests.

usage: http-hostile.py PORTFILE REPO
Listens on a free 127.0.0.1 port (written to PORTFILE) and answers by the
first path segment, for any repository name after it:
  /ok/...        a real advertisement of REPO (git upload-pack), POSTs too
  /status/...    500 on info/refs
  /lying/...     Content-Length 100000 with only the advertisement behind it
  /endless/...   a valid "# service=" preamble, then ref lines for ever
  /badpkt/...    the advertisement type, then bytes that are no pkt-line
  /loop/...      a redirect to itself
  /dumb/...      text/plain, as a dumb server's info/refs
  /postfail/...  a real advertisement; every POST gets a 500
  /postjunk/...  a real advertisement; POSTs get a result of junk pkt-lines
  /postcut/...   a real advertisement; POST answers stop half-way (lying length)
"""
import http.server
import socket
import subprocess
import sys

portfile, repo = sys.argv[1], sys.argv[2]


def pkt(b):
    return b"%04x" % (len(b) + 4) + b


def advertisement(service):
    out = subprocess.run(["git", service[4:], "--stateless-rpc", "--advertise-refs", repo],
                         check=True, capture_output=True).stdout
    return pkt(b"# service=%s\n" % service.encode()) + b"0000" + out


def real_post(service, body, env_proto):
    import gzip
    env = None
    if env_proto:
        import os
        env = dict(os.environ, GIT_PROTOCOL=env_proto)
    r = subprocess.run(["git", service[4:], "--stateless-rpc", repo], input=body,
                       capture_output=True, env=env)
    if r.returncode:
        sys.stderr.write("hostile: %s failed: %s\n" % (service, r.stderr.decode()))
    return r.stdout


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, code, ctype, body, length=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def do_GET(self):
        mode = self.path.split("/")[1]
        service = self.path.split("service=")[-1]
        ctype = "application/x-%s-advertisement" % service
        if mode == "status":
            return self.send(500, "text/plain", b"no\n")
        if mode == "loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if mode == "dumb":
            return self.send(200, "text/plain", b"0" * 40 + b"\trefs/heads/main\n")
        if mode == "badpkt":
            return self.send(200, ctype, b"zzzz this is no pkt-line\n")
        if mode == "endless":
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.end_headers()
            try:
                self.wfile.write(pkt(b"# service=%s\n" % service.encode()) + b"0000")
                line = pkt(b"%s refs/heads/x\n" % (b"1" * 40)) * 1000
                while True:
                    self.wfile.write(line)
            except OSError:
                pass
            self.close_connection = True
            return
        adv = advertisement(service)
        if mode == "lying":
            self.send(200, ctype, adv, length=100000)
            self.close_connection = True
            return
        self.send(200, ctype, adv)

    def do_POST(self):
        mode = self.path.split("/")[1]
        service = self.path.rsplit("/", 1)[-1]
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        if self.headers.get("Content-Encoding") == "gzip":
            import gzip
            body = gzip.decompress(body)
        ctype = "application/x-%s-result" % service
        if mode == "postfail":
            return self.send(500, "text/plain", b"no\n")
        if mode == "postjunk":
            return self.send(200, ctype, b"0008NAK\n" + pkt(b"\x01PACK junk junk junk") + b"zzzz")
        out = real_post(service, body, self.headers.get("Git-Protocol"))
        if mode == "postcut":
            self.send(200, ctype, out[: len(out) // 2], length=len(out))
            self.close_connection = True
            return
        self.send(200, ctype, out)


class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET


srv = S(("127.0.0.1", 0), H)
with open(portfile + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(portfile + ".tmp", portfile)
srv.serve_forever()
