#!/usr/bin/env bash
# `packwire serve` against stock git, SHA-1 and SHA-256 from one server,
# protocol v0 and v2: clone (bare and non-bare repositories under the base
# path), ls-remote, fetch and push, each result checked with fsck --strict,
# refs and object format. Push needs a user of --auth-file (SHA-crypt $5$
# and $6$ hashes made by openssl): 401 without, refused with a wrong
# password, accepted with the right one; without --auth-file only where
# http.receivepack is true; a push bigger than http.postBuffer is chunked. SHA-1 and SHA-256 clones run in parallel, the
# access log has one line per request, and SIGTERM stops it with exit 0.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/serve-lib.sh"

if ! command -v openssl >/dev/null; then
	skip "openssl missing: scripts/install-deps.sh installs it"
	finish
fi

mkdir -p srv
for algo in sha1 sha256; do
	make_repo "src-$algo" "$algo"
	git clone -q --bare "src-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config core.logAllRefUpdates always
	git clone -q "src-$algo" "srv/work-$algo" # non-bare: served as work-ALGO/.git
done
git -C srv/sha256.git config http.receivepack true
printf 'alice:%s\nbob:%s\n' "$(openssl passwd -5 wonderland)" "$(openssl passwd -6 builder)" >htpasswd

# --max-jobs=1: one request handled at a time, the rest wait their turn
start_serve auth "$T/srv" --auth-file="$T/htpasswd" --access-log="$T/access.log" --threads=2 --max-jobs=1
AUTH_PID=$SERVE_PID
A=http://127.0.0.1:$SERVE_PORT
start_serve open "$T/srv" --quiet
OPEN_PID=$SERVE_PID
O=http://127.0.0.1:$SERVE_PORT

run_to() {
	local out=$1
	shift
	"$@" >"$out" 2>&1
}
format_is() { test "$(git -C "$1" rev-parse --show-object-format)" = "$2"; }

