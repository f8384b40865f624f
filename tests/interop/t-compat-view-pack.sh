#!/usr/bin/env bash
# The stored view (compat build --view-pack: a pack of the other algorithm
# with its .idx and bitmap under objects/compat-view/), both directions:
# the SHA-256 copy serving sha1 and the SHA-1 copy serving sha256.
# - clones and fetches by stock git over file://, the daemon (git://),
#   `packwire serve` and http-backend behind Apache equal the other copy
#   (fast-export | fast-import of the same history), and were served from
#   the stored pack: the trace2 event compat-view=stored-pack (file://) and
#   the client's "pack-reused N" line (every transport; a translated pack
#   reuses nothing);
# - after a native push and after a push into the view the map and the
#   stored pack are consistent (compat verify), requests the pack cannot
#   answer are translated, and compat build / repack rewrite it;
# - a damaged and a foreign (stale) stored pack fail compat verify;
# - a rewrite killed before it publishes leaves the old generation in use.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/http-lib.sh"
trap 'stop_daemons; stop_serves; http_cleanup' EXIT
cd "$T"

refs_of() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
objects_of() { git -C "$1" rev-list --objects --all | LC_ALL=C sort; }

# history: 120 commits on two branches over 40 files, annotated tags
python3 - >stream <<'PY'
import sys
out = sys.stdout
files = {f"dir{d}/file{f}.txt": [f"line {i} of dir{d}/file{f}\n" for i in range(60)]
         for d in range(4) for f in range(10)}
names = sorted(files)
mark = 0
for c in range(120):
    branch = "refs/heads/main" if c % 5 else "refs/heads/side"
    mark += 1
    out.write(f"commit {branch}\nmark :{mark}\n")
    out.write(f"author A U Thor <a@example.com> {1700000000 + c * 60} +0000\n")
    out.write(f"committer C O Mitter <c@example.com> {1700000000 + c * 60} +0000\n")
    msg = f"change {c}\n"
    out.write(f"data {len(msg)}\n{msg}")
    for k in range(3):
        n = names[(c * 7 + k * 13) % len(names)]
        files[n][(c + k) % 60] = f"line changed in commit {c}\n"
        body = "".join(files[n])
        out.write(f"M 100644 inline {n}\ndata {len(body)}\n{body}")
    out.write("\n")
    if c % 40 == 39:
        out.write(f"tag v{c}\nfrom :{mark}\ntagger T <t@example.com> {1700000000 + c * 60} +0000\n")
        out.write("data 8\nrelease\n")
PY
mkdir -p srv
for a in sha1 sha256; do
	git init -q --bare --object-format=$a "copy-$a.git"
	git -C "copy-$a.git" fast-import --quiet <stream
	git -C "copy-$a.git" repack -q -a -d
	refs_of "copy-$a.git" >"want-$a.refs"
	objects_of "copy-$a.git" >"want-$a.objs"
done
cp -R copy-sha256.git srv/s256.git
cp -R copy-sha1.git srv/s1.git
touch srv/s256.git/git-daemon-export-ok srv/s1.git/git-daemon-export-ok
check "sha256 storage: compat build --object-format=sha1 --view-pack" \
	"$PACKWIRE" -C srv/s256.git compat build -q --object-format=sha1 --view-pack
check "sha1 storage: compat build --object-format=sha256 --view-pack" \
	"$PACKWIRE" -C srv/s1.git compat build -q --object-format=sha256 --view-pack
for R in s256 s1; do
	check "$R: compat-view/current names a generation" \
		test -d "srv/$R.git/objects/compat-view/$(cut -d' ' -f3 "srv/$R.git/objects/compat-view/current")/pack"
	"$PACKWIRE" -C "srv/$R.git" compat verify >verify.out 2>&1 || true
	contains "$R: compat verify checks the stored view" verify.out "view pack pack-"
