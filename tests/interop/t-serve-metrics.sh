#!/usr/bin/env bash
# GET /metrics of `packwire serve` (issue 28, item 3), scraped every second
# by a real Prometheus (Debian's prometheus package) on a free loopback
# port. The test clones (protocol v0 and v2), fetches, pushes (accepted,
# and rejected by a pre-receive hook), downloads dumb files, and has
# requests refused while a push holds the only job; stock git's requests are
# read back from GIT_TRACE_CURL. After a scrape that follows all of it, the
# numbers queried through Prometheus's HTTP API equal what the clients did:
# requests by service, protocol and status, the latency histogram's counts,
# bytes received and sent, pushes, refusals, jobs, the pack cache (zero
# without one; a second server with --pack-cache counts its miss and hit)
# and the process's CPU and memory. `promtool check metrics`
# finds nothing to say; --no-metrics turns the endpoint off.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	skip "prometheus and promtool missing (Debian's prometheus package): scripts/install-deps.sh installs it"
	finish
fi

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config http.receivepack true
	printf '#!/bin/sh\nwhile read o n ref; do\n  case $ref in refs/heads/blocked-*) echo "policy: $ref is blocked"; exit 1;; esac\ndone\nexit 0\n' \
		>"srv/$algo.git/hooks/pre-receive"
	chmod +x "srv/$algo.git/hooks/pre-receive"
done
# a push to hold.git keeps the only job busy until release exists
git init -q --bare srv/hold.git
git -C srv/hold.git config http.receivepack true
printf '#!/bin/sh\ni=0\nwhile [ ! -e "%s/release" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done\n' \
	"$T" >srv/hold.git/hooks/pre-receive
chmod +x srv/hold.git/hooks/pre-receive

start_serve metrics "$T/srv" --max-jobs=1 --max-queue=0 --timeout=30
PID=$SERVE_PID PORT=$SERVE_PORT
U=http://127.0.0.1:$PORT

PPORT=$(free_port)
cat >prom.yml <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: packwire
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
prometheus --config.file=prom.yml --storage.tsdb.path="$T/prom-data" \
	--web.listen-address=127.0.0.1:$PPORT --log.level=warn 2>prom.log &
SERVE_PIDS+=($!) # stopped by pid with the server when the test ends
P=http://127.0.0.1:$PPORT
for i in $(seq 1 300); do
	curl -sf --max-time 5 "$P/-/ready" >/dev/null && break
	sleep 0.2
done
check "prometheus is ready on 127.0.0.1:$PPORT" curl -sf --max-time 5 "$P/-/ready" -o /dev/null

