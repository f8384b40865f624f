#!/usr/bin/env bash
# GET /healthz of `packwire serve` (issue 28, item 5): "ok" (200) while it
# serves, 503 from the moment SIGTERM comes. With --shutdown-delay the
# server keeps serving meanwhile (a clone still works, /healthz says 503,
# /metrics says packwire_shutting_down 1) until the delay ends or a second
# signal comes; without it, a connection kept alive sees 503 while a
# request in flight (a push whose hook runs) finishes. GET and HEAD only;
# it answers while every job is busy. SHA-1 and SHA-256 repositories.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
done
git init -q --bare srv/hold.git
git -C srv/hold.git config http.receivepack true
printf '#!/bin/sh\ni=0\nwhile [ ! -e "%s/release" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done\n' \
	"$T" >srv/hold.git/hooks/pre-receive
chmod +x srv/hold.git/hooks/pre-receive
git init -q hold-work
git -C hold-work commit -q --allow-empty -m hold

code() { curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@"; }
# wait_code URL CODE: poll (at most 60 s) until URL answers CODE
wait_code() {
	local i
	for i in $(seq 1 300); do
		[ "$(code "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	return 1
}

# ---- with --shutdown-delay ---------------------------------------------------
start_serve delay "$T/srv" --shutdown-delay=300 --max-jobs=1 --max-queue=0
PID=$SERVE_PID
U=http://127.0.0.1:$SERVE_PORT
check "healthz: 200 while serving" test "$(code "$U/healthz")" = 200
check "healthz: the body is ok" test "$(curl -s --max-time 10 "$U/healthz")" = ok
check "healthz: HEAD is 200" test "$(code -I "$U/healthz")" = 200
check "healthz: POST is 405" test "$(code -d x "$U/healthz")" = 405
check "healthz: a query string changes nothing" test "$(code "$U/healthz?verbose=1")" = 200
check "healthz: no caching" eval 'curl -s -D - -o /dev/null "$U/healthz" | tr -d "\r" | grep -qi "^Cache-Control: no-cache"'

# every job busy: still ok (busy is not unhealthy)
git -C hold-work push -q "$U/hold.git" HEAD:refs/heads/main >hold.out 2>&1 &
hold=$!
for i in $(seq 1 300); do
	curl -s --max-time 10 "$U/metrics" | grep -qx 'packwire_jobs_running 1' && break
	sleep 0.2
done
check "healthz: 200 while every job is busy" test "$(code "$U/healthz")" = 200
touch release
check "healthz: the push that held the job succeeds" wait $hold
rm -f release

kill -TERM $PID
check "SIGTERM: healthz turns 503" wait_code "$U/healthz" 503
check "SIGTERM: ... saying so" test "$(curl -s --max-time 10 "$U/healthz")" = "shutting down"
check "SIGTERM: /metrics says packwire_shutting_down 1" eval \
	'curl -s --max-time 10 "$U/metrics" | grep -qx "packwire_shutting_down 1"'
for algo in sha1 sha256; do
	git clone -q --bare "$U/$algo.git" "during-$algo" 2>"during-$algo.err" ||
		{ not_ok "SIGTERM, during the delay: clone of $algo"; cat "during-$algo.err"; }
	check "SIGTERM, during the delay: $algo clone is fsck clean, same refs" eval \
		'fsck_ok "during-$algo" && same_refs "during-$algo" "srv/$algo.git"'
done
contains "SIGTERM: the log says it goes on serving" delay.log "SIGTERM, /healthz says 503; serving 300 more seconds"
# a second signal ends the delay
kill -TERM $PID
rc=0
wait $PID || rc=$?
check "second SIGTERM: serve exits 0" test $rc = 0
check "second SIGTERM: pid file removed" test ! -e delay.pid
check "second SIGTERM: new connections are refused" test "$(code "$U/healthz")" = 000
serve_logs_clean delay

# ---- without a delay: a kept-alive connection sees 503 while a request ends --
start_serve nodelay "$T/srv"
PID=$SERVE_PID
PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT
git -C hold-work commit -q --allow-empty -m "hold again"
git -C hold-work push -q "$U/hold.git" HEAD:refs/heads/main >hold2.out 2>&1 &
hold=$!
for i in $(seq 1 300); do
	curl -s --max-time 10 "$U/metrics" | grep -qx 'packwire_jobs_running 1' && break
	sleep 0.2
done
# keepalive.py: /healthz on one connection, SIGTERM, /healthz again on it
cat >keepalive.py <<'PY'
import http.client, os, signal, sys, time
port, pid, release = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
c.request("GET", "/healthz"); r = c.getresponse(); print("before", r.status, r.read().decode().strip())
os.kill(pid, signal.SIGTERM)
for i in range(100):
    c.request("GET", "/healthz"); r = c.getresponse(); body = r.read().decode().strip()
    if r.status == 503:
        break
    time.sleep(0.1)
print("after", r.status, body.replace(" ", "_"))
open(release, "w").close()
PY
out=($(python3 keepalive.py "$PORT" "$PID" "$T/release"))
check "no delay: healthz 200 on a kept-alive connection (${out[*]})" test "${out[1]:-}" = 200
check "no delay: after SIGTERM the same connection gets 503 shutting down" \
	eval 'test "${out[4]:-}" = 503 && test "${out[5]:-}" = shutting_down'
check "no delay: the push in flight finishes" wait $hold
check "no delay: ... its ref is there" test "$(git -C srv/hold.git rev-parse refs/heads/main)" = \
	"$(git -C hold-work rev-parse HEAD)"
rc=0
wait $PID || rc=$?
check "no delay: serve exits 0" test $rc = 0
serve_logs_clean nodelay
SERVE_PIDS=()
finish
