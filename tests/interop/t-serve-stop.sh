#!/usr/bin/env bash
# Graceful stop of `packwire serve`: SIGTERM while a response is in flight
# (a slow reader of a 20 MB pack) closes the listening socket at once (new
# connections are refused) but the response runs to its end, byte for byte;
# then the server exits 0 and removes its pid file. SIGINT does the same.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

mkdir -p srv
git init -q --bare srv/big.git
git init -q work
head -c 20000000 /dev/urandom >work/blob.bin
git -C work add blob.bin && git -C work commit -q -m big
git -C work push -q "$T/srv/big.git" HEAD:refs/heads/main
git -C srv/big.git repack -q -a -d
pack=$(cd srv/big.git && ls objects/pack/*.pack)
size=$(wc -c <"srv/big.git/$pack")

cat >slow.py <<'PY'
import os, signal, socket, sys, time
port, pid, path, sig = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.create_connection(("127.0.0.1", port), timeout=30)
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
s.sendall(("GET /big.git/%s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
data = s.recv(65536)
os.kill(pid, getattr(signal, sig))
time.sleep(1)
try:
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    refused = "accepted"
except OSError:
    refused = "refused"
while True:
    d = s.recv(1 << 20)
    if not d:
        break
    data += d
    time.sleep(0.001)
head, _, body = data.partition(b"\r\n\r\n")
print(head.split(b"\r\n")[0].decode(), len(body), refused)
PY

for sig in TERM INT; do
	start_serve stop-$sig "$T/srv"
	pid=$SERVE_PID
	out=$(python3 slow.py "$SERVE_PORT" "$pid" "$pack" SIG$sig)
	set -- $out
	check "SIG$sig in flight: the response is 200" test "$2" = 200
	check "SIG$sig in flight: all $size bytes of the pack arrive (got ${4:-none})" test "${4:-0}" = "$size"
	check "SIG$sig: new connections refused while stopping" test "${5:-}" = refused
	rc=0
	wait "$pid" || rc=$?
	check "SIG$sig: serve exits 0" test $rc = 0
	check "SIG$sig: pid file removed" test ! -e "stop-$sig.pid"
	contains "SIG$sig: it said why it stops" "stop-$sig.log" "SIG$sig, finishing the requests in flight"
	contains "SIG$sig: the request is in the access log" "stop-$sig.log" "\"GET /big.git/$pack HTTP/1.1\" 200 $size "
	serve_logs_clean stop-$sig
done
SERVE_PIDS=()
finish
