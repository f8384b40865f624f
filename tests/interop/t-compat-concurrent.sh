#!/usr/bin/env bash
# Clients of both algorithms on one repository at the same time (a history
# built here: 300 commits over 60 files, written by fast-import in both
# algorithms, so the copies are each other's translation):
#  - through `packwire daemon` and `packwire serve`, sha1 and sha256
#    clients clone the same repository at once, its own algorithm by its
#    plain name and the other by REPO@ALGO, for sha256 storage and for
#    sha1 storage: every clone is exactly its algorithm's copy (refs,
#    rev-list --objects --all, fsck --strict);
#  - pushes from a clone of each algorithm through the daemon, one after
#    the other on the same branch (each fetching the other's work first),
#    at the same time on two branches (both go in), and at the same time on
#    the same branch from the same base (exactly one goes in); then both
#    views hold the same history, id for id through the map, and the
#    storage repository and the map verify.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
trap 'stop_daemons; stop_serves' EXIT
cd "$T"

refs_of() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' | LC_ALL=C sort; }
objects_of() { git -C "$1" rev-list --objects --all | LC_ALL=C sort; }
srev() { "$PACKWIRE" -C "$1" rev-parse --verify -q "$2"; }
lookup() { "$PACKWIRE" -C "$1" compat lookup "$2"; }

# the history, as a fast-import stream
python3 - >stream <<'PY'
import sys
out = sys.stdout
files = {f"dir{d}/file{f}.txt": [f"line {i} of dir{d}/file{f}\n" for i in range(80)]
         for d in range(6) for f in range(10)}
names = sorted(files)
mark = 0
for c in range(300):
    branch = "refs/heads/main" if c % 7 else "refs/heads/side"
    mark += 1
    out.write(f"commit {branch}\nmark :{mark}\n")
    out.write(f"author A U Thor <a@example.com> {1700000000 + c * 60} +0000\n")
    out.write(f"committer C O Mitter <c@example.com> {1700000000 + c * 60} +0000\n")
    msg = f"change {c}\n"
    out.write(f"data {len(msg)}\n{msg}")
    for k in range(3):
        n = names[(c * 7 + k * 13) % len(names)]
        files[n][(c + k) % 80] = f"line changed in commit {c}\n"
        body = "".join(files[n])
        out.write(f"M 100644 inline {n}\ndata {len(body)}\n{body}")
    out.write("\n")
    if c % 50 == 49:
        out.write(f"tag v{c}\nfrom :{mark}\ntagger T <t@example.com> {1700000000 + c * 60} +0000\n")
        out.write(f"data 8\nrelease\n")
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
check "sha256 storage: compat build --object-format=sha1" \
	"$PACKWIRE" -C srv/s256.git compat build -q --object-format=sha1
check "sha1 storage: compat build --object-format=sha256" \
	"$PACKWIRE" -C srv/s1.git compat build -q --object-format=sha256
touch srv/s256.git/git-daemon-export-ok srv/s1.git/git-daemon-export-ok

DP=$(free_port)
start_daemon pwd pw "$DP" --base-path="$T/srv" --enable=receive-pack
start_serve pws "$T/srv" --quiet

