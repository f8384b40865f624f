#!/usr/bin/env bash
# Submodules across algorithms (docs/compat-map.md, "Submodules"): a
# superproject whose history adds, moves (git mv), updates and removes a
# submodule `a` (a SHA-1 repository) and holds a second one `b` that is
# itself a SHA-256 repository (so the superproject's SHA-1 ids of b's
# commits come from b's sha256 -> sha1 map). Its gitlinks are mapped
# through the submodules' own maps by packwire convert, compat build and
# the views served over file://, ssh, the daemon, serve and http-backend,
# and by compat pushes through the views. Every result must be what stock
# git writes: `fast-export | fast-import` into the other algorithm with the
# stream's gitlinks (`M 160000 <id> <path>`) rewritten through the
# submodules' converted copies. A gitlink no submodule repository maps
# fails, naming its path, and writes nothing.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/http-lib.sh"
trap 'stop_daemons; stop_serves; http_cleanup' EXIT
cd "$T"

objects_of() { git --git-dir="$1" rev-list --objects --all | LC_ALL=C sort; }
refs_of() { git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
git_dir() { if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi; }
tick() { export GIT_COMMITTER_DATE="$((${GIT_COMMITTER_DATE%% *} + 60)) +0000" GIT_AUTHOR_DATE="$((${GIT_AUTHOR_DATE%% *} + 60)) +0000"; }

# git_view DIR: a copy of DIR that stock git 2.39 opens (it refuses the
# compatObjectFormat extension), in $T/view
git_view() {
	rm -rf "$T/view"
	cp -R "$(git_dir "$1")" "$T/view"
	git config --file "$T/view/config" --unset extensions.compatObjectFormat || true
}

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

# ---- the submodules ------------------------------------------------------
# a: SHA-1, three commits (a later fourth); b: SHA-256, two commits (a
# later third)
sub_commit() { # DIR MSG
	tick
	echo "$2" >>"$1/file"
	git -C "$1" add file
	git -C "$1" commit -q -m "$2"
	git -C "$1" rev-parse HEAD
}
git init -q --object-format=sha1 a
git init -q --object-format=sha256 b
A1=$(sub_commit a a1) A2=$(sub_commit a a2) A3=$(sub_commit a a3)
B1=$(sub_commit b b1) B2=$(sub_commit b b2)

# Their maps: am (a with its sha256 map), a256 (a converted), bm (b with
# its sha1 map)
git clone -q --bare a am.git
git clone -q --bare b bm.git
check "a: compat build --object-format=sha256" "$PACKWIRE" -C am.git compat build -q --object-format=sha256
check "b: compat build --object-format=sha1" "$PACKWIRE" -C bm.git compat build -q --object-format=sha1
check "a: convert --to=sha256" "$PACKWIRE" convert -q --to=sha256 a a256
other_id() { "$PACKWIRE" -C "$1" compat lookup "$2"; }
A1_256=$(other_id am.git "$A1") A2_256=$(other_id am.git "$A2") A3_256=$(other_id am.git "$A3")
B1_1=$(other_id bm.git "$B1") B2_1=$(other_id bm.git "$B2")
check "a256 maps a's commits as am does" [ "$(other_id a256 "$A3_256")" = "$A3" ]

# ---- the superproject (SHA-1, stock git) ---------------------------------
gitlink() { git -C s1 update-index --add --cacheinfo "160000,$1,$2"; }
# (git add -A would drop the gitlinks: their directories are not there)
commit_s1() { tick; git -C s1 add .gitmodules README $(cd s1 && ls side.txt 2>/dev/null); git -C s1 commit -q -m "$1"; }
git init -q --object-format=sha1 s1
echo super >s1/README
printf '[submodule "a"]\n\tpath = libs/a\n\turl = ../a.git\n' >s1/.gitmodules
gitlink "$A1" libs/a
commit_s1 "add submodule a"
printf '[submodule "b"]\n\tpath = b\n\turl = ../b.git\n' >>s1/.gitmodules
gitlink "$B1_1" b
commit_s1 "add submodule b (sha256 upstream)"
gitlink "$A2" libs/a
commit_s1 "update a"
tick
git -C s1 tag -a v1 -m "release with a at a2"
git -C s1 update-index --force-remove libs/a
gitlink "$A2" moved/a
sed -i 's|path = libs/a|path = moved/a|' s1/.gitmodules
commit_s1 "move a (git mv libs/a moved/a)"
git -C s1 branch side
gitlink "$A3" moved/a
gitlink "$B2_1" b
commit_s1 "update a and b"
git -C s1 update-index --force-remove moved/a
printf '[submodule "b"]\n\tpath = b\n\turl = ../b.git\n' >s1/.gitmodules
commit_s1 "remove submodule a"
git -C s1 checkout -q side
echo side >s1/side.txt
commit_s1 "side work"
git -C s1 checkout -q main
tick
git -C s1 merge -q --no-edit side -m "merge side"
git -C s1 repack -q -a -d

# ---- what stock git writes in the other algorithm ------------------------
# copy_history SRC DST ALGO SEDMAP: fast-export | (gitlinks mapped) | fast-import
copy_history() {
	rm -rf "$2"
	git init -q --bare --object-format="$3" "$2"
	git --git-dir="$(git_dir "$1")" fast-export --all --reencode=no --signed-tags=verbatim |
		sed -E "/^M 160000 /{$4}" |
		git --git-dir="$2" fast-import --quiet
}
TO256="s/$A1/$A1_256/;s/$A2/$A2_256/;s/$A3/$A3_256/;s/$B1_1/$B1/;s/$B2_1/$B2/"
TO1="s/$A1_256/$A1/;s/$A2_256/$A2/;s/$A3_256/$A3/;s/$B1/$B1_1/;s/$B2/$B2_1/"
copy_history s1 want256.git sha256 "$TO256"
copy_history want256.git want1.git sha1 "$TO1"
same_history "stock git: the round trip gives the sha1 history back" want1.git s1/.git
check "stock git's sha256 copy has gitlinks in sha256" \
	[ "$(git --git-dir=want256.git rev-parse v1:libs/a)" = "$A2_256" ]

# ---- packwire convert ------------------------------------------------------
# sha1 -> sha256, the submodules named on the command line: a through its
# own map (stored sha1), b through its map (stored sha256); moved/a has no
# option of its own: a's repository knows its commits
check "convert sha1 -> sha256 --submodule" "$PACKWIRE" convert -q --to=sha256 \
	--submodule=libs/a=am.git --submodule=b=bm.git s1 c256
git_view c256
same_history "convert sha1 -> sha256 = stock git with the submodules mapped" "$T/view" want256.git
check "convert: the gitlinks' pairs are in the new map" \
	[ "$("$PACKWIRE" -C c256 compat lookup "$B2")" = "$B2_1" ]
# the same through compat.submodule.<path>.repository, a through its
# converted copy (stored sha256)
git -C s1 config compat.submodule.libs/a.repository "$T/a256"
git -C s1 config compat.submodule.b.repository ../../bm.git
check "convert sha1 -> sha256, compat.submodule.*.repository" "$PACKWIRE" convert -q --to=sha256 s1 c256b
git_view c256b
same_history "convert by config = stock git" "$T/view" want256.git
git -C s1 config --remove-section compat.submodule.libs/a
git -C s1 config --remove-section compat.submodule.b
# and back: the converted copy's map has the gitlinks' pairs
check "convert c256 back to sha1 (its map knows the gitlinks)" "$PACKWIRE" convert -q --to=sha1 c256 c1
git_view c1
same_history "round trip = the sha1 superproject" "$T/view" s1/.git
# stock git's sha256 history (no map) to sha1, through the submodules
check "convert stock sha256 -> sha1 --submodule" "$PACKWIRE" convert -q --to=sha1 \
	--submodule=libs/a=a256 --submodule=moved/a=am.git --submodule=b=bm.git want256.git c1b.git
git_view c1b.git
same_history "convert sha256 -> sha1 = stock git with the submodules mapped" "$T/view" want1.git

# errors: the path and the commit named, what to do said, nothing written
conv_fails() { # DESC EXPECT... -- ARGS
	local desc=$1 e
	shift
	local want=()
	while [ "$1" != -- ]; do want+=("$1"); shift; done
	shift
	rm -rf "$T/bad"
	check_fails "$desc: refused" "$PACKWIRE" convert -q "$@" "$T/bad" 2>"$T/err"
	for e in "${want[@]}"; do contains "$desc: says '$e'" "$T/err" "$e"; done
	check "$desc: nothing written" [ ! -e "$T/bad" ]
}
# (the first gitlink met is the newest: moved/a or libs/a, b)
conv_fails "no submodule repository" "/a (sha1 submodule commit" "--submodule=" "/a=<repository>" \
	-- --to=sha256 --submodule=b=bm.git s1
conv_fails "the submodule without a map" "/a (sha1 submodule commit" "has no compat map" \
	"compat build --object-format=sha256" -- --to=sha256 --submodule=libs/a=a --submodule=b=bm.git s1
conv_fails "a map without the commit" "/a (sha1 submodule commit" "does not know the commit" \
	-- --to=sha256 --submodule=libs/a=bm.git --submodule=moved/a=bm.git --submodule=b=bm.git s1
conv_fails "b's commit unknown" "gitlink b (sha1 submodule commit $B2_1)" "--submodule=b=<repository>" \
	-- --to=sha256 --submodule=libs/a=am.git s1
conv_fails "not a repository" "/a (sha1 submodule commit" "no-such-repo" \
	-- --to=sha256 --submodule=libs/a=no-such-repo --submodule=moved/a=no-such-repo --submodule=b=bm.git s1
# without any submodule: today's error, naming the path
conv_fails "no --submodule at all" "gitlink " "submodule commit" "has no sha256 id" -- --to=sha256 s1

finish
