#!/usr/bin/env bash
# One submodule resolver everywhere (docs/compat-map.md, "Submodules"):
# compat build, convert and a fetch into a repository with a compat map find
# a submodule's repository through the superproject's .gitmodules URL
# ("../a.git" beside a bare superproject), with no --submodule and no
# config, as a server does for compat pushes. A SHA-1 superproject holds a
# SHA-1 submodule `a` (added, updated, moved) and a SHA-256 submodule `b`.
# Every result is what stock git writes (`fast-export | fast-import` with
# the gitlinks mapped through the submodules' maps). A URL that leads
# outside the base path is never followed: the error names the path.
. "$(dirname "$0")/lib.sh"
cd "$T"

objects_of() { git --git-dir="$1" rev-list --objects --all | LC_ALL=C sort; }
refs_of() { git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
tick() { export GIT_COMMITTER_DATE="$((${GIT_COMMITTER_DATE%% *} + 60)) +0000" GIT_AUTHOR_DATE="$((${GIT_AUTHOR_DATE%% *} + 60)) +0000"; }

# same_history DESC GITDIR WANT: GITDIR (readable by stock git) is WANT's
# history exactly, and fsck --strict clean
same_history() {
	local desc=$1 got=$2 want=$3
	refs_of "$want" >"$T/want.refs"
	refs_of "$got" >"$T/got.refs"
	same_file "$desc: refs" "$T/want.refs" "$T/got.refs"
	objects_of "$want" >"$T/want.objs"
	objects_of "$got" >"$T/got.objs"
	same_file "$desc: rev-list --objects --all" "$T/want.objs" "$T/got.objs"
	check "$desc: fsck --strict" git --git-dir="$got" fsck --strict --no-progress
}
# git_view DIR: a copy of DIR that stock git 2.39 opens, in $T/view
git_view() {
	rm -rf "$T/view"
	cp -R "$1" "$T/view"
	git config --file "$T/view/config" --unset extensions.compatObjectFormat || true
}
# view_is DESC REPO ALGO WANT: stock git's mirror clone of REPO's ALGO view
# (packwire upload-pack) is WANT
view_is() {
	rm -rf "$T/vclone.git"
	if git clone -q --mirror --upload-pack="$PACKWIRE upload-pack --object-format=$3" \
		"file://$2" "$T/vclone.git" 2>"$T/err"; then
		same_history "$1" "$T/vclone.git" "$4"
	else
		not_ok "$1: clone of the view"
		sed 's/^/    /' "$T/err" | head -10
	fi
}
sub_commit() { # DIR MSG: a new commit in work tree DIR, its id
	tick
	echo "$2" >>"$1/file"
	git -C "$1" add file
	git -C "$1" commit -q -m "$2"
	git -C "$1" rev-parse HEAD
}
other_id() { "$PACKWIRE" -C "$1" compat lookup "$2"; }
# copy_history SRC DST ALGO SEDMAP: fast-export | (gitlinks mapped) | fast-import
copy_history() {
	rm -rf "$2"
	git init -q --bare --object-format="$3" "$2"
	git --git-dir="$1" fast-export --all --reencode=no --signed-tags=verbatim |
		sed -E "/^M 160000 /{$4}" |
		git --git-dir="$2" fast-import --quiet
}

# ---- the submodules, beside the superproject in srv/ ---------------------
git init -q --object-format=sha1 a
git init -q --object-format=sha256 b
A1=$(sub_commit a a1) A2=$(sub_commit a a2)
B1=$(sub_commit b b1) B2=$(sub_commit b b2)
mkdir srv
git clone -q --bare a srv/a.git
git clone -q --bare b srv/b.git
check "srv/a.git: compat build --object-format=sha256" "$PACKWIRE" -C srv/a.git compat build -q --object-format=sha256
check "srv/b.git: compat build --object-format=sha1" "$PACKWIRE" -C srv/b.git compat build -q --object-format=sha1
A1_256=$(other_id srv/a.git "$A1") A2_256=$(other_id srv/a.git "$A2")
B1_1=$(other_id srv/b.git "$B1") B2_1=$(other_id srv/b.git "$B2")

# ---- the superproject (SHA-1, stock git): add a, add b, update, move a ---
gitlink() { git -C s1 update-index --add --cacheinfo "160000,$1,$2"; }
commit_s1() { tick; git -C s1 add .gitmodules README; git -C s1 commit -q -m "$1"; }
git init -q --object-format=sha1 s1
echo super >s1/README
printf '[submodule "a"]\n\tpath = libs/a\n\turl = ../a.git\n' >s1/.gitmodules
gitlink "$A1" libs/a
commit_s1 "add submodule a"
printf '[submodule "b"]\n\tpath = b\n\turl = ../b.git\n' >>s1/.gitmodules
gitlink "$B1_1" b
commit_s1 "add submodule b (sha256 upstream)"
gitlink "$A2" libs/a
gitlink "$B2_1" b
commit_s1 "update a and b"
git -C s1 update-index --force-remove libs/a
gitlink "$A2" moved/a
sed -i 's|path = libs/a|path = moved/a|' s1/.gitmodules
commit_s1 "move a"
git clone -q --bare s1 srv/super.git

# what stock git writes in the other algorithm
TO256="s/$A1/$A1_256/;s/$A2/$A2_256/;s/$B1_1/$B1/;s/$B2_1/$B2/"
TO1="s/$A1_256/$A1/;s/$A2_256/$A2/;s/$B1/$B1_1/;s/$B2/$B2_1/"
copy_history srv/super.git want256.git sha256 "$TO256"
copy_history want256.git want1.git sha1 "$TO1"
same_history "stock git: the round trip gives the sha1 history back" want1.git srv/super.git
# stock git's sha256 superproject, beside the submodules too
cp -R want256.git srv/super256.git

# ---- convert: no --submodule, no config ----------------------------------
check "convert sha1 -> sha256 through .gitmodules" \
	"$PACKWIRE" convert -q --to=sha256 srv/super.git c256.git
git_view c256.git
same_history "convert sha1 -> sha256 = stock git" "$T/view" want256.git
check "convert sha256 -> sha1 through .gitmodules (b stored sha256, a sha1)" \
	"$PACKWIRE" convert -q --to=sha1 srv/super256.git c1.git
git_view c1.git
same_history "convert sha256 -> sha1 = the sha1 superproject" "$T/view" srv/super.git

# ---- compat build: no --submodule, no config; then the views -------------
check "compat build (sha1 storage) through .gitmodules" \
	"$PACKWIRE" -C srv/super.git compat build --object-format=sha256 2>err
contains "... counts the submodule commits" err "4 submodule commits mapped"
check "... compat verify" "$PACKWIRE" -C srv/super.git compat verify
check "... b's commit through b's own map" [ "$(other_id srv/super.git "$B2_1")" = "$B2" ]
check "compat build (sha256 storage) through .gitmodules" \
	"$PACKWIRE" -C srv/super256.git compat build -q --object-format=sha1
check "... compat verify" "$PACKWIRE" -C srv/super256.git compat verify
view_is "srv/super.git as sha256 = stock git" "$T/srv/super.git" sha256 "$T/want256.git"
view_is "srv/super256.git as sha1 = the sha1 superproject" "$T/srv/super256.git" sha1 "$T/want1.git"

# ---- fetches into repositories with a compat map -------------------------
# cl/: a sha1 client (its map sha256) with its own copies of a and b beside
# it; cl2/: a sha256 client of the sha256 view (its map sha1)
mkdir cl cl2
UP="$PACKWIRE upload-pack"
for r in a b; do
	check "cl/$r.git: packwire clone --mirror" \
		"$PACKWIRE" clone -q --mirror --upload-pack="$UP" "file://$T/srv/$r.git" cl/$r.git
done
check "cl/a.git: compat build" "$PACKWIRE" -C cl/a.git compat build -q --object-format=sha256
check "cl/b.git: compat build" "$PACKWIRE" -C cl/b.git compat build -q --object-format=sha1
cp -R cl/a.git cl/b.git cl2/
check "cl/super.git: packwire clone --mirror" \
	"$PACKWIRE" clone -q --mirror --upload-pack="$UP" "file://$T/srv/super.git" cl/super.git
check "cl/super.git: compat build through .gitmodules" \
	"$PACKWIRE" -C cl/super.git compat build -q --object-format=sha256
V256="$PACKWIRE upload-pack --object-format=sha256"
check "cl2/super.git: packwire clone --mirror of the sha256 view" \
	"$PACKWIRE" clone -q --mirror --upload-pack="$V256" "file://$T/srv/super.git" cl2/super.git
check "cl2/super.git is sha256" [ "$(git --git-dir=cl2/super.git rev-parse --show-object-format)" = sha256 ]
check "cl2/super.git: compat build through .gitmodules" \
	"$PACKWIRE" -C cl2/super.git compat build -q --object-format=sha1

# upstream: new commits of a and b (pushed where the server's maps see
# them), then the superproject's gitlinks moved to them
A3=$(sub_commit a a3) B3=$(sub_commit b b3)
check "a3 pushed to srv/a.git" git -C a push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/a.git" HEAD:main
check "b3 pushed to srv/b.git" git -C b push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/b.git" HEAD:main
A3_256=$(other_id srv/a.git "$A3") B3_1=$(other_id srv/b.git "$B3")
gitlink "$A3" moved/a
gitlink "$B3_1" b
commit_s1 "update a and b again"
check "the superproject's push (packwire receive-pack)" \
	git -C s1 push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/super.git" main
NEW=$(git -C s1 rev-parse HEAD)
# the clients' submodules first (a fetch keeps their maps), then the
# superprojects
for r in a b; do
	check "cl/$r.git: packwire fetch" "$PACKWIRE" -C cl/$r.git fetch -q --upload-pack="$UP"
	rm -rf cl2/$r.git
	cp -R cl/$r.git cl2/$r.git
done
# (no -q: it would hide the warning that the map was not updated)
check "cl/super.git: packwire fetch of the new gitlinks" "$PACKWIRE" -C cl/super.git fetch --upload-pack="$UP" 2>err
check_fails "... the map is updated (no warning)" grep -q "compat map not updated" err
check "... compat verify" "$PACKWIRE" -C cl/super.git compat verify
check "... a's new commit through cl/a.git's map" [ "$(other_id cl/super.git "$A3")" = "$A3_256" ]
check "... b's new commit through cl/b.git's map" [ "$(other_id cl/super.git "$B3_1")" = "$B3" ]
TO256="$TO256;s/$A3/$A3_256/;s/$B3_1/$B3/"
git_view srv/super.git
rm -rf super-now.git
mv view super-now.git
copy_history super-now.git want256b.git sha256 "$TO256"
view_is "cl/super.git as sha256 after the fetch = stock git" "$T/cl/super.git" sha256 "$T/want256b.git"
check "cl2/super.git: packwire fetch of the sha256 view" \
	"$PACKWIRE" -C cl2/super.git fetch --upload-pack="$V256" 2>err
check_fails "... the map is updated (no warning)" grep -q "compat map not updated" err
check "... compat verify" "$PACKWIRE" -C cl2/super.git compat verify
NEW256=$("$PACKWIRE" -C cl2/super.git rev-parse main)
check "... the new commit maps back to the sha1 original" [ "$(other_id cl2/super.git "$NEW256")" = "$NEW" ]
view_is "cl2/super.git as sha1 after the fetch = the sha1 superproject" "$T/cl2/super.git" sha1 "$T/super-now.git"

# a gitlink the client's submodule does not know yet: the fetch goes in,
# warns naming the path and the repository asked, and leaves the pack
# unmapped; once the submodule is fetched, compat build catches up
A4=$(sub_commit a a4)
check "a4 pushed to srv/a.git" git -C a push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/a.git" HEAD:main
gitlink "$A4" moved/a
commit_s1 "a at a4"
check "the superproject's push" git -C s1 push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/super.git" main
check "cl/super.git: fetch of a gitlink cl/a.git lacks still succeeds" \
	"$PACKWIRE" -C cl/super.git fetch --upload-pack="$UP" 2>err
contains "... warns that the map was not updated" err "compat map not updated"
contains "... naming the path" err "gitlink moved/a (sha1 submodule commit $A4) has no sha256 id"
contains "... and the repository asked" err "$T/cl/a.git"
check_fails "... the new commit is not in the map" other_id cl/super.git "$(git -C s1 rev-parse HEAD)"
check "cl/a.git: packwire fetch" "$PACKWIRE" -C cl/a.git fetch -q --upload-pack="$UP"
check "cl/super.git: compat build catches up" "$PACKWIRE" -C cl/super.git compat build -q
check "... compat verify" "$PACKWIRE" -C cl/super.git compat verify
check "... a4 through cl/a.git's map" [ "$(other_id cl/super.git "$A4")" = "$(other_id srv/a.git "$A4")" ]

# ---- a URL outside the base path is never followed ---------------------------
# jail/inner/s2.git names a through a URL that leads out of jail/inner
# (the base: the directory holding it); $T/srv/a.git maps the commit
mkdir -p jail/inner
ln -s "$T/srv/a.git" jail/inner/link.git
for url in ../../srv/a.git "$T/srv/a.git" "file://$T/srv/a.git" ../link.git; do
	rm -rf s2 jail/inner/s2.git
	git init -q --object-format=sha1 s2
	printf '[submodule "a"]\n\tpath = a\n\turl = %s\n' "$url" >s2/.gitmodules
	git -C s2 add .gitmodules
	git -C s2 update-index --add --cacheinfo "160000,$A1,a"
	tick
	git -C s2 commit -q -m "a at $url"
	git clone -q --bare s2 jail/inner/s2.git
	check_fails "url $url: compat build refused" \
		"$PACKWIRE" -C jail/inner/s2.git compat build -q --object-format=sha256 2>err
	contains "... names the path" err "gitlink a (sha1 submodule commit $A1) has no sha256 id"
	contains "... and the URL, not followed" err "its URL '$url' in .gitmodules names no repository under the base path"
	contains "... and says what to do" err "--submodule=a=<repository>"
	check "... nothing written" [ ! -e jail/inner/s2.git/objects/loose-object-idx ]
	check_fails "url $url: convert refused" "$PACKWIRE" convert -q --to=sha256 jail/inner/s2.git bad.git 2>err
	contains "... names the path" err "gitlink a (sha1 submodule commit $A1) has no sha256 id"
done
# the base the caller gives is the limit: one that holds srv/a.git lets
# the absolute URL through
check "url $T/srv/a.git, --submodule-base=$T: compat build" \
	"$PACKWIRE" -C jail/inner/s2.git compat build -q --object-format=sha256 --submodule-base="$T"
check "... the gitlink mapped through srv/a.git" [ "$(other_id jail/inner/s2.git "$A1")" = "$A1_256" ]

finish
