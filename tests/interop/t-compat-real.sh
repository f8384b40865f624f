#!/usr/bin/env bash
# The other algorithm's view of real history (git v1.5.0 from
# ../shared/data): the SHA-256 copy with its sha1 map is cloned by stock
# SHA-1 git, and the SHA-1 copy with its sha256 map by stock SHA-256 git,
# through packwire over file://, ssh (a fake ssh running the command
# locally), `packwire daemon` (git://.../REPO@ALGO), `packwire serve` and
# `packwire http-backend` behind Apache (http://.../REPO@ALGO), protocol v0
# and v2. Every clone (a mirror) must be exactly the other copy that
# make-repo writes: the same for-each-ref, the same rev-list --objects
# --all, and git fsck --strict clean. One server of each kind serves all
# the clones.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
. "$(dirname "$0")/serve-lib.sh"
. "$(dirname "$0")/http-lib.sh"
# each lib sets its own EXIT trap; every server started here is stopped
trap 'stop_daemons; stop_serves; http_cleanup' EXIT

require_data "real-history compat matrix (git-v1.5.0.bundle, make-repo)"
cd "$T"

refs_of() { git -C "$1" for-each-ref --format='%(objectname) %(objecttype) %(refname)' | LC_ALL=C sort; }
objects_of() { git -C "$1" rev-list --objects --all | LC_ALL=C sort; }

# The two copies of the same history (make-repo: fast-export | fast-import)
D256=$(data_repo small sha256)
D1=$(data_repo small sha1)
for a in sha1 sha256; do
	d=$D1
	[ $a = sha256 ] && d=$D256
	refs_of "$d" >"want-$a.refs"
	objects_of "$d" >"want-$a.objs"
done
check "the copies have the same number of objects" \
	test "$(wc -l <want-sha1.objs)" = "$(wc -l <want-sha256.objs)"

# srv/s256.git: the SHA-256 copy serving sha1; srv/s1.git the reverse
mkdir -p srv
cp -R "$D256" srv/s256.git
cp -R "$D1" srv/s1.git
rm -f srv/*/.complete
touch srv/s256.git/git-daemon-export-ok srv/s1.git/git-daemon-export-ok
check "sha256 storage: compat build --object-format=sha1" \
	"$PACKWIRE" -C srv/s256.git compat build -q --object-format=sha1
check "sha1 storage: compat build --object-format=sha256" \
	"$PACKWIRE" -C srv/s1.git compat build -q --object-format=sha256

# same_copy DESC CLONE ALGO: the clone is ALGO's copy, exactly
same_copy() {
	local desc=$1 c=$2 a=$3
	check "$desc: object format $a" test "$(git -C "$c" rev-parse --show-object-format)" = "$a"
	refs_of "$c" >got.refs
	same_file "$desc: for-each-ref = the $a copy's" "want-$a.refs" got.refs
	objects_of "$c" >got.objs
	same_file "$desc: rev-list --objects --all = the $a copy's" "want-$a.objs" got.objs
	check "$desc: fsck --strict" fsck_ok "$c"
}

# clone_view DESC URL ALGO VERSION [GIT OPTIONS]: mirror-clone URL with stock
# git (protocol VERSION) and compare with ALGO's copy
clone_view() {
	local desc=$1 url=$2 a=$3 v=$4
	shift 4
	rm -rf clone.git
	if git -c protocol.version="$v" clone -q --mirror "$@" "$url" clone.git 2>err; then
		same_copy "$desc" clone.git "$a"
	else
		not_ok "$desc: clone"
		sed 's/^/    /' err | head -20
	fi
	rm -rf clone.git
}

use_fake_ssh
DP=$(free_port)
start_daemon pwd pw "$DP" --base-path="$T/srv"
start_serve pws "$T/srv" --quiet
SP=$SERVE_PORT
have_httpd=
if need_httpd; then
	start_httpd "$T/srv"
	have_httpd=1
else
	skip "http-backend behind Apache: no httpd"
fi

for pair in "s256 sha1" "s1 sha256"; do
	set -- $pair
	R=$1 W=$2
	UP="$PACKWIRE upload-pack --object-format=$W"
	for v in 0 2; do
		w="$R.git as $W, v$v"
		clone_view "file://, $w" "file://$T/srv/$R.git" "$W" $v --upload-pack="$UP"
		clone_view "ssh, $w" "ssh://pw-test-host$T/srv/$R.git" "$W" $v --upload-pack="$UP"
		clone_view "daemon, $w" "git://127.0.0.1:$DP/$R.git@$W" "$W" $v
		clone_view "serve, $w" "http://127.0.0.1:$SP/$R.git@$W" "$W" $v
		[ -z "$have_httpd" ] ||
			clone_view "http-backend, $w" "http://127.0.0.1:$HTTPD_PORT/pw-open/$R.git@$W" "$W" $v
	done
done
daemon_logs_clean
serve_logs_clean pws
# http-backend's stderr goes to Apache's error log
if [ -n "$have_httpd" ]; then
	check_fails "http-backend: no sanitizer report in Apache's error log" \
		grep -q Sanitizer "$HTTPD_DIR/error.log"
fi
finish
