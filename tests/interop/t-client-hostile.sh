#!/usr/bin/env bash
# A hostile or broken server (a python pkt-line program used as
# --upload-pack): advertisements with mixed id lengths, an object-format that
# does not match the ids, packs missing the wanted objects or one object deep
# in their history (caught without the pack's help), truncated packs,
# side-band errors, a server stopping mid-stream. Each is a clear error; no
# ref is written and no pack (or temporary pack) is left in objects/pack.
# Endless progress on band 2 is cut and a pack header claiming 2^32-1
# objects refused at once, each with a bound on peak memory.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

HOSTILE="python3 $PW_SRC/tests/interop/data/hostile-upload-pack.py"
cd "$T"
for algo in sha1 sha256; do
	make_repo "srv-$algo" "$algo" >/dev/null 2>&1
	git init -q --object-format=$algo "local-$algo"
	git -C "local-$algo" commit -q --allow-empty -m "local history"
	git -C "local-$algo" gc -q
done

# expect_failure ALGO MODE MESSAGE: fetch fails with MESSAGE, nothing changes
expect_failure() {
	local algo=$1 mode=$2 msg=$3 rc
	state "local-$algo" >before
	ls "local-$algo/.git/objects/pack" >packs.before
	(cd "local-$algo" && "$PACKWIRE" fetch --upload-pack="$HOSTILE $mode" \
		"$T/srv-$algo" 'refs/heads/*:refs/remotes/x/*') 2>err && rc=0 || rc=$?
	check "$algo $mode: fails" test "$rc" -ne 0
	contains "$algo $mode: message" err "$msg"
	state "local-$algo" >after
	same_file "$algo $mode: refs and objects unchanged" before after
	ls "local-$algo/.git/objects/pack" >packs.after
	same_file "$algo $mode: no pack or temporary file left" packs.before packs.after
	check "$algo $mode: no FETCH_HEAD" test ! -e "local-$algo/.git/FETCH_HEAD"
	# a clone fails too and leaves nothing behind
	"$PACKWIRE" clone -q --upload-pack="$HOSTILE $mode" "$T/srv-$algo" "clone-$algo-$mode" \
		2>/dev/null && rc=0 || rc=$?
	check "$algo $mode: clone fails" test "$rc" -ne 0
	check "$algo $mode: clone removed its directory" test ! -e "clone-$algo-$mode"
}

for algo in sha1 sha256; do
	expect_failure $algo mixed-oids "mixed object formats"
	expect_failure $algo format-mismatch "announced object-format"
	expect_failure $algo unknown-format "unknown object format 'md5'"
	expect_failure $algo missing-objects "remote did not send all necessary objects"
	# complete-looking packs with one object missing deep in the history
	expect_failure $algo missing-blob "remote did not send all necessary objects"
	expect_failure $algo missing-tree "remote did not send all necessary objects"
	expect_failure $algo missing-commit "remote did not send all necessary objects"
	expect_failure $algo truncated-pack "index-pack failed"
	expect_failure $algo sideband-error "remote error: error: upload-pack went wrong"
	expect_failure $algo stop-mid-stream "the remote end hung up unexpectedly"
	expect_failure $algo bad-checksum "index-pack failed"
done
# a sha256 repository and a v2 server without object-format (sha1 only)
expect_failure sha256 v2-no-format "the server does not support algorithm 'sha256'"

# issue 26: 256 MiB of side-band progress that never ends its line, then a
# good pack: the line is cut at 64 KiB and the rest dropped, so the fetch
# works with a small peak RSS (a resource bound, with room: about 15 MB
# here, over 256 MB before) and a bounded stderr
for algo in sha1 sha256; do
	/usr/bin/time -f %M -o rss "$PACKWIRE" -C "local-$algo" fetch \
		--upload-pack="$HOSTILE endless-progress" "$T/srv-$algo" 'refs/heads/*:refs/remotes/y/*' \
		2>err && rc=0 || rc=$?
	check "$algo endless progress: fetch works" test "$rc" = 0
	check "$algo endless progress: the branch is there" \
		test "$(git -C "local-$algo" rev-parse refs/remotes/y/main)" = "$(git -C "srv-$algo" rev-parse main)"
	check "$algo endless progress: fsck" fsck_ok "local-$algo"
	rss=$(tail -1 rss)
	check "$algo endless progress: peak RSS $rss KB stays under 150 MB" test "$rss" -lt 153600
	contains "$algo endless progress: shown, cut" err "remote: aaaaaaaa"
	check "$algo endless progress: stderr $(stat -c %s err) bytes, one cut line" \
		test "$(stat -c %s err)" -lt 200000
