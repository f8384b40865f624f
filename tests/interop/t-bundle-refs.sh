#!/usr/bin/env bash
# Bundles with many refs (issue 26, item 6), both algorithms: the header is
# parsed in one pass (it was parsed again after every 64 KiB read, and
# after every line from a pipe), so list-heads, verify and clone of 600000
# refs run under a CPU-time limit of 10 s each (a resource bound with a
# wide margin: at most 2.5 s here, over 30 s before; 60 s under ASan, which
# takes 3-5 times as long: 7.2 s for the clone here, over 10 s on a loaded
# CI machine, while the old quadratic parse would take minutes), and the refs come out
# whole: list-heads lists them all, the clone has every one (in packed-refs,
# as git clone writes them) and passes fsck. The same from a pipe, byte by
# byte as git reads it, for 30000 refs.
. "$(dirname "$0")/lib.sh"

N=600000
NPIPE=30000
P=$PACKWIRE
LIMIT=10
sanitized && LIMIT=60
cd "$T"

# many ALGO N FILE: one commit and N refs to it, and HEAD
many() {
	local algo=$1 n=$2 out=$3
	python3 - "$algo" "$n" "$(git -C "src-$algo" rev-parse HEAD)" "one-$algo.pack" "$out" <<'PY'
import sys
algo, n, oid, pack, out = sys.argv[1], int(sys.argv[2]), sys.argv[3].encode(), sys.argv[4], sys.argv[5]
with open(out, "wb") as f:
    f.write(b"# v2 git bundle\n" if algo == "sha1" else b"# v3 git bundle\n@object-format=sha256\n")
    f.write(oid + b" HEAD\n")
    for i in range(0, n, 10000):
        f.write(b"".join(b"%s refs/heads/r%07d\n" % (oid, k) for k in range(i, min(n, i + 10000))))
    f.write(b"\n" + open(pack, "rb").read())
PY
}
# bounded OUT CMD...: CMD under a CPU-time limit of $LIMIT s, its output into OUT
bounded() {
	local out=$1
	shift
	(ulimit -t $LIMIT && "$@" >"$out")
}

for algo in sha1 sha256; do
	git init -q --object-format=$algo "src-$algo"
	git -C "src-$algo" commit -q --allow-empty -m one
	git -C "src-$algo" rev-parse HEAD | git -C "src-$algo" pack-objects -q --revs --stdout >"one-$algo.pack"
	many $algo $N "many-$algo.b"
	git init -q --bare --object-format=$algo "empty-$algo"

	check "$algo: list-heads of $N refs within the CPU bound" \
		bounded "list-$algo" "$P" bundle list-heads "many-$algo.b"
	check "$algo: ... every ref listed" test "$(wc -l <"list-$algo")" = $((N + 1))
	check "$algo: ... the last one too" grep -q " refs/heads/r$(printf %07d $((N - 1)))\$" "list-$algo"
	check "$algo: verify of $N refs within the CPU bound" \
		bounded /dev/null "$P" -C "empty-$algo" bundle verify -q "$T/many-$algo.b"
	rm -rf "clone-$algo"
	check "$algo: clone of $N refs within the CPU bound" \
		bounded /dev/null "$P" clone -q --bare "many-$algo.b" "clone-$algo"
	check "$algo: ... every ref in the clone" \
		test "$(git -C "clone-$algo" for-each-ref | wc -l)" = $N
	same_file "$algo: ... the refs list-heads lists" \
		<(grep refs/heads/ "list-$algo" | sort) \
		<(git -C "clone-$algo" for-each-ref --format='%(objectname) %(refname)' | sort)
	check "$algo: ... in packed-refs, as git clone writes them" \
		test "$(grep -c refs/heads/ "clone-$algo/packed-refs")" = $N
	check "$algo: ... fsck clean" fsck_ok "clone-$algo"
	check "$algo: ... of its algorithm" \
		test "$(git -C "clone-$algo" rev-parse --show-object-format)" = $algo
	rm -rf "clone-$algo" "many-$algo.b"

	# from a pipe: one byte at a time, so that no pack byte is read early
	many $algo $NPIPE "pipe-$algo.b"
	check "$algo: list-heads of $NPIPE refs from a pipe within the CPU bound" \
		bounded "plist-$algo" "$P" bundle list-heads - <"pipe-$algo.b"
	check "$algo: ... every ref listed" test "$(wc -l <"plist-$algo")" = $((NPIPE + 1))
	check "$algo: unbundle of $NPIPE refs from a pipe" \
		bounded "unb-$algo" "$P" -C "empty-$algo" bundle unbundle - <"pipe-$algo.b"
	check "$algo: ... the pack is in" git -C "empty-$algo" cat-file -e "$(git -C "src-$algo" rev-parse HEAD)"
done
finish
