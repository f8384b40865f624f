#!/usr/bin/env bash
# `packwire serve` against hostile clients: malformed HTTP, oversized
# headers, an oversized and a truncated POST body, a gzip bomb, a client
# that stalls mid-body (dropped after --timeout), traversal in the path,
# unknown services. A body's framing and declared length are judged as soon
# as the header is in, before any body byte (issue 26): a length over the
# endpoint's bound is 413 at once, libmicrohttpd's "unknown size" length,
# lengths that disagree, a length with Transfer-Encoding and codings other
# than a final chunked are 400 (501 for one we do not know). Connections past --max-connections wait. Each gets a clear status (or is dropped), nothing is
# written into the repositories, and a normal clone still works after each.
# /metrics, /healthz and the browse pages (issue 28) go through the same first
# look: a wrong method is 405, bad framing 400, a body over --max-body 413.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config http.receivepack true
done
for algo in sha1 sha256; do
	refs "srv/$algo.git" >"refs-$algo.before"
	all_objects "srv/$algo.git" >"objects-$algo.before"
done
start_serve hostile "$T/srv" --timeout=5 --max-body=4194304 --max-request-buffer=1048576 \
	--access-log="$T/access.log"
PID=$SERVE_PID
PORT=$SERVE_PORT

# raw.py CASE: sends one hostile request, prints the status code, or
# "closed" when the server dropped the connection without an answer
cat >raw.py <<'PY'
import gzip, socket, sys, time
port, case = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port), timeout=20)
def send(data):
    # the server may answer (413) and close before the whole request is
    # in: the send then fails, and the answer is still there to read
    try:
        s.sendall(data)
    except OSError:
        pass
def req(head, body=b""):
    send(head.encode() + body)
def post(path, body, extra=""):
    req("POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\n"
        "Content-Length: %d\r\n%s\r\n" % (path, len(body), extra), body)
t0 = time.time()
if case == "malformed":
    req("GARBAGE / NONSENSE\x01\r\n\r\n")
elif case == "no-slash":
    req("GET sha1.git/info/refs HTTP/1.1\r\nHost: x\r\n\r\n")
elif case == "big-header":
    req("GET /sha1.git/info/refs HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n" % ("a" * 200000))
elif case == "big-body":
    # announced, not sent: the answer comes before the body (Expect: 100-continue)
    req("POST /sha1.git/git-receive-pack HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
        "Content-Type: application/x-git-receive-pack-request\r\nContent-Length: %d\r\n\r\n" % (5 << 20))
elif case == "big-upload-request":
    post("/sha1.git/git-upload-pack", b"0032want " + b"0" * 40 + b"\n" * (1536 << 10))
elif case == "gzip-bomb":
    post("/sha256.git/git-upload-pack", gzip.compress(b"\0" * (64 << 20), 9), "Content-Encoding: gzip\r\n")
elif case in ("truncated", "stall"):
    req("POST /sha1.git/git-receive-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-receive-pack-request\r\nContent-Length: 100000\r\n\r\n",
        b"0" * 1000)
    if case == "truncated":
        s.shutdown(socket.SHUT_WR)
elif case == "declared-over-buffer":
    # only the header: the answer may not wait for a body
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\nContent-Length: 3000000\r\n\r\n")
elif case == "declared-over-buffer-gzip":
    req("POST /sha256.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\nContent-Length: 3000000\r\n\r\n")
elif case == "chunked-over-buffer":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n\r\n")
    # 1.5 MiB in chunks (a client's big negotiation looks so): answered
    # once it is in, without storing the part past the bound
    send((b"10000\r\n" + b"0" * 65536 + b"\r\n") * 24 + b"0\r\n\r\n")