done

# issue 26: a pack header claiming 2^32-1 objects, followed by 48 MiB of
# the smallest entries: refused from the header, before an object is read
# (as git refuses it), with no memory spent on the count (a resource
# bound: about 15 MB here, over 300 MB before); with fetch.maxPackSize the
# count is held to what that many bytes can carry, and the pack to its size
for algo in sha1 sha256; do
	# an empty repository: it must want the pack
	git init -q --object-format=$algo "fresh-$algo"
	state "fresh-$algo" >before
	/usr/bin/time -f %M -o rss "$PACKWIRE" -C "fresh-$algo" fetch \
		--upload-pack="$HOSTILE huge-count" "$T/srv-$algo" 'refs/heads/*:refs/remotes/z/*' \
		2>err && rc=0 || rc=$?
	check "$algo huge count: fetch fails" test "$rc" -ne 0
	contains "$algo huge count: refused from the header" err \
		"pack header claims 4294967295 objects, more than the 67108864 a received pack may hold"
	rss=$(tail -1 rss)
	check "$algo huge count: peak RSS $rss KB stays under 100 MB" test "$rss" -lt 102400
	state "fresh-$algo" >after
	same_file "$algo huge count: refs and objects unchanged" before after
	"$PACKWIRE" -c fetch.maxPackSize=10m clone -q --upload-pack="$HOSTILE huge-count" \
		"$T/srv-$algo" "clone-$algo-count" 2>err && rc=0 || rc=$?
	check "$algo huge count, fetch.maxPackSize: clone fails" test "$rc" -ne 0
	contains "$algo huge count, fetch.maxPackSize: what 10 MiB can hold" err \
		"pack exceeds maximum allowed size (10485760 bytes): its header claims 4294967295 objects"
	check "$algo huge count: the clone left no directory" test ! -e "clone-$algo-count"
	(cd "fresh-$algo" && "$PACKWIRE" -c transfer.maxPackSize=1k fetch --upload-pack="$HOSTILE good" \
		"$T/srv-$algo" 'refs/heads/*:refs/remotes/z/*') 2>err && rc=0 || rc=$?
	check "$algo transfer.maxPackSize=1k: a bigger pack is refused" test "$rc" -ne 0
	contains "$algo transfer.maxPackSize=1k: Git's words" err "pack exceeds maximum allowed size (1024 bytes)"
	check "$algo transfer.maxPackSize=1k: no ref" test -z "$(git -C "fresh-$algo" for-each-ref)"
	(cd "fresh-$algo" && "$PACKWIRE" -c transfer.maxPackSize=1k -c fetch.maxPackSize=1m fetch \
		--upload-pack="$HOSTILE good" "$T/srv-$algo" 'refs/heads/*:refs/remotes/z/*') 2>err &&
		rc=0 || rc=$?
	check "$algo fetch.maxPackSize=1m wins over transfer.maxPackSize: fetched" test "$rc" = 0
	check "$algo ... fsck" fsck_ok "fresh-$algo"
done

# the control: the same program behaving well works (and falls back to v0)
(cd local-sha256 && "$PACKWIRE" fetch --upload-pack="$HOSTILE good" "$T/srv-sha256" \
	'refs/heads/*:refs/remotes/x/*') 2>/dev/null
check "well-behaved v0 server: fetch works" git -C local-sha256 rev-parse -q --verify refs/remotes/x/main >/dev/null
check "well-behaved v0 server: fsck" fsck_ok local-sha256

# an empty sha256 repository announced in v0 (capabilities^{}) clones as sha256
"$PACKWIRE" -c protocol.version=0 clone -q --upload-pack="$HOSTILE empty-v0" "$T/srv-sha256" empty256 2>/dev/null
check "v0 capabilities^{} sha256: empty sha256 clone" \
	test "$(git -C empty256 rev-parse --show-object-format)" = sha256
check "v0 capabilities^{} sha256: no refs" test -z "$(refs empty256)"
finish
