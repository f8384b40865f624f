#!/usr/bin/env bash
# Cluster mode: nodes watch etcd (issue 29 item 4, docs/cluster.md
# "Catch-up"). One etcd, nodes a and b, a SHA-1 and a SHA-256 repository.
# The nodes run a full catch-up pass only every 10 minutes while their
# watch is up (PACKWIRE_TEST_CLUSTER_FULL_PASS_MS), so what b learns without
# being asked, it learns from the watch.
#  - b's watch is up (/metrics); a push to a reaches b's own copy (refs on
#    disk, objects, fsck) with no request to b; the watch counted events.
#  - etcd stopped: the watch goes down (b polls); etcd back: the watch is
#    up again, started anew, and the next push reaches b the same way.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/cluster-lib.sh"

if ! have_cluster_tools; then
	skip "etcd and etcdctl missing (Debian's etcd-server and etcd-client): scripts/install-deps.sh installs them"
	finish
fi

start_etcd 1
mkdir -p nodes/a
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "nodes/a/$algo.git"
	git -C "nodes/a/$algo.git" config http.receivepack true
	"$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a "$algo.git" 2>/dev/null
done
export PACKWIRE_TEST_CLUSTER_FULL_PASS_MS=600000
start_node a
start_node b
for n in a b; do check "node $n is ready" wait_ready "$n" 60; done

metric() { curl -s "${NODE_URL[$1]}/metrics" | awk -v m="packwire_cluster_$2" '$1 == m { print $2 }'; }
# wait_metric NODE NAME VALUE: bounded
wait_metric() {
	local i
	for i in $(seq 1 300); do
		[ "$(metric "$1" "$2")" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}
# wait_disk NODE ALGO OID: b's own copy has main at OID (no request to b)
wait_disk() {
	local i
	for i in $(seq 1 200); do
		[ "$(git -C "nodes/$1/$2.git" rev-parse -q --verify refs/heads/main 2>/dev/null)" = "$3" ] && return 0
		sleep 0.1
	done
	return 1
}
# push_and_see ROUND: a push to a per algorithm reaches b's disk
push_and_see() {
	local algo new
	for algo in sha1 sha256; do
		[ -d "w-$algo" ] || git clone -q "${NODE_URL[a]}/$algo.git" "w-$algo"
		git -C "w-$algo" fetch -q "${NODE_URL[a]}/$algo.git" main && git -C "w-$algo" reset -q --hard FETCH_HEAD
		git -C "w-$algo" commit -q --allow-empty -m "watched $algo $1"
		new=$(git -C "w-$algo" rev-parse HEAD)
		check "$algo $1: push to a" git -C "w-$algo" push -q "${NODE_URL[a]}/$algo.git" HEAD:refs/heads/main
		check "$algo $1: b's own copy follows, without a request to b" wait_disk b "$algo" "$new"
		check "$algo $1: ... with the objects" git -C "nodes/b/$algo.git" cat-file -e "$new"
		check "$algo $1: ... git fsck --full" git -C "nodes/b/$algo.git" fsck --full --no-dangling --no-progress
	done
}

check "b watches etcd" wait_metric b watch_up 1
push_and_see first
check "b's watch reported the changes" test "$(metric b watch_events_total)" -ge 2

kill "${ETCD_PIDS[1]}"
wait "${ETCD_PIDS[1]}" 2>/dev/null || true
check "etcd stopped: b's watch is down" wait_metric b watch_up 0
starts=$(metric b watch_starts_total)
restart_etcd 1
check "etcd back: b watches again" wait_metric b watch_up 1
check "... a watch started anew" test "$(metric b watch_starts_total)" -gt "$starts"
push_and_see second
for n in a b; do
	check "$n's refs equal etcd's (sha1)" diff <(node_refs "${NODE_URL[$n]}/sha1.git") <(etcd_refs sha1.git)
	check "$n's refs equal etcd's (sha256)" diff <(node_refs "${NODE_URL[$n]}/sha256.git") <(etcd_refs sha256.git)
done
for n in a b; do serve_logs_clean "node-$n"; done
finish
