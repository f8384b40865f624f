#!/usr/bin/env bash
# Negotiation of packwire fetch against stock git upload-pack on real
# history (git v1.5.0 from ../shared/data), SHA-1 and SHA-256, v0 and v2:
# an incremental fetch of a branch forked deep in history offers haves from
# the local refs and stops once the server has found common ground (a bounded
# number of haves, not the whole history), gets a small pack, and ends with
# the refs and objects stock git fetch gets, passing git fsck --strict.
. "$(dirname "$0")/lib.sh"

require_data "negotiation on real history"
cd "$T"
for algo in sha1 sha256; do
	D=$(data_repo small "$algo")
	cp -r "$D" "srv-$algo.git"
	S=$T/srv-$algo.git
	total=$(git -C "$S" rev-list --all | wc -l)
	for v in 0 2; do
		w="$algo v$v"
		cp -r "$S" "pw-$algo-$v.git"
		cp -r "$S" "git-$algo-$v.git"
		for c in "pw-$algo-$v.git" "git-$algo-$v.git"; do
			git -C "$c" config remote.origin.url "file://$S"
			git -C "$c" config remote.origin.fetch '+refs/heads/*:refs/heads/*'
		done
		# a branch forked 300 commits back, and a commit on main
		base=$(git -C "$S" rev-parse "main~300")
		fork=$(git -C "$S" commit-tree -p "$base" -m "fork $v" "$base^{tree}")
		git -C "$S" update-ref "refs/heads/fork-$v" "$fork"
		next=$(git -C "$S" commit-tree -p main -m "next $v" "main^{tree}")
		git -C "$S" update-ref refs/heads/main "$next"
		(cd "pw-$algo-$v.git" && GIT_TRACE_PACKET=$T/trace-pw \
			"$PACKWIRE" -c protocol.version=$v fetch -q origin) 2>err || { not_ok "$w: fetch"; cat err; }
		(cd "git-$algo-$v.git" && GIT_TRACE_PACKET=$T/trace-git \
			git -c protocol.version=$v fetch -q origin) 2>/dev/null
		haves=$(grep -c 'upload-pack< have ' "$T/trace-pw" || true)
		if [ "$haves" -ge 1 ] && [ "$haves" -le 256 ]; then
			ok "$w: $haves haves sent for $total local commits (git: $(grep -c 'upload-pack< have ' "$T/trace-git" || true))"
		else
			not_ok "$w: $haves haves sent for $total local commits"
		fi
		check "$w: refs as git fetch" same_refs "pw-$algo-$v.git" "git-$algo-$v.git"
		if diff <(all_objects "pw-$algo-$v.git") <(all_objects "git-$algo-$v.git") >/dev/null; then
			ok "$w: same objects as git fetch"
		else
			not_ok "$w: objects differ from git fetch"
		fi
		check "$w: fsck --strict" fsck_ok "pw-$algo-$v.git"
		n=$(ls "pw-$algo-$v.git/objects/pack/"*.pack | wc -l)
		newest=$(ls -t "pw-$algo-$v.git/objects/pack/"*.idx | head -1)
		count=$(git show-index --object-format=$algo <"$newest" | wc -l)
		if [ "$n" -ge 2 ] && [ "$count" -le 10 ]; then ok "$w: a small pack ($count objects)"; else
			not_ok "$w: pack of $count objects ($n packs)"; fi
		rm -rf "pw-$algo-$v.git" "git-$algo-$v.git" "$T/trace-pw" "$T/trace-git"
	done
	rm -rf "$S"
done
finish
