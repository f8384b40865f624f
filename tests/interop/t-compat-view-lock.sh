#!/usr/bin/env bash
# The writers' lock of the compat map and the stored view
# (objects/compat-view.lock), and a map that is whole at every step of a
# repack, for sha256 storage (served as sha1) and sha1 storage (served as
# sha256):
# - while a `compat build` or a `repack -a -d` holds the lock (a test hook
#   stops it there, PACKWIRE_TEST_COMPAT_LOCKED), a second `compat build`,
#   `compat build --no-view-pack` and `repack -a -d` fail at once naming the
#   lock file and saying what to do, and change nothing; clones of the view
#   and a native push go on meanwhile; the held writer then finishes;
# - a stale lock (a crashed writer) is not removed by anyone;
# - `repack -a -d` stopped by SIGKILL after each of its steps (new pack in
#   place, side file written, each old pack deleted, loose objects pruned:
#   PACKWIRE_TEST_REPACK_KILL=N): every reachable object keeps its compat
#   id, compat verify passes and a stock git clone of the view equals the
#   other algorithm's copy of the history (fast-import of the same stream);
# - after every step, stock git clones of the view equal that copy.
. "$(dirname "$0")/lib.sh"
cd "$T"

refs_of() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
objects_of() { git -C "$1" rev-list --objects --all | LC_ALL=C sort; }

# stream N FROM TO: commits FROM..TO-1 on main, 3 files changed each, tags
# every 20; the first has no parent when FROM is 0
stream() {
	python3 - "$1" "$2" <<'PY'
import sys
lo, hi = int(sys.argv[1]), int(sys.argv[2])
out = sys.stdout
files = {f"d{d}/f{f}.txt": [f"line {i} of d{d}/f{f}\n" for i in range(40)]
         for d in range(3) for f in range(8)}
names = sorted(files)
for c in range(hi):
    for k in range(3):
        n = names[(c * 7 + k * 5) % len(names)]
        files[n][(c + k) % 40] = f"changed in {c}\n"
    if c < lo:
        continue
    out.write(f"commit refs/heads/main\nmark :{c + 1}\n")
    out.write(f"committer C O Mitter <c@example.com> {1700000000 + c * 60} +0000\n")
    msg = f"change {c}\n"
    out.write(f"data {len(msg)}\n{msg}")
    if c == lo and lo:
        out.write("from refs/heads/main^0\n")
    for k in range(3):
        n = names[(c * 7 + k * 5) % len(names)]
        body = "".join(files[n])
        out.write(f"M 100644 inline {n}\ndata {len(body)}\n{body}")
    out.write("\n")
    if c % 20 == 19:
        out.write(f"tag v{c}\nfrom :{c + 1}\ntagger T <t@example.com> {1700000000 + c * 60} +0000\n")
        out.write("data 4\nrel\n")
PY
}

# the copies (each other's conversion), grown step by step with the same
# streams as the repositories served
stream 0 40 >s0-40
stream 0 20 >s0-20
stream 20 40 >s20-40
for a in sha1 sha256; do
	git init -q --bare --object-format=$a "copy-$a.git"
	git -C "copy-$a.git" fast-import --quiet <s0-40
done
# a commit with a large incompressible blob
python3 - >big.stream <<'PY'
import random, sys
data = random.Random(7).randbytes(3 << 20)
w = sys.stdout.buffer.write
w(b"commit refs/heads/main\ncommitter C O Mitter <c@example.com> 1800000000 +0000\n")
w(b"data 4\nbig\nfrom refs/heads/main^0\nM 100644 inline big.bin\ndata %d\n" % len(data))
w(data + b"\n\n")
PY
# a served repository of several packs: one per stream
mkdir srv
for a in sha1 sha256; do
	git init -q --bare --object-format=$a "srv/$a.git"
	git -C "srv/$a.git" fast-import --quiet <s0-20
	git -C "srv/$a.git" fast-import --quiet <s20-40
