#!/usr/bin/env bash
# `packwire daemon`'s user options against `git daemon`'s:
# - ~user paths: refused without --user-path; with --user-path (~user/path
#   in the home) and --user-path=DIR (~user/DIR/path), each with and without
#   a path after ~user, and an unknown user; the --verbose log as git's. The
#   user "alice" lives in a passwd file of this test (nss_wrapper), so both
#   daemons resolve ~alice to a home directory under $T. Stock git and
#   packwire clone git://host/~alice/... through both daemons.
# - --user=nobody --group=nogroup (as root only): the daemon and the
#   process that serves a connection run as nobody:nogroup, so a repository
#   only root can read is refused while the same daemon as root serves it;
#   SIGTERM still removes the pid file. --group without --user is refused
#   as git refuses it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
RAW="python3 $(dirname "$0")/daemon-raw.py"

cd "$T"
# repositories with distinct heads: r (~alice/r.git), pub/r (~alice/pub/r.git),
# pub.git (~alice/pub), and the home as a repository (~alice)
mk() {
	git init -q --bare "$1"
	git -C "$1" symbolic-ref HEAD refs/heads/main
	git -C "$1" --work-tree=. -c user.name=T -c user.email=t@t commit -q --allow-empty -m "$1"
	touch "$1/git-daemon-export-ok"
}
mkdir -p home-alice/pub
mk home-alice/r.git
mk home-alice/pub/r.git
mk home-alice/pub.git
mk home-alice/.git
head_of() { git -C "$1" rev-parse HEAD; }

NSS_LIB=
for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/lib /usr/local/lib; do
	[ -f "$d/libnss_wrapper.so" ] && NSS_LIB=$d/libnss_wrapper.so && break
done
# nss_wrapper loads libc with RTLD_DEEPBIND, which a sanitizer runtime
# refuses (make asan): then this part is skipped
if [ -n "$NSS_LIB" ] && sanitized; then
	skip "~user paths: nss_wrapper cannot be preloaded into this build (a sanitizer build?)"
elif [ -z "$NSS_LIB" ]; then
	skip "~user paths: libnss_wrapper.so not installed (Debian: libnss-wrapper)"
else
	{
		echo "alice:x:4242:4242:Alice:$T/home-alice:/bin/sh"
		grep -v '^alice:' /etc/passwd
	} >passwd
	{
		echo "alice:x:4242:"
		grep -v '^alice:' /etc/group
	} >group
	# both daemons (and what they run) see alice; ASan must not insist on
	# coming first in the library list
	nss() {
		LD_PRELOAD=$NSS_LIB NSS_WRAPPER_PASSWD=$T/passwd NSS_WRAPPER_GROUP=$T/group \
			ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "$@"
	}
	# pair NAME ARGS...: a packwire and a git daemon with the same options
	pair() {
		local name=$1
		shift
		PP=$(free_port) GP=$(free_port)
		nss start_daemon "pw-$name" pw "$PP" --informative-errors --export-all --verbose "$@"
		nss start_daemon "git-$name" git "$GP" --informative-errors --export-all --verbose "$@"
	}
	# ask WHAT PATH [EXPECTED-HEAD]: both daemons answer alike; with a
	# head, the answer is that repository's advertisement
	ask() {
		local what=$1 path=$2
		$RAW "$PP" send "pkt:git-upload-pack $path\\0host=x\\0" 0000 >ans-pw 2>&1 || true
		$RAW "$GP" send "pkt:git-upload-pack $path\\0host=x\\0" 0000 >ans-git 2>&1 || true
		same_file "$what: answered as git daemon answers" ans-git ans-pw
		if [ -n "${3:-}" ]; then
			contains "$what: serves $3" ans-pw "$(head_of "$3") HEAD"
		else
			contains "$what: refused" ans-pw "ERR no such repository: $path"
		fi
	}
	# the daemons' logs with pids and ports masked
	masklog() { sed -E 's/\[[0-9]+\]/[PID]/g; s/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' "$T/$1.log"; }

	pair none
	ask "no --user-path: ~alice/r.git" "~alice/r.git"
	contains "no --user-path: logged" pw-none.log "'~alice/r.git': User-path not allowed"

	pair home --user-path
	ask "--user-path: ~alice/r.git" "~alice/r.git" home-alice/r.git
	ask "--user-path: ~alice/r (suffix added)" "~alice/r" home-alice/r.git
	ask "--user-path: ~alice/pub/r.git" "~alice/pub/r.git" home-alice/pub/r.git
	ask "--user-path: ~alice (no path component)" "~alice" home-alice/.git
	ask "--user-path: unknown user" "~nosuchuser/r.git"
	ask "--user-path: '..' after ~alice" "~alice/../home-alice/r.git"

	pair sub --user-path=pub
	ask "--user-path=pub: ~alice/r.git is ~alice/pub/r.git" "~alice/r.git" home-alice/pub/r.git
	ask "--user-path=pub: ~alice (no path component) is ~alice/pub" "~alice" home-alice/pub.git
	ask "--user-path=pub: ~alice/pub/r.git is not under pub/pub" "~alice/pub/r.git"
	ask "--user-path=pub: unknown user" "~nosuchuser/r.git"

	# clients: stock git and packwire, git://host/~alice/... through both
	for k in pw git; do
		p=$PP
		[ $k = git ] && p=$GP
		git clone -q "git://127.0.0.1:$p/~alice/r.git" "g-$k" 2>err || { not_ok "git clone ~alice through $k daemon"; cat err; }
		"$PACKWIRE" clone -q "git://127.0.0.1:$p/~alice/r.git" "p-$k" 2>err || { not_ok "packwire clone ~alice through $k daemon"; cat err; }
		check "git clone of ~alice/r.git through the $k daemon is ~alice/pub/r.git" \
			test "$(git -C "g-$k" rev-parse HEAD)" = "$(head_of home-alice/pub/r.git)"
		check "packwire clone of ~alice/r.git through the $k daemon is ~alice/pub/r.git" \
			test "$(git -C "p-$k" rev-parse HEAD)" = "$(head_of home-alice/pub/r.git)"
		check "packwire clone through the $k daemon: fsck" fsck_ok "p-$k"
	done
	stop_daemons
	for n in none home sub; do
		check "--verbose log as git daemon's ($n)" diff <(masklog "git-$n") <(masklog "pw-$n")
	done
