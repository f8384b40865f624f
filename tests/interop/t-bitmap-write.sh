#!/bin/bash
# Writing reachability bitmaps: packwire repack -a -d -b and pack-objects
# --write-bitmap-index write a .bitmap that stock git accepts (rev-list
# --test-bitmap on every branch tip, bitmap counts equal to the walk's), with
# the same objects as git repack -adb; packwire upload-pack serves a clone
# from it; the spacing and XOR compression are exercised on a history of a
# few hundred commits with merges; .keep packs are respected; a repack killed
# with SIGKILL at any moment leaves a repository that fscks with every object.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

# bitmap_ok DIR WHAT: git accepts the bitmap of DIR for every branch tip, and
# a bitmap count of all objects equals the walk's
bitmap_ok() {
	local dir=$1 what=$2 tip out good=1
	for tip in $(git -C "$dir" for-each-ref --format='%(objectname)' refs/heads); do
		if ! out=$(git -C "$dir" rev-list --test-bitmap "$tip" 2>&1); then
			good=0
			echo "$out" | tail -3
			continue
		fi
		case $out in *"OK!"*) ;; *) good=0 ;; esac
	done
	if [ $good = 1 ]; then ok "$what: git rev-list --test-bitmap accepts every branch tip"; else
		not_ok "$what: git rev-list --test-bitmap accepts every branch tip"; fi
	check "$what: bitmap count of --objects --all equals the walk's" \
		[ "$(git -C "$dir" rev-list --use-bitmap-index --count --objects --all)" = \
		"$(git -C "$dir" rev-list --count --objects --all)" ]
}

one_bitmapped_pack() {
	[ "$(ls "$1"/objects/pack/*.pack | wc -l)" = 1 ] &&
		[ "$(ls "$1"/objects/pack/*.bitmap | wc -l)" = 1 ]
}

# fast_history DIR ALGO N: a bare repository with N commits on main, a side
# branch merged every 25 commits, tags, and files that change a little each
# time (deltas), made quickly with fast-import.
fast_history() {
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
			echo "commit $i"
			echo "EOM"
			[ "$i" -gt 1 ] && echo "from :$((i - 1))"
			if [ $((i % 25)) = 0 ] && [ "$i" -gt 25 ]; then echo "merge :$((100000 + i - 25))"; fi
			echo "M 644 inline dir$((i % 7))/file.txt"
			echo "data <<EOF"
			seq 1 $((50 + i % 13))
			echo "changed at $i"
			echo "EOF"
			echo "M 644 inline top.txt"
			echo "data <<EOF"
			echo "top $i"
			echo "EOF"
			echo
			if [ $((i % 25)) = 0 ]; then
				echo "commit refs/heads/side"
				echo "mark :$((100000 + i))"
				echo "committer T <t@example.com> $((t + 30)) +0000"
				echo "data 4"
				echo "side"
				echo "from :$i"
				echo "M 644 inline side$i.txt"
				echo "data 2"
				echo "s"
				echo
				echo "reset refs/tags/t$i"
				echo "from :$i"
				echo
			fi
		done
	} | git -C "$dir" fast-import --quiet
	git -C "$dir" tag -a -m annotated v1 main~10
}

