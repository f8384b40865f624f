#!/usr/bin/env bash
# One path rule for the three servers (issue 26, item 4), both algorithms:
# a repository under the base path whose real path (symlinks resolved) leads
# outside it is refused by `packwire daemon`, `packwire serve` and `packwire
# http-backend` alike, logged as "resolves outside the base path" (git's
# daemon and http-backend serve it); a symlink that stays inside the base
# path still works, cloned and checked with stock git.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
trap 'stop_serves; stop_daemons' EXIT

cd "$T"
mkdir -p base/sub outside
for algo in sha1 sha256; do
	make_repo "work-$algo" "$algo" >/dev/null 2>&1
	git clone -q --bare "work-$algo" "base/$algo.git"
	git clone -q --bare "work-$algo" "outside/secret-$algo.git"
	git -C "outside/secret-$algo.git" update-ref refs/heads/secret HEAD
	# out: a symlink to a repository outside; in: one to a repository inside
	ln -s "$T/outside/secret-$algo.git" "base/out-$algo.git"
	ln -s "$algo.git" "base/in-$algo.git"
	# a directory on the way that leaves the base
	ln -s "$T/outside/secret-$algo.git" "base/sub/deep-$algo.git"
	git -C "outside/secret-$algo.git" update-server-info
	git -C "base/$algo.git" update-server-info
done
ln -s "$T/outside" base/away
for r in base/sha1.git base/sha256.git outside/*.git; do touch "$r/git-daemon-export-ok"; done

DPORT=$(free_port)
start_daemon daemon pw "$DPORT" --base-path="$T/base" --export-all --informative-errors
start_serve serve "$T/base"
SPORT=$SERVE_PORT

# cgi PATH_INFO [QUERY]: packwire http-backend under GIT_PROJECT_ROOT=base
cgi() {
	env GIT_PROJECT_ROOT="$T/base" GIT_HTTP_EXPORT_ALL=1 REQUEST_METHOD=GET PATH_INFO="$1" \
		QUERY_STRING="${2-}" "$PACKWIRE" http-backend >cgi.out 2>cgi.err
}

for algo in sha1 sha256; do
	for name in "out-$algo.git" "sub/deep-$algo.git" "away/secret-$algo.git"; do
		what="$algo $name"
		rm -rf c
		check_fails "$what: daemon refuses" git clone -q "git://127.0.0.1:$DPORT/$name" c
		check "$what: ... and leaves no directory" test ! -e c
		check_fails "$what: serve refuses (smart)" git clone -q "http://127.0.0.1:$SPORT/$name" c
		check_fails "$what: serve refuses (dumb)" \
			git -c protocol.version=0 clone -q "http://127.0.0.1:$SPORT/$name/info/refs" c
		cgi "/$name/info/refs" service=git-upload-pack || true
		contains "$what: http-backend answers 404 (smart)" cgi.out "Status: 404 Not Found"
		contains "$what: ... saying why" cgi.err "resolves outside the base path"
		check "$what: ... and not a ref of it" eval '! grep -q refs/heads/secret cgi.out'
		cgi "/$name/info/refs" || true
		contains "$what: http-backend answers 404 (dumb info/refs)" cgi.out "Status: 404"
		cgi "/$name/HEAD" || true
		contains "$what: http-backend answers 404 (dumb HEAD)" cgi.out "Status: 404"
	done
	contains "$algo: the daemon logged why" daemon.log "base/out-$algo.git': resolves outside the base path"
	contains "$algo: serve logged why" serve.log "base/out-$algo.git': resolves outside the base path"

	# a symlink that stays inside works with all three
	for url in "git://127.0.0.1:$DPORT/in-$algo.git" "http://127.0.0.1:$SPORT/in-$algo.git"; do
		rm -rf c
		check "$algo: clone through the inside symlink ($url)" git clone -q --bare "$url" c
		check "$algo: ... fsck --strict clean" fsck_ok c
		check "$algo: ... the repository's refs" same_refs c "base/$algo.git"
		check "$algo: ... of its algorithm" test "$(git -C c rev-parse --show-object-format)" = $algo
	done
	check "$algo: http-backend serves the inside symlink" cgi "/in-$algo.git/info/refs" \
		service=git-upload-pack
	contains "$algo: ... its advertisement" cgi.out "$(git -C "base/$algo.git" rev-parse HEAD)"
done
daemon_logs_clean
serve_logs_clean serve
finish
