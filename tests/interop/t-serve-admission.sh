#!/usr/bin/env bash
# Admission control of `packwire serve` (issue 28, item 2), SHA-1 and
# SHA-256 repositories behind one server:
#  - clients that ask for a 20 MB pack and then stop reading fill
#    --max-jobs and --max-queue; stock `git clone` and `git ls-remote` are
#    then refused at once with 503, Retry-After and a one-line reason that
#    git shows as "remote: ..."; /metrics and /healthz still answer;
#  - no stalled client holds a job longer than --timeout while idle: the
#    server drops them (access log: timeout), the queued ones get their
#    turn and are dropped too, every client ends, and clones succeed after
#    the storm (fsck clean, same refs);
#  - a request that waits --timeout seconds behind a busy (not idle) job (a
#    push whose pre-receive hook runs) is refused then, and the push
#    succeeds; a client that leaves while it waits frees its place;
#  - --max-queue=0 refuses as soon as every job is busy.
# Nothing here is timed: every wait is a bounded poll of the server's own
# numbers (GET /metrics).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

mkdir -p srv
head -c 20000000 /dev/urandom >blob.bin
for algo in sha1 sha256; do
	git init -q --object-format=$algo "w-$algo"
	cp blob.bin "w-$algo/blob.bin"
	git -C "w-$algo" add blob.bin
	git -C "w-$algo" commit -q -m "a big blob"
	git init -q --bare --object-format=$algo "srv/$algo.git"
	git -C "w-$algo" push -q "$T/srv/$algo.git" HEAD:refs/heads/main
	git -C "srv/$algo.git" repack -q -a -d