for algo in sha1 sha256; do
	w=$algo

	# --- repack on a small repository (merges, tags, deltas, loose objects)
	make_repo "$T/src-$algo" "$algo"
	git clone -q --mirror "$T/src-$algo" "$T/pw-$algo.git"
	git clone -q --mirror "$T/src-$algo" "$T/git-$algo.git"
	P=$T/pw-$algo.git G=$T/git-$algo.git
	# a loose object and an old pack to be replaced
	echo extra | git -C "$P" hash-object -w --stdin >/dev/null
	echo extra | git -C "$G" hash-object -w --stdin >/dev/null
	before=$(all_objects "$P" | wc -l)
	if "$PACKWIRE" -C "$P" repack -a -d -b -q 2>"$T/err"; then ok "$w: packwire repack -a -d -b"; else
		not_ok "$w: packwire repack -a -d -b"
		cat "$T/err"
	fi
	check "$w: repack -q printed nothing" [ ! -s "$T/err" ]
	check "$w: one pack with a bitmap" one_bitmapped_pack "$P"
	check "$w: repack: fsck --strict" fsck_ok "$P"
	git -C "$G" repack -a -d -b -q
	check "$w: same objects as git repack -adb" diff <(all_objects "$P") <(all_objects "$G")
	check "$w: no object lost" [ "$(all_objects "$P" | wc -l)" = "$before" ]
	# as git repack -a -d: the unreachable loose object stays loose, the rest goes
	check "$w: packed loose objects deleted" \
		[ "$(git -C "$P" count-objects | cut -d' ' -f1)" = 1 ]
	bitmap_ok "$P" "$w repack"
	check "$w: git verify-pack accepts the pack" git -C "$P" verify-pack "$(ls "$P"/objects/pack/*.idx)"

	# --- packwire upload-pack serves a clone from packwire's bitmap
	for v in 0 2; do
		git -c protocol.version=$v clone --bare --progress --upload-pack="$UP" "file://$P" \
			"$T/clone-$algo-$v.git" 2>"$T/err" || { not_ok "$w v$v: clone"; cat "$T/err"; }
		check "$w v$v: clone served from packwire's bitmap" grep -q "pack-reused [1-9]" "$T/err"
		check "$w v$v: clone fsck --strict" fsck_ok "$T/clone-$algo-$v.git"
		check "$w v$v: clone has the same refs" same_refs "$T/clone-$algo-$v.git" "$P"
	done
	# and stock git's upload-pack uses it too
	GIT_TRACE2_EVENT=$T/trace-$algo git clone -q --bare --no-local "$P" "$T/gclone-$algo.git"
	check "$w: git's own clone fscks" fsck_ok "$T/gclone-$algo.git"

	# --- bundle create on the bitmap walk: whole and incremental
	"$PACKWIRE" -C "$P" bundle create -q "$T/all-$algo.bundle" --all
	git -C "$P" bundle create -q "$T/all-git-$algo.bundle" --all
	check "$w: bundle --all from the bitmap: git verifies it" \
		git -C "$P" bundle verify -q "$T/all-$algo.bundle"
	check "$w: bundle --all: same heads as git's" diff <(git bundle list-heads "$T/all-$algo.bundle") \
		<(git bundle list-heads "$T/all-git-$algo.bundle")
	git clone -q --bare "$T/all-$algo.bundle" "$T/from-bundle-$algo.git"
	check "$w: clone of the bundle fscks" fsck_ok "$T/from-bundle-$algo.git"
	check "$w: clone of the bundle has every object" \
		diff <(git -C "$T/from-bundle-$algo.git" rev-list --objects --all | sort) \
		<(git -C "$P" rev-list --objects --all | sort)
	"$PACKWIRE" -C "$P" bundle create -q "$T/inc-$algo.bundle" main~2..main
	check "$w: incremental bundle from the bitmap: git verifies it" \
		git -C "$P" bundle verify -q "$T/inc-$algo.bundle"
	git clone -q --bare --no-local "$P" "$T/old-$algo.git"
	git -C "$T/old-$algo.git" update-ref refs/heads/main main~2
	git -C "$T/old-$algo.git" bundle unbundle "$T/inc-$algo.bundle" >/dev/null 2>&1
	check "$w: incremental bundle unbundles onto the old history" \
		git -C "$T/old-$algo.git" cat-file -e "$(git -C "$P" rev-parse main)^{tree}"

	# --- pack-objects --write-bitmap-index (as repack runs it)
	git clone -q --mirror "$T/src-$algo" "$T/po-$algo.git"
	mkdir -p "$T/po-out-$algo"
	hex=$("$PACKWIRE" -C "$T/po-$algo.git" pack-objects --all --write-bitmap-index -q \
		"$T/po-$algo.git/objects/pack/pack" </dev/null)
	check "$w: pack-objects wrote pack-<hex>.bitmap" \
		[ -f "$T/po-$algo.git/objects/pack/pack-$hex.bitmap" ]
	bitmap_ok "$T/po-$algo.git" "$w pack-objects"
	# a pack that is not closed under reachability gets no bitmap, and says so
	git -C "$T/po-$algo.git" rev-parse HEAD >"$T/one"
	"$PACKWIRE" -C "$T/po-$algo.git" pack-objects --write-bitmap-index "$T/po-out-$algo/x" \
		<"$T/one" >/dev/null 2>"$T/err" || true
	check "$w: open pack: no bitmap" [ -z "$(ls "$T/po-out-$algo"/*.bitmap 2>/dev/null)" ]
	check "$w: open pack: warned" grep -q "disabling bitmap writing" "$T/err"

	# --- a longer history: spacing, XOR compression, merges, many tips
	fast_history "$T/long-$algo.git" "$algo" 400
	cp -a "$T/long-$algo.git" "$T/long-git-$algo.git"
	"$PACKWIRE" -C "$T/long-$algo.git" repack -a -d -b -q
	check "$w long: one pack with a bitmap" one_bitmapped_pack "$T/long-$algo.git"
	check "$w long: fsck --strict" fsck_ok "$T/long-$algo.git"
	bitmap_ok "$T/long-$algo.git" "$w long"
	for c in main~1 main~150 main~399 side~3; do
		out=$(git -C "$T/long-$algo.git" rev-list --test-bitmap "$c" 2>&1 || true)
		case $out in
		*"OK!"*) ok "$w long: $c bitmapped and right" ;;
		*"doesn't have an indexed bitmap"*) ok "$w long: $c not selected (spaced)" ;;
		*) not_ok "$w long: test-bitmap $c" ;;
		esac
	done
	git -C "$T/long-git-$algo.git" repack -a -d -b -q
	check "$w long: same objects as git repack -adb" \
		diff <(all_objects "$T/long-$algo.git") <(all_objects "$T/long-git-$algo.git")
	pwsz=$(stat -c %s "$T/long-$algo.git"/objects/pack/*.bitmap)
	gsz=$(stat -c %s "$T/long-git-$algo.git"/objects/pack/*.bitmap)
	echo "# $w long: bitmap $pwsz bytes (git's $gsz)"
	check "$w long: bitmap no more than twice git's size" [ "$pwsz" -le $((gsz * 2)) ]
	git clone -q --bare --upload-pack="$UP" "file://$T/long-$algo.git" "$T/long-clone-$algo.git"
	check "$w long: clone from packwire's bitmap fscks" fsck_ok "$T/long-clone-$algo.git"

	# --- objects only a reflog reaches stay (a non-bare repository after a reset)
	R=$T/reflog-$algo
	git clone -q "$T/src-$algo" "$R"
	git -C "$R" commit -q --allow-empty -m "to be reset away"
	gone=$(git -C "$R" rev-parse HEAD)
	git -C "$R" reset -q --hard HEAD~1
	git -C "$R" repack -a -d -q
	"$PACKWIRE" -C "$R" repack -a -d -q
	check "$w reflog: the reset-away commit is still there" git -C "$R" cat-file -e "$gone"
	check "$w reflog: fsck --strict (reflogs included)" fsck_ok "$R"

	# --- .keep packs stay, and their objects are not copied without -b
	K=$T/keep-$algo.git
	git clone -q --mirror "$T/src-$algo" "$K"
	kp=$(ls "$K"/objects/pack/*.pack)
	touch "${kp%.pack}.keep"
	git -C "$T/src-$algo" commit -q --allow-empty -m "after keep"
	git -C "$K" fetch -q "$T/src-$algo" '+refs/heads/*:refs/heads/*'
	# a bare repository gets a bitmap by default when it can, quietly when not
	"$PACKWIRE" -C "$K" repack -a -d -q 2>"$T/err"
	check "$w keep: no bitmap, no warning (not asked for)" [ ! -s "$T/err" ]
	check "$w keep: no bitmap written" [ -z "$(ls "$K"/objects/pack/*.bitmap 2>/dev/null)" ]
	check "$w keep: kept pack still there" [ -f "$kp" -a -f "${kp%.pack}.idx" ]
	check "$w keep: fsck" fsck_ok "$K"
	n_new=$(git -C "$K" show-index <"$(ls "$K"/objects/pack/*.idx | grep -v "${kp%.pack}")" | wc -l)
	check "$w keep: new pack holds only what the kept one lacks" [ "$n_new" -lt 10 ]

	# --- kill -9 at many moments of a repack: the repository stays whole.
	# Loose objects make the repack long enough (seconds) to be hit mid-way.
	KS=$T/kill-src-$algo.git
	fast_history "$KS" "$algo" 400
	mkdir "$T/kp-$algo"
	mv "$KS"/objects/pack/* "$T/kp-$algo/"
	git -C "$KS" unpack-objects -q <"$(ls "$T/kp-$algo"/*.pack)"
	want=$(git -C "$KS" rev-list --objects --all | wc -l)
	bad=0 hit=0
	for delay in 0.05 0.15 0.3 0.5 0.8; do
		rm -rf "$T/kill-$algo.git"
		cp -a "$KS" "$T/kill-$algo.git"
		"$PACKWIRE" -C "$T/kill-$algo.git" repack -a -d -b -q --window=50 &
		pid=$!
		sleep "$delay"
		kill -9 "$pid" 2>/dev/null && hit=$((hit + 1))
		wait "$pid" 2>/dev/null || true
		if ! fsck_ok "$T/kill-$algo.git" ||
			[ "$(git -C "$T/kill-$algo.git" rev-list --objects --all | wc -l)" != "$want" ]; then
			bad=1
			echo "# broken after a kill at ${delay}s"
		fi
	done
	echo "# $w: $hit of 5 repacks were killed before they ended"
	check "$w: some repacks were killed mid-way" [ $hit -gt 0 ]
	check "$w: repack killed at any moment leaves a whole repository" [ $bad = 0 ]
	"$PACKWIRE" -C "$T/kill-$algo.git" repack -a -d -q
	check "$w: repack after the kills (bare: a bitmap by default)" \
		one_bitmapped_pack "$T/kill-$algo.git"
	bitmap_ok "$T/kill-$algo.git" "$w after kills"
done

finish
