#!/usr/bin/env bash
# The other algorithm's view under a name: a repository "repo.git" stored in
# SHA-256 with its compat map is cloned by stock SHA-1 git as
# "repo.git@sha1" from `packwire daemon`, `packwire serve` and
# `packwire http-backend` behind Apache, protocol v0 and v2; the clone is
# exactly the SHA-1 copy that stock git writes of the same history. The
# plain name still serves SHA-256; a repository really named "x@sha1" is
# served as it is; the view is refused on dumb HTTP (the files on disk are
# SHA-256) and for a repository with no map. A push into the view is
# stored as SHA-256. Then the reverse: SHA-1 storage seen as "@sha256".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/http-lib.sh"
# each lib sets its own EXIT trap; every server started here is stopped
trap 'stop_daemons; stop_serves; http_cleanup' EXIT

cd "$T"
objects_of() { git -C "$1" rev-list --objects --all | sort; }
heads_tags() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' refs/heads refs/tags | sort; }
format_is() { test "$(git -C "$1" rev-parse --show-object-format)" = "$2"; }

# same_copy DESC CLONE COPY: refs, objects, fsck --strict
same_copy() {
	check "$1: object format" format_is "$2" "$(git -C "$3" rev-parse --show-object-format)"
	check "$1: same refs as the copy" diff <(heads_tags "$2") <(heads_tags "$3")
	check "$1: same objects as the copy" diff <(objects_of "$2") <(objects_of "$3")
	check "$1: fsck --strict" fsck_ok "$2"
}

