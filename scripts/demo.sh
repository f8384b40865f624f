#!/usr/bin/env bash
# The main job: serve a SHA-256 and a SHA-1 repository, clone each with
# packwire and with stock git, show what was negotiated (protocol version,
# object format) and how long each clone took, then verify the clones (git
# fsck, refs equal to the server's, clean work tree) and print OK.
#
#   bash scripts/demo.sh PATH/TO/packwire
#
# Repositories: Git's own history up to v1.5.0 in both formats when
# ../shared/data is there (built once, or taken from the build tree's data/),
# else small repositories made here with stock git. The server is
# `packwire upload-pack` when this packwire has it, else `git upload-pack`.
set -euo pipefail

PW=$(realpath "${1:?usage: demo.sh PATH/TO/packwire}")
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DATA=$ROOT/../shared/data
BUILD_DATA=$(dirname "$PW")/data
TMP=$(mktemp -d "${TMPDIR:-/tmp}/packwire-demo.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

export GIT_CONFIG_NOSYSTEM=1 HOME=$TMP/home GIT_AUTHOR_NAME=Demo GIT_AUTHOR_EMAIL=demo@example.com \
	GIT_COMMITTER_NAME=Demo GIT_COMMITTER_EMAIL=demo@example.com
mkdir -p "$HOME"
git config --global init.defaultBranch main

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

toy_repo() {
	local dir=$1 algo=$2 i
	git init -q --object-format="$algo" "$dir.work"
	(
		cd "$dir.work"
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
	git clone -q --bare "$dir.work" "$dir"
}

# the repositories to serve
for algo in sha256 sha1; do
	src=$TMP/srv-$algo.git
	if [ -f "$BUILD_DATA/small-$algo.git/.complete" ]; then
		git clone -q --bare --no-local "$BUILD_DATA/small-$algo.git" "$src"
		what="git.git history to v1.5.0"
	elif [ -x "$DATA/make-repo" ] && [ -f "$DATA/git-v1.5.0.bundle" ]; then
		echo "building the $algo repository from $DATA/git-v1.5.0.bundle (about 20 s)..."
		"$DATA/make-repo" "$DATA/git-v1.5.0.bundle" "$src" "$algo" >/dev/null 2>&1
		what="git.git history to v1.5.0"
	else
		toy_repo "$TMP/srv-$algo" "$algo" 2>/dev/null
		src=$TMP/srv-$algo
		what="small test repository"
	fi
	eval "SRC_$algo=\$src WHAT_$algo=\"\$what\""
done

# the server: packwire upload-pack once it exists
probe=$("$PW" upload-pack -h 2>&1 || true)
if [[ $probe == *"is not a packwire command"* ]]; then
	SERVER="git upload-pack"
else
	SERVER="$PW upload-pack"
fi
echo "packwire: $("$PW" --version)   git: $(git --version)"
echo "server: $SERVER"
echo

fail=0
for algo in sha256 sha1; do
	eval "src=\$SRC_$algo what=\$WHAT_$algo"
	objs=$(git -C "$src" count-objects -v | awk '/^(count|in-pack):/ { n += $2 } END { print n }')
	echo "== $algo repository ($what, $objs objects, $(git -C "$src" for-each-ref | wc -l) refs)"
	for client in packwire git; do
		dst=$TMP/$client-$algo
		t0=$(now)
		if [ $client = packwire ]; then
			"$PW" clone -q -v --upload-pack="$SERVER" "file://$src" "$dst" 2>"$TMP/err" || {
				cat "$TMP/err"
				fail=1
				continue
			}
			neg=$(sed -n 's/^negotiated: //p' "$TMP/err")
		else
			GIT_TRACE_PACKET=$TMP/trace git clone -q --no-local --upload-pack="$SERVER" \
				"file://$src" "$dst" 2>"$TMP/err" || {
				cat "$TMP/err"
				fail=1
				continue
			}
			ver=$(grep -q "clone< version 2" "$TMP/trace" && echo 2 || echo 0)
			fmt=$(grep -o "object-format=[a-z0-9]*" "$TMP/trace" | head -1 | cut -d= -f2)
			neg="protocol v$ver, object-format ${fmt:-sha1}"
			rm -f "$TMP/trace"
		fi
		t1=$(now)
		printf '  %-9s clone: %6ss   %s\n' "$client" "$(secs "$t0" "$t1")" "$neg"
		# verify
		problems=""
		git -C "$dst" fsck --strict --no-progress >/dev/null 2>&1 || problems="$problems fsck"
		[ "$(git -C "$dst" rev-parse --show-object-format)" = $algo ] || problems="$problems format"
		diff <(git -C "$src" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/heads refs/tags | sed 's| heads/| |' | sort) \
			<(git -C "$dst" for-each-ref --format='%(objectname) %(refname:lstrip=2)' refs/remotes/origin refs/tags | grep -v ' origin/HEAD$' | sed 's| origin/| |' | sort) \
			>/dev/null || problems="$problems refs"
		[ -z "$(git -C "$dst" status --porcelain)" ] || problems="$problems worktree"
		if [ -n "$problems" ]; then
			echo "    FAILED:$problems"
			fail=1
		else
			echo "    verified: fsck --strict clean, refs equal to the server's, work tree clean"
		fi
	done
	echo
done
if [ $fail = 0 ]; then
	echo OK
else
	echo FAILED
	exit 1
fi
