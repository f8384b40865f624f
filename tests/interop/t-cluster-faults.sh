#!/usr/bin/env bash
# Cluster mode's failures (issue 29, docs/cluster.md): 3 etcd members, 3
# nodes, HAProxy in front (deploy/haproxy.cfg), a SHA-1 and a SHA-256
# repository.
#  - kill -9 of the node that takes a repository's pushes, in the middle of
#    a stream of pushes through the front: every acknowledged push is on
#    both survivors (history and fsck), and the front marks the dead node
#    down (the time it took is printed: the config's checks give ~1 s).
#  - Two of three etcd members stopped: a push fails with a message that
#    says etcd cannot be reached (the time is printed), clones through the
#    front still work and give the last state, /metrics says etcd is down.
#  - A node restarted after missing 50 pushes answers /healthz 503 while it
#    cannot catch up (etcd paused) and 200 once it has: then its refs equal
#    etcd's and git fsck --full is clean.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/cluster-lib.sh"

if ! have_cluster_tools || ! command -v haproxy >/dev/null; then
	skip "etcd, etcdctl or haproxy missing (Debian's etcd-server, etcd-client, haproxy): scripts/install-deps.sh installs them"
	finish
fi

start_etcd 3
mkdir -p nodes/a
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "nodes/a/$algo.git"
	git -C "nodes/a/$algo.git" config http.receivepack true
	"$PACKWIRE" cluster add --cluster="$ETCD" --base-path=nodes/a "$algo.git" 2>/dev/null
done
for n in a b c; do start_node "$n"; done
for n in a b c; do check "node $n is ready" wait_ready "$n" 60; done
start_haproxy
for i in $(seq 1 100); do
	[ "$(front_status a)$(front_status b)$(front_status c)" = UPUPUP ] && break
	sleep 0.1
done
check "the front sees three nodes up" test "$(front_status a)$(front_status b)$(front_status c)" = UPUPUP

# push_loop ALGO DIR N LOG: N pushes through the front, the acknowledged
# ones' subjects appended to LOG
push_loop() {
	local algo=$1 dir=$2 n=$3 log=$4 i
	for i in $(seq 1 "$n"); do
		git -C "$dir" fetch -q "$FRONT/$algo.git" main 2>/dev/null && git -C "$dir" reset -q --hard FETCH_HEAD
		git -C "$dir" commit -q --allow-empty -m "$log $i"
		if git -C "$dir" push -q "$FRONT/$algo.git" HEAD:refs/heads/main 2>/dev/null; then
			echo "$log $i" >>"$log"
		fi
	done
}
# the node that takes most of the front's traffic (the repository's hash)
busiest() {
	curl -s "$STATS" | awk -F, '$1 == "packwire" && $2 ~ /^node/ { print $8, $2 }' | sort -n | tail -1 |
		sed -e 's/.* node1$/a/' -e 's/.* node2$/b/' -e 's/.* node3$/c/'
}

# ---- kill -9 in the middle of pushes
for algo in sha1 sha256; do
	git clone -q "$FRONT/$algo.git" "k-$algo"
	push_loop "$algo" "k-$algo" 30 "kill-$algo" &
	lp=$!
	for i in $(seq 1 300); do
		[ -f "kill-$algo" ] && [ "$(wc -l <"kill-$algo")" -ge 8 ] && break
		sleep 0.1
	done
	victim=$(busiest)
	kill -9 "${NODE_PID[$victim]}"
	t0=$(now_ms)
	down=
	for i in $(seq 1 100); do
		case $(front_status "$victim") in DOWN*) down=$(($(now_ms) - t0)); break ;; esac
		sleep 0.05
	done
	check "$algo: the front marks the killed node $victim down" test -n "$down"
	echo "# $algo: HAProxy marked the killed node down after ${down:-?} ms"
	wait $lp || true
	acked=$(wc -l <"kill-$algo")
	check "$algo: pushes went on through the front after the kill ($acked of 30 acknowledged)" test "$acked" -gt 10
	sort "kill-$algo" >"acked-$algo"
	for n in a b c; do
		[ "$n" = "$victim" ] && continue
		git clone -q --bare "${NODE_URL[$n]}/$algo.git" "survivor-$algo-$n.git"
		git -C "survivor-$algo-$n.git" log --format=%s main | grep "^kill-$algo " | sort >"hist-$algo-$n"
		check "$algo: survivor $n has every acknowledged push" test -z "$(comm -23 "acked-$algo" "hist-$algo-$n")"
		check "$algo: survivor $n's copy passes git fsck --full" git -C "nodes/$n/$algo.git" fsck --full --no-dangling --no-progress
		check "$algo: survivor $n's refs equal etcd's" diff <(node_refs "${NODE_URL[$n]}/$algo.git") <(etcd_refs "$algo.git")
	done
	restart_node "$victim"
	check "$algo: the killed node $victim is back and ready" wait_ready "$victim" 60