done
W_OF_sha256=sha1 W_OF_sha1=sha256
check "sha256 storage: compat build --object-format=sha1 --view-pack" \
	"$PACKWIRE" -C srv/sha256.git compat build -q --object-format=sha1 --view-pack
check "sha1 storage: compat build --object-format=sha256 --view-pack" \
	"$PACKWIRE" -C srv/sha1.git compat build -q --object-format=sha256 --view-pack

# view_is DESC S: a stock git clone of S's view equals the other copy
view_is() {
	local desc=$1 S=$2 W
	eval "W=\$W_OF_$S"
	rm -rf clone.git
	git clone -q --mirror --upload-pack="$PACKWIRE upload-pack --object-format=$W" \
		"file://$T/srv/$S.git" clone.git
	refs_of "copy-$W.git" >want.refs
	refs_of clone.git >got.refs
	same_file "$desc: the view's refs = the $W copy's" want.refs got.refs
	objects_of "copy-$W.git" >want.objs
	objects_of clone.git >got.objs
	same_file "$desc: the view's objects = the $W copy's" want.objs got.objs
	check "$desc: the clone is fsck --strict clean" fsck_ok clone.git
}
# map_whole DIR: every object reachable in DIR has a compat id
map_whole() {
	"$PACKWIRE" -C "$1" rev-list --objects --all | cut -d' ' -f1 >all.ids
	test -s all.ids && "$PACKWIRE" -C "$1" compat lookup --stdin <all.ids >/dev/null
}
# wait_lock DIR PID: until DIR's writers' lock exists (the writer PID stops
# there), or the writer ended
wait_lock() {
	local i
	for i in $(seq 3000); do
		[ -e "$1/objects/compat-view.lock" ] && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.01
	done
	return 1
}
# second_writers DESC DIR: every other writer fails at once, naming the
# lock and what to do, and changes nothing
second_writers() {
	local desc=$1 d=$2 before
	before=$(cd "$d/objects" && ls -R pack compat-view | md5sum)
	for cmd in "compat build -q" "compat build -q --no-view-pack" "repack -a -d -q"; do
		rc=0
		"$PACKWIRE" -C "$d" $cmd 2>err || rc=$?
		check "$desc: '$cmd' fails (128)" test "$rc" = 128
		contains "$desc: '$cmd' names the lock file" err \
			"unable to create '$T/$d/objects/compat-view.lock': File exists"
		contains "$desc: '$cmd' says what to do" err "remove the file and try again"
	done
	check "$desc: the other writers changed nothing" \
		test "$(cd "$d/objects" && ls -R pack compat-view | md5sum)" = "$before"
	check "$desc: the lock is still there" test -e "$d/objects/compat-view.lock"
}
# push_both S FROM TO: the commits of the stream into the served
# repository (a native push from a clone of S's copy) and into both copies
push_both() {
	local S=$1 from=$2 to=$3 a
	stream "$from" "$to" >s.part
	for a in sha1 sha256; do
		git -C "copy-$a.git" fast-import --quiet <s.part
	done
	git -C "copy-$S.git" push -q --receive-pack="$PACKWIRE receive-pack" \
		"file://$T/srv/$S.git" '+refs/*:refs/*'
}