# promq QUERY: the value of the first sample Prometheus returns ("" if none)
promq() {
	curl -s --max-time 10 --get --data-urlencode "query=$1" "$P/api/v1/query" |
		python3 -c 'import json,sys
r = json.load(sys.stdin)["data"]["result"]
print(r[0]["value"][1] if r else "")'
}
# prom_wait QUERY VALUE: poll Prometheus (at most 60 s) until QUERY is VALUE
prom_wait() {
	local i
	for i in $(seq 1 300); do
		[ "$(promq "$1")" = "$2" ] && return 0
		sleep 0.2
	done
	echo "    $1 is '$(promq "$1")', not $2" >&2
	return 1
}
metric() {
	curl -s --max-time 10 "$U/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}

# every stock git command leaves its trace-N: what the test did, as the
# clients saw it
n=0
traced() {
	n=$((n + 1))
	GIT_TRACE_CURL="$T/trace-$n" "$@"
}
: >expect
curl_get() { # curl_get PATH: a GET by curl, noted with its status and body size
	local out
	out=$(curl -s -o /dev/null -w '%{http_code} %{size_download}' --max-time 30 "$U$1")
	echo "curl GET $1 $out" >>expect
}

for algo in sha1 sha256; do
	for v in 0 2; do
		c=clone-$algo-v$v
		traced git -c protocol.version=$v clone -q --bare "$U/$algo.git" "$c" 2>"$c.err" ||
			{ not_ok "$algo v$v: clone"; cat "$c.err"; }
		check "$algo v$v: clone is fsck clean with the server's refs" eval \
			'fsck_ok "$c" && same_refs "$c" "srv/$algo.git"'
	done
	w=work-$algo
	git clone -q "srv/$algo.git" "$w"
	git -C "$w" commit -q --allow-empty -m "pushed over serve"
	check "$algo: push accepted" traced git -C "$w" push -q "$U/$algo.git" HEAD:refs/heads/ok-$algo
	check_fails "$algo: push rejected by the pre-receive hook" traced \
		git -C "$w" push -q "$U/$algo.git" HEAD:refs/heads/blocked-$algo
	check "$algo: the rejected ref is not there" test -z "$(git -C "srv/$algo.git" for-each-ref refs/heads/blocked-$algo)"
	traced git -C clone-$algo-v2 -c protocol.version=2 fetch -q "$U/$algo.git" "+refs/heads/*:refs/heads/*" ||
		not_ok "$algo: fetch"
	check "$algo: fetch brings the pushed ref, fsck clean" eval \
		'fsck_ok clone-$algo-v2 && same_refs clone-$algo-v2 "srv/$algo.git"'
	curl_get "/$algo.git/HEAD"
	curl_get "/$algo.git/$(cd "srv/$algo.git" && ls objects/pack/*.pack | head -1)"
done
curl_get "/sha1.git/objects/00/$(printf '0%.0s' $(seq 1 38))" # 404

# the only job held by a push: two clones and a curl are refused
git init -q hold-work
git -C hold-work commit -q --allow-empty -m hold
GIT_TRACE_CURL="$T/trace-hold" git -C hold-work push -q "$U/hold.git" HEAD:refs/heads/main >hold.out 2>&1 &
hold=$!
for i in $(seq 1 300); do
	[ "$(metric packwire_jobs_running)" = 1 ] && break
	sleep 0.2
done
check "hold: Prometheus sees the running job" prom_wait 'packwire_jobs_running{job="packwire"}' 1
for algo in sha1 sha256; do
	check_fails "hold: clone of $algo refused" traced git clone -q "$U/$algo.git" "refused-$algo"
done
curl_get "/sha1.git/info/refs?service=git-upload-pack"
check "hold: curl got 503" grep -q 'info/refs?service=git-upload-pack 503 ' expect
touch release
check "hold: the push that held the job succeeds" wait $hold
check "hold: ... its ref is there" test "$(git -C srv/hold.git rev-parse refs/heads/main)" = \
	"$(git -C hold-work rev-parse HEAD)"
for i in $(seq 1 300); do
	[ "$(metric packwire_jobs_running)" = 0 ] && break
	sleep 0.2
done

curl -s --max-time 10 "$U/metrics" >metrics.txt
check "promtool check metrics: nothing to say" eval 'promtool check metrics <metrics.txt >promtool.out 2>&1 && test ! -s promtool.out'
cat promtool.out

# a scrape after everything: its timestamp is past now
now=$(date +%s)
for i in $(seq 1 300); do
	ts=$(promq 'timestamp(packwire_build_info{job="packwire"})')
	[ -n "$ts" ] && python3 -c "import sys; sys.exit(0 if $ts > $now + 1 else 1)" && break
	sleep 0.2
done
check "Prometheus scraped after the last request" test -n "$ts"
read -r -a st <"/proc/$PID/stat"
tick=$(getconf CLK_TCK)
# fields 14 and 15 (utime, stime); the command name has no space here
cpu_max=$(python3 -c "print((${st[13]} + ${st[14]}) / $tick + 0.05)")
rss=$(($(cut -d' ' -f2 "/proc/$PID/statm") * $(getconf PAGESIZE)))
cat >>expect <<EOF
pushes_accepted 3
pushes_rejected 2
refused_queue_full 3
refused_queue_timeout 0
jobs_running 0
jobs_queued 0
jobs_max 1
queue_max 0
cache_lookups 0
cache_lookup_series 4
cache_generated 0
cache_served 0
cpu_max $cpu_max
rss $rss
EOF
while IFS= read -r line; do
	case $line in
	"ok "*) ok "${line#ok }" ;;
	"not ok "*) not_ok "${line#not ok }" ;;
	*) echo "$line" ;;
	esac
done < <(python3 "$PW_SRC/tests/interop/metrics-check.py" "$P" expect trace-*)

# the endpoint itself: GET and HEAD only, anywhere a query
check "/metrics: HEAD answers 200" test "$(curl -s -o /dev/null -w '%{http_code}' -I "$U/metrics")" = 200
check "/metrics: POST is 405" test "$(curl -s -o /dev/null -w '%{http_code}' -d x "$U/metrics")" = 405
check "/metrics: the content type is Prometheus text 0.0.4" eval \
	'curl -s -D - -o /dev/null "$U/metrics" | tr -d "\r" | grep -qx "Content-Type: text/plain; version=0.0.4; charset=utf-8"'

# the pack cache's families read the cache the server was given: a clone
# generates the pack (a miss), the same clone again is served from it (a hit)
start_serve cached "$T/srv" --pack-cache="$T/cache"
for i in 1 2; do
	git clone -q --bare "http://127.0.0.1:$SERVE_PORT/sha1.git" "cached-$i.git"
done
curl -s --max-time 10 "http://127.0.0.1:$SERVE_PORT/metrics" >cached.txt
check "pack cache: one miss" grep -qx 'packwire_pack_cache_lookups_total{result="miss"} 1' cached.txt
check "pack cache: one hit" grep -qx 'packwire_pack_cache_lookups_total{result="hit"} 1' cached.txt
check "pack cache: bytes generated" \
	awk '$1 == "packwire_pack_cache_generated_bytes_total" && $2 > 0 { f = 1 } END { exit !f }' cached.txt
check "pack cache: bytes served from it" \
	awk '$1 == "packwire_pack_cache_served_bytes_total" && $2 > 0 { f = 1 } END { exit !f }' cached.txt
check "pack cache: one entry" grep -qx 'packwire_pack_cache_entries 1' cached.txt
check "pack cache: the clones are fsck-clean" fsck_ok cached-2.git
check "promtool check metrics with the cache: nothing to say" \
	eval 'promtool check metrics <cached.txt >promtool2.out 2>&1 && test ! -s promtool2.out'
stop_serve $SERVE_PID

start_serve nometrics "$T/srv" --no-metrics
check "--no-metrics: GET /metrics is 404" \
	test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SERVE_PORT/metrics")" = 404
stop_serve $SERVE_PID
stop_serve $PID
check "serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean metrics
finish
