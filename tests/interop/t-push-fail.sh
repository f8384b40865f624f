#!/bin/bash
# Pushes into `packwire receive-pack` that must fail, each leaving the
# server's refs and object files exactly as they were (and no quarantine
# directory behind): wrong or unknown object format (also into an empty
# repository, also from stock git), a pack missing an object the new tip
# needs (also one object deep in the history, into an empty repository, and
# behind a dangling object the server has), a truncated pack, a corrupted pack, objects rejected by
# receive.fsckObjects, a declining pre-receive hook, --atomic with one stale
# old value, a connection cut in the middle of the pack, receive.maxInputSize.
# Requests are made by hand (push-req.py: pkt-lines + a pack from git
# pack-objects). Last, two pushes race for one ref: exactly one wins.
. "$(dirname "$0")/lib.sh"

REQ="python3 $(dirname "$0")/push-req.py"

snapshot() {
	(cd "$1" && find objects -type f | sort && git for-each-ref --format='%(objectname) %(refname)')
}
# unchanged WHAT SERVER: compare with the snapshot taken by `mark`
mark() { snapshot "$1" >"$T/before"; }
unchanged() {
	snapshot "$2" >"$T/after"
	if cmp -s "$T/before" "$T/after"; then ok "$1: refs and objects unchanged"; else
		not_ok "$1: server changed"
		diff "$T/before" "$T/after" | head || true
	fi
}
# expect WHAT FILE LINE...: each line is in the output
expect() {
	local what=$1 file=$2 l
	shift 2
	for l in "$@"; do contains "$what" "$file" "$l"; done
}

other() { [ "$1" = sha1 ] && echo sha256 || echo sha1; }

