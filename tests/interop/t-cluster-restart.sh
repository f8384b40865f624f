#!/usr/bin/env bash
# Cluster mode: a node never serves refs older than its last report, across
# restarts (issue 29 item 4, docs/cluster.md "Restarts"). One etcd, nodes a
# and b, a SHA-1 and a SHA-256 repository.
#  - Each repository's record (packwire-cluster-state) follows the pushes.
#  - Push to a, kill -9 a, roll a's local ref back (the state a crash
#    between etcd's commit and the local update leaves), stop etcd, restart
#    a: it serves the pushed refs (ls-remote, clone + fsck), says 503.
#  - etcd back: a is ready and its refs equal etcd's.
#  - A corrupt record: the node serves its own refs (no crash) while etcd is
#    away, and rewrites the record once etcd answers.
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
start_node a
start_node b
for n in a b; do check "node $n is ready" wait_ready "$n" 60; done

# stop_etcd: the one member, waited for
stop_etcd() {
	kill "${ETCD_PIDS[1]}"
	wait "${ETCD_PIDS[1]}" 2>/dev/null || true
}
# wait_etcd_up NODE: its /metrics says it reaches etcd again
wait_etcd_up() {
	local i
	for i in $(seq 1 300); do
		curl -s "${NODE_URL[$1]}/metrics" | grep -q '^packwire_cluster_etcd_up 1' && return 0
		sleep 0.1
	done
	return 1
}
main_of() { git ls-remote "$1" refs/heads/main | cut -f1; }

for algo in sha1 sha256; do
	git clone -q "${NODE_URL[a]}/$algo.git" "w-$algo"
	old=$(git -C "w-$algo" rev-parse HEAD)
	git -C "w-$algo" commit -q --allow-empty -m "pushed $algo"
	new=$(git -C "w-$algo" rev-parse HEAD)
	check "$algo: push to a" git -C "w-$algo" push -q "${NODE_URL[a]}/$algo.git" HEAD:refs/heads/main
	check "$algo: a's record has the push" grep -q "^$new refs/heads/main\$" "nodes/a/$algo.git/packwire-cluster-state"
	check "$algo: ... and etcd's revision" grep -qE "^packwire-cluster-state 1 $algo [0-9]+\$" "nodes/a/$algo.git/packwire-cluster-state"

	kill -9 "${NODE_PID[a]}"
	wait "${NODE_PID[a]}" 2>/dev/null || true
	# what a crash between etcd's commit and the local update leaves
	git -C "nodes/a/$algo.git" update-ref refs/heads/main "$old"
	stop_etcd
	restart_node a
	check "$algo: restarted without etcd, a serves the pushed ref, not its older local one" test "$(main_of "${NODE_URL[a]}/$algo.git")" = "$new"
	rm -rf "c-$algo"
	check "$algo: ... a clone from a works" git clone -q "${NODE_URL[a]}/$algo.git" "c-$algo"
	check "$algo: ... and has the push" test "$(git -C "c-$algo" rev-parse HEAD)" = "$new"
	check "$algo: ... git fsck of the clone" git -C "c-$algo" fsck --no-dangling --no-progress
	check "$algo: ... a says 503 until it has seen etcd" test "$(curl -s -o /dev/null -w '%{http_code}' "${NODE_URL[a]}/healthz")" = 503
	restart_etcd 1
	check "$algo: etcd back: a is ready" wait_ready a 60
	check "$algo: ... its refs equal etcd's" diff <(node_refs "${NODE_URL[a]}/$algo.git") <(etcd_refs "$algo.git")
	check "$algo: ... a's copy passes git fsck --full" git -C "nodes/a/$algo.git" fsck --full --no-dangling --no-progress
done

# ---- a corrupt record
printf 'packwire-cluster-state 1 sha1 7\ngarbage\n' >nodes/a/sha1.git/packwire-cluster-state
stop_etcd
check "with a corrupt record and no etcd, a still serves its own refs" test "$(main_of "${NODE_URL[a]}/sha1.git")" = "$(git -C nodes/a/sha1.git rev-parse main)"
restart_etcd 1
check "etcd back: a reaches it" wait_etcd_up a
check "... and is ready" wait_ready a 60
git ls-remote "${NODE_URL[a]}/sha1.git" >/dev/null
check "... and the record is whole again" grep -q "refs/heads/main\$" nodes/a/sha1.git/packwire-cluster-state
check "... and has no garbage" sh -c "! grep -q garbage nodes/a/sha1.git/packwire-cluster-state"
for n in a b; do serve_logs_clean "node-$n"; done
finish
