#!/usr/bin/env bash
# Hostile bundles, both algorithms: the other algorithm (refused at the
# header, before any pack byte, naming both), a truncated pack, bad
# prerequisite lines, a header that lies about its refs or its algorithm,
# unknown capabilities, overlong lines, a header without a pack, a v2 bundle
# with SHA-256 ids (issue 26: "unrecognized header", as git). Each gets a
# clear error and leaves nothing: no pack, no object, refs unchanged, a failed
# clone no directory.
. "$(dirname "$0")/lib.sh"
P=$PACKWIRE

# snapshot DIR: every ref and every file under objects/
snapshot() { refs "$1"; find "$1/.git/objects" -type f | sort; }
# refused NAME BUNDLE PATTERN: unbundle, fetch and clone of BUNDLE fail with
# PATTERN in the message and change nothing
refused() {
	local name=$1 b=$2 pat=$3 algo=$4 cpat=${5:-$3}
	snapshot "base-$algo" >before
	"$P" -C "base-$algo" bundle unbundle "$b" >/dev/null 2>err.u && not_ok "$name: unbundle succeeded" ||
		contains "$name: unbundle says why" err.u "$pat"
	"$P" -C "base-$algo" fetch -q "$b" 'refs/heads/*:refs/remotes/b/*' 2>err.f &&
		not_ok "$name: fetch succeeded" || contains "$name: fetch says why" err.f "$pat"
	snapshot "base-$algo" >after
	check "$name: the repository is unchanged" cmp -s before after
	rm -rf clone-x
	check_fails "$name: clone fails" "$P" clone -q "$b" clone-x 2>err.c
	contains "$name: clone says why" err.c "$cpat"
	check "$name: the failed clone left no directory" test ! -e clone-x
}
# rewrite IN OUT PY: OUT is IN with its header passed through the Python
# expression PY (h: the header bytes, blank line included; p: the pack)
rewrite() {
	python3 - "$1" "$2" "$3" <<'EOF'
import sys
d = open(sys.argv[1], 'rb').read()
i = d.index(b'\n\n') + 2
h, p = d[:i], d[i:]
def ins(h, line):
    """line after the signature and the capabilities"""
    ls = h.split(b'\n')
    k = 1
    while ls[k].startswith(b'@'):
        k += 1
    return b'\n'.join(ls[:k] + [line] + ls[k:])
out = eval(sys.argv[3])
open(sys.argv[2], 'wb').write(out)
EOF
}

cd "$T"
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo" >/dev/null 2>&1
	(cd "src-$algo" && "$P" bundle create -q "$T/all-$algo.b" --all)
	git init -q --object-format=$algo "base-$algo"
	git -C "base-$algo" fetch -q "$T/src-$algo" topic:refs/heads/b0 2>/dev/null
done