for algo in sha1 sha256; do
	D=$T/$algo
	mkdir -p "$D"
	S=$D/srv.git E=$D/empty.git C=$D/client
	make_repo "$C" "$algo" 2>/dev/null
	git init -q --bare --object-format="$algo" "$S"
	git init -q --bare --object-format="$algo" "$E"
	git -C "$C" push -q "$S" main main:refs/heads/side
	A=$(git -C "$C" rev-parse main)
	echo more >"$C/more.txt" && git -C "$C" add more.txt && git -C "$C" commit -q -m more
	B=$(git -C "$C" rev-parse main)
	printf '%s\n^%s\n' "$B" "$A" | git -C "$C" pack-objects -q --revs --stdout >"$D/good.pack"
	size=$(stat -c %s "$D/good.pack")
	caps="report-status side-band-64k object-format=$algo"
	RP="$PACKWIRE receive-pack $S"

	# the good request works (sanity check of the helper)
	cp -a "$S" "$D/copy.git"
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" -- $PACKWIRE receive-pack "$D/copy.git" >"$T/out"
	expect "$algo: a good hand-made push works" "$T/out" "unpack ok" "ok refs/heads/main"

	# object format
	o=$(other "$algo")
	for target in "$S" "$E"; do
		name=$([ "$target" = "$S" ] && echo "" || echo " (empty repository)")
		mark "$target"
		$REQ --cmd "$A $B refs/heads/main" --caps "report-status object-format=$o" --pack "$D/good.pack" \
			-- $PACKWIRE receive-pack "$target" >"$T/out" 2>"$T/err" || true
		expect "$algo: $o client refused$name" "$T/out" "ERR mismatched object format: server $algo; client $o"
		unchanged "$algo: $o client$name" "$target"
		$REQ --cmd "$A $B refs/heads/main" --caps "report-status side-band-64k object-format=md5" --pack "$D/good.pack" \
			-- $PACKWIRE receive-pack "$target" >"$T/out" 2>"$T/err" || true
		expect "$algo: unknown object format refused$name" "$T/out" "band3 unknown object format 'md5'"
		unchanged "$algo: unknown object format$name" "$target"
		# stock git client of the other algorithm
		OC=$D/client-$o
		[ -d "$OC" ] || { git init -q --object-format="$o" "$OC" && git -C "$OC" commit -q --allow-empty -m x; }
		if git -C "$OC" push --receive-pack="$PACKWIRE receive-pack" "$target" HEAD:refs/heads/main >"$T/out" 2>&1; then
			not_ok "$algo: stock $o client pushed$name"
		else
			ok "$algo: stock $o client fails$name"
		fi
		unchanged "$algo: stock $o client$name" "$target"
	done
	if [ "$algo" = sha1 ]; then
		git -C "$D/client-sha256" push --receive-pack="$PACKWIRE receive-pack" "$S" HEAD:refs/heads/main >"$T/out" 2>&1 || true
		expect "sha256 client, sha1 server: git's message" "$T/out" "the receiving end does not support this repository's hash algorithm"
	fi

	# a pack missing the tree and blob of the new commit
	printf '%s\n' "$B" | git -C "$C" pack-objects -q --stdout >"$D/commit-only.pack"
	mark "$S"
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/commit-only.pack" -- $RP >"$T/out"
	expect "$algo: missing objects" "$T/out" "unpack ok" "ng refs/heads/main missing necessary objects"
	unchanged "$algo: missing objects" "$S"

	# A pack that carries everything the tip reaches needs no history walk;
	# one that lacks a single object deep in the history must still fail,
	# into an empty repository too.
	git -C "$C" rev-list --objects "$B" | cut -d' ' -f1 | git -C "$C" pack-objects -q --stdout >"$D/full.pack"
	cp -a "$E" "$D/empty-copy.git"
	$REQ --cmd "zero $B refs/heads/main" --caps "$caps" --pack "$D/full.pack" -- \
		$PACKWIRE receive-pack "$D/empty-copy.git" >"$T/out"
	expect "$algo: complete pack into an empty repository" "$T/out" "unpack ok" "ok refs/heads/main"
	check "$algo: complete pack into an empty repository: fsck" fsck_ok "$D/empty-copy.git"
	for what in blob tree commit; do
		case $what in
		blob) drop=$(git -C "$C" rev-parse "$B:more.txt") ;;
		tree) drop=$(git -C "$C" rev-parse "$A^{tree}") ;;
		commit) drop=$A ;;
		esac
		git -C "$C" rev-list --objects "$B" | cut -d' ' -f1 | grep -v "^$drop\$" |
			git -C "$C" pack-objects -q --stdout >"$D/holey.pack"
		mark "$E"
		$REQ --cmd "zero $B refs/heads/main" --caps "$caps" --pack "$D/holey.pack" -- \
			$PACKWIRE receive-pack "$E" >"$T/out"
		expect "$algo: empty repository, pack without a $what" "$T/out" "unpack ok" \
			"ng refs/heads/main missing necessary objects"
		unchanged "$algo: empty repository, pack without a $what" "$E"
	done
	# a link to a tree the server has only as a dangling object whose blob
	# is missing: having the tree is not enough, the walk looks behind it
	ghost=$(echo "nowhere $algo" | git -C "$C" hash-object --stdin)
	gtree=$(printf '100644 blob %s\tghost\n' "$ghost" | git -C "$C" mktree --missing)
	git -C "$C" cat-file tree "$gtree" | git -C "$S" hash-object -t tree -w --literally --stdin >/dev/null
	gcommit=$(git -C "$C" commit-tree -p "$A" -m ghost "$gtree")
	printf '%s\n' "$gcommit" | git -C "$C" pack-objects -q --stdout >"$D/ghost.pack"
	mark "$S"
	$REQ --cmd "$A $gcommit refs/heads/main" --caps "$caps" --pack "$D/ghost.pack" -- $RP >"$T/out"
	expect "$algo: link to a dangling tree with a missing blob" "$T/out" "unpack ok" \
		"ng refs/heads/main missing necessary objects"
	unchanged "$algo: link to a dangling tree with a missing blob" "$S"

	# a pack that ends early (stream closed)
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" --truncate $((size - 30)) -- $RP >"$T/out"
	expect "$algo: truncated pack" "$T/out" "ng refs/heads/main unpacker error"
	unchanged "$algo: truncated pack" "$S"

	# connection cut in the middle of the pack
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" --truncate $((size / 2)) --close-early -- $RP >"$T/out" || true
	unchanged "$algo: connection cut mid-pack" "$S"

	# a damaged trailing checksum, connection kept open
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" --flip -1 -- $RP >"$T/out"
	expect "$algo: corrupt pack" "$T/out" "ng refs/heads/main unpacker error"
	unchanged "$algo: corrupt pack" "$S"

	# objects that fail fsck: an unsorted tree, a commit with a bad ident
	blob=$(git -C "$C" rev-parse HEAD:a.txt)
	tree=$(python3 -c "
import sys, binascii
b = binascii.unhexlify('$blob')
sys.stdout.buffer.write(b'100644 b\0' + b + b'100644 a\0' + b)" | git -C "$C" hash-object -t tree -w --literally --stdin)
	bad1=$(printf 'tree %s\nparent %s\nauthor A U Thor <a@b.c> 1700000000 +0000\ncommitter C O Mitter <c@d.e> 1700000000 +0000\n\nunsorted\n' \
		"$tree" "$A" | git -C "$C" hash-object -t commit -w --literally --stdin)
	bad2=$(printf 'tree %s\nparent %s\nauthor no email here 1700000000 +0000\ncommitter C O Mitter <c@d.e> 1700000000 +0000\n\nbad ident\n' \
		"$(git -C "$C" rev-parse "$A^{tree}")" "$A" | git -C "$C" hash-object -t commit -w --literally --stdin)
	git -C "$S" config receive.fsckObjects true
	for bad in "$bad1" "$bad2"; do
		printf '%s\n%s\n%s\n' "$bad" "$tree" "$blob" | git -C "$C" pack-objects -q --stdout >"$D/bad.pack"
		mark "$S"
		$REQ --cmd "$A $bad refs/heads/main" --caps "$caps" --pack "$D/bad.pack" -- $RP >"$T/out"
		expect "$algo: fsck rejects $(git -C "$C" log -1 --format=%s "$bad" 2>/dev/null || echo it)" "$T/out" \
			"ng refs/heads/main unpacker error"
		unchanged "$algo: fsck failure" "$S"
	done
	contains "$algo: fsck names the problem" "$T/out" "missingEmail: invalid author/committer line - missing email"
	git -C "$S" config --unset receive.fsckObjects
	# transfer.fsckObjects applies when receive.fsckObjects is not set, and
	# receive.fsckObjects=false overrides it
	git -C "$S" config transfer.fsckObjects true
	mark "$S"
	$REQ --cmd "$A $bad2 refs/heads/main" --caps "$caps" --pack "$D/bad.pack" -- $RP >"$T/out"
	expect "$algo: transfer.fsckObjects rejects a bad ident" "$T/out" "ng refs/heads/main unpacker error"
	unchanged "$algo: transfer.fsckObjects failure" "$S"
	git -C "$S" config receive.fsckObjects false
	cp -a "$S" "$D/nofsck.git"
	$REQ --cmd "$A $bad2 refs/heads/main" --caps "$caps" --pack "$D/bad.pack" -- $PACKWIRE receive-pack "$D/nofsck.git" >"$T/out"
	expect "$algo: receive.fsckObjects=false overrides transfer.fsckObjects" "$T/out" "ok refs/heads/main"
	git -C "$S" config --unset receive.fsckObjects
	git -C "$S" config --unset transfer.fsckObjects

	# a declining pre-receive hook (stock git push)
	printf '#!/bin/sh\necho "no pushes today"\nexit 1\n' >"$S/hooks/pre-receive"
	chmod +x "$S/hooks/pre-receive"
	mark "$S"
	git -C "$C" push --receive-pack="$PACKWIRE receive-pack" "$S" main >"$T/out" 2>&1 || true
	expect "$algo: pre-receive declines" "$T/out" "remote: no pushes today" "[remote rejected] main -> main (pre-receive hook declined)"
	unchanged "$algo: pre-receive declines" "$S"
	rm "$S/hooks/pre-receive"

	# --atomic with one stale old value (side is at A, not B)
	mark "$S"
	$REQ --cmd "$A $B refs/heads/main" --cmd "$B $B refs/heads/side" --caps "$caps atomic" --pack "$D/good.pack" -- $RP >"$T/out"
	expect "$algo: atomic with a stale ref" "$T/out" "ng refs/heads/main atomic push failure" \
		"ng refs/heads/side failed to update ref" "is at $A but expected $B"
	unchanged "$algo: atomic with a stale ref" "$S"
	# the same without atomic: main goes through
	cp -a "$S" "$D/nonatomic.git"
	$REQ --cmd "$A $B refs/heads/main" --cmd "$B $B refs/heads/side" --caps "$caps" --pack "$D/good.pack" \
		-- $PACKWIRE receive-pack "$D/nonatomic.git" >"$T/out"
	expect "$algo: non-atomic: one ref fails, one succeeds" "$T/out" "ok refs/heads/main" "ng refs/heads/side failed to update ref"
	check "$algo: non-atomic result passes fsck" fsck_ok "$D/nonatomic.git"

	# receive.maxInputSize
	git -C "$S" config receive.maxInputSize 100
	mark "$S"
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" -- $RP >"$T/out"
	expect "$algo: maxInputSize" "$T/out" "unpack pack exceeds maximum allowed size" "ng refs/heads/main unpacker error"
	unchanged "$algo: maxInputSize" "$S"
	git -C "$S" config --unset receive.maxInputSize

	# no quarantine left behind by any of the above
	if [ -n "$(find "$S/objects" -name 'tmp_objdir*')" ]; then not_ok "$algo: quarantine left behind"; else ok "$algo: no quarantine left"; fi

	# two pushes race for main: both start from A, a slow pre-receive lets
	# them overlap; exactly one wins
	R=$D/race.git
	cp -a "$S" "$R"
	printf '#!/bin/sh\nsleep 1\n' >"$R/hooks/pre-receive" && chmod +x "$R/hooks/pre-receive"
	git -C "$C" checkout -q -b race2 "$A"
	echo other >"$C/other.txt" && git -C "$C" add other.txt && git -C "$C" commit -q -m other
	B2=$(git -C "$C" rev-parse HEAD)
	git -C "$C" checkout -q main
	printf '%s\n^%s\n' "$B2" "$A" | git -C "$C" pack-objects -q --revs --stdout >"$D/race2.pack"
	$REQ --cmd "$A $B refs/heads/main" --caps "$caps" --pack "$D/good.pack" -- $PACKWIRE receive-pack "$R" >"$T/race1" &
	pid=$!
	$REQ --cmd "$A $B2 refs/heads/main" --caps "$caps" --pack "$D/race2.pack" -- $PACKWIRE receive-pack "$R" >"$T/race2"
	wait $pid
	wins=$(cat "$T/race1" "$T/race2" | grep -c '^ok refs/heads/main' || true)
	losses=$(cat "$T/race1" "$T/race2" | grep -c '^ng refs/heads/main failed to update ref' || true)
	[ "$wins" = 1 ] && [ "$losses" = 1 ] && ok "$algo: race: one winner, one loser" || {
		not_ok "$algo: race: $wins winners, $losses losers"
		cat "$T/race1" "$T/race2"
	}
	# grep the files, not `cat | grep -q`: grep -q exits at the first match,
	# cat may then die of SIGPIPE and pipefail turns the match into a failure
	grep -q "band2 error: cannot lock ref 'refs/heads/main'" "$T/race1" "$T/race2" &&
		ok "$algo: race: the loser is told why" || not_ok "$algo: race: no reason given"
	winner=$(grep -q '^ok' "$T/race1" && echo "$B" || echo "$B2")
	[ "$(git -C "$R" rev-parse main)" = "$winner" ] && ok "$algo: race: ref holds the winner" || not_ok "$algo: race: wrong ref value"
	check "$algo: race: fsck" fsck_ok "$R"
done

finish
