#!/usr/bin/env bash
# A request that read compat-view/current just before a rewrite removed that
# generation (docs/compat-map.md, "Readers and rewrites"): upload-pack had
# the stored view's odb but had not opened its pack and bitmap yet. It reads
# `current` once more and serves the new generation's stored pack, not a
# per-request translation, and the client gets what it was advertised.
# The test hook PW_TEST_VIEW_OPENED (tests/hooks/view-open.c, in
# packwire-test-hooks) stops the request at that moment while a push and a
# `compat build` publish a new generation. Both storages: SHA-256 served as
# SHA-1, SHA-1 served as SHA-256.
. "$(dirname "$0")/lib.sh"
cd "$T"

HOOKS=${PACKWIRE_TEST_HOOKS:?packwire-test-hooks is needed}
refs_of() { git --git-dir="$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
other() { [ "$1" = sha1 ] && echo sha256 || echo sha1; }
# commits DIR FROM TO: commits FROM..TO-1, three files changed each
commits() {
	local i
	for i in $(seq "$2" $(($3 - 1))); do
		for f in a b c; do
			seq "$i" $((i + 40)) >"$1/$f$((i % 4))"
		done
		git -C "$1" add -A
		git -C "$1" commit -q -m "change $i"
	done
}
# wait_for FILE PID: until FILE exists (10 s at most, or PID ended)
wait_for() {
	local n=0
	while [ ! -e "$1" ] && [ $n -lt 100 ] && kill -0 "$2" 2>/dev/null; do
		sleep 0.1
		n=$((n + 1))
	done
	[ -e "$1" ]
}

for S in sha256 sha1; do
	W=$(other $S)
	git init -q --object-format=$S "src-$S"
	commits "src-$S" 0 30
	git -C "src-$S" tag -a -m rel v1 HEAD~5
	git clone -q --bare "src-$S" "srv-$S.git"
	check "$S: compat build --object-format=$W --view-pack" \
		"$PACKWIRE" -C "srv-$S.git" compat build -q --object-format=$W --view-pack
	cur="srv-$S.git/objects/compat-view/current"
	gen=$(cut -d' ' -f3 "$cur")
	# what the client is advertised: the refs before the push
	git clone -q --mirror --upload-pack="$PACKWIRE upload-pack --object-format=$W" \
		"file://$T/srv-$S.git" "want-$S.git"
	refs_of "want-$S.git" >"want-$S.refs"

	mkdir "hk-$S" && mkfifo "hk-$S/go"
	rm -f "trace-$S.json"
	PW_TEST_VIEW_OPENED="$T/hk-$S" GIT_TRACE2_EVENT="$T/trace-$S.json" \
		git clone -q --mirror --upload-pack="$HOOKS upload-pack --object-format=$W" \
		"file://$T/srv-$S.git" "clone-$S.git" 2>"err-$S" &
	pid=$!
	if ! wait_for "hk-$S/opened" $pid; then
		not_ok "$S: the request stopped with the view's odb open"
		echo go >"hk-$S/go" &
		wait $pid || true
		continue
	fi
	ok "$S: the request stopped with the view's odb open"
	# a push and a rebuild publish a new generation and remove the old
	commits "src-$S" 30 35
	check "$S: a push meanwhile" \
		git -C "src-$S" push -q --receive-pack="$PACKWIRE receive-pack" \
		"file://$T/srv-$S.git" main
	check "$S: compat build meanwhile" "$PACKWIRE" -C "srv-$S.git" compat build -q
	check "$S: ... published a new generation" test "$(cut -d' ' -f3 "$cur")" != "$gen"
	check "$S: ... and removed the one the request read" \
		test ! -e "srv-$S.git/objects/compat-view/$gen"
	echo go >"hk-$S/go"
	rc=0
	wait $pid || rc=$?
	check "$S: the clone succeeds" test "$rc" = 0
	[ "$rc" = 0 ] || sed 's/^/    /' "err-$S" | head -5
	contains "$S: served from the new generation's stored pack" "trace-$S.json" \
		'"key":"compat-view","value":"stored-pack"'
	refs_of "clone-$S.git" >"got-$S.refs"
	same_file "$S: the clone has the refs it was advertised" "want-$S.refs" "got-$S.refs"
	check "$S: ... of its algorithm" \
		test "$(git --git-dir="clone-$S.git" rev-parse --show-object-format)" = "$W"
	check "$S: ... fsck --strict clean" git --git-dir="clone-$S.git" fsck --strict --no-progress
done
finish
