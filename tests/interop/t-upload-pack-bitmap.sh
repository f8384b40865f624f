#!/bin/bash
# Reachability bitmaps: repositories repacked by stock git with -adb are
# served by packwire upload-pack (clone, incremental thin fetch, tag
# auto-follow, --filter=blob:none and blob:limit, objects outside the pack)
# and packed by packwire pack-objects --revs (with and without
# --delta-base-offset, with exclusions) from the bitmap; every result is
# compared with what stock git gives, and damaged bitmaps (truncated, another
# pack's checksum) must fall back to the object walk.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

G="git -c protocol.version=2"

# pack_objects PACKFILE ALGO: the object ids in a pack, sorted
pack_objects() {
	local d=$T/po-$RANDOM
	git init -q --bare --object-format="$2" "$d"
	git -C "$d" index-pack --stdin <"$1" >/dev/null 2>&1 || return 1
	git show-index --object-format="$2" <"$(ls "$d"/objects/pack/*.idx)" | awk '{print $2}' | sort
	rm -rf "$d"
}

# commit_more DIR N: N new commits on main in DIR (non-bare)
commit_more() {
	local i
	for i in $(seq 1 "$2"); do
		echo "more $i $RANDOM" >>"$1/a.txt"
		sed -i "s/line $((i + 40)) /line $((i + 40)) again /" "$1/big.txt"
		git -C "$1" commit -q -am "more $i"
	done
}

