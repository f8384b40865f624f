#!/usr/bin/env bash
# Cluster mode: a partitioned node says not-ready, a cluster without etcd
# quorum stays ready (issue 29 item 4, docs/cluster.md "Partitions").
# 3 etcd members, 3 nodes; node c reaches etcd only through a TCP proxy
# (tcp-proxy.py) that the test stops and starts again.
#  - Proxy stopped: c cannot reach etcd, its peers can: c's /healthz says
#    503 ("partitioned") and /metrics packwire_cluster_partitioned 1, while
#    a and b stay 200; proxy back: c is 200 again.
#  - Two of three etcd members stopped: no node reaches etcd, none of the
#    peers says it does: every node stays 200 for the whole time sampled,
#    and clones from every node work (sha1 and sha256).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/cluster-lib.sh"

if ! have_cluster_tools; then
	skip "etcd and etcdctl missing (Debian's etcd-server and etcd-client): scripts/install-deps.sh installs them"
	finish
fi

start_etcd 3
mkdir -p nodes/a
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "nodes/a/$algo.git"
	"$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a "$algo.git" 2>/dev/null
done

# start_proxy [PORT]: the proxy to etcd member 1 (PROXY_PORT, PROXY_PID)
e1=${ETCD_URLS[1]#http://}
start_proxy() {
	local i
	rm -f proxy.port
	python3 "$PW_SRC/tests/interop/tcp-proxy.py" "$T/proxy.port" "${e1%:*}" "${e1##*:}" "${1:-0}" &
	PROXY_PID=$!
	SERVE_PIDS+=($!)
	for i in $(seq 1 100); do
		[ -s proxy.port ] && break
		sleep 0.05
	done
	PROXY_PORT=$(cat proxy.port)
}
start_proxy
start_node a
start_node b
ETCD_ALL=$ETCD
ETCD=etcd:http://127.0.0.1:$PROXY_PORT
start_node c
ETCD=$ETCD_ALL
for n in a b c; do check "node $n is ready" wait_ready "$n" 60; done

code() { curl -s -o /dev/null -w '%{http_code}' "${NODE_URL[$1]}/healthz"; }
# wait_code NODE CODE SECONDS
wait_code() {
	local i
	for i in $(seq 1 $(($3 * 10))); do
		[ "$(code "$1")" = "$2" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- c cut off from etcd, a and b not
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null || true
check "c, cut off from etcd, answers 503 on /healthz" wait_code c 503 20
curl -s "${NODE_URL[c]}/healthz" >healthz-c.txt || true
contains "... saying it is partitioned" healthz-c.txt "partitioned"
check "... /metrics says so" sh -c "curl -s '${NODE_URL[c]}/metrics' | grep -q '^packwire_cluster_partitioned 1'"
check "a stays 200" test "$(code a)" = 200
check "b stays 200" test "$(code b)" = 200
check "a's /metrics: not partitioned" sh -c "curl -s '${NODE_URL[a]}/metrics' | grep -q '^packwire_cluster_partitioned 0'"
start_proxy "$PROXY_PORT"
check "c reaches etcd again: 200" wait_code c 200 30

# ---- etcd without quorum: every node stays ready and serves
kill "${ETCD_PIDS[2]}" "${ETCD_PIDS[3]}"
wait "${ETCD_PIDS[2]}" "${ETCD_PIDS[3]}" 2>/dev/null || true
codes=
for i in $(seq 1 40); do # 10 s: several passes, each waits for etcd's timeout
	codes+="$(code a)$(code b)$(code c) "
	sleep 0.25
done
check "without etcd's quorum every node stays 200 ($(echo $codes | tr ' ' '\n' | sort | uniq -c | tr '\n' ' '))" \
	test "$(echo $codes | tr ' ' '\n' | sort -u)" = 200200200
for n in a b c; do
	check "node $n says etcd is down" sh -c "curl -s '${NODE_URL[$n]}/metrics' | grep -q '^packwire_cluster_etcd_up 0'"
	for algo in sha1 sha256; do
		rm -rf "q-$n-$algo"
		check "$algo: a clone from $n works without quorum" git clone -q "${NODE_URL[$n]}/$algo.git" "q-$n-$algo"
		check "$algo: ... it is the repository's state" test "$(git -C "q-$n-$algo" rev-parse HEAD)" = "$(git -C "src-$algo" rev-parse HEAD)"
	done
done
restart_etcd 2
restart_etcd 3
for n in a b c; do check "node $n is ready once etcd is back" wait_ready "$n" 60; done
for n in a b c; do serve_logs_clean "node-$n"; done
finish
