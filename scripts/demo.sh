#!/usr/bin/env bash
# The main job: serve a SHA-256 and a SHA-1 repository with `packwire serve`
# (one embedded HTTP server on a free loopback port, both algorithms at
# once), clone each over HTTP with stock git and with packwire (when this
# packwire has an HTTP client), push a commit back with stock git (as a user
# of the server's --auth-file), verify everything (git fsck --strict, refs
# equal to the server's, object format, clean work tree) and print OK.
#
#   bash scripts/demo.sh PATH/TO/packwire
#
# Repositories: Git's own history up to v1.5.0 in both formats when
# ../shared/data is there (built once, or taken from the build tree's data/),
# else small repositories made here with stock git.
set -euo pipefail

PW=$(realpath "${1:?usage: demo.sh PATH/TO/packwire}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=$ROOT/../shared/data
BUILD_DATA=$(dirname "$PW")/data
TMP=$(mktemp -d "${TMPDIR:-/tmp}/packwire-demo.XXXXXX")
SERVER_PID=
cleanup() {
	[ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null; } || true
	rm -rf "$TMP"
}
trap cleanup EXIT

export GIT_CONFIG_NOSYSTEM=1 HOME=$TMP/home GIT_AUTHOR_NAME=Demo GIT_AUTHOR_EMAIL=demo@example.com \
	GIT_COMMITTER_NAME=Demo GIT_COMMITTER_EMAIL=demo@example.com
mkdir -p "$HOME"
git config --global init.defaultBranch main

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

toy_repo() {
	local dir=$1 algo=$2 i
	git init -q --object-format="$algo" "$TMP/toy-$algo"
	(
		cd "$TMP/toy-$algo"
		for i in 1 2 3 4 5; do
			seq 1 $((i * 200)) >numbers.txt
			echo "commit $i" >>log.txt
			printf '#!/bin/sh\necho %s\n' "$i" >run.sh && chmod +x run.sh
			git add -A && git commit -q -m "commit $i"
			[ $i = 2 ] && git tag -a v0.1 -m "release 0.1"
		done
		git checkout -q -b topic HEAD~1 && echo t >topic.txt && git add topic.txt &&
			git commit -q -m topic && git checkout -q main
		git tag v0.2
	)
	git clone -q --bare "$TMP/toy-$algo" "$dir"
}

# the repositories to serve, side by side under one base path
mkdir -p "$TMP/srv"
for algo in sha256 sha1; do
	src=$TMP/srv/$algo.git
	if [ -f "$BUILD_DATA/small-$algo.git/.complete" ]; then
		git clone -q --bare --no-local "$BUILD_DATA/small-$algo.git" "$src"
		what="git.git history to v1.5.0"
	elif [ -x "$DATA/make-repo" ] && [ -f "$DATA/git-v1.5.0.bundle" ]; then
		echo "building the $algo repository from $DATA/git-v1.5.0.bundle (about 20 s)..."
		"$DATA/make-repo" "$DATA/git-v1.5.0.bundle" "$src" "$algo" >/dev/null 2>&1
		what="git.git history to v1.5.0"
	else
		toy_repo "$src" "$algo" 2>/dev/null
		what="small test repository"
	fi
	eval "SRC_$algo=\$src WHAT_$algo=\"\$what\""
done

# the server: packwire serve on a free loopback port; pushes need the user
# "demo" of an htpasswd file (SHA-crypt hash by openssl), else the
# repositories allow anonymous pushes (http.receivepack)
free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}
AUTH=()
PUSHER=anonymous
if command -v openssl >/dev/null; then
	echo "demo:$(openssl passwd -6 demo-secret)" >"$TMP/htpasswd"
	AUTH=(--auth-file="$TMP/htpasswd")
	PUSHER="user demo (--auth-file, basic auth)"
else
	for algo in sha256 sha1; do git -C "$TMP/srv/$algo.git" config http.receivepack true; done
	PUSHER="anonymous (http.receivepack = true)"
fi
for try in 1 2 3; do
	PORT=$(free_port)
	"$PW" serve --listen=127.0.0.1 --port="$PORT" --base-path="$TMP/srv" "${AUTH[@]}" \
		--pid-file="$TMP/serve.pid" --access-log="$TMP/access.log" 2>"$TMP/serve.log" &
	SERVER_PID=$!
	for i in $(seq 1 100); do
		[ -s "$TMP/serve.pid" ] && break
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.05
	done
	[ -s "$TMP/serve.pid" ] && break
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
done
if [ -z "$SERVER_PID" ]; then
	echo "packwire serve did not start:"
	cat "$TMP/serve.log"
	echo FAILED
	exit 1
fi
URL=http://127.0.0.1:$PORT
echo "packwire: $("$PW" --version)   git: $(git --version)"
echo "server: packwire serve on $URL/ (SHA-256 and SHA-1 repositories, pushes by $PUSHER)"
echo

