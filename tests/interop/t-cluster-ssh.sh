#!/usr/bin/env bash
# Cluster mode over ssh (issue 29 item 1, docs/cluster.md "ssh"): stock git
# runs `packwire upload-pack|receive-pack --cluster=... --node=NAME` in a
# node's repository through a stand-in for ssh (use_fake_ssh). One etcd,
# three `serve` nodes (they register the peer endpoints), a SHA-1 and a
# SHA-256 repository.
#  - A push over ssh to node a's copy goes into etcd and is copied to a
#    peer; ls-remote and fetch over ssh from b's and c's copies see it.
#  - A copy that no running node serves (d: no lease, no thread) fetches
#    the missing objects from a live peer before it answers.
#  - A push held in pre-receive on a while another push goes in over ssh
#    through b loses: "failed to update ref", applied nowhere.
#  - etcd stopped: a push over ssh is refused with the clear message and
#    nothing is written; fetch and clone over ssh give the last state.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/cluster-lib.sh"

if ! have_cluster_tools; then
	skip "etcd and etcdctl missing (Debian's etcd-server and etcd-client): scripts/install-deps.sh installs them"
	finish
fi

use_fake_ssh
start_etcd 1
mkdir -p nodes/a nodes/b nodes/c nodes/d
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "nodes/a/$algo.git"
	check "cluster add $algo.git" "$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a "$algo.git"
	# d: a copy on a machine that runs no `serve` (ssh only)
	git clone -q --bare "src-$algo" "nodes/d/$algo.git"
done
for n in a b c; do start_node "$n"; done
for n in a b c; do check "node $n is ready" wait_ready "$n" 60; done

up() { echo "$PACKWIRE upload-pack --cluster=$ETCD --node=$1"; }
rp() { echo "$PACKWIRE receive-pack --cluster=$ETCD --node=$1"; }
url() { echo "ssh://localhost$T/nodes/$1/$2.git"; }

