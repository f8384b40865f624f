#!/bin/bash
# The pack writer's order is Git's: `packwire repack -a -d` of a repository
# whose deltas are all reused writes the very pack `git repack -a -d` writes
# (byte for byte: commits in the date-ordered walk, tagged tips early, trees,
# then blobs by delta family). The history has a side branch whose commits
# interleave by date with main's (a walk in breadth-first order would differ),
# annotated and lightweight tags, and files that change a little (deltas).
# With -b, git accepts the pack and the bitmap, which has as many commit
# bitmaps as git's and is no larger. On the real history of ../shared/data
# (interop/t-repack-order/real: v1.5.0, v2.0.0 with PW_TEST_LARGE=1) packs
# and bitmaps are compared the same way.
. "$(dirname "$0")/lib.sh"

# history DIR ALGO N
history() {
	local dir=$1 algo=$2 n=$3 i t
	git init -q --bare --object-format="$algo" "$dir"
	{
		t=1700000000
		for i in $(seq 1 "$n"); do
			t=$((t + 60))
			echo "commit refs/heads/main"
			echo "mark :$i"
			echo "committer T <t@example.com> $t +0000"
			echo "data <<EOM"
			echo "main $i"
			echo "EOM"
			[ "$i" -gt 1 ] && echo "from :$((i - 1))"
			[ $((i % 20)) = 0 ] && echo "merge :$((100000 + i - 1))"
			echo "M 644 inline d$((i % 5))/f.txt"
			echo "data <<EOF"
			seq 1 $((40 + i % 11))
			echo "at $i"
			echo "EOF"
			echo
			# the side branch: forks every 20 commits, one commit dated
			# between main's, merged at the next multiple of 20
			if [ $((i % 20)) = 1 ]; then
				echo "commit refs/heads/side"
				echo "mark :$((100000 + i + 18))"
				echo "committer T <t@example.com> $((t + 30)) +0000"
				echo "data <<EOM"
				echo "side $i"
				echo "EOM"
				echo "from :$i"
				echo "M 644 inline side.txt"
				echo "data <<EOF"
				seq 1 30
				echo "side $i"
				echo "EOF"
				echo
			fi
			if [ $((i % 30)) = 0 ]; then
				echo "tag v$i"
				echo "from :$i"
				echo "tagger T <t@example.com> $t +0000"
				echo "data <<EOM"
				echo "version $i"
				echo "EOM"
				echo
			fi
			if [ $((i % 45)) = 0 ]; then
				echo "reset refs/tags/light$i"
				echo "from :$i"
				echo
			fi
		done
	} | git -C "$dir" fast-import --quiet
	git -C "$dir" repack -q -a -d -f
}

# commits_in_pack_order DIR: the commit ids of DIR's one pack by offset
commits_in_pack_order() {
	git -C "$1" verify-pack -v "$(ls "$1"/objects/pack/*.idx)" |
		awk '$2 == "commit" { print $5, $1 }' | sort -n | cut -d' ' -f2
}

# same_pack_as_git SRC WHAT: repack copies of SRC with git and packwire
# (no bitmaps), compare the packs
same_pack_as_git() {
	local src=$1 what=$2
	rm -rf "$T/g.git" "$T/p.git"
	cp -a "$src" "$T/g.git"
	cp -a "$src" "$T/p.git"
	git -C "$T/g.git" -c repack.writeBitmaps=false repack -a -d -q
	"$PACKWIRE" -C "$T/p.git" -c repack.writeBitmaps=false repack -a -d -q
	if cmp -s "$T"/g.git/objects/pack/*.pack "$T"/p.git/objects/pack/*.pack; then
		ok "$what: packwire repack -a -d writes git's pack byte for byte"
	else
		not_ok "$what: packwire repack -a -d writes git's pack byte for byte"
		diff <(commits_in_pack_order "$T/g.git") <(commits_in_pack_order "$T/p.git") | head -5
	fi
	check "$what: same .idx too" cmp -s "$T"/g.git/objects/pack/*.idx "$T"/p.git/objects/pack/*.idx
}

# bitmap_entries DIR: how many commit bitmaps git loads from DIR's .bitmap
bitmap_entries() {
	git -C "$1" rev-list --test-bitmap HEAD 2>&1 | tr '\r' '\n' |
		sed -n 's/.*(\([0-9]*\) entries.*/\1/p'
}

