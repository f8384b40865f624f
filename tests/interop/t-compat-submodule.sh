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

# ---- compat build and the views ---------------------------------------------
# srv/super.git: the sha1 superproject with its sha256 map (the submodules
# named by --submodule); srv/super256.git: stock git's sha256 copy with its
# sha1 map (named by compat.submodule.*.repository). srv/a.git and
# srv/b.git, which the .gitmodules URLs (../a.git, ../b.git) name: the
# submodules with their maps.
mkdir srv
git clone -q --bare s1 srv/super.git
cp -R want256.git srv/super256.git
cp -R am.git srv/a.git
cp -R bm.git srv/b.git
touch srv/super.git/git-daemon-export-ok srv/super256.git/git-daemon-export-ok \
	srv/a.git/git-daemon-export-ok srv/b.git/git-daemon-export-ok
for r in super super256 a b; do git config --file srv/$r.git/config http.receivepack true; done
# (the .gitmodules URLs would find srv/a.git and srv/b.git beside it: a
# base path that does not hold the superproject leaves nothing to follow)
mkdir elsewhere
check_fails "compat build without the submodules: refused" \
	"$PACKWIRE" -C srv/super.git compat build -q --object-format=sha256 \
	--submodule-base="$T/elsewhere" 2>err
contains "... naming the path" err "gitlink "
check "... nothing written" [ ! -e srv/super.git/objects/loose-object-idx ]
check "... no side file" sh -c '! ls srv/super.git/objects/pack | grep -q compat'
check "compat build --submodule (sha1 storage)" "$PACKWIRE" -C srv/super.git compat build \
	--object-format=sha256 --submodule=libs/a="$T/srv/a.git" --submodule=b="$T/srv/b.git" 2>err
contains "... counts the submodule commits" err "5 submodule commits mapped"
git config --file srv/super256.git/config compat.submodule.libs/a.repository ../a.git
git config --file srv/super256.git/config compat.submodule.moved/a.repository ../a.git
git config --file srv/super256.git/config compat.submodule.b.repository "$T/srv/b.git"
check "compat build, compat.submodule.* (sha256 storage)" \
	"$PACKWIRE" -C srv/super256.git compat build -q --object-format=sha1
# from here on the servers find the submodules through .gitmodules only
git config --file srv/super256.git/config --remove-section compat.submodule.libs/a
git config --file srv/super256.git/config --remove-section compat.submodule.moved/a
git config --file srv/super256.git/config --remove-section compat.submodule.b
check "compat verify" "$PACKWIRE" -C srv/super.git compat verify
check "the map has the gitlinks" [ "$("$PACKWIRE" -C srv/super256.git compat lookup "$B1")" = "$B1_1" ]

# clone_view DESC URL WANT VERSION [GIT OPTIONS]: a mirror clone of the view
# by stock git is WANT
clone_view() {
	local desc=$1 url=$2 want=$3 v=$4
	shift 4
	rm -rf clone.git
	if git -c protocol.version="$v" clone -q --mirror "$@" "$url" clone.git 2>err; then
		same_history "$desc" clone.git "$want"
	else
		not_ok "$desc: clone"
		sed 's/^/    /' err | head -20
	fi
}
use_fake_ssh
DP=$(free_port)
start_daemon pwd pw "$DP" --base-path="$T/srv" --enable=receive-pack
start_serve pws "$T/srv" --quiet
SP=$SERVE_PORT
have_httpd=
if need_httpd; then
	start_httpd "$T/srv"
	have_httpd=1
else
	skip "http-backend behind Apache: no httpd"
fi
for pair in "super sha256 want256.git" "super256 sha1 want1.git"; do
	set -- $pair
	R=$1 W=$2 WANT=$T/$3
	UP="$PACKWIRE upload-pack --object-format=$W"
	for v in 0 2; do
		w="$R.git as $W, v$v"
		clone_view "file://, $w" "file://$T/srv/$R.git" "$WANT" $v --upload-pack="$UP"
		clone_view "ssh, $w" "ssh://pw-test-host$T/srv/$R.git" "$WANT" $v --upload-pack="$UP"
		clone_view "daemon, $w" "git://127.0.0.1:$DP/$R.git@$W" "$WANT" $v
		clone_view "serve, $w" "http://127.0.0.1:$SP/$R.git@$W" "$WANT" $v
		[ -z "$have_httpd" ] ||
			clone_view "http-backend, $w" "http://127.0.0.1:$HTTPD_PORT/pw-open/$R.git@$W" "$WANT" $v
	done
done

