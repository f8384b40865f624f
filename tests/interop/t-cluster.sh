#!/usr/bin/env bash
# Cluster mode (issue 29, docs/cluster.md): one etcd and three packwire
# nodes on loopback, a SHA-1 and a SHA-256 repository in the same cluster.
#  - `packwire cluster add` puts a repository's refs into etcd; a node that
#    lacks the repository creates it and fetches it from a peer; a node with
#    an identical copy fetches nothing. Every node then answers /healthz 200.
#  - Read-your-writes: 100 pairs per algorithm of a push to one node and an
#    immediate ls-remote (or fetch) from another: all see the push.
#  - A lost race (a push held in its pre-receive hook while another node
#    moves the ref) is "failed to update ref", atomic or not, and nothing of
#    it is applied anywhere; in a non-atomic push the other ref goes in.
#  - Racing pushes: 4 clients x 5 fast-forward pushes to one branch through
#    all three nodes: the branch's history holds exactly the acknowledged
#    pushes; every node's refs equal etcd's; git fsck --full is clean.
#    (bench/cluster-race runs the issue's 8 x 20, through HAProxy too.)
#  - /metrics has the cluster's families.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/cluster-lib.sh"

if ! have_cluster_tools; then
	skip "etcd and etcdctl missing (Debian's etcd-server and etcd-client): scripts/install-deps.sh installs them"
	finish
fi

start_etcd 1
mkdir -p nodes/a nodes/b nodes/c
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "nodes/a/$algo.git"
	git -C "nodes/a/$algo.git" config http.receivepack true
done
# b starts with an identical copy of sha1.git: nothing to copy
cp -r nodes/a/sha1.git nodes/b/sha1.git
for algo in sha1 sha256; do
	check "cluster add $algo.git" "$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a "$algo.git"
done
check_fails "cluster add twice is refused" "$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a sha1.git 2>add2.err
contains "... saying it is already in the cluster" add2.err "already in the cluster's care"
check "etcd holds the algorithm with the id" sh -c "etcdctl get --print-value-only '/packwire/refs/sha256.git:refs/heads/main' | grep -qE '^sha256:[0-9a-f]{64}$'"

for n in a b c; do start_node "$n"; done
for n in a b c; do check "node $n is ready (/healthz 200)" wait_ready "$n" 60; done
for algo in sha1 sha256; do
	for n in a b c; do
		check "$algo: node $n's refs equal etcd's" diff <(node_refs "${NODE_URL[$n]}/$algo.git") <(etcd_refs "$algo.git")
	done
	check "$algo: node c's copy passes git fsck --full" git -C "nodes/c/$algo.git" fsck --full --no-dangling --no-progress
	check "$algo: node c's copy is $algo" test "$(git -C "nodes/c/$algo.git" rev-parse --show-object-format)" = "$algo"
done
check "node b fetched nothing for its identical copy" test "$(find nodes/b/sha1.git/objects/pack -name '*.pack' | wc -l)" = "$(find nodes/a/sha1.git/objects/pack -name '*.pack' | wc -l)"

# ---- read-your-writes
nodes=(a b c)
for algo in sha1 sha256; do
	git clone -q "${NODE_URL[a]}/$algo.git" "ryw-$algo"
	seen=0
	for i in $(seq 1 100); do
		p=${nodes[i % 3]} r=${nodes[(i + 1) % 3]}
		git -C "ryw-$algo" commit -q --allow-empty -m "ryw $algo $i"
		want=$(git -C "ryw-$algo" rev-parse HEAD)
		git -C "ryw-$algo" push -q "${NODE_URL[$p]}/$algo.git" HEAD:refs/heads/main 2>>ryw.err || continue
		if [ $((i % 4)) = 0 ]; then
			git -C "ryw-$algo" fetch -q "${NODE_URL[$r]}/$algo.git" main 2>>ryw.err &&
				[ "$(git -C "ryw-$algo" rev-parse FETCH_HEAD)" = "$want" ] && seen=$((seen + 1))
		else
			[ "$(git ls-remote "${NODE_URL[$r]}/$algo.git" refs/heads/main | cut -f1)" = "$want" ] && seen=$((seen + 1))
		fi
	done
	check "$algo: 100 of 100 reads from another node saw the push just made ($seen)" test "$seen" = 100
done