for algo in sha1 sha256; do
	other=sha256
	[ $algo = sha256 ] && other=sha1
	# the other algorithm, with a pack that is not one: the header decides
	rewrite "all-$other.b" "wrong-$algo.b" 'h + b"NOT A PACK AT ALL"'
	# (a clone takes the bundle's algorithm: there it is the pack that fails)
	refused "$algo repo, $other bundle" "$T/wrong-$algo.b" "uses $other, but the repository uses $algo" $algo \
		"not a pack"
	"$P" -C "base-$algo" bundle verify "$T/all-$other.b" 2>err.v && not_ok "$algo: verify of a $other bundle" ||
		contains "$algo: verify names both algorithms" err.v "uses $other, but the repository uses $algo"
	# the same from a pipe: refused before the pack is read
	rewrite "all-$other.b" "wrong-big-$algo.b" 'h + b"\0" * (1 << 20)'
	"$P" -C "base-$algo" bundle unbundle - <"wrong-big-$algo.b" >/dev/null 2>err.p &&
		not_ok "$algo: stdin $other bundle accepted" || contains "$algo: stdin refused at the header" err.p "uses $other"

	# a truncated pack
	rewrite "all-$algo.b" "trunc-$algo.b" 'h + p[:len(p) // 2]'
	refused "$algo truncated pack" "$T/trunc-$algo.b" "index-pack failed" $algo
	# the header only
	rewrite "all-$algo.b" "nopack-$algo.b" 'h'
	refused "$algo no pack" "$T/nopack-$algo.b" "index-pack failed" $algo
	# a bad prerequisite line
	rewrite "all-$algo.b" "badpre-$algo.b" 'ins(h, b"-zz" + b"0" * 38 + b" bad") + p'
	refused "$algo bad prerequisite" "$T/badpre-$algo.b" "unrecognized header" $algo
	# a prerequisite nobody has
	hx=$(printf 'ab%.0s' $(seq 1 32))
	[ $algo = sha1 ] && hx=${hx:0:40}
	rewrite "all-$algo.b" "lackpre-$algo.b" "ins(h, b'-$hx missing') + p"
	refused "$algo missing prerequisite" "$T/lackpre-$algo.b" "Repository lacks these prerequisite commits" $algo
	# a ref the pack does not hold
	rewrite "all-$algo.b" "lie-$algo.b" "h[:-1] + b'$hx refs/heads/liar\n\n' + p"
	refused "$algo ref not in the pack" "$T/lie-$algo.b" "$hx" $algo
	# ids of mixed lengths
	rewrite "all-$other.b" "mixed-$algo.b" "ins(h, b'-$hx x') + p"
	refused "$algo mixed id lengths" "$T/mixed-$algo.b" "bundle header line" $algo
	# an unknown capability and an unknown algorithm, as git words them
	rewrite "all-$algo.b" "cap-$algo.b" 'b"# v3 git bundle\n@object-format='$algo'\n@frobnicate=yes\n" + h[h.index(b"\n", h.index(b"\n") + 1 if h.startswith(b"# v3") else 0) + 1:] + p'
	refused "$algo unknown capability" "$T/cap-$algo.b" "unknown capability 'frobnicate=yes'" $algo
	rewrite "all-sha1.b" "md5-$algo.b" 'b"# v3 git bundle\n@object-format=md5\n" + h[h.index(b"\n") + 1:] + p'
	refused "$algo unknown algorithm" "$T/md5-$algo.b" "unrecognized bundle hash algorithm: md5" $algo
	# v3 that claims the other algorithm for ids of this one
	rewrite "all-$algo.b" "claim-$algo.b" 'b"# v3 git bundle\n@object-format='$other'\n" + h[h.index(b"\n", h.index(b"\n") + 1 if h.startswith(b"# v3") else 0) + 1:] + p'
	refused "$algo ids under a $other claim" "$T/claim-$algo.b" "-digit id in a $other bundle" $algo
	# an overlong line
	rewrite "all-$algo.b" "long-$algo.b" "h[:-1] + b'$hx refs/heads/' + b'x' * 70000 + b'\n\n' + p"
	refused "$algo overlong line" "$T/long-$algo.b" "longer than 65536 bytes" $algo
	# not a bundle at all: a path that is no repository either
	printf '# v9 git bundle\n\n' >"v9-$algo.b"
	check_fails "$algo: list-heads of a v9 file" "$P" bundle list-heads "v9-$algo.b"
	"$P" bundle list-heads "v9-$algo.b" 2>err.l || true
	contains "$algo: a v9 file does not look like a bundle" err.l "does not look like a v2 or v3 bundle file"
done
# issue 26: a v2 bundle is SHA-1 by definition; one carrying 64-digit ids
# and a SHA-256 pack is refused by every reader, as git refuses it
rewrite all-sha256.b v2-64.b 'b"# v2 git bundle\n" + b"\n".join(l for l in h.split(b"\n")[1:] if not l.startswith(b"@")) + p'
line1=$(sed -n 2p v2-64.b)
want="unrecognized header: $line1 (${#line1})"
for algo in sha1 sha256; do
	refused "$algo repo, v2 bundle with 64-digit ids" "$T/v2-64.b" "$want" $algo
done
for verb in verify list-heads; do
	"$P" -C base-sha256 bundle $verb "$T/v2-64.b" >out.v 2>err.v &&
		not_ok "v2 with 64-digit ids: bundle $verb succeeded" || contains "v2 with 64-digit ids: bundle $verb says why" err.v "$want"
	check "v2 with 64-digit ids: bundle $verb lists no ref" test ! -s out.v
done
"$P" ls-remote "$T/v2-64.b" >out.l 2>err.l && not_ok "v2 with 64-digit ids: ls-remote succeeded" ||
	contains "v2 with 64-digit ids: ls-remote says why" err.l "$want"
git clone -q v2-64.b clone-git 2>err.g || true
contains "v2 with 64-digit ids: git clone says the same" err.g "$want"
contains "v2 with 64-digit ids: ours adds what to do" err.c "a v2 bundle holds SHA-1 ids only"

check_fails "list-heads of a missing file" "$P" bundle list-heads no-such.b
"$P" bundle list-heads no-such.b 2>err.m || true
contains "missing file worded as git" err.m "error: could not open 'no-such.b'"

finish