done
W_OF_s256=sha1 W_OF_s1=sha256
vpack() { ls "$T"/srv/$1.git/objects/compat-view/"$(cut -d' ' -f3 "$T/srv/$1.git/objects/compat-view/current")"/pack/*.pack; }
check "sha1 view: stock git verify-pack reads the stored pack" \
	git verify-pack "$(vpack s256)"
# the stored pack's files in a repository of their own: git checks the bitmap
for R in s256 s1; do
	eval "W=\$W_OF_$R"
	git init -q --bare --object-format="$W" "bm-$W.git"
	cp "$(dirname "$(vpack $R)")"/pack-* "bm-$W.git/objects/pack/"
	check "$W view: stock git's rev-list --test-bitmap over the stored pack" \
		git -C "bm-$W.git" rev-list --test-bitmap "$(grep refs/heads/main "want-$W.refs" | cut -d' ' -f1)"
done

# same_copy DESC CLONE ALGO: the clone is ALGO's copy, exactly
same_copy() {
	local desc=$1 c=$2 a=$3
	refs_of "$c" >got.refs
	same_file "$desc: for-each-ref = the $a copy's" "want-$a.refs" got.refs
	objects_of "$c" >got.objs
	same_file "$desc: rev-list --objects --all = the $a copy's" "want-$a.objs" got.objs
	check "$desc: fsck --strict" fsck_ok "$c"
}

# reused DESC ERRFILE: the server said it sent entries of the stored pack
reused() { contains "$1: served from the stored pack (pack-reused)" "$2" "pack-reused"; \
	check "$1: pack-reused is not 0" grep -qE 'pack-reused [1-9]' "$2"; }

# trace_is DESC TRACEFILE VALUE: upload-pack's compat-view event
trace_is() { contains "$1: trace2 compat-view=$3" "$2" "\"key\":\"compat-view\",\"value\":\"$3\""; }

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

# ---- clones ------------------------------------------------------------
for R in s256 s1; do
	eval "W=\$W_OF_$R"
	UP="$PACKWIRE upload-pack --object-format=$W"
	for v in 0 2; do
		rm -rf clone.git trace.json
		GIT_TRACE2_EVENT="$T/trace.json" git -c protocol.version=$v clone --mirror --progress \
			--upload-pack="$UP" "file://$T/srv/$R.git" clone.git 2>err
		same_copy "file://, $R as $W, v$v" clone.git "$W"
		trace_is "file://, $R as $W, v$v" trace.json stored-pack
		reused "file://, $R as $W, v$v" err
	done
	urls="git://127.0.0.1:$DP/$R.git@$W http://127.0.0.1:$SP/$R.git@$W"
	[ -z "$have_httpd" ] || urls="$urls http://127.0.0.1:$HTTPD_PORT/pw-open/$R.git@$W"
	for url in $urls; do
		rm -rf clone.git
		git -c protocol.version=2 clone --mirror --progress "$url" clone.git 2>err
		same_copy "${url%%:*} ${url##*/}" clone.git "$W"
		reused "${url%%:*} ${url##*/}" err
	done
done

# ---- fetches: a client 30 commits behind on main ------------------------
for R in s256 s1; do
	eval "W=\$W_OF_$R"
	rm -rf old.git trace.json
	git clone -q --mirror "copy-$W.git" old.git
	git -C old.git update-ref refs/heads/main refs/heads/main~30
	git -C old.git tag -d v119 >/dev/null
	git -C old.git reflog expire --expire=now --all
	git -C old.git gc -q --prune=now
	check "$R as $W: the old client lacks objects" \
		test "$(objects_of old.git | wc -l)" -lt "$(wc -l <"want-$W.objs")"
	GIT_TRACE2_EVENT="$T/trace.json" git -C old.git -c protocol.version=2 fetch --progress \
		--upload-pack="$PACKWIRE upload-pack --object-format=$W" "file://$T/srv/$R.git" \
		'+refs/*:refs/*' 2>err
	same_copy "fetch from $R as $W" old.git "$W"
	trace_is "fetch from $R as $W" trace.json stored-pack
	reused "fetch from $R as $W" err
	rm -rf old.git
	git clone -q --mirror "copy-$W.git" old.git
	git -C old.git update-ref refs/heads/side refs/heads/side~5
	git -C old.git fetch -q "git://127.0.0.1:$DP/$R.git@$W" '+refs/*:refs/*'
	same_copy "git:// fetch from $R as $W" old.git "$W"
done