# same_refs SRC DST: the clone's branches and tags are the server's
same_refs() {
	diff <(git -C "$1" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/heads refs/tags | sed 's| heads/| |' | sort) \
		<(git -C "$2" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/remotes/origin refs/tags | grep -v ' origin/HEAD$' | sed 's| origin/| |' | sort) \
		>/dev/null
}
verify_clone() {
	local src=$1 dst=$2 algo=$3 problems=""
	git -C "$dst" fsck --strict --no-progress >/dev/null 2>&1 || problems="$problems fsck"
	[ "$(git -C "$dst" rev-parse --show-object-format)" = "$algo" ] || problems="$problems format"
	same_refs "$src" "$dst" || problems="$problems refs"
	[ -z "$(git -C "$dst" status --porcelain)" ] || problems="$problems worktree"
	if [ -n "$problems" ]; then
		echo "    FAILED:$problems"
		fail=1
	else
		echo "    verified: fsck --strict clean, refs equal to the server's, object format $algo, work tree clean"
	fi
}

fail=0
for algo in sha256 sha1; do
	eval "what=\$WHAT_$algo"
	src=$TMP/srv/$algo.git
	objs=$(git -C "$src" count-objects -v | awk '/^(count|in-pack):/ { n += $2 } END { print n }')
	echo "== $algo repository ($what, $objs objects, $(git -C "$src" for-each-ref | wc -l) refs)"

	# stock git over HTTP
	dst=$TMP/git-$algo
	t0=$(now)
	if GIT_TRACE_PACKET=$TMP/trace git clone -q "$URL/$algo.git" "$dst" 2>"$TMP/err"; then
		t1=$(now)
		ver=$(grep -q "< version 2" "$TMP/trace" && echo 2 || echo 0)
		fmt=$(grep -o "object-format=[a-z0-9]*" "$TMP/trace" | head -1 | cut -d= -f2)
		printf '  %-9s clone: %6ss   http, protocol v%s, object-format %s\n' git "$(secs "$t0" "$t1")" \
			"$ver" "${fmt:-sha1}"
		verify_clone "$src" "$dst" $algo
	else
		cat "$TMP/err"
		fail=1
	fi
	rm -f "$TMP/trace"

	# packwire's own client over HTTP
	pdst=$TMP/packwire-$algo
	t0=$(now)
	if "$PW" clone -q -v "$URL/$algo.git" "$pdst" 2>"$TMP/err"; then
		t1=$(now)
		neg=$(sed -n 's/^negotiated: //p' "$TMP/err")
		printf '  %-9s clone: %6ss   http, %s\n' packwire "$(secs "$t0" "$t1")" "$neg"
		verify_clone "$src" "$pdst" $algo
	else
		cat "$TMP/err"
		fail=1
	fi

	# push a commit back with stock git
	if [ -d "$dst" ]; then
		purl=$URL
		[ ${#AUTH[@]} = 0 ] || purl=http://demo:demo-secret@127.0.0.1:$PORT
		echo "pushed by the demo" >"$dst/DEMO-PUSH.txt"
		git -C "$dst" add DEMO-PUSH.txt
		git -C "$dst" commit -q -m "demo: a commit pushed over HTTP"
		t0=$(now)
		if git -C "$dst" push -q "$purl/$algo.git" HEAD:refs/heads/demo-push 2>"$TMP/err"; then
			t1=$(now)
			printf '  %-9s push:  %6ss   one commit to refs/heads/demo-push over http\n' git "$(secs "$t0" "$t1")"
			problems=""
			[ "$(git -C "$src" rev-parse refs/heads/demo-push)" = "$(git -C "$dst" rev-parse HEAD)" ] ||
				problems="$problems ref"
			git -C "$src" fsck --strict --no-progress >/dev/null 2>&1 || problems="$problems fsck"
			[ "$(git ls-remote "$URL/$algo.git" refs/heads/demo-push)" = "$(git -C "$dst" rev-parse HEAD)	refs/heads/demo-push" ] ||
				problems="$problems ls-remote"
			if [ -n "$problems" ]; then
				echo "    FAILED:$problems"
				fail=1
			else
				echo "    verified: server's demo-push is the pushed commit (also by ls-remote over http), server fsck --strict clean"
			fi
		else
			cat "$TMP/err"
			fail=1
		fi
	fi
	echo
done

# graceful stop
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
if [ $rc = 0 ]; then
	echo "server: stopped by SIGTERM, exit 0, $(wc -l <"$TMP/access.log") requests in its access log"
else
	echo "server: exit status $rc after SIGTERM"
	cat "$TMP/serve.log"
	fail=1
fi
if [ $fail = 0 ]; then
	echo OK
else
	echo FAILED
	exit 1
fi