# ---- a lost race: the push held in pre-receive on a, the ref moved through b
for algo in sha1 sha256; do
	mkdir -p "nodes/a/$algo.git/hooks"
	printf '#!/bin/sh\ni=0\nwhile [ -e "%s/hold" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n' "$T" \
		>"nodes/a/$algo.git/hooks/pre-receive"
	chmod +x "nodes/a/$algo.git/hooks/pre-receive"
	for mode in atomic plain; do
		git -C "ryw-$algo" fetch -q "${NODE_URL[a]}/$algo.git" main
		git -C "ryw-$algo" reset -q --hard FETCH_HEAD
		base=$(git -C "ryw-$algo" rev-parse HEAD)
		git -C "ryw-$algo" commit -q --allow-empty -m "loser $algo $mode"
		loser=$(git -C "ryw-$algo" rev-parse HEAD)
		touch hold
		flag=
		[ $mode = atomic ] && flag=--atomic
		git -C "ryw-$algo" push $flag "${NODE_URL[a]}/$algo.git" HEAD:refs/heads/main \
			HEAD:refs/heads/side-$mode >race-$algo-$mode.out 2>&1 &
		lpid=$!
		sleep 1
		git -C "ryw-$algo" reset -q --hard "$base"
		git -C "ryw-$algo" commit -q --allow-empty -m "winner $algo $mode"
		winner=$(git -C "ryw-$algo" rev-parse HEAD)
		check "$algo $mode: another push goes in through b meanwhile" git -C "ryw-$algo" push -q "${NODE_URL[b]}/$algo.git" HEAD:refs/heads/main
		rm -f hold
		wait $lpid || true
		contains "$algo $mode: the held push lost its race: failed to update ref" race-$algo-$mode.out "failed to update ref"
		check "$algo $mode: etcd has the winner" test "$(etcdctl get --print-value-only "/packwire/refs/$algo.git:refs/heads/main")" = "$algo:$winner"
		for n in a b c; do
			check "$algo $mode: node $n shows the winner" test "$(git ls-remote "${NODE_URL[$n]}/$algo.git" refs/heads/main | cut -f1)" = "$winner"
		done
		if [ $mode = atomic ]; then
			check "$algo atomic: the other ref of the atomic push went nowhere" test -z "$(etcdctl get "/packwire/refs/$algo.git:refs/heads/side-atomic")"
			check "$algo atomic: ... nor on node a" test -z "$(git ls-remote "${NODE_URL[a]}/$algo.git" refs/heads/side-atomic)"
		else
			check "$algo plain: the other ref of the non-atomic push went in" test "$(etcdctl get --print-value-only "/packwire/refs/$algo.git:refs/heads/side-plain")" = "$algo:$loser"
		fi
	done
	rm -f "nodes/a/$algo.git/hooks/pre-receive"
done

# ---- racing pushes: 4 clients x 5 acknowledged pushes, through every node
race() { # race ALGO CLIENT: 5 acknowledged fast-forward pushes
	local algo=$1 c=$2 k=0 tries=0 n url
	git clone -q "${NODE_URL[a]}/$algo.git" "race-$algo-$c" 2>/dev/null
	while [ $k -lt 5 ] && [ $tries -lt 60 ]; do
		tries=$((tries + 1))
		n=${nodes[(c + tries) % 3]}
		url=${NODE_URL[$n]}/$algo.git
		git -C "race-$algo-$c" fetch -q "$url" main 2>/dev/null || continue
		git -C "race-$algo-$c" reset -q --hard FETCH_HEAD
		git -C "race-$algo-$c" commit -q --allow-empty -m "race $algo client $c push $k"
		if git -C "race-$algo-$c" push -q "$url" HEAD:refs/heads/main 2>/dev/null; then
			echo "race $algo client $c push $k" >>"acked-$algo-$c"
			k=$((k + 1))
		fi
	done
}
for algo in sha1 sha256; do
	pids=()
	for c in 1 2 3 4; do
		race "$algo" "$c" &
		pids+=($!)
	done
	wait "${pids[@]}"
	cat acked-$algo-* | sort >acked-$algo
	git clone -q --bare "${NODE_URL[c]}/$algo.git" "final-$algo.git"
	git -C "final-$algo.git" log --format=%s main | grep '^race ' | sort >history-$algo || true
	check "$algo: 20 pushes acknowledged" test "$(wc -l <acked-$algo)" = 20
	same_file "$algo: main's history holds exactly the acknowledged pushes" acked-$algo history-$algo
	for n in a b c; do
		check "$algo: node $n is ready" wait_ready "$n" 30
		check "$algo: node $n's refs equal etcd's" diff <(node_refs "${NODE_URL[$n]}/$algo.git") <(etcd_refs "$algo.git")
		check "$algo: node $n's copy passes git fsck --full" git -C "nodes/$n/$algo.git" fsck --full --no-dangling --no-progress
	done
done

curl -s "${NODE_URL[a]}/metrics" >metrics.txt
contains "/metrics: ready" metrics.txt "packwire_cluster_ready 1"
contains "/metrics: etcd up" metrics.txt "packwire_cluster_etcd_up 1"
contains "/metrics: lost races counted" metrics.txt "packwire_cluster_ref_updates_lost_total"
check "/metrics: replications counted" grep -qE '^packwire_cluster_replications_total [1-9]' metrics.txt
for n in a b c; do serve_logs_clean "node-$n"; done
finish