n=40
for S in sha256 sha1; do
	eval "W=\$W_OF_$S"
	d=srv/$S.git
	# the history so far (the other storage's loop grew the copies)
	git -C "copy-$S.git" push -q --receive-pack="$PACKWIRE receive-pack" \
		"file://$T/$d" '+refs/*:refs/*'
	check "$S: compat build" "$PACKWIRE" -C "$d" compat build -q
	view_is "$S storage, first build" "$S"
	check "$S: compat verify" "$PACKWIRE" -C "$d" compat verify

	# ---- a compat build holds the lock --------------------------------
	rm -f go && mkfifo go
	push_both "$S" "$n" $((n + 5))
	n=$((n + 5))
	PACKWIRE_TEST_COMPAT_LOCKED="$T/go" "$PACKWIRE" -C "$d" compat build -q &
	pid=$!
	check "$S: the first compat build holds the lock" wait_lock "$d" "$pid"
	second_writers "$S, during a compat build" "$d"
	view_is "$S, a clone while a build holds the lock" "$S"
	# a native push does not wait for the writers
	push_both "$S" "$n" $((n + 5))
	n=$((n + 5))
	check "$S: a native push while the lock is held" \
		test "$("$PACKWIRE" -C "$d" rev-parse refs/heads/main)" = \
		"$(git -C "copy-$S.git" rev-parse refs/heads/main)"
	echo go >go
	rc=0
	wait "$pid" || rc=$?
	check "$S: the held compat build then succeeds" test "$rc" = 0
	check "$S: and releases the lock" test ! -e "$d/objects/compat-view.lock"
	check "$S: compat verify after it" "$PACKWIRE" -C "$d" compat verify
	check "$S: one generation left" test "$(ls -d "$d/objects/compat-view"/g-* | wc -l)" = 1
	check "$S: compat build after the push" "$PACKWIRE" -C "$d" compat build -q
	view_is "$S, after the held build and a build" "$S"

	# ---- a repack holds the lock ----------------------------------------
	push_both "$S" "$n" $((n + 5))
	n=$((n + 5))
	PACKWIRE_TEST_COMPAT_LOCKED="$T/go" "$PACKWIRE" -C "$d" repack -a -d -q &
	pid=$!
	check "$S: repack -a -d holds the lock" wait_lock "$d" "$pid"
	second_writers "$S, during a repack" "$d"
	echo go >go
	rc=0
	wait "$pid" || rc=$?
	check "$S: the held repack then succeeds" test "$rc" = 0
	check "$S: and releases the lock" test ! -e "$d/objects/compat-view.lock"
	check "$S: one pack, one side file" \
		test "$(ls "$d"/objects/pack/*.pack | wc -l)$(ls "$d"/objects/pack/*.compat | wc -l)" = 11
	check "$S: compat verify after the repack" "$PACKWIRE" -C "$d" compat verify
	check "$S: every object maps after the repack" map_whole "$d"
	view_is "$S, after the held repack" "$S"

	# ---- a stale lock: nobody removes it ----------------------------------
	touch "$d/objects/compat-view.lock"
	second_writers "$S, a stale lock" "$d"
	rm -f "$d/objects/compat-view.lock"
	check "$S: compat build once it is removed" "$PACKWIRE" -C "$d" compat build -q

	# ---- repack -a -d killed after each of its steps ----------------------
	# more packs: two native pushes and one into the view
	push_both "$S" "$n" $((n + 3))
	n=$((n + 3))
	push_both "$S" "$n" $((n + 3))
	n=$((n + 3))
	# the view push: a commit made in the W copy, pushed as W
	stream "$n" $((n + 2)) >s.part
	git -C "copy-$W.git" fast-import --quiet <s.part
	git -C "copy-$W.git" push -q --receive-pack="$PACKWIRE receive-pack --object-format=$W" \
		"file://$T/$d" '+refs/*:refs/*'
	git -C "copy-$S.git" fast-import --quiet <s.part
	n=$((n + 2))
	check "$S: compat build before the kills" "$PACKWIRE" -C "$d" compat build -q
	npacks=$(ls "$d"/objects/pack/*.pack | wc -l)
	check "$S: several packs to delete ($npacks)" test "$npacks" -ge 3
	last=0
	for k in $(seq 1 20); do
		rm -rf k.git && cp -R "$d" k.git
		rc=0
		PACKWIRE_TEST_REPACK_KILL=$k "$PACKWIRE" -C k.git repack -a -d -q 2>/dev/null || rc=$?
		if [ "$rc" = 0 ]; then
			last=$k
			break
		fi
		check "$S: repack killed after step $k (SIGKILL)" test "$rc" = 137
		check "$S: after step $k every object still maps" map_whole k.git
		check "$S: after step $k compat verify passes" "$PACKWIRE" -C k.git compat verify
		rm -f k.git/objects/compat-view.lock
		# serve the killed copy in place of the repository, then put it back
		mv "$d" keep.git && mv k.git "$d"
		view_is "$S, repack killed after step $k" "$S"
		check "$S: a repack after the kill at step $k completes" \
			"$PACKWIRE" -C "$d" repack -a -d -q
		check "$S: and every object maps" map_whole "$d"
		check "$S: and compat verify passes" "$PACKWIRE" -C "$d" compat verify
		rm -rf "$d" && mv keep.git "$d"
	done
	# pack written, ready to delete, each old pack deleted, loose pruned
	check "$S: repack ran to its end past every step ($((npacks + 3)) steps)" \
		test "$last" = $((npacks + 4))
	rm -rf k.git
	check "$S: the repack that ran to its end" "$PACKWIRE" -C "$d" repack -a -d -q
	view_is "$S, after the last repack" "$S"

	# ---- a reader of the old generation while a rewrite publishes ---------
	# upload-pack sends the stored pack (3 MiB of it, more than a pipe
	# holds); the client stops reading after its first bytes, a push and a
	# compat build publish a new generation and remove the old one, then
	# the client reads on: the pack it gets is whole, of the old generation
	for a in sha1 sha256; do
		git -C "copy-$a.git" fast-import --quiet <big.stream
	done
	git -C "copy-$S.git" push -q --receive-pack="$PACKWIRE receive-pack" \
		"file://$T/$d" '+refs/*:refs/*'
	check "$S: compat build with the large blob" "$PACKWIRE" -C "$d" compat build -q
	gen=$(cut -d' ' -f3 "$d/objects/compat-view/current")
	objects_of "copy-$W.git" | cut -d' ' -f1 | LC_ALL=C sort >want.ids
	cat >hook.sh <<EOF_HOOK
set -e
for a in sha1 sha256; do git -C "copy-\$a.git" fast-import --quiet <s.hook; done
git -C "copy-$S.git" push -q --receive-pack="$PACKWIRE receive-pack" "file://$T/$d" '+refs/*:refs/*'
"$PACKWIRE" -C "$d" compat build -q
test ! -e "$d/objects/compat-view/$gen"
EOF_HOOK
	stream "$n" $((n + 1)) >s.hook
	n=$((n + 1))
	rm -f trace.json
	rc=0
	python3 "$PW_SRC/tests/interop/view-reader.py" reader.pack \
		env GIT_TRACE2_EVENT="$T/trace.json" "$PACKWIRE" upload-pack --object-format="$W" "$d" \
		-- bash hook.sh >reader.out 2>reader.err || rc=$?
	check "$S: the reader's upload-pack succeeds across the rewrite" test "$rc" = 0
	[ "$rc" = 0 ] || cat reader.err
	check "$S: the rewrite published a new generation meanwhile" \
		test "$(cut -d' ' -f3 "$d/objects/compat-view/current")" != "$gen"
	check "$S: most of the pack came after the rewrite" \
		test "$(sed -n 's/.*after=\([0-9]*\).*/\1/p' reader.out)" -gt 1000000
	contains "$S: the reader was served from the stored pack" trace.json \
		'"key":"compat-view","value":"stored-pack"'
	rm -rf rd.git && git init -q --bare --object-format="$W" rd.git
	check "$S: stock git index-pack takes the reader's pack" \
		git -C rd.git index-pack --stdin <reader.pack
	git -C rd.git cat-file --batch-all-objects --batch-check='%(objectname)' |
		LC_ALL=C sort >got.ids
	same_file "$S: the reader's pack = the $W copy's objects before the push" want.ids got.ids
	view_is "$S, after the reader's rewrite" "$S"
done
finish
