# packwire compat build: the compat ids of every object equal the ids of the
# same history written by stock git in the other algorithm (fast-export |
# fast-import, and objects written by hand in both), in both directions; the
# maps survive a build killed midway; a gitlink without a known id is refused.
# The same on git v1.5.0: interop/t-compat/real (with ../shared/data).
. "$(dirname "$0")/lib.sh"

# objects_of REPO: every object reachable from any ref, in rev-list order
objects_of() { git -C "$1" rev-list --objects --all | cut -d' ' -f1; }
refs_of() { git -C "$1" for-each-ref --format='%(objectname)'; }

# same_translation DESC STORAGE_REPO OTHER_REPO: compat build in a copy of
# STORAGE_REPO maps each of its objects and refs to OTHER_REPO's, and back
same_translation() {
	local desc=$1 src=$2 other=$3
	objects_of "$src" >"$T/a.objs"
	objects_of "$other" >"$T/b.objs"
	refs_of "$src" >"$T/a.refs"
	refs_of "$other" >"$T/b.refs"
	(cd "$src" && "$PACKWIRE" compat lookup --stdin) <"$T/a.objs" >"$T/a2b.objs"
	same_file "$desc: every object's compat id" "$T/b.objs" "$T/a2b.objs"
	(cd "$src" && "$PACKWIRE" compat lookup --stdin) <"$T/a.refs" >"$T/a2b.refs"
	same_file "$desc: every ref's compat id" "$T/b.refs" "$T/a2b.refs"
	(cd "$src" && "$PACKWIRE" compat lookup --reverse --stdin) <"$T/b.objs" >"$T/b2a.objs"
	same_file "$desc: compat -> storage" "$T/a.objs" "$T/b2a.objs"
}

# add_by_hand REPO: objects fast-export cannot carry, written with the
# repository's own ids: a commit with an extra (multi-line) header, a
# mergetag commit, a tag of a tag of a tree.
add_by_hand() {
	local r=$1 tree head prev tag tag2 c
	tree=$(git -C "$r" rev-parse 'main^{tree}')
	head=$(git -C "$r" rev-parse main)
	prev=$(git -C "$r" rev-parse main~1)
	c=$(printf 'tree %s\nparent %s\nauthor A <a@x> 1700000000 +0000\ncommitter C <c@x> 1700000001 +0000\nx-extra one\n two\nencoding ISO-8859-1\n\nextra header\n' \
		"$tree" "$head" | git -C "$r" hash-object -t commit -w --stdin)
	git -C "$r" update-ref refs/heads/extra "$c"
	tag=$(printf 'object %s\ntype commit\ntag side\ntagger T <t@x> 1700000002 +0000\n\nmerged tag\n\nwith a blank line\n' \
		"$prev" | git -C "$r" hash-object -t tag -w --stdin)
	c=$(printf 'tree %s\nparent %s\nparent %s\nauthor A <a@x> 1700000003 +0000\ncommitter C <c@x> 1700000003 +0000\nmergetag object %s\n type commit\n tag side\n tagger T <t@x> 1700000002 +0000\n \n merged tag\n \n with a blank line\n\nMerge tag side\n' \
		"$tree" "$head" "$prev" "$prev" | git -C "$r" hash-object -t commit -w --stdin)
	git -C "$r" update-ref refs/heads/mergetag "$c"
	git -C "$r" update-ref refs/tags/side "$tag"
	tag=$(printf 'object %s\ntype tree\ntag treetag\ntagger T <t@x> 1700000004 +0000\n\na tree\n' \
		"$tree" | git -C "$r" hash-object -t tag -w --stdin)
	tag2=$(printf 'object %s\ntype tag\ntag tagtag\ntagger T <t@x> 1700000005 +0000\n\na tag of a tag\n' \
		"$tag" | git -C "$r" hash-object -t tag -w --stdin)
	git -C "$r" update-ref refs/tags/tagtag "$tag2"
}

# ---- real history: interop/t-compat/real -------------------------------
if real_part "compat build of git v1.5.0"; then
	for pair in "sha256 sha1" "sha1 sha256"; do
		set -- $pair
		src=$(data_repo small "$1")
		dst=$(data_repo small "$2")
		rm -rf "$T/real-$1"
		cp -R "$src" "$T/real-$1"
		check "v1.5.0 $1: compat build" "$PACKWIRE" -C "$T/real-$1" compat build -q
		same_translation "v1.5.0 $1 -> $2" "$T/real-$1" "$dst"
	done
	finish
fi

# ---- a history built by the test, in both algorithms -----------------
make_repo "$T/s256" sha256
(
	cd "$T/s256"
	mkdir many && for i in $(seq 1 300); do echo "$i" >"many/f$i"; done
	git add many && git commit -q -m "a tree with many entries"
	git tag -d v0.2-annotated >/dev/null # fast-export cannot carry a tag of a tag: by hand below
)
git init -q --bare --object-format=sha1 "$T/s1"
git -C "$T/s256" fast-export --all --signed-tags=strip | git -C "$T/s1" fast-import --quiet
add_by_hand "$T/s256"
add_by_hand "$T/s1"
check "fast-import copy is complete" [ "$(objects_of "$T/s256" | wc -l)" = "$(objects_of "$T/s1" | wc -l)" ]

