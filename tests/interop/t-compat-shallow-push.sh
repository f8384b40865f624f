#!/usr/bin/env bash
# Shallow pushes into the other algorithm's view (receive-pack
# --object-format=W into a repository stored in S), sha256 storage with
# sha1 clients and the reverse, against what stock git does natively with
# the same history (a copy in W, git receive-pack) -- Git's t5537 rules:
#  - a push from a shallow clone of the view whose history joins ours is
#    accepted (the client's shallow lines arrive in W and are translated),
#    over file://, through `packwire daemon` (git://.../REPO@W) and
#    `packwire serve` (http://.../REPO@W);
#  - a push that needs a shallow commit the server lacks is refused
#    ("shallow update not allowed") without receive.shallowUpdate, nothing
#    written; with it, the commit joins the shallow file (in S) when its
#    parents are here;
#  - when its parents are nowhere here, the commit has no S id: refused
#    even with receive.shallowUpdate (stock git would take it), saying why,
#    nothing written; a ref of the same push that does not need it goes in;
#  - a push into a shallow storage repository, and the shallow clone
#    fetching back what it pushed;
#  - raw requests: a shallow line of the storage algorithm's length or not
#    hex is malformed (nothing written); one neither pushed nor known is
#    ignored, as Git ignores the "theirs" it did not receive.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
trap 'stop_daemons; stop_serves' EXIT

# state DIR: checksums of every file under objects/ and refs/, packed-refs, shallow
state() {
	(cd "$1" && { find objects refs packed-refs shallow -type f 2>/dev/null || true; } |
		LC_ALL=C sort | xargs -r sha256sum)
}
srev() { "$PACKWIRE" -C "$1" rev-parse --verify -q "$2"; }
lookup() { "$PACKWIRE" -C "$1" compat lookup "$2"; }
# the storage repository's shallow file, in W ids, sorted
shallow_in_w() {
	[ -e "$1/shallow" ] || return 0
	"$PACKWIRE" -C "$1" compat lookup --stdin <"$1/shallow" | LC_ALL=C sort
}
fsck_storage() {
	rm -rf "$T/fsck.git"
	cp -r "$1" "$T/fsck.git"
	git config -f "$T/fsck.git/config" --unset extensions.compatobjectformat
	fsck_ok "$T/fsck.git"
}
commit() { echo "$2" >"$1/f" && git -C "$1" add f && git -C "$1" commit -q -m "$2"; }

