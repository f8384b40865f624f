#!/usr/bin/env bash
# Cluster mode against hostile peers (issue 29): nothing a peer sends
# becomes a ref or an object unless it checks out.
#  - A node that lies about refs: etcd names, for a ref, an object that no
#    honest node has, and a peer (http-hostile.py, registered as a node)
#    that claims it sends junk instead of a pack, or a pack cut in half.
#    No node advertises the ref, no pack is written, and /healthz says the
#    nodes are catching up; once the lie is gone from etcd they are ready.
#  - A node that sends a bad pack to a peer endpoint (a damaged pack, a
#    truncated one, junk) is refused with an unpack error and nothing is
#    written; a ref outside refs/packwire-replica/ is refused there, even
#    with a good pack, and no ref is written.
# Both object formats.
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
for n in a b; do start_node "$n"; done
for n in a b; do check "node $n is ready" wait_ready "$n" 60; done

packs() { find "nodes/$1/$2.git/objects" -type f | sort; }

for algo in sha1 sha256; do
	# the liar's repository has an object nobody else has
	git clone -q --bare "src-$algo" "evil-$algo.git"
	git clone -q "evil-$algo.git" "evil-work-$algo"
	git -C "evil-work-$algo" commit -q --allow-empty -m "only the liar has this"
	git -C "evil-work-$algo" push -q origin HEAD:refs/heads/main
	x=$(git -C "evil-$algo.git" rev-parse main)
	python3 "$PW_SRC/tests/interop/http-hostile.py" "hostile-$algo.port" "$T/evil-$algo.git" &
	SERVE_PIDS+=($!)
	for i in $(seq 1 100); do [ -s "hostile-$algo.port" ] && break; sleep 0.05; done
	hp=$(cat "hostile-$algo.port")
	for mode in postjunk postcut; do
		packs a "$algo" >"before-a-$algo"
		packs b "$algo" >"before-b-$algo"
		etcdctl put /packwire/node/evil "http://127.0.0.1:$hp/$mode" >/dev/null
		etcdctl put "/packwire/refs/$algo.git:refs/heads/evil" "$algo:$x" >/dev/null
		for n in a b; do
			check "$algo $mode: node $n does not advertise a ref it cannot serve" test -z "$(git ls-remote "${NODE_URL[$n]}/$algo.git" refs/heads/evil)"
		done
		sleep 1 # a catch-up pass or two
		for n in a b; do
			check "$algo $mode: node $n says it is catching up" test "$(curl -s -o /dev/null -w '%{http_code}' "${NODE_URL[$n]}/healthz")" = 503
			packs "$n" "$algo" >"after-$n-$algo"
			same_file "$algo $mode: nothing was written on node $n" "before-$n-$algo" "after-$n-$algo"
			check "$algo $mode: node $n does not have the object" test -z "$(git -C "nodes/$n/$algo.git" cat-file -t "$x" 2>/dev/null)"
		done
		etcdctl del "/packwire/refs/$algo.git:refs/heads/evil" >/dev/null
		etcdctl del /packwire/node/evil >/dev/null
		for n in a b; do check "$algo $mode: node $n is ready once the lie is gone" wait_ready "$n" 30; done
	done
done
grep -h "fetching" node-a.log node-b.log | awk 'NR <= 4 { print "# " $0 }'

# ---- bad packs sent to a peer endpoint
peer_url() { etcdctl get --print-value-only "/packwire/node/$1"; }
for algo in sha1 sha256; do
	main=$(git -C "nodes/b/$algo.git" rev-parse main)
	zero=$(printf '%0*d' ${#main} 0)
	for case in bad-checksum truncated junk good; do
		python3 "$PW_SRC/tests/interop/badpack.py" "$algo" "$case" "bad-$algo-$case.pack" >/dev/null
		ref=refs/packwire-replica/evil/0
		[ $case = good ] && ref=refs/heads/main-by-peer
		python3 - "$zero" "$main" "$ref" "bad-$algo-$case.pack" "$algo" >"req-$algo-$case" <<'PY'
import sys
zero, new, ref, packfile, algo = sys.argv[1:6]
def pkt(b): return b"%04x" % (len(b) + 4) + b
line = ("%s %s %s\0report-status object-format=%s" % (zero, new, ref, algo)).encode()
sys.stdout.buffer.write(pkt(line) + b"0000" + open(packfile, "rb").read())
PY
		packs b "$algo" >"before-$algo-$case"
		curl -s --data-binary @"req-$algo-$case" -H "Content-Type: application/x-git-receive-pack-request" \
			"$(peer_url b)/$algo.git/git-receive-pack" >"resp-$algo-$case" || true
		if [ $case = good ]; then
			contains "$algo: a ref outside refs/packwire-replica/ is refused by the peer endpoint" "resp-$algo-$case" "takes objects only"
			check "$algo: ... and not written" test -z "$(git -C "nodes/b/$algo.git" for-each-ref refs/heads/main-by-peer)"
		else
			check "$algo $case: the peer endpoint refuses the pack" grep -qa "unpack [^o]" "resp-$algo-$case"
			packs b "$algo" >"after-$algo-$case"
			same_file "$algo $case: nothing was written" "before-$algo-$case" "after-$algo-$case"
		fi
	done
	check "$algo: node b's copy passes git fsck --full" git -C "nodes/b/$algo.git" fsck --full --no-dangling --no-progress
done
for n in a b; do serve_logs_clean "node-$n"; done
finish