# history ALGO OTHER: srv/repo-ALGO.git stored in ALGO with its OTHER map,
# and copy-OTHER.git, what stock git writes of the same history in OTHER
history() {
	make_repo "work-$1" "$1" >/dev/null 2>&1
	git -C "work-$1" tag -d v0.2-annotated >/dev/null # fast-export cannot carry a tag of a tag
	git clone -q --bare "work-$1" "srv/repo-$1.git"
	git clone -q --bare "work-$1" "plain-$1.git" # stock git 2.39 cannot open a compat repository
	git init -q --bare --object-format="$2" "copy-$2.git"
	git -C "srv/repo-$1.git" fast-export --all | git -C "copy-$2.git" fast-import --quiet
	check "$1 storage: compat build --object-format=$2" \
		"$PACKWIRE" -C "srv/repo-$1.git" compat build -q --object-format="$2"
}
mkdir -p srv
history sha256 sha1
history sha1 sha256
# a repository really named with the suffix, and one without a map
git clone -q --bare "work-sha1" "srv/lit.git@sha256"
git clone -q --bare "work-sha256" "srv/nomap.git"
for r in srv/*; do touch "$r/git-daemon-export-ok"; done

# ---- packwire daemon --------------------------------------------------
DP=$(free_port)
start_daemon pwd pw "$DP" --base-path="$T/srv" --enable=receive-pack
D=git://127.0.0.1:$DP
for v in 0 2; do
	G="git -c protocol.version=$v"
	$G clone -q --mirror "$D/repo-sha256.git@sha1" "d-v$v" 2>"err" || { not_ok "daemon v$v: clone @sha1"; cat err; }
	same_copy "daemon v$v: repo-sha256.git@sha1" "d-v$v" copy-sha1.git
	$G clone -q --mirror "$D/repo-sha256.git" "dn-v$v" 2>"err" || { not_ok "daemon v$v: clone"; cat err; }
	same_copy "daemon v$v: the plain name is sha256" "dn-v$v" plain-sha256.git
	$G clone -q --mirror "$D/repo-sha1.git@sha256" "dr-v$v" 2>"err" || { not_ok "daemon v$v: clone @sha256"; cat err; }
	same_copy "daemon v$v: repo-sha1.git@sha256" "dr-v$v" copy-sha256.git
done
# a push into the view: stored as sha256, served back with the pushed ids
git clone -q "$D/repo-sha256.git@sha1" pushw 2>err || { not_ok "daemon: clone @sha1 to push from"; cat err; }
git -C pushw commit -q --allow-empty -m "pushed to the sha1 view"
if git -C pushw push -q origin HEAD:refs/heads/viewpush 2>err; then
	pushed=$(git -C pushw rev-parse HEAD)
	check "daemon: push into @sha1 lands, its sha1 id known to the map" test \
		"$("$PACKWIRE" -C srv/repo-sha256.git rev-parse --output-object-format=sha1 refs/heads/viewpush)" = "$pushed"
	check "daemon: the view serves the pushed id" test \
		"$(git ls-remote "$D/repo-sha256.git@sha1" refs/heads/viewpush | cut -f1)" = "$pushed"
	stored=$("$PACKWIRE" -C srv/repo-sha256.git rev-parse refs/heads/viewpush)
	check "daemon: the plain name serves it as sha256" test \
		"$(git ls-remote "$D/repo-sha256.git" refs/heads/viewpush | cut -f1)" = "$stored"
	check "daemon: the stored id is a sha256 id" test ${#stored} = 64
	check "daemon: deleting the branch through @sha1" git -C pushw push -q origin :refs/heads/viewpush
	check "daemon: the branch is gone" test -z "$(git ls-remote "$D/repo-sha256.git" refs/heads/viewpush)"
else
	not_ok "daemon: push into @sha1"
	cat err
fi
# the view name without ".git" finds the repository as git daemon does
git clone -q --mirror "$D/repo-sha256@sha1" d-short 2>err || { not_ok "daemon: clone repo-sha256@sha1"; cat err; }
same_copy "daemon: repo-sha256@sha1" d-short copy-sha1.git
git clone -q --mirror "$D/lit.git@sha256" d-lit 2>err || { not_ok "daemon: clone lit.git@sha256"; cat err; }
same_copy "daemon: a repository named lit.git@sha256 is served as it is" d-lit "srv/lit.git@sha256"
check_fails "daemon: @sha1 of a repository with no map" \
	git clone -q --mirror "$D/nomap.git@sha1" d-nomap
check "daemon: nothing left of the failed clone" test ! -e d-nomap
daemon_logs_clean pwd

# ---- packwire serve (HTTP) --------------------------------------------
start_serve open "$T/srv" --quiet
S=http://127.0.0.1:$SERVE_PORT
for v in 0 2; do
	git -c protocol.version=$v clone -q --mirror "$S/repo-sha256.git@sha1" "s-v$v" 2>err ||
		{ not_ok "serve v$v: clone @sha1"; cat err; }
	same_copy "serve v$v: repo-sha256.git@sha1" "s-v$v" copy-sha1.git
done
code=$(curl -s -o /dev/null -w '%{http_code}' "$S/repo-sha256.git@sha1/info/refs")
check "serve: the view's dumb info/refs is refused ($code)" test "$code" = 404
code=$(curl -s -o /dev/null -w '%{http_code}' "$S/repo-sha256.git@sha1/HEAD")
check "serve: the view's HEAD file is refused ($code)" test "$code" = 404
serve_logs_clean open

# ---- packwire http-backend behind Apache --------------------------------
if need_httpd; then
	cp -a srv www
	start_httpd "$T/www"
	H=http://127.0.0.1:$HTTPD_PORT/pw
	for v in 0 2; do
		git -c protocol.version=$v clone -q --mirror "$H/repo-sha256.git@sha1" "h-v$v" 2>err ||
			{ not_ok "http-backend v$v: clone @sha1"; cat err; }
		same_copy "http-backend v$v: repo-sha256.git@sha1" "h-v$v" copy-sha1.git
	done
	git clone -q --mirror "$H/repo-sha1.git@sha256" h-rev 2>err ||
		{ not_ok "http-backend: clone @sha256"; cat err; }
	same_copy "http-backend: repo-sha1.git@sha256" h-rev copy-sha256.git
	code=$(curl -s -o /dev/null -w '%{http_code}' "$H/repo-sha256.git@sha1/objects/info/packs")
	check "http-backend: the view's objects/info/packs is refused ($code)" test "$code" = 404
else
	skip "http-backend behind Apache: no httpd"
fi

finish
