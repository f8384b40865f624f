# packwire convert --to=ALGO SRC DST: a repository migrated into the other
# algorithm holds exactly the history stock git writes in that algorithm
# (fast-export | fast-import): same ids for every ref and every object,
# fsck --strict clean, one pack with deltas; HEAD (symbolic or detached) and
# reflogs follow; the old ids still resolve through the compat map; both
# directions and back again; failures leave nothing behind. On real
# history (interop/t-compat-convert/real, with ../shared/data): the v1.5.0
# sha256 copy converted to sha1 is the sha1 copy.
. "$(dirname "$0")/lib.sh"

objects_of() { git --git-dir="$1" rev-list --objects --all | sort; }
refs_of() { git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' | sort; }
git_dir() { if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi; }

# git_view DST: a copy of DST that stock git 2.39 opens (it refuses the
# compatObjectFormat extension), in $T/view
git_view() {
	rm -rf "$T/view"
	cp -R "$(git_dir "$1")" "$T/view"
	git config --file "$T/view/config" --unset extensions.compatObjectFormat
}

# same_history DESC DST COPY: DST (converted) and COPY (stock git) agree
same_history() {
	local desc=$1 dst=$2 copy=$3
	git_view "$dst"
	refs_of "$T/view" >"$T/a.refs"
	refs_of "$copy" >"$T/b.refs"
	same_file "$desc: refs" "$T/b.refs" "$T/a.refs"
	objects_of "$T/view" >"$T/a.objs"
	objects_of "$copy" >"$T/b.objs"
	same_file "$desc: rev-list --objects --all" "$T/b.objs" "$T/a.objs"
	check "$desc: fsck --strict" git --git-dir="$T/view" fsck --strict --no-progress
}

# copy_history SRC DST ALGO: DST gets SRC's history written by stock git in ALGO
copy_history() {
	rm -rf "$2"
	git init -q --bare --object-format="$3" "$2"
	git --git-dir="$(git_dir "$1")" fast-export --all --signed-tags=strip |
		git -C "$2" fast-import --quiet
}

# ---- real history: interop/t-compat-convert/real ---------------------------
if real_part "convert of git v1.5.0"; then
	S256=$(data_repo small sha256)
	S1=$(data_repo small sha1)
	check "v1.5.0: convert sha256 -> sha1" "$PACKWIRE" convert -q --to=sha1 "$S256" "$T/real1"
	same_history "v1.5.0 sha256 -> sha1" "$T/real1" "$S1"
	finish
fi

for pair in "sha1 sha256" "sha256 sha1"; do
	set -- $pair
	from=$1 to=$2
	S=$T/src-$from
	make_repo "$S" "$from"
	git -C "$S" tag -d v0.2-annotated >/dev/null # fast-export cannot carry a tag of a tag
	git -C "$S" checkout -q --detach HEAD~1      # a detached HEAD
	copy_history "$S" "$T/copy-$to" "$to"
	D=$T/dst-$to
	check "$from -> $to: convert" "$PACKWIRE" convert -q --to="$to" "$S" "$D"
	same_history "$from -> $to" "$D" "$T/copy-$to"
	check "$from -> $to: the result is $to" \
		[ "$(git --git-dir="$T/view" rev-parse --show-object-format)" = "$to" ]
	check "$from -> $to: compatObjectFormat names $from" \
		[ "$(git config --file "$D/.git/config" extensions.compatObjectFormat)" = "$from" ]
	check "$from -> $to: the objects are in one pack" \
		[ "$(ls "$D/.git/objects/pack/"*.pack | wc -l)" -eq 1 ] && [ -z "$(ls "$D/.git/objects" | grep -E '^[0-9a-f]{2}$')" ]
	git --git-dir="$T/view" verify-pack -v "$T/view"/objects/pack/*.idx >"$T/vp"
	check "$from -> $to: the pack has deltas" grep -qE ' [0-9]+ [0-9]+ [0-9]+ [0-9]+ [0-9a-f]{40,64}$' "$T/vp"
	# HEAD: detached at the translation of the source's HEAD
	want_head=$(git --git-dir="$T/copy-$to" rev-parse main~1)
	check "$from -> $to: detached HEAD translated" [ "$(cat "$D/.git/HEAD")" = "$want_head" ]
	# the work tree: HEAD checked out, index and files agree
	check "$from -> $to: work tree checked out" [ "$(cat "$D/big.txt")" = "$(git -C "$S" show HEAD:big.txt)" ]
	git --git-dir="$T/view" --work-tree="$D" status --porcelain >"$T/status"
	check "$from -> $to: status clean" [ ! -s "$T/status" ]
	# the reflog of main: the same entries with the new ids
	git -C "$S" log -g --format='%gs' main >"$T/a.log"
	git --git-dir="$T/view" log -g --format='%gs' main >"$T/b.log"
	same_file "$from -> $to: reflog of main" "$T/a.log" "$T/b.log"
	check "$from -> $to: reflog ids translated" \
		[ "$(tail -1 "$D/.git/logs/refs/heads/main" | cut -d' ' -f2)" = "$(git --git-dir="$T/view" rev-parse main)" ]
	# the old ids still resolve in the new repository
	for rev in main v0.1 v0.1^{} main^{tree}; do
		old=$(git -C "$S" rev-parse "$rev")
		new=$(git --git-dir="$T/copy-$to" rev-parse "$rev")
		check "$from -> $to: rev-parse --output-object-format=$from $rev" \
			[ "$("$PACKWIRE" -C "$D" rev-parse --output-object-format="$from" "$new")" = "$old" ]
		check "$from -> $to: the old id $rev resolves" \
			[ "$("$PACKWIRE" -C "$D" rev-parse "$old")" = "$new" ]
	done
	"$PACKWIRE" -C "$D" cat-file -p "$(git -C "$S" rev-parse main)" >"$T/cat.a"
	git -C "$S" cat-file -p main >"$T/cat.b"
	same_file "$from -> $to: cat-file -p <old id> shows the old commit" "$T/cat.b" "$T/cat.a"

	# and back: the original ids again
	B=$T/back-$from
	check "$to -> $from: convert back" "$PACKWIRE" convert -q --to="$from" "$D" "$B"
	same_history "$to -> $from (round trip)" "$B" "$(git_dir "$S")"
done

# a symbolic HEAD and a bare source
git clone -q --bare "$T/src-sha1" "$T/bare1"
git -C "$T/bare1" symbolic-ref HEAD refs/heads/topic
check "bare source: convert" "$PACKWIRE" convert -q --to=sha256 "$T/bare1" "$T/bare256"
check "bare source: a bare result" [ -f "$T/bare256/HEAD" -a ! -e "$T/bare256/.git" ]
check "bare source: symbolic HEAD kept" [ "$(cat "$T/bare256/HEAD")" = "ref: refs/heads/topic" ]

# ---- failures leave nothing ----------------------------------------------
mkdir -p "$T/full" && echo x >"$T/full/file"
check_fails "a destination that is not empty is refused" \
	"$PACKWIRE" convert -q --to=sha256 "$T/src-sha1" "$T/full" 2>"$T/full.err"
contains "the error says so" "$T/full.err" "already exists and is not an empty directory"
check "the destination is untouched" [ "$(ls "$T/full")" = file ]
check_fails "the same algorithm is refused" \
	"$PACKWIRE" convert -q --to=sha1 "$T/src-sha1" "$T/same" 2>"$T/same.err"
contains "the error names it" "$T/same.err" "already a sha1 repository"
check "nothing created" [ ! -e "$T/same" ]
check_fails "an unknown algorithm is refused" "$PACKWIRE" convert -q --to=md5 "$T/src-sha1" "$T/md5"

cp -R "$T/src-sha256" "$T/g256"
(
	cd "$T/g256"
	sub=$(printf 'a submodule commit' | sha256sum | cut -c1-64)
	git update-index --add --cacheinfo "160000,$sub,the-submodule"
	git commit -q -m "a gitlink"
)
check_fails "a gitlink without a known id fails" \
	"$PACKWIRE" convert -q --to=sha1 "$T/g256" "$T/g1" 2>"$T/gitlink.err"
contains "the error names the gitlink's path" "$T/gitlink.err" "the-submodule"
check "nothing left behind" [ ! -e "$T/g1" ]
mkdir "$T/g1empty"
check_fails "into an empty directory: fails the same" \
	"$PACKWIRE" convert -q --to=sha1 "$T/g256" "$T/g1empty"
check "the empty directory stays, empty" [ -d "$T/g1empty" -a -z "$(ls -A "$T/g1empty")" ]

# a shallow repository: refused, nothing written
git clone -q --depth=1 "file://$T/src-sha1" "$T/shallow1"
check_fails "a shallow repository is refused" \
	"$PACKWIRE" convert -q --to=sha256 "$T/shallow1" "$T/shallow256" 2>"$T/shallow.err"
contains "the error says why" "$T/shallow.err" "is a shallow repository"
check "nothing written (shallow)" [ ! -e "$T/shallow256" ]

# a missing object
cp -R "$T/src-sha1" "$T/broken1"
blob=$(git -C "$T/broken1" rev-parse main:loose.txt)
rm -f "$T/broken1/.git/objects/${blob:0:2}/${blob:2}"
check_fails "a missing object fails" "$PACKWIRE" convert -q --to=sha256 "$T/broken1" "$T/broken256"
check "nothing left behind (missing object)" [ ! -e "$T/broken256" ]

# killed in the middle (SIGKILL in the converting process, a test hook):
# what it wrote is removed by the process that waits for it
for phase in "Writing objects" "Converting refs"; do
	rm -rf "$T/killed"
	st=0
	PACKWIRE_TEST_CONVERT_KILL=$phase "$PACKWIRE" convert -q --to=sha256 "$T/src-sha1" "$T/killed" 2>/dev/null || st=$?
	check "killed at '$phase': exit 137" [ "$st" -eq 137 ]
	check "killed at '$phase': nothing left behind" [ ! -e "$T/killed" ]
done
mkdir "$T/killed"
PACKWIRE_TEST_CONVERT_KILL="Converting refs" "$PACKWIRE" convert -q --to=sha256 "$T/src-sha1" "$T/killed" 2>/dev/null || true
check "killed, into an empty directory: it stays, empty" [ -d "$T/killed" -a -z "$(ls -A "$T/killed")" ]

# progress only when asked for (stderr is not a terminal here)
"$PACKWIRE" convert --to=sha256 "$T/src-sha1" "$T/p1" 2>"$T/p1.err"
check "no progress when stderr is not a terminal" sh -c '! grep -q "Writing objects" "$1"' _ "$T/p1.err"
"$PACKWIRE" convert --progress --to=sha256 "$T/src-sha1" "$T/p2" 2>"$T/p2.err"
contains "--progress shows it" "$T/p2.err" "Writing objects"

finish