fi

# --user / --group
if [ "$(id -u)" -ne 0 ]; then
	skip "--user/--group: not root (the daemon can only switch users as root)"
elif ! id nobody >/dev/null 2>&1 || ! getent group nogroup >/dev/null; then
	skip "--user/--group: no user nobody or group nogroup"
elif ! setpriv --reuid=nobody --regid=nogroup --clear-groups \
	sh -c 'test -x "$1" && cd "$2"' sh "$PACKWIRE" "$T" 2>/dev/null; then
	skip "--user/--group: nobody cannot reach $PACKWIRE or $T (a build tree under a private directory)"
else
	mkdir -p srv/closed run
	chmod 755 srv
	chmod 700 srv/closed
	chmod 777 run
	mk srv/open.git
	mk srv/closed/c.git
	cat >idhook <<EOF
#!/bin/sh
echo "\$(id -u) \$(id -g)" >"$T/run/ids"
EOF
	chmod 755 idhook
	UP=$(free_port)
	rm -f run/u.pid
	"$PACKWIRE" daemon --listen=127.0.0.1 --port="$UP" --reuseaddr --pid-file="$T/run/u.pid" \
		--user=nobody --group=nogroup --export-all --informative-errors --base-path="$T/srv" \
		--access-hook="$T/idhook" 2>u.log &
	DAEMON_PIDS+=($!)
	for i in $(seq 1 100); do [ -s run/u.pid ] && break; sleep 0.05; done
	upid=$(cat run/u.pid)
	# the switch happens right after the pid file is written
	sleep 0.2
	check "--user: the daemon runs as nobody" \
		test "$(awk '/^Uid:/{print $2}' "/proc/$upid/status")" = "$(id -u nobody)"
	check "--group: the daemon runs as nogroup" \
		test "$(awk '/^Gid:/{print $2}' "/proc/$upid/status")" = "$(getent group nogroup | cut -d: -f3)"
	git ls-remote "git://127.0.0.1:$UP/open.git" >ls-open 2>err || { not_ok "--user: a world-readable repository is served"; cat err; }
	contains "--user: a world-readable repository is served" ls-open "$(head_of srv/open.git)"
	check "--user: the connection is served as nobody:nogroup" \
		test "$(cat run/ids)" = "$(id -u nobody) $(getent group nogroup | cut -d: -f3)"
	$RAW "$UP" send "pkt:git-upload-pack /closed/c.git\\0host=x\\0" 0000 >ans-closed 2>&1 || true
	contains "--user: a repository only root can read is refused" ans-closed "ERR no such repository: /closed/c.git"
	# the same repository through a daemon that stays root
	RP=$(free_port)
	start_daemon root pw "$RP" --export-all --base-path="$T/srv"
	git ls-remote "git://127.0.0.1:$RP/closed/c.git" >ls-closed 2>&1 || true
	contains "without --user the same repository is served (root)" ls-closed "$(head_of srv/closed/c.git)"
	kill "$upid"
	for i in $(seq 1 100); do kill -0 "$upid" 2>/dev/null || break; sleep 0.05; done
	check "--user: SIGTERM stops the daemon" test "$i" -lt 100
	check "--user: SIGTERM removes the pid file" test ! -e run/u.pid
	for k in pw git; do
		if [ $k = pw ]; then cmd=("$PACKWIRE" daemon); else cmd=(git daemon); fi
		"${cmd[@]}" --group=nogroup --listen=127.0.0.1 --port="$(free_port)" >"nouser-$k" 2>&1 &&
			echo "exit 0" >>"nouser-$k" || echo "exit $?" >>"nouser-$k"
	done
	same_file "--group without --user: refused as git refuses it" nouser-git nouser-pw
fi
daemon_logs_clean
finish
