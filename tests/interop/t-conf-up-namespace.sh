#!/bin/bash
# GIT_NAMESPACE served by packwire upload-pack (issue 11, Git's t5509 and
# t5702): only the namespace's refs, under their names inside it, and the
# namespace's own HEAD; the same advertisement and ls-refs answer as stock
# git upload-pack, and clones that pick the namespace's HEAD, v0 and v2,
# SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

export GIT_USER_AGENT=test-agent/1

both() {
	local name=$1 proto=$2
	shift 2
	cat >"$T/$name.in"
	GIT_PROTOCOL=$proto $PACKWIRE upload-pack "$@" <"$T/$name.in" >"$T/$name.pw" 2>"$T/$name.err-pw" || true
	GIT_PROTOCOL=$proto git upload-pack "$@" <"$T/$name.in" >"$T/$name.git" 2>"$T/$name.err-git" || true
}

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	wf="object-format=$algo"
	[ "$algo" = sha1 ] && wf=""
	# the namespace "ns": two branches, its HEAD on the second
	git -C "$R" update-ref refs/namespaces/ns/refs/heads/one "$(git -C "$R" rev-parse main~2)"
	git -C "$R" update-ref refs/namespaces/ns/refs/heads/two "$(git -C "$R" rev-parse main~1)"
	git -C "$R" update-ref refs/namespaces/ns/refs/tags/t "$(git -C "$R" rev-parse v0.1)"
	git -C "$R" symbolic-ref refs/namespaces/ns/HEAD refs/namespaces/ns/refs/heads/two
	export GIT_NAMESPACE=ns

	both adv0-$algo "" --advertise-refs "$R" </dev/null
	same_file "$algo: v0 advertisement in a namespace as git's" "$T/adv0-$algo.git" "$T/adv0-$algo.pw"
	contains "$algo: v0 symref is the namespace's HEAD" "$T/adv0-$algo.pw" "symref=HEAD:refs/heads/two"
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl symrefs; pkt_nl peel; pkt_nl unborn
	  pkt_nl "ref-prefix HEAD"; pkt_nl "ref-prefix refs/"; flush; } |
		both lsrefs-$algo version=2 --stateless-rpc "$R"
	# (git 2.39 lists the namespace's HEAD twice, once more as a ref found
	# under the namespace by the "HEAD" prefix; packwire once)
	uniq "$T/lsrefs-$algo.git" | head -c -1 >"$T/lsrefs-$algo.git1"
	same_file "$algo: v2 ls-refs in a namespace as git's" "$T/lsrefs-$algo.git1" "$T/lsrefs-$algo.pw"

	for v in 0 2; do
		c=$T/clone-$algo-$v
		git -c protocol.version=$v clone -q --upload-pack="$UP" "$R" "$c" 2>"$T/err" || { not_ok "$algo v$v: clone in a namespace"; cat "$T/err"; }
		check "$algo v$v: the clone's HEAD is the namespace's" \
			test "$(git -C "$c" symbolic-ref HEAD 2>/dev/null)" = refs/heads/two
		check "$algo v$v: only the namespace's branches" \
			test "$(git -C "$c" for-each-ref --format='%(refname)' refs/remotes/origin | grep -v HEAD | tr '\n' ' ')" = \
			"refs/remotes/origin/one refs/remotes/origin/two "
	done
	unset GIT_NAMESPACE
done
finish