cp -R "$T/s256" "$T/c256"
check "compat build sha256 -> sha1" "$PACKWIRE" -C "$T/c256" compat build -q
same_translation "sha256 storage" "$T/c256" "$T/s1"
check "loose-object-idx written" [ -s "$T/c256/.git/objects/loose-object-idx" ]
check "loose-object-idx header" [ "$(head -1 "$T/c256/.git/objects/loose-object-idx")" = "# loose-object-idx" ]
n=$(grep -cE '^[0-9a-f]{64} [0-9a-f]{40}$' "$T/c256/.git/objects/loose-object-idx")
check "loose-object-idx lines: storage hex, then compat hex" \
	[ "$n" -eq $(($(wc -l <"$T/c256/.git/objects/loose-object-idx") - 1)) -a "$n" -gt 0 ]
check "a side file per pack" [ "$(ls "$T/c256/.git/objects/pack/"*.compat | wc -l)" = \
	"$(ls "$T/c256/.git/objects/pack/"*.idx | wc -l)" ]
check "compat verify" "$PACKWIRE" -C "$T/c256" compat verify
check "a second build translates nothing" "$PACKWIRE" -C "$T/c256" compat build
"$PACKWIRE" -C "$T/c256" compat build 2>"$T/again.err"
contains "second build: 0 translated" "$T/again.err" "(0 translated)"

# ids of the compat algorithm in rev-parse and cat-file
for rev in main 'main^{tree}' v0.1 refs/tags/tagtag mergetag main:a.txt; do
	want=$(git -C "$T/s1" rev-parse "$rev")
	got=$("$PACKWIRE" -C "$T/c256" rev-parse --output-object-format=sha1 \
		"$(git -C "$T/c256" rev-parse "$rev")")
	check "rev-parse --output-object-format=sha1 $rev" [ "$want" = "$got" ]
	check "rev-parse of the sha1 id $rev" [ "$("$PACKWIRE" -C "$T/c256" rev-parse "$want")" = \
		"$(git -C "$T/c256" rev-parse "$rev")" ]
	for opt in -t -s -p; do
		git -C "$T/s1" cat-file $opt "$want" >"$T/want.cat"
		"$PACKWIRE" -C "$T/c256" cat-file $opt "$want" >"$T/got.cat"
		same_file "cat-file $opt of the sha1 id of $rev" "$T/want.cat" "$T/got.cat"
	done
done
check_fails "cat-file of an unmapped sha1 id" "$PACKWIRE" -C "$T/c256" cat-file -t \
	"$(printf nothing | sha1sum | cut -c1-40)"

cp -R "$T/s1" "$T/c1"
check "compat build sha1 -> sha256" "$PACKWIRE" -C "$T/c1" compat build -q
same_translation "sha1 storage" "$T/c1" "$T/s256"

# a pack of the compat algorithm: what a SHA-1 client of the SHA-256
# repository would receive; stock git indexes it and finds the SHA-1 copy
git -C "$T/c256" rev-list --objects --all >"$T/want.list"
check "compat pack-objects" sh -c '"$PACKWIRE" -C "$1" compat pack-objects --stdout <"$2" >"$3"' \
	_ "$T/c256" "$T/want.list" "$T/compat.pack"
git init -q --bare --object-format=sha1 "$T/recv1"
check "git index-pack takes the sha1 pack" sh -c 'git -C "$1" index-pack --stdin <"$2" >/dev/null' \
	_ "$T/recv1" "$T/compat.pack"
git -C "$T/s1" for-each-ref --format='update %(refname) %(objectname)' >"$T/refs.upd"
git -C "$T/recv1" update-ref --stdin <"$T/refs.upd"
check "the sha1 repository made from it passes fsck --strict" fsck_ok "$T/recv1"
objects_of "$T/recv1" >"$T/recv1.objs"
objects_of "$T/s1" >"$T/s1.objs"
same_file "it holds exactly the sha1 copy's objects" "$T/s1.objs" "$T/recv1.objs"

# ---- the extension ----------------------------------------------------
cp -R "$T/s1" "$T/e1"
check "build --object-format=sha256" "$PACKWIRE" -C "$T/e1" compat build -q --object-format=sha256
check "sets extensions.compatObjectFormat" [ "$(git config --file "$T/e1/config" extensions.compatobjectformat)" = sha256 ]
check "and repositoryformatversion 1" [ "$(git config --file "$T/e1/config" core.repositoryformatversion)" = 1 ]
check "the repository still opens" "$PACKWIRE" -C "$T/e1" rev-parse main
check_fails "same algorithm refused by compat build" "$PACKWIRE" -C "$T/e1" compat build --object-format=sha1
git config --file "$T/e1/config" extensions.compatObjectFormat sha1
check_fails "compatObjectFormat equal to objectFormat refused at open" "$PACKWIRE" -C "$T/e1" rev-parse main
git config --file "$T/e1/config" extensions.compatObjectFormat md5
check_fails "unknown compatObjectFormat refused" "$PACKWIRE" -C "$T/e1" rev-parse main

