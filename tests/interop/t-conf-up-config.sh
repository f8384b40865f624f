#!/bin/bash
# Upload-pack configuration and protocol details of issue 11 (Git's t5702,
# t5510, t5516), packwire against stock git upload-pack, SHA-1 and SHA-256:
# lsrefs.unborn (advertise/allow/ignore), an empty "ref-prefix " line in
# ls-refs, exact-id wants of hidden ref tips under
# uploadpack.allowTipSHA1InWant.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

export GIT_USER_AGENT=test-agent/1

# both NAME ENV-PROTOCOL [ARGS...] < input: outputs in $T/NAME.pw / .git
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

	# ---- lsrefs.unborn -------------------------------------------------------
	git -C "$R" symbolic-ref HEAD refs/heads/not-yet
	for mode in advertise allow ignore; do
		git -C "$R" config lsrefs.unborn "$mode"
		both adv-$algo-$mode version=2 --advertise-refs "$R" </dev/null
		same_file "$algo: lsrefs.unborn=$mode: v2 advertisement as git's" "$T/adv-$algo-$mode.git" "$T/adv-$algo-$mode.pw"
		{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl symrefs
		  pkt_nl unborn; pkt_nl "ref-prefix HEAD"; flush; } |
			both unborn-$algo-$mode version=2 --stateless-rpc "$R"
		same_file "$algo: lsrefs.unborn=$mode: ls-refs unborn as git's" "$T/unborn-$algo-$mode.git" "$T/unborn-$algo-$mode.pw"
	done
	check "$algo: lsrefs.unborn=ignore: no unborn line" \
		bash -c "! grep -qa 'unborn HEAD' '$T/unborn-$algo-ignore.pw'"
	git -C "$R" config --unset lsrefs.unborn
	git -C "$R" symbolic-ref HEAD refs/heads/main

	# an empty repository whose unborn branch must not reach the clone
	E=$T/empty-$algo
	git -c init.defaultBranch=serverdefault init -q --object-format="$algo" "$E"
	git -C "$E" config lsrefs.unborn ignore
	git -c init.defaultBranch=clientdefault -c protocol.version=2 clone -q --upload-pack="$UP" \
		"file://$E" "$T/empty-clone-$algo" 2>/dev/null
	check "$algo: lsrefs.unborn=ignore: the clone keeps its own default branch" \
		grep -q refs/heads/clientdefault "$T/empty-clone-$algo/.git/HEAD"

	# ---- ls-refs with an empty ref-prefix (git fetch sends one for tags) -----
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl peel
	  pkt_nl "ref-prefix refs/heads/main"; pkt_nl "ref-prefix "; flush; } |
		both prefix-$algo version=2 --stateless-rpc "$R"
	same_file "$algo: ls-refs with an empty ref-prefix as git's" "$T/prefix-$algo.git" "$T/prefix-$algo.pw"
	contains "$algo: an empty ref-prefix lists every ref" "$T/prefix-$algo.pw" "refs/tags/v0.1"

	# ---- exact ids: the tip of a hidden ref with allowTipSHA1InWant -----------
	H=$T/hidden-$algo
	git clone -q --bare "$R" "$H"
	# a commit no visible ref (branch or tag) points at
	git -C "$H" update-ref refs/hidden/one \
		"$(git -C "$H" commit-tree -p main -m hidden "main^{tree}")"
	git -C "$H" config transfer.hideRefs refs/hidden
	tip=$(git -C "$H" rev-parse refs/hidden/one)
	git ls-remote --upload-pack="$UP" "$H" >"$T/hidden-ls-$algo"
	check "$algo: the hidden ref is not advertised" bash -c "! grep -q refs/hidden '$T/hidden-ls-$algo'"
	c=$T/hclient-$algo
	git init -q --object-format="$algo" "$c"
	check_fails "$algo: a hidden tip is refused by default" \
		git -C "$c" -c protocol.version=0 fetch -q --upload-pack="$UP" "$H" "$tip:refs/heads/copy"
	git -C "$H" config uploadpack.allowTipSHA1InWant true
	check "$algo: allowTipSHA1InWant lets the hidden tip be fetched" \
		git -C "$c" -c protocol.version=0 fetch -q --upload-pack="$UP" "$H" "$tip:refs/heads/copy"
done
finish
