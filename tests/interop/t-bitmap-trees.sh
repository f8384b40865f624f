#!/bin/bash
# The bitmap writer walks each tree against the previous version of it
# (entries the two share are skipped, a subtree changed under the same name
# is walked against the old one). Its shortcuts must not lose an object: on
# a history whose trees change in the ways that could fool them (a name
# that is a file, then a tree sorted after "name.c"; a tree removed and put
# back as it was; a mode change of the same blob; a submodule commit added,
# moved and removed; long trees changed at the start, the middle and the
# end; a side branch merged, whose commits are walked between a commit and
# its first parent), every commit's bitmap (fewer than 100 commits: all of
# them get one) is the walk's for stock git, and repack -a -d -b packs the
# objects git's does. Both algorithms.
. "$(dirname "$0")/lib.sh"

# tricky_history DIR ALGO: the history above, made with fast-import
tricky_history() {
	local dir=$1 algo=$2 i t sub
	git init -q --bare --object-format="$algo" "$dir"
	sub=$(printf '%0*d' "$([ "$algo" = sha1 ] && echo 40 || echo 64)" 7 | tr 0 a)
	{
		t=1700000000
		for i in $(seq 1 60); do
			t=$((t + 60))
			echo "commit refs/heads/main"
			echo "mark :$i"
			echo "committer T <t@example.com> $t +0000"
			echo "data <<EOM"
			echo "commit $i"
			echo "EOM"
			[ "$i" -gt 1 ] && echo "from :$((i - 1))"
			[ "$i" = 30 ] && echo "merge :1020"
			if [ "$i" = 1 ]; then # a long tree: 300 files, and foo, foo.c
				for f in $(seq 100 399); do
					echo "M 644 inline many/f$f"
					echo "data <<EOF"
					echo "file $f"
					echo "EOF"
				done
				echo "M 644 inline foo"
				echo "data 4"
				echo "foo"
				echo "M 644 inline foo.c"
				echo "data 6"
				echo "foo.c"
			fi
			# changes at the start, the middle and the end of the long tree
			echo "M 644 inline many/f$((100 + (i * 37) % 300))"
			echo "data <<EOF"
			echo "changed at $i"
			echo "EOF"
			case $i in
			5) echo "D foo" # foo becomes a tree, sorted after foo.c
				echo "M 644 inline foo/inner"
				echo "data 6"
				echo "inner" ;;
			8) echo "D many/f100"
				echo "D many/f399"
				echo "M 644 inline many/a-first"
				echo "data 2"
				echo "a" ;;
			10) echo "D foo" ;; # the tree goes ...
			12) echo "M 644 inline foo/inner" # ... and comes back as it was
				echo "data 6"
				echo "inner" ;;
			14) echo "M 755 inline foo.c" # same blob, another mode
				echo "data 6"
				echo "foo.c" ;;
			16) echo "M 160000 $sub mod" ;; # a submodule commit
			18) echo "R mod mod2" ;;
			20) echo "D mod2" ;;
			22) echo "M 644 inline many/zz-last"
				echo "data 2"
				echo "z" ;;
			esac
			echo
			if [ "$i" = 10 ]; then
				for s in $(seq 1 20); do # a side branch, merged at 30
					t=$((t + 1))
					echo "commit refs/heads/side"
					echo "mark :$((1000 + s))"
					echo "committer T <t@example.com> $t +0000"
					echo "data 5"
					echo "side"
					[ "$s" = 1 ] && echo "from :$i"
					[ "$s" -gt 1 ] && echo "from :$((1000 + s - 1))"
					echo "M 644 inline many/f$((100 + s * 11))"
					echo "data <<EOF"
					echo "side $s"
					echo "EOF"
					echo
				done
			fi
		done
	} | git -C "$dir" fast-import --quiet
}

for algo in sha1 sha256; do
	tricky_history "$T/src-$algo.git" "$algo"
	cp -a "$T/src-$algo.git" "$T/pw-$algo.git"
	cp -a "$T/src-$algo.git" "$T/git-$algo.git"
	"$PACKWIRE" -C "$T/pw-$algo.git" repack -a -d -b -q
	git -C "$T/git-$algo.git" repack -a -d -b -q
	check "$algo: repack -a -d -b writes a bitmap" \
		[ "$(ls "$T/pw-$algo.git"/objects/pack/*.bitmap | wc -l)" = 1 ]
	check "$algo: git fsck accepts the repacked repository" fsck_ok "$T/pw-$algo.git"
	check "$algo: the pack holds the objects git's does" \
		[ "$(git -C "$T/pw-$algo.git" rev-list --objects --all | sort | sha1sum)" = \
		"$(git -C "$T/git-$algo.git" rev-list --objects --all | sort | sha1sum)" ]
	n=0 bad=0
	for c in $(git -C "$T/pw-$algo.git" rev-list --all); do
		n=$((n + 1))
		out=$(git -C "$T/pw-$algo.git" rev-list --test-bitmap "$c" 2>&1) || bad=$((bad + 1))
		case $out in *"OK!"*) ;; *)
			bad=$((bad + 1))
			echo "# $c: $(echo "$out" | tail -1)" ;;
		esac
	done
	echo "# $algo: $n commits tested"
	check "$algo: git rev-list --test-bitmap accepts every commit's bitmap" [ "$bad" = 0 ]
	check "$algo: the bitmap of every commit was tested (80 commits)" [ "$n" = 80 ]
	for tip in main side; do
		check "$algo: bitmap count of $tip's objects equals the walk's" \
			[ "$(git -C "$T/pw-$algo.git" rev-list --use-bitmap-index --count --objects "$tip")" = \
			"$(git -C "$T/pw-$algo.git" rev-list --count --objects "$tip")" ]
	done
done

finish
