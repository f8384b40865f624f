#!/usr/bin/env bash
# The pack cache (issue 28): stock git clones and fetches (full, --depth=1,
# --filter=blob:none, a fetch of one new commit) over HTTP from `packwire
# serve --pack-cache`, over ssh and file:// from `packwire upload-pack` with
# uploadpack.packCache, and through Apache + `packwire http-backend`, SHA-1
# and SHA-256, protocol v0 and v2: the first request misses, the second
# hits (the server's account when it stops, GIT_TRACE2_EVENT of
# upload-pack, the entry's time of last use), and every result is
# fsck-clean with the objects of a clone made without the cache. A push
# (a commit, a tag only) is never answered with the old pack. Concurrent
# identical clones share one generation; a damaged entry (a flipped byte,
# an entry under another key's name) is found, regenerated and never sent;
# a server killed while it writes an entry leaves nothing that is served
# later; a reader whose writer is killed takes over; a client that leaves
# stops nobody; the size bound evicts the least recently used. Hostile:
# requests that differ only in ofs-delta, include-tag, depth or the filter
# never get each other's entry, and side-band, side-band-64k and no
# side-band get the same pack framed each their way.
# The generations that must be met halfway run packwire-test-hooks with
# PW_TEST_PACK_CACHE_DELAY_MS (a pause after each record written).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

RAW=(python3 "$PW_SRC/tests/interop/pack-cache-raw.py")
HOOKS=${PACKWIRE_TEST_HOOKS:-}
[ -n "$HOOKS" ] && HOOKS=$(realpath "$HOOKS")
use_fake_ssh
# upload-pack reads uploadpack.packCache from the global file: this test's own
export GIT_CONFIG_GLOBAL=$T/global.gitconfig
printf '[init]\n\tdefaultBranch = main\n' >"$GIT_CONFIG_GLOBAL"

# ---- helpers ------------------------------------------------------------------