# ---- clones of both algorithms at once --------------------------------
for front in daemon serve; do
	case $front in
	daemon) B=git://127.0.0.1:$DP ;;
	serve) B=http://127.0.0.1:$SERVE_PORT ;;
	esac
	# NAME URL ALGO: two clones of each, all eight started together
	set -- "s256-as-sha1" "$B/s256.git@sha1" sha1 \
		"s256-native" "$B/s256.git" sha256 \
		"s1-as-sha256" "$B/s1.git@sha256" sha256 \
		"s1-native" "$B/s1.git" sha1
	pids=() names=() algos=()
	while [ $# -gt 0 ]; do
		for n in 1 2; do
			v=$((n == 1 ? 2 : 0))
			git -c protocol.version=$v clone -q --mirror "$2" "$front-$1-$n" 2>"$front-$1-$n.err" &
			pids+=($!) names+=("$front-$1-$n") algos+=("$3")
		done
		shift 3
	done
	for i in "${!pids[@]}"; do
		c=${names[$i]} a=${algos[$i]}
		if wait "${pids[$i]}"; then
			check "$c: object format $a" test "$(git -C "$c" rev-parse --show-object-format)" = "$a"
			refs_of "$c" >got.refs
			same_file "$c: for-each-ref = the $a copy's" "want-$a.refs" got.refs
			objects_of "$c" >got.objs
			same_file "$c: rev-list --objects --all = the $a copy's" "want-$a.objs" got.objs
			check "$c: fsck --strict" fsck_ok "$c"
		else
			not_ok "$c: clone"
			sed 's/^/    /' "$c.err" | head -10
		fi
		rm -rf "$c"
	done
done

# ---- pushes from both sides ---------------------------------------------
# push_case STORAGE OTHER: A clones the view (OTHER), N the repository
# natively; both push through the daemon
push_case() {
	local R=$1 W=$2 S=$3 r=$T/srv/$1.git
	local A=$T/a-$R N=$T/n-$R i st_a st_n
	git clone -q "git://127.0.0.1:$DP/$R.git@$W" "$A"
	git clone -q "git://127.0.0.1:$DP/$R.git" "$N"
	check "$R: the view's clone is $W, the native one $S" test \
		"$(git -C "$A" rev-parse --show-object-format) $(git -C "$N" rev-parse --show-object-format)" = "$W $S"
	# one after the other on main, each fetching the other's work first
	for i in 1 2 3; do
		(cd "$A" && git pull -q --no-rebase origin main && echo "a $i" >"a$i.txt" &&
			git add "a$i.txt" && git commit -q -m "from $W $i" && git push -q origin main) 2>err ||
			{ not_ok "$R: $W push $i"; cat err; }
		(cd "$N" && git pull -q --no-rebase origin main && echo "n $i" >"n$i.txt" &&
			git add "n$i.txt" && git commit -q -m "from $S $i" && git push -q origin main) 2>err ||
			{ not_ok "$R: $S push $i"; cat err; }
	done
	check "$R: the native clone's main is stored" test "$(srev "$r" main)" = "$(git -C "$N" rev-parse main)"
	git -C "$A" pull -q --no-rebase origin main
	check "$R: the view's clone gets it with the mapped id" \
		test "$(git -C "$A" rev-parse main)" = "$(lookup "$r" "$(srev "$r" main)")"
	check "$R: ... the same tree as the native clone's" test "$(git -C "$A" log -1 --format=%s)" = \
		"$(git -C "$N" log -1 --format=%s)"
	# at the same time, on two branches
	for i in 1 2 3; do
		git -C "$A" commit -q --allow-empty -m "a branch $i"
		git -C "$N" commit -q --allow-empty -m "n branch $i"
		git -C "$A" push -q origin "HEAD:refs/heads/a-$i" 2>"a.err" &
		pa=$!
		git -C "$N" push -q origin "HEAD:refs/heads/n-$i" 2>"n.err" &
		pn=$!
		st_a=0 st_n=0
		wait $pa || st_a=$?
		wait $pn || st_n=$?
		check "$R: round $i: both pushes at once go in" test "$st_a $st_n" = "0 0"
		check "$R: round $i: the $W branch maps" \
			test "$(lookup "$r" "$(srev "$r" "a-$i")")" = "$(git -C "$A" rev-parse HEAD)"
		check "$R: round $i: the $S branch" test "$(srev "$r" "n-$i")" = "$(git -C "$N" rev-parse HEAD)"
	done
	# at the same time, on the same branch, from the same base: one wins
	git -C "$A" fetch -q origin && git -C "$A" reset -q --hard origin/main
	git -C "$N" fetch -q origin && git -C "$N" reset -q --hard origin/main
	git -C "$A" commit -q --allow-empty -m "race $W"
	git -C "$N" commit -q --allow-empty -m "race $S"
	git -C "$A" push -q origin main 2>/dev/null &
	pa=$!
	git -C "$N" push -q origin main 2>/dev/null &
	pn=$!
	st_a=0 st_n=0
	wait $pa || st_a=1
	wait $pn || st_n=1
	check "$R: same branch at once: exactly one push goes in ($st_a $st_n)" test $((st_a + st_n)) = 1
	if [ $st_a = 0 ]; then
		check "$R: ... main is the $W winner's" \
			test "$(lookup "$r" "$(srev "$r" main)")" = "$(git -C "$A" rev-parse main)"
	else
		check "$R: ... main is the $S winner's" test "$(srev "$r" main)" = "$(git -C "$N" rev-parse main)"
	fi
	# both views now: the same history, id for id
	rm -rf "$T/vw.git" "$T/vn.git"
	git clone -q --mirror "git://127.0.0.1:$DP/$R.git@$W" "$T/vw.git"
	git clone -q --mirror "git://127.0.0.1:$DP/$R.git" "$T/vn.git"
	check "$R: fsck --strict of the $W view's mirror" fsck_ok "$T/vw.git"
	check "$R: fsck --strict of the $S mirror" fsck_ok "$T/vn.git"
	git -C "$T/vn.git" rev-list --objects --all | cut -d' ' -f1 | "$PACKWIRE" -C "$r" compat lookup --stdin |
		LC_ALL=C sort >mapped
	git -C "$T/vw.git" rev-list --objects --all | cut -d' ' -f1 | LC_ALL=C sort >wire
	same_file "$R: every $S object maps to the $W view's, and back" wire mapped
	git -C "$T/vn.git" for-each-ref --format='%(objectname)' | "$PACKWIRE" -C "$r" compat lookup --stdin >mapped
	git -C "$T/vw.git" for-each-ref --format='%(objectname)' >wire
	same_file "$R: every ref maps" wire mapped
	check "$R: the map verifies" sh -c '"$1" -C "$2" compat verify >/dev/null' _ "$PACKWIRE" "$r"
	rm -rf "$T/fsck.git"
	cp -R "$r" "$T/fsck.git"
	git config -f "$T/fsck.git/config" --unset extensions.compatobjectformat
	check "$R: fsck --strict of the storage repository" fsck_ok "$T/fsck.git"
}
push_case s256 sha1 sha256
push_case s1 sha256 sha1
daemon_logs_clean
serve_logs_clean pws
finish