done
pack_path() { (cd "srv/$1.git" && ls objects/pack/*.pack); }
# a push to hook-ALGO.git keeps its job busy (not idle) until release
# exists; its hook creates hooked-ALGO when it starts, so a test knows the
# push's POST (not its first GET of info/refs) holds the job
for algo in sha1 sha256; do
	git init -q --bare --object-format=$algo "srv/hook-$algo.git"
	git -C "srv/hook-$algo.git" config http.receivepack true
	printf '#!/bin/sh\n: >"%s/hooked-%s"\ni=0\nwhile [ ! -e "%s/release" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done\n' \
		"$T" "$algo" "$T" >"srv/hook-$algo.git/hooks/pre-receive"
	chmod +x "srv/hook-$algo.git/hooks/pre-receive"
	git init -q --object-format=$algo "p-$algo"
	git -C "p-$algo" commit -q --allow-empty -m "held by the hook"
done
size=$(wc -c <"srv/sha1.git/$(pack_path sha1)")

# client.py PORT PATH MODE RELEASE: one GET; MODE "stall" reads nothing
# until the file RELEASE exists, "leave" closes the connection when it
# exists. Then it reads to the end.
# Prints "<status> <body bytes> <how it ended>" (eof, reset or
# client-timeout: the server never ended it).
cat >client.py <<'PY'
import os, socket, sys, time
port, path, mode, release = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.settimeout(90)
s.connect(("127.0.0.1", port))
s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n" % path).encode())
data, how, t0 = b"", "eof", time.time()
while not os.path.exists(release) and time.time() - t0 < 120:
    time.sleep(0.1)
if mode == "leave":
    s.close()
    print("- 0 left")
    sys.exit(0)
try:
    while True:
        d = s.recv(1 << 20)
        if not d:
            break
        data += d
except socket.timeout:
    how = "client-timeout"
except OSError:
    how = "reset"
head, _, body = data.partition(b"\r\n\r\n")
status = head.split(b" ")[1].decode() if head.startswith(b"HTTP/") else "-"
print(status, len(body), how)
PY

# metric NAME: its value in the server's /metrics now
metric() {
	curl -s --max-time 10 "http://127.0.0.1:$PORT/metrics" |
		awk -v n="$1" '$1 == n { print $2; found = 1 } END { if (!found) print "absent" }'
}
# wait_file PATH: poll (at most 60 s) until PATH exists
wait_file() {
	local i
	for i in $(seq 1 300); do
		[ -e "$1" ] && return 0
		sleep 0.2
	done
	echo "    $1 never appeared" >&2
	return 1
}
# wait_for NAME VALUE: poll /metrics (at most 60 s) until NAME is VALUE
wait_for() {
	local i
	for i in $(seq 1 300); do
		[ "$(metric "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	echo "    $1 is $(metric "$1"), not $2" >&2
	return 1
}

# ---- a storm of stalled clients -------------------------------------------
start_serve storm "$T/srv" --max-jobs=2 --max-queue=2 --timeout=8 --access-log="$T/access.log"
PID=$SERVE_PID PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT
cpids=()
n=0
for algo in sha1 sha256 sha1 sha256; do
	n=$((n + 1))
	python3 client.py "$PORT" "/$algo.git/$(pack_path $algo)" stall "$T/release" >"stall-$n.out" 2>&1 &
	cpids+=($!)
	# in order: the first two take the jobs, the next two wait
	[ $n != 2 ] || wait_for packwire_jobs_running 2 || true
done
check "storm: two stalled clients hold the two jobs" wait_for packwire_jobs_running 2
check "storm: two more wait in the queue" wait_for packwire_jobs_queued 2
check "storm: /healthz still answers ok" test "$(curl -s --max-time 10 "$U/healthz")" = ok

for algo in sha1 sha256; do
	rc=0
	timeout 60 git clone -q "$U/$algo.git" "refused-$algo" 2>"refused-$algo.err" || rc=$?
	check "storm: git clone of $algo is refused (exit 128)" test $rc = 128
	contains "storm: ... git shows the reason as remote:" "refused-$algo.err" \
		"remote: The server is busy: all its jobs are running and its queue is full. Try again in 5 seconds."
	contains "storm: ... and the 503" "refused-$algo.err" "The requested URL returned error: 503"
	check "storm: ... and leaves no repository behind" test ! -e "refused-$algo"
done
rc=0
timeout 60 git ls-remote "$U/sha256.git" >ls.out 2>ls.err || rc=$?
check "storm: git ls-remote is refused too (exit 128)" test $rc = 128
contains "storm: ... with the reason" ls.err "remote: The server is busy"
curl -s -i --max-time 10 "$U/sha1.git/info/refs?service=git-upload-pack" | tr -d '\r' >busy.http
contains "storm: the answer is 503" busy.http "HTTP/1.1 503 Service Unavailable"
contains "storm: ... with Retry-After" busy.http "Retry-After: 5"
contains "storm: ... as text/plain" busy.http "Content-Type: text/plain; charset=utf-8"
check "storm: ... and a one-line body" test "$(sed '1,/^$/d' busy.http | wc -l)" = 1
check "storm: refusals counted (4: two clones, ls-remote, curl)" \
	test "$(metric 'packwire_requests_refused_total{reason="queue_full"}')" = 4

# idle clients lose their jobs after --timeout; the queued ones then get
# theirs and lose them the same way; the server is idle again
check "recovery: the jobs are freed" wait_for packwire_jobs_running 0
check "recovery: the queue is empty" wait_for packwire_jobs_queued 0
touch release
for p in "${cpids[@]}"; do wait "$p" || true; done
# (a queued one waited --timeout too: it may have been refused just before
# a job came free)
for n in 1 2 3 4; do
	read -r st got how <"stall-$n.out" || true
	check "recovery: stalled client $n ended, cut by the server or refused ($st, $got of $size bytes, $how)" \
		eval 'test "$how" != client-timeout && test "${got:-0}" -lt "$size" &&
			{ test "$st" = 200 || test "$st" = 503; }'
done
check "recovery: the first two stalled clients were dropped for their idle --timeout" \
	test "$(grep -c 'GET /sha[0-9]*.git/objects/pack/.* 200 [0-9]* .* timeout$' access.log)" -ge 2
check "recovery: the access log says timeout or 503 for each stalled client" \
	test "$(grep -cE 'GET /sha[0-9]*.git/objects/pack/.*( timeout|" 503 .*)$' access.log)" = 4
for algo in sha1 sha256; do
	timeout 120 git clone -q --bare "$U/$algo.git" "after-$algo" 2>"after-$algo.err" ||
		{ not_ok "recovery: clone of $algo after the storm"; cat "after-$algo.err"; }
	check "recovery: $algo clone after the storm is fsck clean, same refs" \
		eval 'fsck_ok "after-$algo" && same_refs "after-$algo" "srv/$algo.git"'
done
stop_serve $PID
check "storm: serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean storm
rm -f release

# ---- waiting behind a busy job, leaving the queue ---------------------------
start_serve wait "$T/srv" --max-jobs=1 --max-queue=2 --timeout=3
PID=$SERVE_PID PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT
# a push whose pre-receive hook runs keeps its job busy (never idle)
git -C p-sha256 push -q "$U/hook-sha256.git" HEAD:refs/heads/main >push.out 2>&1 &
slow=$!
check "wait: a push (its hook running) holds the job" \
	eval 'wait_file hooked-sha256 && wait_for packwire_jobs_running 1'
python3 client.py "$PORT" "/sha1.git/info/refs" leave "$T/leave" >leave.out 2>&1 &
leaver=$!
check "wait: a second client waits" wait_for packwire_jobs_queued 1
touch leave
wait $leaver || true
check "wait: when it closes its connection it leaves the queue" wait_for packwire_jobs_queued 0
check "wait: ... counted as abandoned" wait_for packwire_requests_abandoned_total 1
curl -s -i --max-time 30 "$U/sha1.git/info/refs?service=git-upload-pack" | tr -d '\r' >late.http
contains "wait: a request that waited --timeout seconds is refused with 503" late.http \
	"HTTP/1.1 503 Service Unavailable"
contains "wait: ... saying why" late.http \
	"The server is busy: no job became free for this request in 3 seconds."
contains "wait: ... with Retry-After" late.http "Retry-After: 5"
check "wait: counted as queue_timeout" \
	test "$(metric 'packwire_requests_refused_total{reason="queue_timeout"}')" = 1
touch release
rc=0
wait $slow || rc=$?
check "wait: the push that held the job succeeds" test $rc = 0
check "wait: ... its ref is there" test "$(git -C srv/hook-sha256.git rev-parse refs/heads/main)" = \
	"$(git -C p-sha256 rev-parse HEAD)"
check "wait: the job is free once the push is done" wait_for packwire_jobs_running 0
timeout 120 git clone -q --bare "$U/sha1.git" after-wait 2>after-wait.err ||
	{ not_ok "wait: clone afterwards"; cat after-wait.err; }
check "wait: clone afterwards is fsck clean" fsck_ok after-wait
stop_serve $PID
serve_logs_clean wait
rm -f release

# ---- --max-queue=0: no waiting ----------------------------------------------
start_serve noqueue "$T/srv" --max-jobs=1 --max-queue=0 --timeout=3 --retry-after=7
PID=$SERVE_PID PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT
git -C p-sha1 push -q "$U/hook-sha1.git" HEAD:refs/heads/main >push0.out 2>&1 &
slow=$!
check "no queue: a push (its hook running) holds the only job" \
	eval 'wait_file hooked-sha1 && wait_for packwire_jobs_running 1'
rc=0
timeout 60 git clone -q "$U/sha256.git" refused0 2>refused0.err || rc=$?
check "no queue: git clone refused at once (exit 128)" test $rc = 128
contains "no queue: ... saying so, with the configured Retry-After" refused0.err \
	"remote: The server is busy: all its jobs are running. Try again in 7 seconds."
touch release
rc=0
wait $slow || rc=$?
check "no queue: the push that held the job succeeds" test $rc = 0
check "no queue: the job is free again" wait_for packwire_jobs_running 0
timeout 120 git clone -q --bare "$U/sha256.git" after0 2>after0.err ||
	{ not_ok "no queue: clone afterwards"; cat after0.err; }
check "no queue: clone afterwards is fsck clean, sha256" \
	eval 'fsck_ok after0 && test "$(git -C after0 rev-parse --show-object-format)" = sha256'
stop_serve $PID
serve_logs_clean noqueue
finish