# ---- pushes from both sides ----------------------------------------------
# A native push into s256.git (from a sha256 work tree) and a push into its
# sha1 view (from a sha1 work tree): afterwards the stored pack lacks them,
# verify still passes, the requests it cannot answer are translated, and
# compat build (native side) / repack (view side) bring it up to date.
view_has_refs() { # R W: the view clone's refs are the map's of R's refs
	local R=$1 W=$2
	"$PACKWIRE" -C "srv/$R.git" show-ref --heads --tags | LC_ALL=C sort >st.refs
	while read -r o r; do
		echo "$("$PACKWIRE" -C "srv/$R.git" compat lookup "$o") $r"
	done <st.refs | LC_ALL=C sort >mapped.refs
	refs_of clone.git >got.refs
	cmp -s mapped.refs got.refs
}
clone_trace() { # R W: clone the view over file:// with the trace
	rm -rf clone.git trace.json
	GIT_TRACE2_EVENT="$T/trace.json" git clone -q --mirror \
		--upload-pack="$PACKWIRE upload-pack --object-format=$2" "file://$T/srv/$1.git" clone.git
}
for R in s256 s1; do
	eval "W=\$W_OF_$R"
	S=sha256
	[ "$R" = s1 ] && S=sha1
	old_gen=$(cat "srv/$R.git/objects/compat-view/current")
	# native push
	rm -rf wn-$R
	git clone -q "copy-$S.git" wn-$R
	(cd wn-$R && echo native >>dir0/file0.txt && git commit -qam "native push" &&
		git push -q --receive-pack="$PACKWIRE receive-pack" "file://$T/srv/$R.git" HEAD:refs/heads/main)
	check "$R: native push leaves the stored pack as it was" \
		test "$(cat "srv/$R.git/objects/compat-view/current")" = "$old_gen"
	check "$R: compat verify after the native push" "$PACKWIRE" -C "srv/$R.git" compat verify
	clone_trace "$R" "$W"
	trace_is "$R: clone after the native push" trace.json translated
	check "$R: that clone has the map's refs" view_has_refs "$R" "$W"
	check "$R: that clone is fsck-clean" fsck_ok clone.git
	# push into the view
	rm -rf wv
	git clone -q --upload-pack="$PACKWIRE upload-pack --object-format=$W" \
		"file://$T/srv/$R.git" wv
	(cd wv && echo view >>dir1/file1.txt && git commit -qam "view push" &&
		git push -q --receive-pack="$PACKWIRE receive-pack --object-format=$W" \
			"file://$T/srv/$R.git" HEAD:refs/heads/main)
	check "$R: compat verify after the push into the view" "$PACKWIRE" -C "srv/$R.git" compat verify
	# compat build rewrites the stored pack (one exists): served from it again
	check "$R: compat build rewrites the stored view" "$PACKWIRE" -C "srv/$R.git" compat build -q
	check "$R: a new generation" \
		test "$(cat "srv/$R.git/objects/compat-view/current")" != "$old_gen"
	check "$R: the old generation is removed" \
		test "$(ls "srv/$R.git/objects/compat-view" | wc -l)" = 2
	"$PACKWIRE" -C "srv/$R.git" compat verify >verify.out 2>&1 || true
	contains "$R: compat verify after the rewrite" verify.out "view pack pack-"
	clone_trace "$R" "$W"
	trace_is "$R: clone after compat build" trace.json stored-pack
	check "$R: that clone has the map's refs" view_has_refs "$R" "$W"
	check "$R: that clone is fsck-clean" fsck_ok clone.git
	check "$R: that clone has the pushed view commit" \
		test "$(git -C clone.git rev-parse refs/heads/main)" = "$(git -C wv rev-parse HEAD)"
	# another view push, then repack -a -d rewrites it
	(cd wv && echo again >>dir2/file2.txt && git commit -qam "view push 2" &&
		git push -q --receive-pack="$PACKWIRE receive-pack --object-format=$W" \
			"file://$T/srv/$R.git" HEAD:refs/heads/main)
	gen=$(cat "srv/$R.git/objects/compat-view/current")
	check "$R: repack -a -d" "$PACKWIRE" -C "srv/$R.git" repack -a -d -q
	check "$R: repack rewrote the stored view" \
		test "$(cat "srv/$R.git/objects/compat-view/current")" != "$gen"
	check "$R: compat verify after repack" "$PACKWIRE" -C "srv/$R.git" compat verify
	clone_trace "$R" "$W"
	trace_is "$R: clone after repack" trace.json stored-pack
	check "$R: that clone has the map's refs" view_has_refs "$R" "$W"
	check "$R: that clone is fsck-clean" fsck_ok clone.git
done