elif case == "unknown-size":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Content-Length: 18446744073709551615\r\n\r\n0000")
elif case == "two-lengths":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Content-Length: 4\r\nContent-Length: 40\r\n\r\n0000")
elif case == "length-and-chunked":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n0000\r\n0\r\n\r\n")
elif case == "gzip-chunked":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Transfer-Encoding: gzip, chunked\r\n\r\n4\r\n0000\r\n0\r\n\r\n")
elif case == "identity":
    req("POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Transfer-Encoding: identity\r\n\r\n0000")
elif case == "http10-chunked":
    req("POST /sha1.git/git-upload-pack HTTP/1.0\r\nHost: x\r\n"
        "Content-Type: application/x-git-upload-pack-request\r\n"
        "Transfer-Encoding: chunked\r\n\r\n4\r\n0000\r\n0\r\n\r\n")
elif case == "two-hosts":
    req("GET /sha1.git/info/refs HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n")
elif case == "get-with-body":
    req("GET /sha1.git/info/refs HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
elif case == "traversal":
    req("GET /../../../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n")
elif case == "traversal-inside":
    req("GET /sha1.git/../sha256.git/info/refs HTTP/1.1\r\nHost: x\r\n\r\n")
elif case == "traversal-encoded":
    req("GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n")
elif case == "unknown-service":
    req("GET /sha1.git/info/refs?service=git-shell HTTP/1.1\r\nHost: x\r\n\r\n")
elif case == "unknown-rpc":
    post("/sha1.git/git-frobnicate", b"0000")
elif case == "no-repo":
    req("GET /nothing.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n")
elif case.startswith(("metrics-", "healthz-", "browse-")):
    # issue 28: the server's own pages under the same first look
    path = {"metrics": "/metrics", "healthz": "/healthz", "browse": "/"}[case.split("-")[0]]
    what = case.split("-", 1)[1]
    if what == "post":
        req("POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd" % path)
    elif what == "two-lengths":
        req("GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nContent-Length: 40\r\n\r\n0000" % path)
    elif what == "over-max-body":
        req("GET %s HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n" % (path, 5 << 20))
    elif what == "with-body":
        req("GET %s HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc" % path)
    elif what == "traversal":
        req("GET /sha1.git/../../ HTTP/1.1\r\nHost: x\r\n\r\n")
    elif what == "dot":
        req("GET /./sha1.git/ HTTP/1.1\r\nHost: x\r\n\r\n")
data = b""
try:
    while b"\r\n" not in data:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass
line = data.split(b"\r\n", 1)[0].split()
print(line[1].decode() if len(line) > 1 else "closed", "%.1f" % (time.time() - t0))
PY

alive() {
	local c=clone-$1
	rm -rf "$c"
	git clone -q --bare "http://127.0.0.1:$PORT/sha256.git" "$c" 2>"$c.err" && fsck_ok "$c"
}
# hostile CASE EXPECTED...: the status is one of EXPECTED, and a clone works after
hostile() {
	local case=$1 got
	shift
	got=$(python3 raw.py "$PORT" "$case" 2>&1 | cut -d' ' -f1)
	if [[ " $* " == *" $got "* ]]; then
		ok "$case: answered $got"
	else
		not_ok "$case: answered '$got', expected one of: $*"
	fi
	check "$case: server still serves a clone after it" alive "$case"
}
hostile malformed 400
hostile no-slash 400 404
hostile big-header 413 431 400
hostile big-body 413
hostile big-upload-request 413
hostile gzip-bomb 413
hostile truncated closed
hostile traversal 400 403 404 500
hostile traversal-inside 400 403 404 500
hostile traversal-encoded 400 403 404 500
hostile unknown-service 403
hostile unknown-rpc 404
hostile no-repo 404
# issue 26: the framing and the declared length, judged from the header
hostile declared-over-buffer 413
hostile declared-over-buffer-gzip 413
hostile chunked-over-buffer 413
hostile unknown-size 400
hostile two-lengths 400
hostile length-and-chunked 400
hostile gzip-chunked 501
hostile identity 400
hostile http10-chunked 400
hostile two-hosts 400
hostile get-with-body 200
# issue 28: /metrics, /healthz and the browse pages go through the same first look
for p in metrics healthz browse; do
	hostile $p-post 405
	hostile $p-two-lengths 400
	hostile $p-over-max-body 413
	hostile $p-with-body 200
done
hostile browse-traversal 400 404
hostile browse-dot 400 404
check "declared-over-buffer: the endpoint's refusal, logged" \
	grep -q "git-upload-pack: request was larger than our maximum size (1048576)" hostile.log
check "unknown-size: logged" grep -q "Content-Length 18446744073709551615 is too large" hostile.log
check "two-lengths: logged" grep -q "Content-Length headers disagree (4 and 40)" hostile.log

# the issue's case, against the defaults (10 MiB request buffer, 4 GiB
# bodies): 200 MB announced is refused before a byte of it is sent
start_serve defaults "$T/srv"
DPID=$SERVE_PID
out=$(python3 - "$SERVE_PORT" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
s.sendall(b"POST /sha1.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n"
          b"Content-Type: application/x-git-upload-pack-request\r\nContent-Length: 200000000\r\n\r\n")
data = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass
print(data.split(b"\r\n")[0].decode(), "|", data.split(b"\r\n\r\n", 1)[-1].decode().strip())
PY
)
check "200 MB announced: 413 before the body ($out)" test "${out%% |*}" = "HTTP/1.1 413 Content Too Large"
contains "... with the endpoint's message" <(echo "$out") "request was larger than our maximum size"
check "... logged with the bound" grep -q "request was larger than our maximum size (10485760)" defaults.log
check "... nothing spooled under /tmp" eval '! ls -l /proc/$DPID/fd 2>/dev/null | grep -q packwire-serve'
stop_serve $DPID
check "defaults: serve exits 0" test "$SERVE_RC" = 0

# a client that stalls mid-body is dropped after --timeout (5 s: shorter would
# also cut the keep-alive connections of the checking clones on a loaded machine)
out=$(python3 raw.py "$PORT" stall)
secs=${out#* }
check "stall: connection dropped without an answer ($out)" test "${out%% *}" = closed
check "stall: dropped after about --timeout=5 s, not before ($secs s)" \
	awk -v s="$secs" 'BEGIN { exit !(s >= 4.5 && s < 30) }'
check "stall: the access log says timeout" grep -q '" - 0 .* timeout$' access.log
check "stall: server still serves a clone after it" alive stall

# --max-connections: past the limit a connection waits (unaccepted) until a
# slot frees; here the idle ones are dropped after --timeout, then it is served
start_serve limit "$T/srv" --max-connections=3 --threads=1 --timeout=2
LPID=$SERVE_PID
out=$(python3 - "$SERVE_PORT" <<'PY'
import socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(3)]
time.sleep(0.3)
s = socket.create_connection(("127.0.0.1", port), timeout=1)
s.sendall(b"GET /sha1.git/info/refs HTTP/1.1\r\nHost: x\r\n\r\n")
t0 = time.time()
try:
    s.recv(100)
    first = "answered"
except socket.timeout:
    first = "waiting"
s.settimeout(15)
d = s.recv(100)
print(first, d.split(b"\r\n")[0].split(b" ")[1].decode() if d else "closed")
PY
)
check "max-connections: a 4th connection waits while 3 are open ($out)" test "${out% *}" = waiting
check "max-connections: ... and is served once the idle ones are dropped" test "${out#* }" = 200
check "max-connections: serve logged no error about its options" eval '! grep -q "Warning" limit.log'
stop_serve $LPID
check "max-connections: serve exits 0" test "$SERVE_RC" = 0

for algo in sha1 sha256; do
	same_file "$algo: refs unchanged by the hostile requests" "refs-$algo.before" <(refs "srv/$algo.git")
	same_file "$algo: no object written by the hostile requests" "objects-$algo.before" <(all_objects "srv/$algo.git")
done
check "serve still running" kill -0 $PID
stop_serve $PID
check "SIGTERM: serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean hostile
finish