done

# ---- two of three etcd members stopped
before=$(node_refs "$FRONT/sha1.git")
kill "${ETCD_PIDS[2]}" "${ETCD_PIDS[3]}"
wait "${ETCD_PIDS[2]}" "${ETCD_PIDS[3]}" 2>/dev/null || true
git clone -q "$FRONT/sha1.git" q-sha1 2>/dev/null || true
git -C q-sha1 commit -q --allow-empty -m "without quorum" 2>/dev/null || true
t0=$(now_ms)
check_fails "a push fails while etcd has no quorum" git -C q-sha1 push "$FRONT/sha1.git" HEAD:refs/heads/main 2>quorum.err
echo "# the push failed after $(($(now_ms) - t0)) ms"
contains "... saying why" quorum.err "cannot reach etcd, so it refuses pushes"
cat quorum.err | sed 's/^/#   /'
rm -rf q2
check "a clone through the front still works" git clone -q "$FRONT/sha1.git" q2
check "... and gives the last state" test "$(node_refs "$FRONT/sha1.git")" = "$before"
check "... a sha256 clone too" git clone -q "$FRONT/sha256.git" q3
curl -s "${NODE_URL[a]}/metrics" >metrics-a.txt
curl -s "${NODE_URL[b]}/metrics" >metrics-b.txt
curl -s "${NODE_URL[c]}/metrics" >metrics-c.txt
check "/metrics says etcd is down" grep -q "^packwire_cluster_etcd_up 0" metrics-a.txt metrics-b.txt metrics-c.txt
check "/metrics counts reads from the last known state" grep -qE "^packwire_cluster_stale_reads_total [1-9]" metrics-a.txt metrics-b.txt metrics-c.txt
restart_etcd 2
restart_etcd 3
ok=
for i in $(seq 1 60); do
	if git -C q-sha1 push -q "$FRONT/sha1.git" HEAD:refs/heads/main 2>/dev/null; then ok=1; break; fi
	git -C q-sha1 fetch -q "$FRONT/sha1.git" main 2>/dev/null && git -C q-sha1 reset -q --hard FETCH_HEAD
	git -C q-sha1 commit -q --allow-empty -m "after quorum $i"
	sleep 0.5
done
check "pushes work again once etcd has its quorum back" test -n "$ok"

# ---- a node restarted after missing 50 pushes
kill -9 "${NODE_PID[c]}"
wait "${NODE_PID[c]}" 2>/dev/null || true
for algo in sha1 sha256; do
	git clone -q "$FRONT/$algo.git" "m-$algo"
	push_loop "$algo" "m-$algo" 25 "missed-$algo"
done
check "50 pushes acknowledged while c was away" test "$(cat missed-sha1 missed-sha256 | wc -l)" = 50
# etcd paused: c cannot catch up and must say so
for i in 1 2 3; do kill -STOP "${ETCD_PIDS[i]}"; done
restart_node c
codes=
for i in $(seq 1 10); do
	codes+=$(curl -s -o /dev/null -w '%{http_code} ' "${NODE_URL[c]}/healthz")
	sleep 0.2
done
check "the restarted node answers 503 while it cannot catch up ($codes)" test "$(echo $codes | tr ' ' '\n' | sort -u)" = 503
curl -s "${NODE_URL[c]}/healthz" >healthz-c.txt || true
contains "... saying it is catching up" healthz-c.txt "catching up"
for i in 1 2 3; do kill -CONT "${ETCD_PIDS[i]}"; done
check "once etcd answers, it catches up and is ready" wait_ready c 60
for algo in sha1 sha256; do
	check "$algo: the restarted node's refs equal etcd's" diff <(node_refs "${NODE_URL[c]}/$algo.git") <(etcd_refs "$algo.git")
	check "$algo: the restarted node's copy passes git fsck --full" git -C "nodes/c/$algo.git" fsck --full --no-dangling --no-progress
	git clone -q --bare "${NODE_URL[c]}/$algo.git" "after-$algo.git"
	git -C "after-$algo.git" log --format=%s main | grep "^missed-$algo " | sort >"hist-missed-$algo"
	same_file "$algo: the restarted node has the 25 pushes it missed" <(sort "missed-$algo") "hist-missed-$algo"
done
for n in a b c; do serve_logs_clean "node-$n"; done
finish