for algo in sha1 sha256; do
	rm -rf "w-$algo"
	check "$algo: clone over ssh from b" git clone -q --upload-pack="$(up b)" "$(url b "$algo")" "w-$algo"
	check "$algo: ... its refs are etcd's" diff <(git -C "w-$algo" ls-remote --upload-pack="$(up b)" "$(url b "$algo")" | grep -v 'HEAD$' | grep -vF '^{}' | sort -k2) \
		<(etcd_refs "$algo.git" | awk '{ print $1 "\t" $2 }' | sort -k2)

	# ---- a push over ssh to a; reads over ssh from b, c and d
	git -C "w-$algo" commit -q --allow-empty -m "over ssh $algo"
	new=$(git -C "w-$algo" rev-parse HEAD)
	check "$algo: push over ssh to a" git -C "w-$algo" push -q --receive-pack="$(rp a)" "$(url a "$algo")" HEAD:refs/heads/main
	check "$algo: etcd has the push" test "$(etcdctl get --print-value-only "/packwire/refs/$algo.git:refs/heads/main")" = "$algo:$new"
	check "$algo: a's copy has it" test "$(git -C "nodes/a/$algo.git" rev-parse main)" = "$new"
	for n in b c d; do
		check "$algo: ls-remote over ssh from $n sees the push" \
			test "$(git ls-remote --upload-pack="$(up $n)" "$(url $n "$algo")" refs/heads/main | cut -f1)" = "$new"
	done
	check "$algo: d (no serve) fetched the objects from a peer before answering" git -C "nodes/d/$algo.git" cat-file -e "$new"
	check "$algo: ... and its main is the push" test "$(git -C "nodes/d/$algo.git" rev-parse main)" = "$new"
	rm -rf "f-$algo"
	git clone -q "src-$algo" "f-$algo"
	check "$algo: fetch over ssh from c" git -C "f-$algo" fetch -q --upload-pack="$(up c)" "$(url c "$algo")" main
	check "$algo: ... gives the push" test "$(git -C "f-$algo" rev-parse FETCH_HEAD)" = "$new"
	for n in a b c d; do
		check "$algo: $n's copy passes git fsck --full" git -C "nodes/$n/$algo.git" fsck --full --no-dangling --no-progress
	done

	# ---- a lost race: held in pre-receive on a, the ref moved over ssh through b
	printf '#!/bin/sh\ntouch "%s/in-hook"\ni=0\nwhile [ -e "%s/hold" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done\n' "$T" "$T" \
		>"nodes/a/$algo.git/hooks/pre-receive"
	chmod +x "nodes/a/$algo.git/hooks/pre-receive"
	base=$(git -C "w-$algo" rev-parse HEAD)
	git -C "w-$algo" commit -q --allow-empty -m "loser $algo"
	touch hold
	rm -f in-hook
	git -C "w-$algo" push --receive-pack="$(rp a)" "$(url a "$algo")" HEAD:refs/heads/main >"race-$algo.out" 2>&1 &
	lpid=$!
	for i in $(seq 1 100); do
		[ -e in-hook ] && break
		sleep 0.05
	done
	git -C "w-$algo" reset -q --hard "$base"
	git -C "w-$algo" commit -q --allow-empty -m "winner $algo"
	winner=$(git -C "w-$algo" rev-parse HEAD)
	check "$algo: another push goes in over ssh through b meanwhile" git -C "w-$algo" push -q --receive-pack="$(rp b)" "$(url b "$algo")" HEAD:refs/heads/main
	rm -f hold
	wait $lpid || true
	contains "$algo: the held push lost its race: failed to update ref" "race-$algo.out" "failed to update ref"
	check "$algo: etcd has the winner" test "$(etcdctl get --print-value-only "/packwire/refs/$algo.git:refs/heads/main")" = "$algo:$winner"
	for n in a b c d; do
		check "$algo: $n over ssh shows the winner" \
			test "$(git ls-remote --upload-pack="$(up $n)" "$(url $n "$algo")" refs/heads/main | cut -f1)" = "$winner"
	done
	rm -f "nodes/a/$algo.git/hooks/pre-receive"
done

check_fails "--node without --cluster is refused" "$PACKWIRE" upload-pack --node=a nodes/a/sha1.git </dev/null
check_fails "--peer-port over ssh is refused" "$PACKWIRE" receive-pack --cluster="$ETCD" --node=a --peer-port=1 nodes/a/sha1.git </dev/null

# ---- etcd stopped: pushes refused with the message, reads from the last state
for algo in sha1 sha256; do
	git ls-remote "$(url b "$algo")" | sort >"before-$algo"
done
kill "${ETCD_PIDS[1]}"
wait "${ETCD_PIDS[1]}" 2>/dev/null || true
for algo in sha1 sha256; do
	git -C "w-$algo" commit -q --allow-empty -m "without etcd $algo"
	check_fails "$algo: a push over ssh fails while etcd is down" \
		git -C "w-$algo" push --receive-pack="$(rp a)" "$(url a "$algo")" HEAD:refs/heads/main 2>"down-$algo.err"
	contains "$algo: ... saying it cannot reach etcd" "down-$algo.err" "cannot reach etcd, so it refuses pushes"
	contains "$algo: ... and the ref is rejected" "down-$algo.err" "remote rejected"
	check "$algo: ... nothing was written on a" test "$(git -C "nodes/a/$algo.git" rev-parse main)" = "$(grep 'refs/heads/main$' "before-$algo" | cut -f1)"
	rm -rf "q-$algo"
	check "$algo: a clone over ssh from b still works" git clone -q --upload-pack="$(up b)" "$(url b "$algo")" "q-$algo"
	check "$algo: ... and gives the last state" diff <(git ls-remote --upload-pack="$(up b)" "$(url b "$algo")" 2>/dev/null | sort) "before-$algo"
	check "$algo: ... fsck of the clone" git -C "q-$algo" fsck --no-dangling --no-progress
done
finish
