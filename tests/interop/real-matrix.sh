# The fetch matrix cells on real history (git v1.5.0 from ../shared/data),
# SHA-1 and SHA-256, protocols v0, v1 and v2 over file://:
#  - stock git against packwire upload-pack: clone --depth=1, clone
#    --filter=blob:none, incremental fetch after new commits, fetch of a new
#    tag; each compared with stock git against git upload-pack (same refs,
#    objects, shallow boundary) and passing git fsck --strict;
#  - packwire clone/fetch against stock git upload-pack: clone --depth=1,
#    incremental fetch after new commits and a force-pushed branch, fetch
#    --prune; compared with stock git's clone and fetch the same way.
# Sourced by t-real-matrix-server.sh (ROLE=server: the first list) and
# t-real-matrix-client.sh (ROLE=client: the second), to keep each under a
# minute.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"
: "${ROLE:?ROLE must be server or client}"
srv() { [ "$ROLE" = server ]; }
cli() { [ "$ROLE" = client ]; }

require_data "real-history matrix"
cd "$T"
objs() { all_objects "$1" | md5sum; }
# same WHAT A B: refs, objects, shallow, fsck of A
# (NOFSCK=1: the repository gets its fsck after the next step)
same() {
	[ -n "${NOFSCK:-}" ] || check "$1: fsck --strict" fsck_ok "$2"
	check "$1: refs as git's" same_refs "$2" "$3"
	check "$1: objects as git's" test "$(objs "$2")" = "$(objs "$3")"
	check "$1: shallow as git's" test "$(sort "$2/shallow" 2>/dev/null)" = "$(sort "$3/shallow" 2>/dev/null)"
}

for algo in sha1 sha256; do
	D=$(data_repo small "$algo")
	S=$T/srv-$algo.git
	cp -r "$D" "$S"
	git -C "$S" config uploadpack.allowFilter true
	for v in 0 1 2; do
		w="$algo v$v"
		G="git -c protocol.version=$v"
		# ---- stock git against packwire upload-pack -------------------------------
		if srv; then
			$G clone -q --bare --depth=1 --no-single-branch --upload-pack="$UP" "file://$S" up-d 2>err ||
				{ not_ok "$w: git clone --depth=1 from packwire"; cat err; }
			$G clone -q --bare --depth=1 --no-single-branch "file://$S" g-d
			same "$w: git clone --depth=1 from packwire" up-d g-d
			$G clone -q --bare --filter=blob:none --upload-pack="$UP" "file://$S" up-f 2>err ||
				{ not_ok "$w: git clone --filter=blob:none from packwire"; cat err; }
			$G clone -q --bare --filter=blob:none "file://$S" g-f
			same "$w: git clone --filter=blob:none from packwire" up-f g-f
			rm -rf up-d g-d up-f g-f

		fi

		# full clones to fetch into (local copies: the clone itself is t-upload-pack-real's)
		cs="pw-c gc-c"
		srv && cs="up-c g-c"
		for c in $cs; do
			cp -r "$S" "$c"
			git -C "$c" config remote.origin.url "file://$S"
			git -C "$c" config remote.origin.fetch '+refs/heads/*:refs/remotes/origin/*'
			git -C "$c" config --unset uploadpack.allowFilter
		done
		# new history on the server: a commit on main, a rewritten side branch, a tag
		main=$(git -C "$S" rev-parse main)
		next=$(git -C "$S" commit-tree -p "$main" -m "next $v" "$main~5^{tree}")
		git -C "$S" update-ref refs/heads/main "$next"
		side=$(git -C "$S" commit-tree -p "$main~40" -m "side $v" "$main~41^{tree}")
		git -C "$S" update-ref "refs/heads/side-$v" "$side"
		git -C "$S" tag -a "rel-$v" -m "release $v" "$side"

		if srv; then
			$G -C up-c fetch -q --upload-pack="$UP" origin 2>err || { not_ok "$w: git fetch from packwire"; cat err; }
			$G -C g-c fetch -q origin
			NOFSCK=1 same "$w: git incremental fetch from packwire" up-c g-c
			$G -C up-c fetch -q --upload-pack="$UP" origin "refs/tags/rel-$v:refs/tags/rel-$v" 2>err ||
				{ not_ok "$w: git fetch of a tag from packwire"; cat err; }
			$G -C g-c fetch -q origin "refs/tags/rel-$v:refs/tags/rel-$v"
			same "$w: git fetch of a tag from packwire" up-c g-c
			check "$w: the tag is an annotated tag" test "$(git -C up-c cat-file -t "rel-$v")" = tag

		fi
		# ---- packwire against git upload-pack ---------------------------------------
		if cli; then
			(cd pw-c && "$PACKWIRE" -c protocol.version=$v fetch -q origin) 2>err ||
				{ not_ok "$w: packwire fetch"; cat err; }
			(cd gc-c && $G fetch -q origin)
			NOFSCK=1 same "$w: packwire incremental fetch" pw-c gc-c
			# a force-pushed branch, a deleted branch
			side2=$(git -C "$S" commit-tree -p "$main~50" -m "side rewritten $v" "$main~51^{tree}")
			git -C "$S" update-ref "refs/heads/side-$v" "$side2"
			git -C "$S" branch -q "gone-$v" "$main~60"
			(cd pw-c && "$PACKWIRE" -c protocol.version=$v fetch -q origin) 2>/dev/null
			(cd gc-c && $G fetch -q origin)
			git -C "$S" branch -q -D "gone-$v"
			(cd pw-c && "$PACKWIRE" -c protocol.version=$v fetch -q --prune origin) 2>err ||
				{ not_ok "$w: packwire fetch --prune"; cat err; }
			(cd gc-c && $G fetch -q --prune origin)
			same "$w: packwire fetch of a forced branch, --prune" pw-c gc-c
			"$PACKWIRE" -c protocol.version=$v clone -q --bare --depth=1 "file://$S" pw-d 2>err ||
				{ not_ok "$w: packwire clone --depth=1"; cat err; }
			$G clone -q --bare --depth=1 "file://$S" g-d
			same "$w: packwire clone --depth=1" pw-d g-d
		fi
		rm -rf up-c g-c pw-c gc-c pw-d g-d
	done
	rm -rf "$S"
done
finish