run_case() {
	local S=$1 W=$2 d=$T/$1
	local UP="$PACKWIRE upload-pack --object-format=$W"
	local RP="$PACKWIRE receive-pack --object-format=$W"
	rm -rf "$d"
	mkdir -p "$d"
	git init -q --object-format="$S" "$d/work"
	for i in 1 2 3 4 5; do commit "$d/work" "c$i"; done
	git clone -q --bare "$d/work" "$d/srv.git"
	check "$S: compat build --object-format=$W" \
		"$PACKWIRE" -C "$d/srv.git" compat build -q --object-format="$W"
	# the same history in W, pushed to by stock git natively: the reference
	git init -q --bare --object-format="$W" "$d/ref.git"
	git -C "$d/work" fast-export --all | git -C "$d/ref.git" fast-import --quiet
	check "$S/$W: the W copy has the view's ids" test "$(git -C "$d/ref.git" rev-parse main)" = \
		"$(lookup "$d/srv.git" "$(srev "$d/srv.git" main)")"

	# ---- a shallow clone of the view pushes on top of our history -------
	check "$S/$W: shallow clone of the view" \
		git clone -q --depth=2 --upload-pack="$UP" "file://$d/srv.git" "$d/sh"
	check "$S/$W: the clone is shallow, in $W" test -s "$d/sh/.git/shallow"
	commit "$d/sh" s1
	commit "$d/sh" s2
	check "$S/$W: push from the shallow clone" \
		git -C "$d/sh" push -q --receive-pack="$RP" origin main
	check "$S/$W: main stored in $S maps to the pushed id" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" main)")" = "$(git -C "$d/sh" rev-parse main)"
	check "$S/$W: the storage repository did not become shallow" test ! -e "$d/srv.git/shallow"
	check "$S/$W: fsck --strict of the storage repository" fsck_storage "$d/srv.git"
	git -C "$d/sh" checkout -q -b side HEAD~1
	commit "$d/sh" side
	check "$S/$W: a new branch from the shallow clone" \
		git -C "$d/sh" push -q --receive-pack="$RP" origin side
	check "$S/$W: the branch maps" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" side)")" = "$(git -C "$d/sh" rev-parse side)"
	git -C "$d/sh" checkout -q main
	# over protocol v1 and through a delete too
	commit "$d/sh" s3
	check "$S/$W: push from the shallow clone over protocol v1" \
		git -C "$d/sh" -c protocol.version=1 push -q --receive-pack="$RP" origin main :side
	check "$S/$W: ... the delete too" test -z "$(srev "$d/srv.git" refs/heads/side)"
	check "$S/$W: the shallow clone fetches back what it pushed" \
		git -C "$d/sh" fetch -q --upload-pack="$UP" origin
	check "$S/$W: ... unchanged" test "$(git -C "$d/sh" rev-parse origin/main)" = "$(git -C "$d/sh" rev-parse main)"
	check "$S/$W: fsck of the shallow clone" fsck_ok "$d/sh"
	# through the daemon, the view's name
	touch "$d/srv.git/git-daemon-export-ok"
	commit "$d/sh" over-daemon
	check "$S/$W: shallow push to git://.../srv.git@$W" \
		git -C "$d/sh" push -q "git://127.0.0.1:$DP/$S/srv.git@$W" main
	check "$S/$W: ... maps" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" main)")" = "$(git -C "$d/sh" rev-parse main)"
	# over HTTP (packwire serve: stateless, the shallow lines in the POST)
	git config -f "$d/srv.git/config" http.receivepack true
	commit "$d/sh" over-http
	check "$S/$W: shallow push to http://.../srv.git@$W" \
		git -C "$d/sh" push -q "http://127.0.0.1:$SERVE_PORT/$S/srv.git@$W" main
	check "$S/$W: ... maps" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" main)")" = "$(git -C "$d/sh" rev-parse main)"
	check "$S/$W: ... the storage repository is still not shallow" test ! -e "$d/srv.git/shallow"
	git -C "$d/ref.git" fetch -q "$d/sh" main:main 2>/dev/null || true # keep the reference in step

	# ---- a shallow commit the server lacks, its parents here ------------
	# (a full W clone with two commits on top, cloned --depth=2: the
	# shallow root's parent is our main)
	git clone -q --upload-pack="$UP" "file://$d/srv.git" "$d/full"
	commit "$d/full" x1
	commit "$d/full" x2
	git clone -q --no-local --depth=2 "$d/full" "$d/sh2"
	check "$S/$W: the second clone's shallow root is x1" \
		test "$(cat "$d/sh2/.git/shallow")" = "$(git -C "$d/full" rev-parse HEAD~1)"
	git -C "$d/ref.git" config receive.shallowUpdate false
	st=0
	git -C "$d/sh2" push -q "$d/ref.git" HEAD:refs/heads/x 2>/dev/null || st=1
	check "$S/$W: stock git natively refuses it" test $st = 1
	state "$d/srv.git" >"$T/before"
	check_fails "$S/$W: refused without receive.shallowUpdate" \
		git -C "$d/sh2" push --receive-pack="$RP" "file://$d/srv.git" HEAD:refs/heads/x 2>"$T/err"
	contains "$S/$W: ... as Git says" "$T/err" "shallow update not allowed"
	state "$d/srv.git" >"$T/after"
	same_file "$S/$W: ... nothing written" "$T/before" "$T/after"
	git -C "$d/ref.git" config receive.shallowUpdate true
	git config -f "$d/srv.git/config" receive.shallowUpdate true
	check "$S/$W: stock git natively takes it with receive.shallowUpdate" \
		git -C "$d/sh2" push -q "$d/ref.git" HEAD:refs/heads/x
	check "$S/$W: taken with receive.shallowUpdate" \
		git -C "$d/sh2" push -q --receive-pack="$RP" "file://$d/srv.git" HEAD:refs/heads/x
	check "$S/$W: ... x maps to the pushed id" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" x)")" = "$(git -C "$d/sh2" rev-parse HEAD)"
	check "$S/$W: ... the shallow file names the same commit as stock git's (in $S)" \
		test "$(shallow_in_w "$d/srv.git")" = "$(LC_ALL=C sort "$d/ref.git/shallow")"
	check "$S/$W: ... fsck --strict (shallow)" fsck_storage "$d/srv.git"
	# the storage repository is shallow now: advertised in W
	$RP --advertise-refs "$d/srv.git" >"$T/adv" </dev/null
	contains "$S/$W: the shallow commit is advertised in $W" "$T/adv" "shallow $(cat "$d/sh2/.git/shallow")"
	# a push from a full clone into the (now shallow) storage repository
	commit "$d/full" x3
	check "$S/$W: push from a full clone into the shallow repository" \
		git -C "$d/full" push -q --receive-pack="$RP" origin HEAD:refs/heads/x
	check "$S/$W: ... maps" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" x)")" = "$(git -C "$d/full" rev-parse HEAD)"
	git config -f "$d/srv.git/config" receive.shallowUpdate false

	# ---- a shallow root whose parents are nowhere here ------------------
	git init -q --object-format="$W" "$d/other"
	for i in a b c; do commit "$d/other" "$i"; done
	git clone -q --no-local --depth=2 "$d/other" "$d/sh3"
	state "$d/srv.git" >"$T/before"
	check_fails "$S/$W: unrelated shallow history: refused" \
		git -C "$d/sh3" push --receive-pack="$RP" "file://$d/srv.git" HEAD:refs/heads/other 2>"$T/err"
	contains "$S/$W: ... shallow update not allowed" "$T/err" "shallow update not allowed"
	state "$d/srv.git" >"$T/after"
	same_file "$S/$W: ... nothing written" "$T/before" "$T/after"
	git config -f "$d/srv.git/config" receive.shallowUpdate true
	check_fails "$S/$W: refused even with receive.shallowUpdate" \
		git -C "$d/sh3" push --receive-pack="$RP" "file://$d/srv.git" HEAD:refs/heads/other 2>"$T/err"
	contains "$S/$W: ... saying why" "$T/err" "has no $S id"
	contains "$S/$W: ... in the ref's status" "$T/err" "shallow update not possible across object formats"
	state "$d/srv.git" >"$T/after"
	same_file "$S/$W: ... nothing written" "$T/before" "$T/after"
	# the same push with a ref that joins our history: that one goes in
	git -C "$d/sh3" fetch -q --upload-pack="$UP" "file://$d/srv.git" main:ours 2>/dev/null ||
		git -C "$d/sh3" fetch -q --depth=1 --upload-pack="$UP" "file://$d/srv.git" main:ours
	git -C "$d/sh3" checkout -q ours
	commit "$d/sh3" joined
	check_fails "$S/$W: two refs, one cut off" \
		git -C "$d/sh3" push --receive-pack="$RP" "file://$d/srv.git" main:refs/heads/other \
		ours:refs/heads/joined 2>"$T/err"
	contains "$S/$W: ... the cut one refused" "$T/err" "shallow update not possible across object formats"
	check "$S/$W: ... the other one in" \
		test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" joined)")" = "$(git -C "$d/sh3" rev-parse ours)"
	check_fails "$S/$W: ... no ref for the cut one" srev "$d/srv.git" refs/heads/other
	check "$S/$W: ... the map verifies" sh -c '"$1" -C "$2" compat verify >/dev/null' _ "$PACKWIRE" "$d/srv.git"
	check "$S/$W: fsck --strict at the end" fsck_storage "$d/srv.git"

	# ---- raw requests: malformed and unknown shallow lines --------------
	local known unknown storage_len
	known=$(git -C "$d/sh" rev-parse main)
	unknown=$(echo "no such commit" | git -C "$d/sh" hash-object --stdin)
	storage_len=$(srev "$d/srv.git" main)
	git -C "$d/sh" pack-objects -q --stdout </dev/null >"$T/empty.pack"
	req() { # NAME SHALLOW: push known to NAME with one shallow line
		python3 "$PW_SRC/tests/interop/push-req.py" --shallow "$2" --cmd "zero $known refs/heads/$1" \
			--caps "report-status object-format=$W" --pack "$T/empty.pack" -- \
			$RP "$d/srv.git" >"$T/raw.out" 2>&1 || true
	}
	state "$d/srv.git" >"$T/before"
	req raw1 "$storage_len"
	contains "$S/$W: a shallow line with a $S-length id is malformed" "$T/raw.out" \
		"expected shallow sha, got a malformed line"
	req raw2 "$(echo "$known" | tr 0-9a-f g-v)"
	contains "$S/$W: a shallow line that is not hex is malformed" "$T/raw.out" \
		"expected shallow sha, got a malformed line"
	state "$d/srv.git" >"$T/after"
	same_file "$S/$W: malformed shallow lines: nothing written" "$T/before" "$T/after"
	req raw3 "$unknown"
	contains "$S/$W: a shallow commit neither pushed nor known is ignored" "$T/raw.out" "ok refs/heads/raw3"
	check "$S/$W: ... the ref maps" test "$(lookup "$d/srv.git" "$(srev "$d/srv.git" raw3)")" = "$known"
	req raw4 "$known"
	contains "$S/$W: a shallow commit we have (ours) changes nothing" "$T/raw.out" "ok refs/heads/raw4"
}

DP=$(free_port)
start_daemon pwd pw "$DP" --base-path="$T" --enable=receive-pack
start_serve pws "$T" --quiet
run_case sha256 sha1
run_case sha1 sha256
daemon_logs_clean
serve_logs_clean pws
finish