# ---- gitlinks ---------------------------------------------------------
cp -R "$T/s256" "$T/g256"
(
	cd "$T/g256"
	# a commit of another repository: no id known here
	sub=$(printf 'a submodule commit' | sha256sum | cut -c1-64)
	git update-index --add --cacheinfo "160000,$sub,the-submodule"
	git commit -q -m "a gitlink"
)
rm -f "$T/g256/.git/objects/loose-object-idx"
check_fails "gitlink without a known id refused" "$PACKWIRE" -C "$T/g256" compat build -q
"$PACKWIRE" -C "$T/g256" compat build -q 2>"$T/gitlink.err" || true
contains "the error names the gitlink's path" "$T/gitlink.err" "the-submodule"
check "nothing written" [ ! -e "$T/g256/.git/objects/loose-object-idx" ]

# ---- a build killed before it publishes a map ------------------------
cp -R "$T/s256" "$T/k256"
"$PACKWIRE" -C "$T/k256" compat build -q
(
	cd "$T/k256"
	for i in 1 2 3; do echo "more $i" >"more$i" && git add "more$i" && git commit -q -m "more $i"; done
	git repack -q -d
)
old=$(ls "$T/k256/.git/objects/pack/"*.compat)
cp $old "$T/old-maps" 2>/dev/null || cat $old >"$T/old-maps"
st=0
PACKWIRE_TEST_COMPAT_KILL=1 "$PACKWIRE" -C "$T/k256" compat build -q 2>/dev/null || st=$?
check "the build was killed (SIGKILL)" [ "$st" -eq 137 ]
check "the old maps are intact after the kill" "$PACKWIRE" -C "$T/k256" compat verify
cat $old >"$T/old-maps2"
same_file "old map bytes unchanged" "$T/old-maps" "$T/old-maps2"
objects_of "$T/s1" >"$T/all1"
head -1 "$T/all1" >"$T/one"
check "an old object still maps" "$PACKWIRE" -C "$T/k256" compat lookup --reverse "$(cat "$T/one")"
# the killed build leaves the writers' lock: never removed automatically
"$PACKWIRE" -C "$T/k256" compat build -q 2>"$T/locked.err" && not_ok "a build after the kill fails on the lock" ||
	ok "a build after the kill fails on the lock"
contains "the writers' lock is named" "$T/locked.err" "objects/compat-view.lock': File exists"
contains "and what to do" "$T/locked.err" "remove the file and try again"
rm -f "$T/k256/.git/objects/compat-view.lock"
check "the next build completes" "$PACKWIRE" -C "$T/k256" compat build -q
check "and verifies" "$PACKWIRE" -C "$T/k256" compat verify
(
	cd "$T/k256"
	echo last >last && git add last && git commit -q -m last
)
st=0
PACKWIRE_TEST_COMPAT_KILL=1 "$PACKWIRE" -C "$T/k256" compat build -q 2>/dev/null || st=$?
check "a build killed before renaming loose-object-idx" [ "$st" -eq 137 ]
check "loose-object-idx still parses" "$PACKWIRE" -C "$T/k256" compat verify
# as with Git's own locks, a killed writer leaves its locks behind: the
# writers' lock first, then loose-object-idx's
"$PACKWIRE" -C "$T/k256" compat build -q 2>"$T/locked.err" || true
contains "the stale writers' lock is named" "$T/locked.err" "compat-view.lock"
rm -f "$T/k256/.git/objects/compat-view.lock"
"$PACKWIRE" -C "$T/k256" compat build -q 2>"$T/locked.err" || true
contains "a stale lock is named" "$T/locked.err" "loose-object-idx.lock"
check "a failed build releases the writers' lock" test ! -e "$T/k256/.git/objects/compat-view.lock"
rm -f "$T/k256/.git/objects/loose-object-idx.lock"
check "then completes" "$PACKWIRE" -C "$T/k256" compat build -q
c=$(git -C "$T/k256" rev-parse main)
check "the new commit maps" "$PACKWIRE" -C "$T/k256" compat lookup "$c"
git -C "$T/k256" repack -q -a -d
"$PACKWIRE" -C "$T/k256" compat build -q
check "after repack -a -d: one side file, for the new pack" [ "$(ls "$T/k256/.git/objects/pack/"*.compat | wc -l)" = 1 ]
check "and every object still maps" "$PACKWIRE" -C "$T/k256" compat lookup "$c"
finish