# ---- compat pushes through the views ------------------------------------------
# A client of the view commits a gitlink to a submodule commit the server's
# map has never seen, made in the submodule and pushed there first; the
# server finds the submodule through the .gitmodules URL (../b.git,
# ../a.git) under its base path, maps the gitlink through its map, and
# keeps the pair for the view.
# push_case DESC SUPER W SUBREPO SUBDIR PATH URL: one push of each transport
push_case() {
	local desc=$1 R=$2 W=$3 sub=$4 subdir=$5 path=$6 rp n=0 t url new want_sub st
	rm -rf client
	git clone -q "git://127.0.0.1:$DP/$R.git@$W" client
	for t in file daemon serve http-backend; do
		[ $t != http-backend ] || [ -n "$have_httpd" ] || continue
		n=$((n + 1))
		# a new commit of the submodule, pushed natively into srv/SUB.git
		new=$(sub_commit "$subdir" "$desc $t")
		check "$desc, $t: the submodule's commit pushed into srv/$sub.git" \
			git -C "$subdir" push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/$sub.git" HEAD:main
		# the superproject's commit on top
		if [ ! -f client/.gitmodules ] || ! grep -q "path = $path" client/.gitmodules; then
			printf '[submodule "%s"]\n\tpath = %s\n\turl = ../%s.git\n' "$sub" "$path" "$sub" >>client/.gitmodules
			git -C client add .gitmodules
		fi
		git -C client update-index --add --cacheinfo "160000,$new,$path"
		tick
		git -C client commit -q -m "$desc over $t"
		case $t in
		file) url=$T/srv/$R.git rp="--receive-pack=$PACKWIRE receive-pack --object-format=$W" ;;
		daemon) url=git://127.0.0.1:$DP/$R.git@$W rp= ;;
		serve) url=http://127.0.0.1:$SP/$R.git@$W rp= ;;
		http-backend) url=http://127.0.0.1:$HTTPD_PORT/pw-open/$R.git@$W rp= ;;
		esac
		if git -C client push -q ${rp:+"$rp"} "$url" main 2>err; then
			ok "$desc, $t: compat push of gitlink $path"
		else
			not_ok "$desc, $t: compat push of gitlink $path"
			sed 's/^/    /' err | head -10
			continue
		fi
		# the view gives the client's commit back
		rm -rf back.git
		git clone -q --bare "git://127.0.0.1:$DP/$R.git@$W" back.git
		check "$desc, $t: the view's main is the client's" \
			[ "$(git --git-dir=back.git rev-parse main)" = "$(git -C client rev-parse main)" ]
	done
	# the storage side is what stock git writes with the submodule mapped
	git_view "srv/$R.git"
	check "$desc: the stored history is fsck --strict clean" git --git-dir="$T/view" fsck --strict --no-progress
}
sub_map() { # SUBREPO(srv) ID: the other algorithm's id in srv/SUB.git's map
	"$PACKWIRE" -C "srv/$1.git" compat lookup "$2" 2>/dev/null || "$PACKWIRE" -C "srv/$1.git" compat lookup --reverse "$2"
}
# stored sha1, the client sha256, b (stored sha256 upstream) updated
push_case "sha256 client of super.git" super sha256 b b b
# the whole history back through stock git: the client's main, mapped
git -C client fast-export --reencode=no --signed-tags=verbatim main >stream
sed -n 's/^M 160000 \([0-9a-f]*\) .*/\1/p' stream | sort -u >ids
map=
while read -r id; do map="${map}s/$id/$(sub_map b "$id" 2>/dev/null || sub_map a "$id")/;"; done <ids
rm -rf want-push.git
git init -q --bare --object-format=sha1 want-push.git
sed -E "/^M 160000 /{$map}" stream | git --git-dir=want-push.git fast-import --quiet
git_view srv/super.git
check "sha1 storage after the pushes = stock git's fast-import of the client's main" \
	[ "$(git --git-dir="$T/view" rev-list --objects main | LC_ALL=C sort | sha1sum)" = \
		"$(git --git-dir=want-push.git rev-list --objects main | LC_ALL=C sort | sha1sum)" ]

# stored sha256, the client sha1: submodule a (sha1) added back at libs/a
push_case "sha1 client of super256.git" super256 sha1 a a libs/a
git -C client fast-export --reencode=no --signed-tags=verbatim main >stream
sed -n 's/^M 160000 \([0-9a-f]*\) .*/\1/p' stream | sort -u >ids
map=
while read -r id; do map="${map}s/$id/$(sub_map a "$id" 2>/dev/null || sub_map b "$id")/;"; done <ids
rm -rf want-push.git
git init -q --bare --object-format=sha256 want-push.git
sed -E "/^M 160000 /{$map}" stream | git --git-dir=want-push.git fast-import --quiet
git_view srv/super256.git
check "sha256 storage after the pushes = stock git's fast-import of the client's main" \
	[ "$(git --git-dir="$T/view" rev-list --objects main | LC_ALL=C sort | sha1sum)" = \
		"$(git --git-dir=want-push.git rev-list --objects main | LC_ALL=C sort | sha1sum)" ]