same_objects() { diff <(all_objects "$1") <(all_objects "$2") >/dev/null; }
# good CLONE REFERENCE: fsck-clean, same refs and objects as the reference
good() { fsck_ok "$1" && same_refs "$1" "$2" && same_objects "$1" "$2"; }
# counter NAME WHAT: from the line serve prints when it stops ("3 hits")
counter() { sed -n 's/^packwire serve: pack cache: //p' "$T/$1.log" | grep -o "[0-9]* $2" | cut -d' ' -f1; }
# served NAME HITS MISSES SHARED: the server's account
served() {
	local h m s
	h=$(counter "$1" hits) m=$(counter "$1" misses) s=$(counter "$1" shared)
	[ "$h $m $s" = "$2 $3 $4" ] || { echo "    $1: $h hits, $m misses, $s shared; want $2 $3 $4" >&2; return 1; }
}
# result TRACE: what the last upload-pack did with the cache (hit, miss, ...)
result() { grep -o '"key":"pack-cache","value":"[a-z]*"' "$1" | tail -1 | sed 's/.*"value":"//; s/"$//'; }
results() { grep -o '"key":"pack-cache","value":"[a-z]*"' "$1" | sed 's/.*"value":"//; s/"$//' | sort | uniq -c | tr -s ' ' | sed 's/^ //'; }
key_of() { grep -o '"key":"pack-cache-key","value":"[0-9a-f]*"' "$1" | tail -1 | sed 's/.*"value":"//; s/"$//'; }
# stopped NAME: stop the server started as NAME; it exits 0, its log clean
stopped() {
	stop_serve "$SERVE_PID"
	check "$1: the server stops cleanly (exit 0, no sanitizer report)" \
		eval '[ "$SERVE_RC" = 0 ] && ! grep -q "Sanitizer\|runtime error" "$T/$1.log"'
}
# newest DIR: the entry written or used last
newest() { ls -t "$1"/*.pack | head -1; }
flip() { python3 -c 'import sys
p, off = sys.argv[1], int(sys.argv[2])
b = bytearray(open(p, "rb").read()); b[off % len(b)] ^= 0x10
open(p, "wb").write(bytes(b))' "$1" "$2"; }
rawsz() { [ "$1" = sha1 ] && echo 20 || echo 32; }
types() { "${RAW[@]}" types "$(ls "$1"/objects/pack/*.pack)" "$(rawsz "$2")"; }
# commit_to BARE MSG: a new commit on main of a bare repository, made with stock git
commit_to() {
	local w=$T/work-$$-$RANDOM
	git clone -q "$1" "$w"
	echo "$2" >"$w/new.txt"
	git -C "$w" add new.txt && git -C "$w" commit -q -m "$2"
	git -C "$w" push -q origin HEAD:main
	rm -rf "$w"
}
# big_repo DIR ALGO: a repository whose pack spans many 64 KiB records
big_repo() {
	git init -q --bare --object-format="$2" "$1"
	local w=$1.work
	git init -q --object-format="$2" "$w"
	python3 -c 'import random, sys
r = random.Random(28)
for n in range(4):
    with open(sys.argv[1] + "/blob%d" % n, "wb") as f:
        f.write(bytes(r.getrandbits(8) for _ in range(300000)))' "$w"
	git -C "$w" add -A && git -C "$w" commit -q -m big
	git -C "$w" push -q "$1" HEAD:main
	git -C "$1" repack -q -a -d
}

for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "pristine-$algo.git"
	git -C "pristine-$algo.git" config uploadpack.allowFilter true
	git -C "pristine-$algo.git" config http.receivepack true
	# what a clone without the cache holds, made by stock git
	git clone -q --bare --no-local "pristine-$algo.git" "ref-full-$algo.git"
	git clone -q --bare --depth=1 "file://$T/pristine-$algo.git" "ref-depth-$algo.git"
	git clone -q --bare --filter=blob:none "file://$T/pristine-$algo.git" "ref-filter-$algo.git"
done

# ---- serve: each kind of request misses, then hits ------------------------------

# scenario ALGO V NAME CLONE-ARGS...: a fresh server on a fresh cache, two
# identical clones, checked against the reference; its account after
serve_clones() {
	local algo=$1 v=$2 name=$3 ref=$4 c
	shift 4
	start_serve "$name" "$T/base-$algo-v$v" --pack-cache="$T/cache-$algo-v$v"
	for c in a b; do
		git -c protocol.version="$v" clone -q --bare "$@" \
			"http://127.0.0.1:$SERVE_PORT/r.git" "$name-$c.git" 2>"$name-$c.err" ||
			{ not_ok "$name: clone $c"; cat "$name-$c.err"; }
	done
	stopped "$name"
	check "$name: the first clone misses, the second hits" served "$name" 1 1 0
	for c in a b; do
		check "$name: clone $c is fsck-clean, same objects as without the cache" \
			eval "fsck_ok $name-$c.git && same_objects $name-$c.git $ref"
	done
}

for algo in sha1 sha256; do
	for v in 0 2; do
		mkdir -p "base-$algo-v$v"
		git clone -q --bare "pristine-$algo.git" "base-$algo-v$v/r.git"
		git -C "base-$algo-v$v/r.git" config uploadpack.allowFilter true
		git -C "base-$algo-v$v/r.git" config http.receivepack true
		S=$T/base-$algo-v$v/r.git
		serve_clones $algo $v "serve-$algo-v$v-full" "ref-full-$algo.git"
		check "serve $algo v$v: full clone has the server's refs" same_refs "serve-$algo-v$v-full-b.git" "$S"
		serve_clones $algo $v "serve-$algo-v$v-depth" "ref-depth-$algo.git" --depth=1
		check "serve $algo v$v: --depth=1 clone is shallow where git's is" \
			cmp -s "serve-$algo-v$v-depth-b.git/shallow" "ref-depth-$algo.git/shallow"
		serve_clones $algo $v "serve-$algo-v$v-filter" "ref-filter-$algo.git" --filter=blob:none

		# a fetch of one new commit into two identical clones
		n=serve-$algo-v$v-fetch
		git clone -q --bare --no-local "$S" "$n-a.git"
		git clone -q --bare --no-local "$S" "$n-b.git"
		commit_to "$S" "one more $algo v$v"
		start_serve "$n" "$T/base-$algo-v$v" --pack-cache="$T/cache-$algo-v$v"
		for c in a b; do
			git -C "$n-$c.git" -c protocol.version=$v fetch -q \
				"http://127.0.0.1:$SERVE_PORT/r.git" '+refs/heads/*:refs/heads/*' 2>"$n-$c.err" ||
				{ not_ok "$n: fetch $c"; cat "$n-$c.err"; }
		done
		stopped "$n"
		check "$n: the first fetch misses, the second hits" served "$n" 1 1 0
		for c in a b; do
			check "$n: fetch $c is fsck-clean with the new commit" \
				eval "fsck_ok $n-$c.git && same_refs $n-$c.git $S"
		done

		# a push: the next clone is not answered with the old pack
		n=serve-$algo-v$v-push
		start_serve "$n" "$T/base-$algo-v$v" --pack-cache="$T/cache-$algo-v$v"
		U=http://127.0.0.1:$SERVE_PORT/r.git
		git -c protocol.version=$v clone -q --bare "$U" "$n-a.git"
		git -c protocol.version=$v clone -q --bare "$U" "$n-b.git"
		git clone -q "$n-a.git" "$n-w"
		echo pushed >"$n-w/pushed.txt"
		git -C "$n-w" add pushed.txt && git -C "$n-w" commit -q -m pushed
		git -C "$n-w" push -q "$U" HEAD:main 2>"$n.push.err" || { not_ok "$n: push"; cat "$n.push.err"; }
		git -c protocol.version=$v clone -q --bare "$U" "$n-c.git"
		refs "$S" >"$n-c.refs"
		# a tag alone: a single-branch clone gets it (include-tag)
		git -c protocol.version=$v clone -q --bare --single-branch --branch main "$U" "$n-d.git"
		git -C "$n-w" tag -a pushed-tag -m "a tag of the tip"
		git -C "$n-w" push -q "$U" pushed-tag 2>"$n.push.err" || { not_ok "$n: push a tag"; cat "$n.push.err"; }
		git -c protocol.version=$v clone -q --bare --single-branch --branch main "$U" "$n-e.git"
		stopped "$n"
		check "$n: clone after the push is fsck-clean with the server's refs" \
			eval "fsck_ok $n-c.git && refs $n-c.git | cmp -s - $n-c.refs"
		check "$n: ... and the pushed commit" git -C "$n-c.git" cat-file -e "$(git -C "$n-w" rev-parse HEAD)"
		check "$n: single-branch clone after a tag push has the tag" \
			eval "fsck_ok $n-e.git && git -C $n-e.git cat-file -e refs/tags/pushed-tag"
		check "$n: misses after each push, hit before" served "$n" 1 4 0
	done
done

# ---- upload-pack over ssh (v2) and file:// (v0) with uploadpack.packCache ------------------

git config --global uploadpack.packCache "$T/up-cache"
for algo in sha1 sha256; do
	for v in 0 2; do
		S=$T/up-$algo-v$v.git
		git clone -q --bare "pristine-$algo.git" "$S"
		git -C "$S" config uploadpack.allowFilter true
		if [ $v = 2 ]; then U=ssh://localhost$S; else U=file://$S; fi
		for what in full depth filter; do
			n=up-$algo-v$v-$what
			args=()
			[ $what = depth ] && args=(--depth=1)
			[ $what = filter ] && args=(--filter=blob:none)
			for c in a b; do
				GIT_TRACE2_EVENT=$T/$n-$c.trace git -c protocol.version=$v clone -q --bare \
					--upload-pack="$PACKWIRE upload-pack" "${args[@]}" "$U" "$n-$c.git" 2>"$n-$c.err" ||
					{ not_ok "$n: clone $c"; cat "$n-$c.err"; }
			done
			check "$n: the first clone misses" test "$(result "$n-a.trace")" = miss
			check "$n: the second hits" test "$(result "$n-b.trace")" = hit
			for c in a b; do
				check "$n: clone $c is fsck-clean, same objects as without the cache" \
					eval "fsck_ok $n-$c.git && same_objects $n-$c.git ref-$what-$algo.git"
			done
		done
		n=up-$algo-v$v-fetch
		git clone -q --bare --no-local "$S" "$n-a.git"
		git clone -q --bare --no-local "$S" "$n-b.git"
		commit_to "$S" "one more $algo v$v"
		for c in a b; do
			GIT_TRACE2_EVENT=$T/$n-$c.trace git -C "$n-$c.git" -c protocol.version=$v fetch -q \
				--upload-pack="$PACKWIRE upload-pack" "$U" '+refs/heads/*:refs/heads/*' 2>"$n-$c.err" ||
				{ not_ok "$n: fetch $c"; cat "$n-$c.err"; }
		done
		check "$n: the first fetch of a new commit misses, the second hits" \
			test "$(result "$n-a.trace") $(result "$n-b.trace")" = "miss hit"
		for c in a b; do
			check "$n: fetch $c is fsck-clean with the new commit" \
				eval "fsck_ok $n-$c.git && same_refs $n-$c.git $S"
		done
		# after a push the same clone misses and has it
		n=up-$algo-v$v-push
		GIT_TRACE2_EVENT=$T/$n-a.trace git -c protocol.version=$v clone -q --bare \
			--upload-pack="$PACKWIRE upload-pack" "$U" "$n-a.git"
		commit_to "$S" "pushed $algo v$v"
		GIT_TRACE2_EVENT=$T/$n-b.trace git -c protocol.version=$v clone -q --bare \
			--upload-pack="$PACKWIRE upload-pack" "$U" "$n-b.git"
		check "$n: after a push the clone misses" test "$(result "$n-b.trace")" = miss
		check "$n: ... and has the server's refs, fsck-clean" \
			eval "fsck_ok $n-b.git && same_refs $n-b.git $S"
	done
done

# ---- hostile: requests that differ in what changes the pack --------------------------

for algo in sha1 sha256; do
	S=$T/pristine-$algo.git
	U=file://$S
	up=(--upload-pack="$PACKWIRE upload-pack")
	h=hostile-$algo
	GIT_TRACE2_EVENT=$T/$h-ofs.trace git clone -q --bare "${up[@]}" "$U" "$h-ofs.git"
	GIT_TRACE2_EVENT=$T/$h-noofs.trace git -c repack.useDeltaBaseOffset=false clone -q --bare \
		"${up[@]}" "$U" "$h-noofs.git"
	check "$h: the default clone's pack has ofs-deltas" eval "types $h-ofs.git $algo | grep -vq 'ofs-delta 0'"
	check "$h: a clone without ofs-delta does not get that entry" \
		test "$(result "$h-noofs.trace")" = miss
	check "$h: ... its pack has no ofs-delta" eval "types $h-noofs.git $algo | grep -q 'ofs-delta 0'"
	check "$h: ... and is fsck-clean" fsck_ok "$h-noofs.git"

	# (git clone always asks for include-tag: a raw request for HEAD alone)
	for it in tags notags; do
		caps="head-only ofs-delta side-band-64k"
		[ $it = notags ] || caps="$caps include-tag"
		GIT_TRACE2_EVENT=$T/$h-$it.trace "${RAW[@]}" fetch "$T/$h-$it.pack" "$caps" \
			"$PACKWIRE" upload-pack "$S" >/dev/null || not_ok "$h: raw fetch, $it"
	done
	check "$h: include-tag brings tag objects" eval "${RAW[*]} types $h-tags.pack $(rawsz $algo) | grep -vq 'tag 0'"
	check "$h: a fetch without include-tag does not get that entry" \
		test "$(result "$h-notags.trace")" = miss
	check "$h: ... and has no tag object" eval "${RAW[*]} types $h-notags.pack $(rawsz $algo) | grep -q 'tag 0'"

	git clone -q --bare --depth=1 "${up[@]}" "$U" "$h-d1.git"
	GIT_TRACE2_EVENT=$T/$h-d2.trace git clone -q --bare --depth=2 "${up[@]}" "$U" "$h-d2.git"
	check "$h: --depth=2 does not get --depth=1's entry" test "$(result "$h-d2.trace")" = miss
	check "$h: ... and is two commits deep" \
		test "$(git -C "$h-d2.git" rev-list --count main)" = 2
	git clone -q --bare --filter=blob:none "${up[@]}" "$U" "$h-none.git"
	GIT_TRACE2_EVENT=$T/$h-lim.trace git clone -q --bare --filter=blob:limit=100 "${up[@]}" "$U" "$h-lim.git"
	check "$h: blob:limit does not get blob:none's entry" test "$(result "$h-lim.trace")" = miss
	check "$h: ... and has the small blobs" eval "fsck_ok $h-lim.git && git -C $h-lim.git cat-file -e main:a.txt"

	# the framing is the client's: three kinds of side-band, one entry
	GIT_TRACE2_EVENT=$T/$h-raw.trace
	export GIT_TRACE2_EVENT
	for sb in side-band-64k side-band none; do
		caps="ofs-delta agent=test"
		[ $sb = none ] || caps="$caps $sb"
		"${RAW[@]}" fetch "$T/$h-$sb.pack" "$caps" "$PACKWIRE" upload-pack "$S" >"$T/$h-$sb.max" ||
			not_ok "$h: raw fetch with $sb"
	done
	unset GIT_TRACE2_EVENT
	check "$h: side-band, side-band-64k and none share one entry" \
		test "$(results "$h-raw.trace" | tr '\n' ' ')" = "2 hit 1 miss "
	check "$h: ... and get the same pack" eval "cmp -s $h-side-band-64k.pack $h-side-band.pack && cmp -s $h-side-band.pack $h-none.pack"
	check "$h: side-band packets are at most 1000 bytes" test "$(cat "$h-side-band.max")" -le 1000
	check "$h: side-band-64k packets are larger" test "$(cat "$h-side-band-64k.max")" -gt 1000
	check "$h: the pack is whole" git index-pack --object-format=$algo -o "$T/$h-raw.idx" "$T/$h-none.pack"

	# not for the cache: sparse:oid, uploadpack.packObjectsHook
	git -C "$S" config uploadpackfilter.allow true
	GIT_TRACE2_EVENT=$T/$h-sparse.trace git clone -q --bare --filter=sparse:oid=main:sub/deeper/n.txt \
		"${up[@]}" "$U" "$h-sparse.git" 2>"$h-sparse.err" || true
	check "$h: a sparse:oid filter goes without the cache" test "$(result "$h-sparse.trace")" = bypass
	printf '#!/bin/sh\nexec "$@"\n' >"$T/pack-hook"
	chmod +x "$T/pack-hook"
	git config --global uploadpack.packObjectsHook "$T/pack-hook"
	GIT_TRACE2_EVENT=$T/$h-hook.trace git clone -q --bare "${up[@]}" "$U" "$h-hook.git" 2>"$h-hook.err" ||
		{ not_ok "$h: clone with uploadpack.packObjectsHook"; cat "$h-hook.err"; }
	git config --global --unset uploadpack.packObjectsHook
	check "$h: uploadpack.packObjectsHook goes without the cache" test "$(result "$h-hook.trace")" = bypass
	check "$h: ... and its clone is good" good "$h-hook.git" "ref-full-$algo.git"
done

# ---- damage: a flipped byte, an entry under another name --------------------------------

for algo in sha1 sha256; do
	n=corrupt-$algo
	D=$T/cache-$n
	mkdir -p "base-$n"
	big_repo "$T/base-$n/r.git" $algo
	git clone -q --bare "pristine-$algo.git" "base-$n/small.git"
	start_serve "$n" "$T/base-$n" --pack-cache="$D"
	U=http://127.0.0.1:$SERVE_PORT
	git clone -q --bare "$U/r.git" "$n-a.git"
	git clone -q --bare "$U/r.git" "$n-b.git" # a hit: checked whole, remembered
	E=$(newest "$D")
	size=$(stat -c %s "$E")
	# a byte in a record well past the first: found before anything goes out
	flip "$E" $((size * 3 / 4))
	git clone -q --bare "$U/r.git" "$n-c.git" 2>"$n-c.err" || { not_ok "$n: clone after a flipped byte"; cat "$n-c.err"; }
	check "$n: the clone after a flipped byte is good" good "$n-c.git" "$n-a.git"
	check "$n: ... and the entry was made again" test "$(stat -c %s "$E")" = "$size"
	# the first byte of the pack, the header's key
	flip "$E" 64
	git clone -q --bare "$U/r.git" "$n-d.git"
	check "$n: a flipped first pack byte: the clone is good" good "$n-d.git" "$n-a.git"
	flip "$E" 20
	git clone -q --bare "$U/r.git" "$n-e.git"
	check "$n: a flipped key: the clone is good" good "$n-e.git" "$n-a.git"
	# a good entry of another request under this one's name
	git clone -q --bare "$U/small.git" "$n-s.git"
	S=$(newest "$D")
	cp "$S" "$E"
	git clone -q --bare "$U/r.git" "$n-f.git"
	check "$n: another key's entry under this name: the clone is good" good "$n-f.git" "$n-a.git"
	# cut short
	truncate -s $((size - 100)) "$E"
	git clone -q --bare "$U/r.git" "$n-g.git"
	check "$n: a truncated entry: the clone is good" good "$n-g.git" "$n-a.git"
	stopped "$n"
	check "$n: five damaged entries found" test "$(counter "$n" corrupt)" = 5
	check "$n: ... and never served: 1 hit, 6 misses + small" served "$n" 1 7 0
done

# ---- generations met halfway (packwire-test-hooks) ------------------------------------

if [ -z "$HOOKS" ] || [ ! -x "$HOOKS" ]; then
	skip "packwire-test-hooks missing: concurrency, kill and takeover tests"
else
	for algo in sha1 sha256; do
		n=storm-$algo
		mkdir -p "base-$n"
		big_repo "$T/base-$n/r.git" $algo
		git clone -q --bare --no-local "base-$n/r.git" "$n-ref.git"
		# 8 identical clones at once while the pack is being made
		PACKWIRE=$HOOKS PW_TEST_PACK_CACHE_DELAY_MS=60 start_serve "$n" "$T/base-$n" \
			--pack-cache="$T/cache-$n" --max-jobs=8
		pids=()
		for i in 1 2 3 4 5 6 7 8; do
			git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-$i.git" 2>"$n-$i.err" &
			pids+=($!)
		done
		fails=0
		for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
		stopped "$n"
		check "$n: 8 concurrent clones all succeed" test $fails = 0
		bad=0
		for i in 1 2 3 4 5 6 7 8; do good "$n-$i.git" "$n-ref.git" || bad=$((bad + 1)); done
		check "$n: ... all fsck-clean with the server's objects" test $bad = 0
		check "$n: the pack was made once" test "$(counter "$n" misses)" = 1
		check "$n: ... the others shared it or read it" \
			test $(($(counter "$n" hits) + $(counter "$n" shared))) = 7
		check "$n: ... at least one joined it while it was written" test "$(counter "$n" shared)" -ge 1
		gen=$(sed -n 's/.* \([0-9]*\) bytes generated.*/\1/p' "$n.log")
		check "$n: bytes generated are one pack's" \
			test "$gen" = "$(stat -c %s "$(ls "$n-1.git"/objects/pack/*.pack)")"

		# the same over ssh: 8 upload-pack processes
		git config --global uploadpack.packCache "$T/cache-$n-ssh"
		pids=()
		for i in 1 2 3 4 5 6 7 8; do
			PW_TEST_PACK_CACHE_DELAY_MS=60 GIT_TRACE2_EVENT=$T/$n-ssh-$i.trace git clone -q --bare \
				--upload-pack="$HOOKS upload-pack" "ssh://localhost$T/base-$n/r.git" "$n-ssh-$i.git" \
				2>"$n-ssh-$i.err" &
			pids+=($!)
		done
		fails=0
		for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
		check "$n: 8 concurrent clones over ssh all succeed" test $fails = 0
		bad=0
		for i in 1 2 3 4 5 6 7 8; do good "$n-ssh-$i.git" "$n-ref.git" || bad=$((bad + 1)); done
		check "$n: ... all fsck-clean" test $bad = 0
		check "$n: ... one process made the pack" \
			test "$(cat "$T/$n"-ssh-*.trace | grep -c '"key":"pack-cache","value":"miss"')" = 1

		# a server killed while it writes: nothing of it is served later
		n=kill-$algo
		PACKWIRE=$HOOKS PW_TEST_PACK_CACHE_DELAY_MS=300 start_serve "$n" "$T/base-storm-$algo" \
			--pack-cache="$T/cache-$n"
		git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-a.git" 2>/dev/null &
		cpid=$!
		for _ in $(seq 1 200); do
			ls "$T/cache-$n"/*.part >/dev/null 2>&1 && break
			sleep 0.05
		done
		sleep 0.4
		kill -KILL "$SERVE_PID"
		wait "$SERVE_PID" 2>/dev/null || true
		wait "$cpid" 2>/dev/null || true
		check "$n: the killed server left a part, no entry" \
			eval "ls $T/cache-$n/*.part >/dev/null 2>&1 && ! ls $T/cache-$n/*.pack >/dev/null 2>&1"
		start_serve "$n-2" "$T/base-storm-$algo" --pack-cache="$T/cache-$n"
		check "$n: the next server removed it" eval "! ls $T/cache-$n/*.part >/dev/null 2>&1"
		git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-b.git"
		stopped "$n-2"
		check "$n: the next clone made the pack again" served "$n-2" 0 1 0
		check "$n: ... and is good" good "$n-b.git" "storm-$algo-ref.git"

		# a client that leaves stops nobody: the other one gets it all
		n=leave-$algo
		PACKWIRE=$HOOKS PW_TEST_PACK_CACHE_DELAY_MS=150 start_serve "$n" "$T/base-storm-$algo" \
			--pack-cache="$T/cache-$n"
		git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-a.git" 2>/dev/null &
		apid=$!
		for _ in $(seq 1 200); do
			ls "$T/cache-$n"/*.part >/dev/null 2>&1 && break
			sleep 0.05
		done
		git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-b.git" 2>"$n-b.err" &
		bpid=$!
		sleep 0.3
		kill -KILL "$apid"
		wait "$apid" 2>/dev/null || true
		wait "$bpid" || { not_ok "$n: the other clone"; cat "$n-b.err"; }
		git clone -q --bare "http://127.0.0.1:$SERVE_PORT/r.git" "$n-c.git"
		stopped "$n"
		check "$n: the clone left: the other is good" good "$n-b.git" "storm-$algo-ref.git"
		check "$n: ... the generation went on to its end and was kept" served "$n" 1 1 1
		check "$n: ... the later clone is good" good "$n-c.git" "storm-$algo-ref.git"

		# a writer killed: its reader (another process) takes over
		n=takeover-$algo
		git config --global uploadpack.packCache "$T/cache-$n"
		printf '#!/bin/sh\necho $$ >"%s"\nexec "%s" upload-pack "$@"\n' "$T/$n-a.pid" "$HOOKS" >"$T/$n-up-a"
		chmod +x "$T/$n-up-a"
		U=file://$T/base-storm-$algo/r.git
		PW_TEST_PACK_CACHE_DELAY_MS=250 git clone -q --bare --upload-pack="$T/$n-up-a" "$U" "$n-a.git" 2>/dev/null &
		apid=$!
		for _ in $(seq 1 200); do
			ls "$T/cache-$n"/*.part >/dev/null 2>&1 && break
			sleep 0.05
		done
		PW_TEST_PACK_CACHE_DELAY_MS=20 GIT_TRACE2_EVENT=$T/$n-b.trace git clone -q --bare \
			--upload-pack="$HOOKS upload-pack" "$U" "$n-b.git" 2>"$n-b.err" &
		bpid=$!
		# once the reader has joined, and had some records
		for _ in $(seq 1 200); do
			[ "$(result "$n-b.trace" 2>/dev/null)" = shared ] && break
			sleep 0.05
		done
		sleep 0.8
		kill -KILL "$(cat "$T/$n-a.pid")"
		wait "$apid" 2>/dev/null || true
		wait "$bpid" || { not_ok "$n: the reader's clone"; cat "$n-b.err"; }
		check "$n: the reader of a killed writer succeeds" good "$n-b.git" "storm-$algo-ref.git"
		check "$n: ... it had joined the generation" test "$(result "$n-b.trace")" = shared
		retry=$(grep -o '"key":"pack-cache-retry","value":"writer gone after [0-9]* records"' "$n-b.trace" |
			grep -o '[0-9]* records' | cut -d' ' -f1)
		check "$n: ... had sent records of it, and went on from there" test "${retry:-0}" -gt 0
		GIT_TRACE2_EVENT=$T/$n-c.trace git clone -q --bare --upload-pack="$PACKWIRE upload-pack" "$U" "$n-c.git"
		check "$n: ... and its generation was kept" test "$(result "$n-c.trace")" = hit
		check "$n: ... the later clone is good" good "$n-c.git" "storm-$algo-ref.git"
	done
fi

# ---- the size bound: least recently used first ----------------------------------------

S=$T/pristine-sha1.git
E=$T/cache-evict
git config --global uploadpack.packCache "$E-probe"
# one entry per kind of clone, to learn their sizes
declare -A sz
for what in full depth filter; do
	args=()
	[ $what = depth ] && args=(--depth=1)
	[ $what = filter ] && args=(--filter=blob:none)
	GIT_TRACE2_EVENT=$T/evict-$what.trace git clone -q --bare --upload-pack="$PACKWIRE upload-pack" \
		"${args[@]}" "file://$S" "evict-probe-$what.git"
	k=$(key_of "evict-$what.trace")
	sz[$what]=$(stat -c %s "$E-probe/$k.pack")
done
git config --global uploadpack.packCache "$E"
git config --global uploadpack.packCacheMax $((sz[full] + sz[filter] + sz[depth] - 1))
clone_into() {
	local what=$1 args=()
	[ $what = depth ] && args=(--depth=1)
	[ $what = filter ] && args=(--filter=blob:none)
	rm -rf "evict-$what.git"
	GIT_TRACE2_EVENT=$T/evict-$what.trace git clone -q --bare --upload-pack="$PACKWIRE upload-pack" \
		"${args[@]}" "file://$S" "evict-$what.git"
}
clone_into full
clone_into depth
kf=$(key_of evict-full.trace) kd=$(key_of evict-depth.trace)
touch -d '100 seconds ago' "$E/$kf.pack"
touch -d '50 seconds ago' "$E/$kd.pack"
clone_into full # a hit: full is now the most recently used
check "eviction: the full clone was a hit" test "$(result evict-full.trace)" = hit
clone_into filter
kl=$(key_of evict-filter.trace)
check "eviction: the least recently used entry went" test ! -e "$E/$kd.pack"
check "eviction: the others stay" eval "test -e $E/$kf.pack && test -e $E/$kl.pack"
check "eviction: within the bound" \
	test "$(du -cb "$E"/*.pack | tail -1 | cut -f1)" -le $((sz[full] + sz[filter] + sz[depth] - 1))
git config --global --unset uploadpack.packCacheMax
git config --global --unset uploadpack.packCache

finish