# same_bitmap_as_git SRC WHAT: repack -a -d -b copies of SRC with git and
# packwire: the same commits get bitmaps (as many), the file is as small
same_bitmap_as_git() {
	local src=$1 what=$2 gb pb
	rm -rf "$T/gb.git" "$T/pb.git"
	cp -a "$src" "$T/gb.git"
	cp -a "$src" "$T/pb.git"
	git -C "$T/gb.git" repack -a -d -b -q
	"$PACKWIRE" -C "$T/pb.git" repack -a -d -b -q
	check "$what -b: as many bitmaps as git's" \
		[ "$(bitmap_entries "$T/pb.git")" = "$(bitmap_entries "$T/gb.git")" ]
	gb=$(stat -c %s "$T"/gb.git/objects/pack/*.bitmap)
	pb=$(stat -c %s "$T"/pb.git/objects/pack/*.bitmap)
	echo "# $what: .bitmap $pb bytes, git's $gb"
	check "$what -b: .bitmap at most 2% larger than git's" [ $((pb * 100)) -le $((gb * 102)) ]
	out=$(git -C "$T/pb.git" rev-list --test-bitmap HEAD 2>&1 || true)
	case $out in *"OK!"*) ok "$what -b: git rev-list --test-bitmap" ;;
	*) not_ok "$what -b: git rev-list --test-bitmap" ;; esac
}

# ---- real history: interop/t-repack-order/real ------------------------------
# v1.5.0's packs and bitmaps as git's, and v2.0.0's rev-list --objects --all;
# packs and bitmaps of v2.0.0 too (eight repacks of 170k objects, minutes)
# with PW_TEST_LARGE=1 (`PW_TEST_LARGE=1 ctest -R t-repack-order/real`).
if real_part "packs and bitmaps of git v1.5.0 and v2.0.0"; then
	for algo in sha1 sha256; do
		L=$(data_repo large "$algo")
		check "v2.0.0 $algo: rev-list --objects --all lists git's objects" \
			diff <("$PACKWIRE" -C "$L" rev-list --objects --all | sort) \
			<(git -C "$L" rev-list --objects --all | sort)
	done
	which=small name=v1.5.0
	[ "${PW_TEST_LARGE:-}" = 1 ] && which=large name=v2.0.0
	for algo in sha1 sha256; do
		same_pack_as_git "$(data_repo $which "$algo")" "$name $algo"
		same_bitmap_as_git "$(data_repo $which "$algo")" "$name $algo"
	done
	finish
fi

for algo in sha1 sha256; do
	w=$algo
	S=$T/src-$algo.git
	history "$S" "$algo" 200
	same_pack_as_git "$S" "$w"
	same_bitmap_as_git "$S" "$w"

	# the order itself: the newest tip first; untagged commits in the order
	# of git's walk (date order, not breadth first)
	P=$T/order-$algo.git
	cp -a "$S" "$P"
	"$PACKWIRE" -C "$P" repack -a -d -b -q
	commits_in_pack_order "$P" >"$T/pack-commits"
	check "$w: the newest commit is written first" \
		[ "$(head -1 "$T/pack-commits")" = "$(git -C "$P" rev-list -1 --all)" ]
	git -C "$P" for-each-ref --format='%(*objectname)%(objectname)' refs/tags |
		cut -c1-"$(git -C "$P" rev-parse HEAD | wc -c | awk '{print $1 - 1}')" | sort -u >"$T/tagged"
	# ids of commits that tags name are written early; the others follow
	# git's walk
	check "$w: untagged commits in the order of git rev-list --all" \
		diff <(grep -vxFf "$T/tagged" "$T/pack-commits") \
		<(git -C "$P" rev-list --all | grep -vxFf "$T/tagged")
	# from the first tagged commit on, all of them in a row
	check "$w: tagged commits are written together, early" \
		[ "$(grep -nxFf "$T/tagged" "$T/pack-commits" | cut -d: -f1 |
			awk 'NR > 1 && $1 != prev + 1 { gap = 1 } { prev = $1 } END { print gap + 0 }')" = 0 ]
	check "$w: the history has tagged commits" [ "$(wc -l <"$T/tagged")" -ge 8 ]

	# -b: git reads pack and bitmap
	check "$w: git verify-pack" git -C "$P" verify-pack "$(ls "$P"/objects/pack/*.idx)"
	check "$w: git fsck --strict" fsck_ok "$P"
	out=$(git -C "$P" rev-list --test-bitmap main 2>&1 || true)
	case $out in *"OK!"*) ok "$w: git rev-list --test-bitmap main" ;;
	*) not_ok "$w: git rev-list --test-bitmap main"; echo "$out" | tail -2 ;; esac
	check "$w: git's bitmap count equals the walk's" \
		[ "$(git -C "$P" rev-list --use-bitmap-index --count --all)" = \
		"$(git -C "$P" rev-list --count --all)" ]
	check "$w: and with objects" \
		[ "$(git -C "$P" rev-list --use-bitmap-index --count --objects --all)" = \
		"$(git -C "$P" rev-list --count --objects --all)" ]
done

# The walk skips the lookups of tree entries unchanged since the tree last
# walked at the same path; trees that change in every way must still list
# every object: a file becoming a directory of the same name and back, a
# mode change of the same blob, the same blob under other names, entries
# removed and added again, a name that is a prefix of another.
tricky_history() {
	local dir=$1 algo=$2 i t
	git init -q --bare --object-format="$algo" "$dir"
	{
		t=1700000000
		for i in $(seq 1 40); do
			t=$((t + 60))
			echo "commit refs/heads/main"
			echo "committer T <t@example.com> $t +0000"
			echo "data <<EOM"
			echo "c $i"
			echo "EOM"
			case $((i % 5)) in
			0) echo "D a"; echo "M 644 inline a/x"; echo "data <<EOF"; echo "x $i"; echo "EOF" ;;
			1) echo "D a"; echo "M 644 inline a"; echo "data <<EOF"; echo "file $((i % 3))"; echo "EOF" ;;
			2) echo "M 755 inline a.b"; echo "data <<EOF"; echo "same"; echo "EOF" ;;
			3) echo "M 644 inline a.b"; echo "data <<EOF"; echo "same"; echo "EOF"
			   echo "M 644 inline ab$i"; echo "data <<EOF"; echo "same"; echo "EOF" ;;
			4) echo "D ab$((i - 1))"; echo "M 644 inline a-$((i % 2))/deep/f"; echo "data <<EOF"
			   echo "deep $i"; echo "EOF" ;;
			esac
			echo
			if [ $((i % 7)) = 0 ]; then
				echo "reset refs/heads/b$i"
				echo "from refs/heads/main"
				echo
			fi
		done
	} | git -C "$dir" fast-import --quiet
}

for algo in sha1 sha256; do
	X=$T/tricky-$algo.git
	tricky_history "$X" "$algo"
	check "$algo tricky trees: rev-list --objects --all lists git's objects and paths" \
		diff <("$PACKWIRE" -C "$X" rev-list --objects --all | sort) \
		<(git -C "$X" rev-list --objects --all | sort)
	check "$algo tricky trees: main~5..main too" \
		diff <("$PACKWIRE" -C "$X" rev-list --objects main~5..main | sort) \
		<(git -C "$X" rev-list --objects main~5..main | sort)
	same_pack_as_git "$X" "$algo tricky trees"
done

finish