for algo in sha1 sha256; do
	w="$algo"
	make_repo "$T/src-$algo" "$algo"
	git clone -q --mirror "$T/src-$algo" "$T/srv-$algo.git"
	S=$T/srv-$algo.git
	git -C "$S" repack -adbq
	if ls "$S"/objects/pack/*.bitmap >/dev/null 2>&1; then
		ok "$w: git repack -adb wrote a bitmap"
	else
		not_ok "$w: git repack -adb wrote a bitmap"
		continue
	fi

	# clone: the bitmap path announces its verbatim reuse
	for v in 0 2; do
		$G -c protocol.version=$v clone --bare --progress --upload-pack="$UP" "file://$S" \
			"$T/pw-$algo-$v.git" 2>"$T/err" || { not_ok "$w v$v: clone"; cat "$T/err"; }
		git -c protocol.version=$v clone -q --bare "file://$S" "$T/git-$algo-$v.git"
		if fsck_ok "$T/pw-$algo-$v.git"; then ok "$w v$v: clone fsck --strict"; else not_ok "$w v$v: clone fsck --strict"; fi
		check "$w v$v: clone has the same refs as git's" same_refs "$T/pw-$algo-$v.git" "$T/git-$algo-$v.git"
		check "$w v$v: clone has the same objects as git's" \
			diff <(all_objects "$T/pw-$algo-$v.git") <(all_objects "$T/git-$algo-$v.git")
		check "$w v$v: clone served from the bitmap" grep -q "pack-reused [1-9]" "$T/err"
		# every object of the pack is wanted: the pack file goes out as it is
		check "$w v$v: clone got the server's pack file byte for byte" \
			cmp "$T"/pw-$algo-$v.git/objects/pack/*.pack "$S"/objects/pack/*.pack
	done

	# a pack that also holds an object no ref reaches: copied entry by entry
	git clone -q --mirror "$S" "$T/part-$algo.git"
	P=$T/part-$algo.git
	git -C "$T/src-$algo" checkout -q -b gone
	commit_more "$T/src-$algo" 1
	git -C "$P" fetch -q "$T/src-$algo" gone:gone
	git -C "$T/src-$algo" checkout -q main
	git -C "$P" repack -adbq
	git -C "$P" update-ref -d refs/heads/gone
	$G clone --bare --progress --upload-pack="$UP" "file://$P" "$T/part-pw-$algo.git" 2>"$T/err" ||
		{ not_ok "$w: clone of a pack with an unreachable commit"; cat "$T/err"; }
	git clone -q --bare --no-local "file://$P" "$T/part-git-$algo.git"
	check "$w: partial pack: fsck --strict" fsck_ok "$T/part-pw-$algo.git"
	check "$w: partial pack: same objects as git's" \
		diff <(all_objects "$T/part-pw-$algo.git") <(all_objects "$T/part-git-$algo.git")
	check "$w: partial pack: served from the bitmap" grep -q "pack-reused [1-9]" "$T/err"
	if cmp -s "$T"/part-pw-$algo.git/objects/pack/*.pack "$P"/objects/pack/*.pack; then
		not_ok "$w: partial pack: the unreachable commit was sent"
	else
		ok "$w: partial pack: not the server's pack file"
	fi

	# tag auto-follow (include-tag): fetch main only into an empty repository
	for srv in pw git; do
		git init -q --bare --object-format="$algo" "$T/tf-$srv-$algo.git"
		up=$UP
		[ $srv = git ] && up=git-upload-pack
		$G -C "$T/tf-$srv-$algo.git" fetch -q --upload-pack="$up" "file://$S" \
			refs/heads/main:refs/heads/main 2>"$T/err" || { not_ok "$w: fetch main ($srv)"; cat "$T/err"; }
	done
	check "$w: include-tag fetch: same refs as git's" same_refs "$T/tf-pw-$algo.git" "$T/tf-git-$algo.git"
	check "$w: include-tag fetch: fsck" fsck_ok "$T/tf-pw-$algo.git"

	# incremental fetch after the server moved on and was repacked: thin pack
	# against the client's haves
	git clone -q --bare "file://$S" "$T/inc-pw-$algo.git"
	git clone -q --bare "file://$S" "$T/inc-git-$algo.git"
	commit_more "$T/src-$algo" 4
	git -C "$T/src-$algo" tag -a v9 -m "new tag"
	git -C "$S" fetch -q "$T/src-$algo" '+refs/*:refs/*'
	git -C "$S" repack -adbq
	$G -C "$T/inc-pw-$algo.git" fetch --progress --upload-pack="$UP" origin '+refs/heads/*:refs/heads/*' \
		'+refs/tags/*:refs/tags/*' 2>"$T/err" || { not_ok "$w: incremental fetch"; cat "$T/err"; }
	$G -C "$T/inc-git-$algo.git" fetch -q origin '+refs/heads/*:refs/heads/*' '+refs/tags/*:refs/tags/*'
	check "$w: incremental fetch: fsck --strict" fsck_ok "$T/inc-pw-$algo.git"
	check "$w: incremental fetch: same refs" same_refs "$T/inc-pw-$algo.git" "$T/inc-git-$algo.git"
	check "$w: incremental fetch: same objects" \
		diff <(all_objects "$T/inc-pw-$algo.git") <(all_objects "$T/inc-git-$algo.git")
	check "$w: incremental fetch served from the bitmap" grep -q "pack-reused [1-9]" "$T/err"

	# --filter=blob:none
	git -C "$S" config uploadpack.allowFilter true
	$G clone -q --bare --filter=blob:none --upload-pack="$UP" "file://$S" "$T/f-pw-$algo.git" 2>"$T/err" ||
		{ not_ok "$w: clone --filter=blob:none"; cat "$T/err"; }
	$G clone -q --bare --filter=blob:none "file://$S" "$T/f-git-$algo.git"
	check "$w: --filter=blob:none: same objects as git's" \
		diff <(all_objects "$T/f-pw-$algo.git") <(all_objects "$T/f-git-$algo.git")
	$G clone -q --bare --filter=blob:limit=100 --upload-pack="$UP" "file://$S" "$T/fl-pw-$algo.git" 2>"$T/err" ||
		{ not_ok "$w: clone --filter=blob:limit=100"; cat "$T/err"; }
	$G clone -q --bare --filter=blob:limit=100 "file://$S" "$T/fl-git-$algo.git"
	check "$w: --filter=blob:limit=100: same objects as git's" \
		diff <(all_objects "$T/fl-pw-$algo.git") <(all_objects "$T/fl-git-$algo.git")

	# pack-objects --revs from the bitmap: REF_DELTA without
	# --delta-base-offset, exclusions, compared with git pack-objects
	for ofs in "" --delta-base-offset; do
		for revs in "--all" "main ^main~3" "v0.2-annotated"; do
			args=
			[ "$revs" = --all ] && args=--all revs=
			# shellcheck disable=SC2086
			printf '%s\n' $revs | (cd "$S" && "$PACKWIRE" pack-objects --revs $args --stdout -q $ofs) >"$T/p.pack"
			# shellcheck disable=SC2086
			printf '%s\n' $revs | (cd "$S" && git pack-objects --revs $args --stdout -q $ofs) >"$T/g.pack"
			[ -z "$revs" ] && revs=--all
			check "$w pack-objects $revs $ofs: same objects as git" \
				diff <(pack_objects "$T/p.pack" "$algo") <(pack_objects "$T/g.pack" "$algo")
		done
	done
	(cd "$S" && "$PACKWIRE" pack-objects --revs --all --stdout -q </dev/null) >"$T/p.pack"
	git init -q --bare --object-format="$algo" "$T/strict-$algo.git"
	check "$w pack-objects --all (REF_DELTA): index-pack --strict" \
		git -C "$T/strict-$algo.git" index-pack --strict --stdin <"$T/p.pack" >/dev/null
	# into a file: with '| grep -q' a SIGPIPE'd verify-pack would hide a match
	git verify-pack -v "$(ls "$T"/strict-$algo.git/objects/pack/*.idx)" >"$T/vp" 2>/dev/null || true
	if grep -q ' ofs-delta' "$T/vp"; then
		not_ok "$w pack-objects without --delta-base-offset wrote OFS_DELTA"
	else
		ok "$w pack-objects without --delta-base-offset: no OFS_DELTA"
	fi

	# damaged bitmaps: the walk serves the same clone
	for damage in truncate checksum; do
		D=$T/bad-$damage-$algo.git
		cp -r "$S" "$D"
		bm=$(ls "$D"/objects/pack/*.bitmap)
		chmod u+w "$bm"
		size=$(wc -c <"$bm")
		if [ $damage = truncate ]; then
			head -c $((size / 2)) "$bm" >"$T/bm" && cat "$T/bm" >"$bm"
		else
			printf '\377\377\377\377\377\377\377\377' |
				dd of="$bm" bs=1 seek=12 conv=notrunc status=none
		fi
		$G clone --bare --progress --upload-pack="$UP" "file://$D" "$T/bad-pw-$damage-$algo.git" 2>"$T/err" ||
			{ not_ok "$w: clone with a bitmap ($damage)"; cat "$T/err"; }
		check "$w: $damage bitmap: fsck" fsck_ok "$T/bad-pw-$damage-$algo.git"
		check "$w: $damage bitmap: same refs" same_refs "$T/bad-pw-$damage-$algo.git" "$S"
		check "$w: $damage bitmap: walked instead" grep -q "pack-reused 0" "$T/err"
		printf 'main\n' | (cd "$D" && "$PACKWIRE" pack-objects --revs --stdout -q) >"$T/p.pack" 2>"$T/err"
		printf 'main\n' | (cd "$D" && git -c pack.useBitmaps=false pack-objects --revs --stdout -q) >"$T/g.pack"
		check "$w: $damage bitmap: pack-objects same objects" \
			diff <(pack_objects "$T/p.pack" "$algo") <(pack_objects "$T/g.pack" "$algo")
	done

	# objects outside the bitmapped pack (a loose commit and tag pushed
	# since the repack): walked beside the bitmap, sent whole
	commit_more "$T/src-$algo" 1
	git -C "$T/src-$algo" tag -a v10 -m "loose tag"
	git -C "$S" fetch -q "$T/src-$algo" '+refs/*:refs/*'
	$G clone --bare --progress --upload-pack="$UP" "file://$S" "$T/loose-pw-$algo.git" 2>"$T/err" ||
		{ not_ok "$w: clone with loose objects"; cat "$T/err"; }
	git clone -q --bare "file://$S" "$T/loose-git-$algo.git"
	check "$w: loose objects beside the bitmap: fsck" fsck_ok "$T/loose-pw-$algo.git"
	check "$w: loose objects beside the bitmap: same refs" same_refs "$T/loose-git-$algo.git" "$T/loose-pw-$algo.git"
	check "$w: loose objects beside the bitmap: same objects" \
		diff <(all_objects "$T/loose-pw-$algo.git") <(all_objects "$T/loose-git-$algo.git")
	check "$w: loose objects beside the bitmap: served from the bitmap" grep -q "pack-reused [1-9]" "$T/err"
	# and a fetch whose haves are loose on the server too
	cp -r "$T/loose-git-$algo.git" "$T/loose-inc-pw-$algo.git"
	commit_more "$T/src-$algo" 2
	git -C "$T/src-$algo" tag -a v11 -m "another loose tag"
	git -C "$S" fetch -q "$T/src-$algo" '+refs/*:refs/*'
	$G -C "$T/loose-inc-pw-$algo.git" fetch -q --upload-pack="$UP" origin '+refs/heads/*:refs/heads/*' \
		2>"$T/err" || { not_ok "$w: fetch with loose haves"; cat "$T/err"; }
	$G -C "$T/loose-git-$algo.git" fetch -q origin '+refs/heads/*:refs/heads/*'
	check "$w: fetch with loose haves: fsck" fsck_ok "$T/loose-inc-pw-$algo.git"
	check "$w: fetch with loose haves: same refs" same_refs "$T/loose-git-$algo.git" "$T/loose-inc-pw-$algo.git"
	check "$w: fetch with loose haves: same objects" \
		diff <(all_objects "$T/loose-inc-pw-$algo.git") <(all_objects "$T/loose-git-$algo.git")
	# tag auto-follow of tags outside the bitmapped pack
	for srv in pw git; do
		git init -q --bare --object-format="$algo" "$T/ltf-$srv-$algo.git"
		up=$UP
		[ $srv = git ] && up=git-upload-pack
		$G -C "$T/ltf-$srv-$algo.git" fetch -q --upload-pack="$up" "file://$S" \
			refs/heads/main:refs/heads/main 2>"$T/err" || { not_ok "$w: fetch main ($srv)"; cat "$T/err"; }
	done
	check "$w: include-tag of loose tags: same refs as git's" same_refs "$T/ltf-pw-$algo.git" "$T/ltf-git-$algo.git"
	check "$w: include-tag of loose tags: fsck" fsck_ok "$T/ltf-pw-$algo.git"

	# a wanted tree of 33000 entries inside the bitmapped pack: the walk's
	# lookups start by binary search and move to the hash table midway
	blob=$(echo wide | git -C "$T/src-$algo" hash-object -w --stdin)
	tree=$(awk -v b="$blob" 'BEGIN { for (i = 0; i < 33000; i++) printf "100644 blob %s\tf%05d\n", b, i }' |
		git -C "$T/src-$algo" mktree)
	git -C "$T/src-$algo" tag wide-tree "$tree"
	git -C "$S" fetch -q "$T/src-$algo" refs/tags/wide-tree:refs/tags/wide-tree
	git -C "$S" repack -adbq
	for srv in pw git; do
		git init -q --bare --object-format="$algo" "$T/wide-$srv-$algo.git"
		up=$UP
		[ $srv = git ] && up=git-upload-pack
		$G -C "$T/wide-$srv-$algo.git" fetch -q --upload-pack="$up" "file://$S" \
			refs/tags/wide-tree:refs/tags/wide-tree 2>"$T/err" || { not_ok "$w: fetch a wide tree ($srv)"; cat "$T/err"; }
	done
	check "$w: a wide tree from the bitmapped pack: fsck" fsck_ok "$T/wide-pw-$algo.git"
	check "$w: a wide tree from the bitmapped pack: same objects as git's" \
		diff <(all_objects "$T/wide-pw-$algo.git") <(all_objects "$T/wide-git-$algo.git")
done

finish
