#!/usr/bin/env bash
# Stock git against `packwire daemon`, side by side with `git daemon` serving
# the same repositories: ls-remote, clone, fetch, shallow and partial clone,
# push where daemon.receivepack allows it and refused where it does not, for
# SHA-1 and SHA-256 and protocol v0, v1, v2. Each result passes fsck
# --strict, has the server's refs and object format, and git prints the
# same messages against both daemons. Then one daemon serves a SHA-1 and a
# SHA-256 repository to clients of both at once.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"

cd "$T"
# one tree per daemon, the same repositories under the same names
for k in pw git; do
	mkdir -p "srv-$k"
	for algo in sha1 sha256; do
		[ -d "work-$algo" ] || make_repo "work-$algo" "$algo" >/dev/null 2>&1
		git clone -q --bare "work-$algo" "srv-$k/$algo.git"
		git -C "srv-$k/$algo.git" config uploadpack.allowFilter true
		git -C "srv-$k/$algo.git" config uploadpack.allowAnySHA1InWant true
		git clone -q --bare "work-$algo" "srv-$k/push-$algo.git"
		git -C "srv-$k/push-$algo.git" config daemon.receivepack true
		git clone -q --bare "work-$algo" "srv-$k/nopush-$algo.git"
	done
	for r in "srv-$k"/*.git; do touch "$r/git-daemon-export-ok"; done
done

PP=$(free_port)
start_daemon pwd pw "$PP" --base-path="$T/srv-pw" --allow-override=receive-pack
GP=$(free_port)
start_daemon gitd git "$GP" --base-path="$T/srv-git" --allow-override=receive-pack

port_of() { if [ "$1" = pw ]; then echo "$PP"; else echo "$GP"; fi; }

for algo in sha1 sha256; do
	S=$T/srv-pw/$algo.git
	for v in 0 1 2; do
		w="$algo v$v"
		G="git -c protocol.version=$v"
		for k in pw git; do
			u=git://127.0.0.1:$(port_of $k)/$algo.git
			$G ls-remote "$u" >"ls-$k" 2>"ls-$k.err" || true
			$G clone -q "$u" "c-$k-$algo-$v" >"clone-$k.out" 2>&1 || true
			$G clone -q --depth=1 "$u" "d-$k-$algo-$v" >"depth-$k.out" 2>&1 || true
			$G clone -q --filter=blob:none "$u" "f-$k-$algo-$v" >"filter-$k.out" 2>&1 || true
		done
		same_file "$w: ls-remote as against git daemon" ls-git ls-pw
		same_msgs "$w: ls-remote messages" ls-git.err ls-pw.err
		same_msgs "$w: clone messages" clone-git.out clone-pw.out
		C=c-pw-$algo-$v
		check "$w: clone fsck --strict" fsck_ok "$C"
		check "$w: clone refs as git daemon's clone" same_refs "$C" "c-git-$algo-$v"
		check "$w: clone object format" test "$(git -C "$C" rev-parse --show-object-format)" = "$algo"
		check "$w: clone branches are the server's" diff <(git -C "$S" for-each-ref --format='%(objectname)' refs/heads refs/tags | sort) \
			<(git -C "$C" for-each-ref --format='%(objectname)' refs/remotes/origin/main refs/remotes/origin/topic refs/tags | sort)

		same_msgs "$w: --depth=1 messages" depth-git.out depth-pw.out
		check "$w: --depth=1 fsck" fsck_ok "d-pw-$algo-$v"
		check "$w: --depth=1 shallow as git daemon's" cmp -s "d-pw-$algo-$v/.git/shallow" "d-git-$algo-$v/.git/shallow"
		check "$w: --depth=1 refs" same_refs "d-pw-$algo-$v" "d-git-$algo-$v"

		same_msgs "$w: --filter=blob:none messages" filter-git.out filter-pw.out
		check "$w: partial clone fsck" fsck_ok "f-pw-$algo-$v"
		check "$w: partial clone refs" same_refs "f-pw-$algo-$v" "f-git-$algo-$v"
		check "$w: partial clone is a promisor" test "$(git -C "f-pw-$algo-$v" config remote.origin.promisor)" = true
		nb=$(git -C "f-pw-$algo-$v" rev-list --objects --all --missing=print | grep -c '^?' || true)
		check "$w: partial clone left blobs out ($nb)" test "$nb" -gt 0

		# new history on the server, then fetch through both daemons
		(cd "work-$algo" && echo "more $v" >>a.txt && git commit -q -am "more $v" &&
			git push -q "$S" main && git push -q "$T/srv-git/$algo.git" main)
		for k in pw git; do
			git -C "c-$k-$algo-$v" -c protocol.version=$v fetch origin >"fetch-$k.out" 2>&1 || true
		done
		same_msgs "$w: fetch messages" fetch-git.out fetch-pw.out
		check "$w: fetch fsck" fsck_ok "$C"
		check "$w: fetch refs as git daemon's" same_refs "$C" "c-git-$algo-$v"
		check "$w: fetched the new commit" test "$(git -C "$C" rev-parse origin/main)" = "$(git -C "$S" rev-parse main)"

		# push where daemon.receivepack allows it, refused where not
		for k in pw git; do
			u=git://127.0.0.1:$(port_of $k)
			(cd "$C" && git checkout -q -B "p$v" origin/main && echo "push $v" >"p$v.txt" &&
				git add "p$v.txt" && git commit -q -m "push $v" &&
				git -c protocol.version=$v push "$u/push-$algo.git" "p$v:refs/heads/p$v" >"../push-$k.out" 2>&1) &&
				echo ok >"push-$k.rc" || echo failed >"push-$k.rc"
			git -C "$C" -c protocol.version=$v push "$u/nopush-$algo.git" "p$v:refs/heads/p$v" \
				>"nopush-$k.out" 2>&1 && echo ok >"nopush-$k.rc" || echo failed >"nopush-$k.rc"
		done
		same_msgs "$w: push messages" push-git.out push-pw.out
		check "$w: push succeeded" grep -q ok push-pw.rc
		check "$w: pushed repository fsck" fsck_ok "srv-pw/push-$algo.git"
		check "$w: pushed ref" test "$(git -C "srv-pw/push-$algo.git" rev-parse "p$v")" = "$(git -C "$C" rev-parse "p$v")"
		check "$w: push without daemon.receivepack refused" grep -q failed nopush-pw.rc
		same_msgs "$w: refused push messages as git daemon's" nopush-git.out nopush-pw.out
		check "$w: refused push changed nothing" same_refs "srv-pw/nopush-$algo.git" "srv-git/nopush-$algo.git"
	done
done
contains "refused push: git's wording" nopush-pw.out "fatal: remote error: access denied or repository not exported: /nopush-sha256.git"

# one daemon, a SHA-1 and a SHA-256 repository, clients of both at once
pids=()
for i in 1 2 3 4; do
	for algo in sha1 sha256; do
		git -c protocol.version=$(((i % 3))) clone -q "git://127.0.0.1:$PP/$algo.git" "par-$algo-$i" 2>"par-$algo-$i.err" &
		pids+=($!)
	done
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
check "parallel SHA-1 and SHA-256 clones all succeeded" test "$fails" -eq 0
good=0
for i in 1 2 3 4; do
	for algo in sha1 sha256; do
		fsck_ok "par-$algo-$i" && [ "$(git -C "par-$algo-$i" rev-parse --show-object-format)" = $algo ] &&
			[ "$(git -C "par-$algo-$i" rev-parse origin/main)" = "$(git -C "srv-pw/$algo.git" rev-parse main)" ] &&
			good=$((good + 1))
	done
done
check "parallel clones: fsck, object format and refs right ($good/8)" test "$good" -eq 8

# the client's version=2 reaches upload-pack (GIT_PROTOCOL): it answers in v2
GIT_TRACE_PACKET=$T/trace-v2 git -c protocol.version=2 ls-remote "git://127.0.0.1:$PP/sha256.git" >/dev/null 2>&1 || true
contains "version=2 reaches the service: it answers in protocol v2" trace-v2 "< version 2"

# every finished connection's process is reaped: no zombie while it runs
pid=$(cat "$T/pwd.pid")
sleep 0.5
check "no zombie child after the clones" test -z "$(ps -o stat= --ppid "$pid" | grep '^Z' || true)"

# SIGTERM with a connection still open: the daemon stops at once and
# removes its pid file, stops listening, and the open connection's process
# (which ignores SIGTERM, as Git's) ends with its client
python3 "$(dirname "$0")/daemon-raw.py" "$PP" silent 3 >held 2>&1 &
held=$!
for i in $(seq 1 100); do [ -n "$(pgrep -P "$pid" || true)" ] && break; sleep 0.05; done
child=$(pgrep -P "$pid" | head -1 || true)
check "a held connection has its process" test -n "$child"
kill "$pid"
for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
check "SIGTERM stops the daemon" test "$i" -lt 100
check "SIGTERM removes the pid file" test ! -e "$T/pwd.pid"
if git ls-remote "git://127.0.0.1:$PP/sha1.git" >/dev/null 2>&1; then
	not_ok "after SIGTERM nothing listens"
else
	ok "after SIGTERM nothing listens"
fi
wait "$held" || true
for i in $(seq 1 100); do [ -z "$child" ] || ! kill -0 "$child" 2>/dev/null && break; sleep 0.05; done
check "the held connection's process ends with its client" test "$i" -lt 100
daemon_logs_clean
finish