# ---- a rewrite killed before it publishes: the old generation stays -------
for R in s256 s1; do
	eval "W=\$W_OF_$R"
	S=sha256
	[ "$R" = s1 ] && S=sha1
	gen=$(cat "srv/$R.git/objects/compat-view/current")
	(cd wn-$R && echo other >>dir3/file3.txt && git commit -qam "other branch")
	git -C wn-$R push -q --receive-pack="$PACKWIRE receive-pack" "file://$T/srv/$R.git" \
		HEAD:refs/heads/other
	rc=0
	PACKWIRE_TEST_COMPAT_VIEW_KILL=1 "$PACKWIRE" -C "srv/$R.git" compat build -q 2>/dev/null ||
		rc=$?
	check "$R: the killed build died by SIGKILL" test "$rc" = 137
	check "$R: current still names the old generation" \
		test "$(cat "srv/$R.git/objects/compat-view/current")" = "$gen"
	"$PACKWIRE" -C "srv/$R.git" compat verify >verify.out 2>&1 || true
	contains "$R: compat verify: the old generation is whole" verify.out \
		"view pack pack-$(echo "$gen" | cut -d' ' -f2) ok"
	check "$R: the killed writer's generation is left behind" \
		test "$(ls -d "srv/$R.git/objects/compat-view"/g-* | wc -l)" = 2
	rm -rf clone.git trace.json
	GIT_TRACE2_EVENT="$T/trace.json" git clone -q --bare --single-branch --branch main \
		--upload-pack="$PACKWIRE upload-pack --object-format=$W" "file://$T/srv/$R.git" clone.git
	trace_is "$R: a clone of main after the kill" trace.json stored-pack
	check "$R: that clone is fsck-clean" fsck_ok clone.git
	check "$R: the killed writer's lock is left (as Git's)" \
		test -e "srv/$R.git/objects/compat-view.lock"
	rm -f "srv/$R.git/objects/compat-view.lock"
	check "$R: the next build publishes and cleans up" "$PACKWIRE" -C "srv/$R.git" compat build -q
	check "$R: one generation left" test "$(ls "srv/$R.git/objects/compat-view" | wc -l)" = 2
done

# ---- damaged and stale stored packs ---------------------------------------
cp -R srv/s256.git bad.git
p=$(ls bad.git/objects/compat-view/*/pack/*.pack)
chmod u+w "$p"
printf '\377' | dd of="$p" bs=1 seek=200 conv=notrunc 2>/dev/null
check_fails "a damaged stored pack fails compat verify" "$PACKWIRE" -C bad.git compat verify
rm -rf clone.git trace.json
GIT_TRACE2_EVENT="$T/trace.json" git clone -q --mirror \
	--upload-pack="$PACKWIRE upload-pack --object-format=sha1" "file://$T/bad.git" clone.git \
	2>/dev/null && not_ok "a damaged stored pack: the clone fails" ||
	ok "a damaged stored pack: the clone fails (its pack is sent as it is, as natively)"
# the same pack again, in a new generation: compat build repairs it
check "compat build over a damaged stored pack" "$PACKWIRE" -C bad.git compat build -q
check "compat verify after that build" "$PACKWIRE" -C bad.git compat verify
check "the same pack name as before" test -n "$(ls bad.git/objects/compat-view/*/pack/"$(basename "$p")")"
rm -rf bad.git
# the stored view of another history (same algorithms): stale
cp -R srv/s256.git stale.git
git init -q --bare --object-format=sha256 other.git
blob=$(echo other | git -C other.git hash-object -w --stdin)
tree=$(printf '100644 blob %s\tf\n' "$blob" | git -C other.git mktree)
git -C other.git update-ref refs/heads/main "$(git -C other.git commit-tree -m other "$tree")"
"$PACKWIRE" -C other.git compat build -q --object-format=sha1 --view-pack
rm -rf stale.git/objects/compat-view
cp -R other.git/objects/compat-view stale.git/objects/compat-view
"$PACKWIRE" -C stale.git compat verify >verify.out 2>&1 && not_ok "a foreign stored pack fails compat verify" ||
	ok "a foreign stored pack fails compat verify"
contains "compat verify names the stale view" verify.out "stale"
rm -rf clone.git trace.json
GIT_TRACE2_EVENT="$T/trace.json" git clone -q --mirror \
	--upload-pack="$PACKWIRE upload-pack --object-format=sha1" "file://$T/stale.git" clone.git
trace_is "a foreign stored pack is not served" trace.json translated
check "that clone is fsck-clean" fsck_ok clone.git
# --no-view-pack removes it; serving translates again
check "compat build --no-view-pack" "$PACKWIRE" -C stale.git compat build -q --no-view-pack
check "the stored view is gone" test ! -e stale.git/objects/compat-view

# a repository without refs: nothing to store, not an error
git init -q --bare --object-format=sha256 empty.git
check "an empty repository: compat build --view-pack succeeds" \
	"$PACKWIRE" -C empty.git compat build -q --object-format=sha1 --view-pack
check "an empty repository: no stored view" test ! -e empty.git/objects/compat-view/current

daemon_logs_clean
serve_logs_clean pws
if [ -n "$have_httpd" ]; then
	check_fails "http-backend: no sanitizer report in Apache's error log" \
		grep -q Sanitizer "$HTTPD_DIR/error.log"
fi
finish