for algo in sha1 sha256; do
	for v in 0 2; do
		c=clone-$algo-v$v
		git -c protocol.version=$v clone -q --bare "$A/$algo.git" "$c" 2>"$c.err" ||
			{ not_ok "$algo v$v: clone"; cat "$c.err"; }
		check "$algo v$v: clone is fsck --strict clean" fsck_ok "$c"
		check "$algo v$v: clone has the server's refs" same_refs "$c" "srv/$algo.git"
		check "$algo v$v: clone's object format is $algo" format_is "$c" $algo

		git -c protocol.version=$v clone -q "$A/work-$algo" "w-$c" 2>"w-$c.err" ||
			{ not_ok "$algo v$v: clone of a non-bare repository"; cat "w-$c.err"; }
		check "$algo v$v: non-bare repository clone is fsck clean, $algo" \
			eval 'fsck_ok "w-$c" && format_is "w-$c" $algo'
		check "$algo v$v: non-bare clone has the server's branch" \
			test "$(git -C "w-$c" rev-parse HEAD)" = "$(git -C "srv/work-$algo" rev-parse HEAD)"

		git -c protocol.version=$v ls-remote "$A/$algo.git" >"ls-$c" 2>&1
		git ls-remote "srv/$algo.git" >"ls-$c.expect"
		same_file "$algo v$v: ls-remote lists the refs" "ls-$c.expect" "ls-$c"

		# push: without a user 401, with a wrong password refused, then accepted
		w=work-$algo-v$v
		git clone -q "srv/$algo.git" "$w"
		git -C "$w" commit -q --allow-empty -m "pushed over serve v$v"
		n401=$(grep -c '" 401 ' access.log || true)
		check_fails "$algo v$v: push without a user refused" run_to "$w.anon" \
			git -C "$w" -c protocol.version=$v push "$A/$algo.git" HEAD:refs/heads/pushed-v$v
		# the server writes a request's line when the connection completes,
		# which may be just after the client has its answer: wait (2 s at most)
		for _ in $(seq 20); do
			[ "$(grep -c '" 401 ' access.log)" -gt "$n401" ] && break
			sleep 0.1
		done
		check "$algo v$v: ... with 401 in the access log" \
			test "$(grep -c '" 401 ' access.log)" -gt "$n401"
		U=${A/http:\/\//http://alice:wrong@}
		check_fails "$algo v$v: push with a wrong password refused" run_to "$w.wrong" \
			git -C "$w" -c protocol.version=$v push "$U/$algo.git" HEAD:refs/heads/pushed-v$v
		contains "$algo v$v: ... as Authentication failed" "$w.wrong" "Authentication failed"
		user=alice pass=wonderland
		[ $v = 0 ] || user=bob pass=builder
		U=${A/http:\/\//http://$user:$pass@}
		check "$algo v$v: push as $user accepted" run_to "$w.push" \
			git -C "$w" -c protocol.version=$v push "$U/$algo.git" HEAD:refs/heads/pushed-v$v
		check "$algo v$v: server has the pushed ref" test \
			"$(git -C "srv/$algo.git" rev-parse refs/heads/pushed-v$v)" = "$(git -C "$w" rev-parse HEAD)"
		check "$algo v$v: server repository fsck --strict clean after the push" fsck_ok "srv/$algo.git"
		# the reflog names the web user as git http-backend does
		check "$algo v$v: the push's reflog names $user <$user@http.127.0.0.1>" grep -q \
			" $user <$user@http.127.0.0.1> [0-9]* [-+][0-9]*	push\$" \
			"srv/$algo.git/logs/refs/heads/pushed-v$v"
		check "$algo v$v: access log names the user" grep -q "^127.0.0.1 - $user \[.*\"POST /$algo.git/git-receive-pack HTTP/1.1\" 200 " access.log

		# fetch what was pushed into the first clone
		git -C "$c" -c protocol.version=$v fetch -q "$A/$algo.git" "+refs/heads/*:refs/heads/*" 2>"$c.fetch" ||
			{ not_ok "$algo v$v: fetch"; cat "$c.fetch"; }
		check "$algo v$v: fetch brings the pushed ref, fsck clean" eval \
			'fsck_ok "$c" && same_refs "$c" "srv/$algo.git"'
	done
done

# without --auth-file: push only where http.receivepack is true
for algo in sha1 sha256; do
	w=open-$algo
	git clone -q "srv/$algo.git" "$w"
	git -C "$w" commit -q --allow-empty -m "open push"
	if [ $algo = sha256 ]; then
		check "open $algo: push accepted (http.receivepack true)" run_to "$w.push" \
			git -C "$w" push "$O/$algo.git" HEAD:refs/heads/open
		check "open $algo: server has the ref" test \
			"$(git -C "srv/$algo.git" rev-parse refs/heads/open)" = "$(git -C "$w" rev-parse HEAD)"
	else
		check_fails "open $algo: push refused (http.receivepack unset, no user)" run_to "$w.push" \
			git -C "$w" push "$O/$algo.git" HEAD:refs/heads/open
		contains "open $algo: ... with 403" "$w.push" "403"
	fi
done

# a push bigger than http.postBuffer goes as a chunked request body
for algo in sha1 sha256; do
	w=chunked-$algo
	git clone -q "srv/$algo.git" "$w"
	head -c 300000 /dev/urandom >"$w/random.bin"
	git -C "$w" add random.bin && git -C "$w" commit -q -m "a big incompressible file"
	U=${A/http:\/\//http://alice:wonderland@}
	check "chunked $algo: push of 300 KB with http.postBuffer=65520 accepted" run_to "$w.push" \
		env GIT_TRACE_CURL="$T/$w.trace" git -C "$w" -c http.postBuffer=65520 push "$U/$algo.git" HEAD:refs/heads/chunked
	check "chunked $algo: ... sent with Transfer-Encoding: chunked" grep -qi "Transfer-Encoding: chunked" "$w.trace"
	check "chunked $algo: server has the ref, fsck clean" eval \
		'test "$(git -C "srv/$algo.git" rev-parse refs/heads/chunked)" = "$(git -C "$w" rev-parse HEAD)" && fsck_ok "srv/$algo.git"'
done

# SHA-1 and SHA-256 clients in parallel through one server
pids=()
for i in 1 2 3 4; do
	for algo in sha1 sha256; do
		git -c protocol.version=$((i % 2 * 2)) clone -q --bare "$A/$algo.git" "par-$algo-$i" 2>"par-$algo-$i.err" &
		pids+=($!)
	done
done
bad=0
for p in "${pids[@]}"; do wait "$p" || bad=1; done
check "parallel: 8 clones (SHA-1 and SHA-256, v0 and v2) succeed, one handled at a time" test $bad = 0
for i in 1 2 3 4; do
	for algo in sha1 sha256; do
		check "parallel: $algo clone $i fsck clean, $algo, server's refs" eval \
			'fsck_ok "par-$algo-$i" && format_is "par-$algo-$i" $algo && same_refs "par-$algo-$i" "srv/$algo.git"'
	done
done

# access log: one line per request, in common log format
check "access log: every line is 'addr - user [date] \"request\" status bytes'" \
	test "$(grep -cvE '^127\.0\.0\.1 - [a-z-]+ \[[^]]+\] "(GET|POST) [^ ]+ HTTP/1\.1" [0-9]{3} [0-9]+ ' access.log)" = 0

# graceful stop: SIGTERM, exit 0, pid file removed
stop_serve $AUTH_PID
check "SIGTERM: serve exits 0" test "$SERVE_RC" = 0
check "SIGTERM: pid file removed" test ! -e auth.pid
stop_serve $OPEN_PID
check "SIGTERM: second serve exits 0" test "$SERVE_RC" = 0
serve_logs_clean auth
serve_logs_clean open
finish