# ---- a native push keeps the map current through the submodule's map ---------
rm -rf native
git clone -q --upload-pack="$PACKWIRE upload-pack" "file://$T/srv/super.git" native
new=$(sub_commit b "native push")
git -C b push -q --receive-pack="$PACKWIRE receive-pack" "$T/srv/b.git" HEAD:main
new1=$(sub_map b "$new")
git -C native update-index --cacheinfo "160000,$new1,b"
tick
git -C native commit -q -m "b updated by a sha1 client"
check "native push of a gitlink into super.git" \
	git -C native push -q --receive-pack="$PACKWIRE receive-pack" origin main 2>err
check "... no warning" [ ! -s err ]
rm -rf back.git
git clone -q --bare "git://127.0.0.1:$DP/super.git@sha256" back.git
check "... the view maps it through b's map" [ "$(git --git-dir=back.git rev-parse main:b)" = "$new" ]

# ---- a gitlink no repository maps: the push is refused, nothing changes -------
rm -rf bad
git clone -q "git://127.0.0.1:$DP/super.git@sha256" bad
stray=$(sub_commit b "never pushed to srv/b.git")
git -C bad update-index --cacheinfo "160000,$stray,b"
tick
git -C bad commit -q -m "gitlink to a commit the server's b lacks"
before=$("$PACKWIRE" -C srv/super.git rev-parse main)
packs=$(ls srv/super.git/objects/pack | wc -l)
check_fails "compat push of an unmappable gitlink: refused" \
	git -C bad push -q "git://127.0.0.1:$DP/super.git@sha256" main 2>err
contains "... naming the path" err "gitlink b (sha256 submodule commit $stray)"
contains "... and the repository" err "$T/srv/b.git"
check "... main unchanged" [ "$("$PACKWIRE" -C srv/super.git rev-parse main)" = "$before" ]
check "... no pack added" [ "$(ls srv/super.git/objects/pack | wc -l)" = "$packs" ]

# hostile .gitmodules URLs: a repository that maps the commit but lies
# outside the base path (by "..", by an absolute path, by a symlink) is
# never opened
cp -R srv/b.git outside.git
git -C b push -q --receive-pack="$PACKWIRE receive-pack" "$T/outside.git" HEAD:main
ln -s "$T/outside.git" srv/link.git
good=$(git -C bad rev-parse HEAD~1)
for url in ../../outside.git "$T/outside.git" "file://$T/outside.git" ../link.git \
	"git://evil.example/../../outside.git" "ssh://host/~root/outside.git"; do
	git -C bad reset -q --hard "$good"
	printf '[submodule "b"]\n\tpath = b\n\turl = %s\n' "$url" >bad/.gitmodules
	git -C bad add .gitmodules
	git -C bad update-index --cacheinfo "160000,$stray,b"
	tick
	git -C bad commit -q -m "url $url"
	check_fails "url $url: refused" git -C bad push -q "git://127.0.0.1:$DP/super.git@sha256" main 2>err
	contains "... names the path" err "gitlink b (sha256 submodule commit $stray)"
	contains "... outside.git is never opened" err "names no repository under the base path"
done
# a .gitmodules that is not config syntax, or far too large: nothing to follow
for kind in malformed huge; do
	git -C bad reset -q --hard "$good"
	if [ $kind = malformed ]; then
		printf '[submodule "b"\n\tpath = b\n\turl = ../b.git\n' >bad/.gitmodules
	else
		{ printf '[submodule "b"]\n\tpath = b\n\turl = ../b.git\n'; head -c 1100000 /dev/zero | tr '\0' '#'; } >bad/.gitmodules
	fi
	git -C bad add .gitmodules
	git -C bad update-index --cacheinfo "160000,$stray,b"
	tick
	git -C bad commit -q -m "$kind .gitmodules"
	check_fails "$kind .gitmodules: refused" git -C bad push -q "git://127.0.0.1:$DP/super.git@sha256" main 2>err
	contains "... names the path and says what to do" err "gitlink b (sha256 submodule commit $stray) has no sha1 id: no repository"
done
check "... main unchanged" [ "$("$PACKWIRE" -C srv/super.git rev-parse main)" = "$before" ]
rm srv/link.git
daemon_logs_clean
serve_logs_clean pws
if [ -n "$have_httpd" ]; then
	check_fails "http-backend: no sanitizer report in Apache's error log" \
		grep -q Sanitizer "$HTTPD_DIR/error.log"
fi

finish
