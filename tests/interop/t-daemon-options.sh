#!/usr/bin/env bash
# `packwire daemon`'s access options answer as `git daemon`'s do (same ERR
# line or the same advertisement, with --informative-errors): the directory
# whitelist with and without --strict-paths, --base-path-relaxed,
# --interpolated-path, daemon.uploadpack and --forbid-override,
# --access-hook, --inetd; and --detach with --pid-file.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
RAW="python3 $(dirname "$0")/daemon-raw.py"

cd "$T"
mkdir -p srv/sub vhost/example.com vhost/other.org
make_repo work sha256 >/dev/null 2>&1
for r in srv/a.git srv/sub/b.git srv/off.git vhost/example.com/v.git; do
	git clone -q --bare work "$r"
	touch "$r/git-daemon-export-ok"
done
git -C srv/off.git config daemon.uploadpack false
HEADLINE="$(git -C srv/a.git rev-parse HEAD) HEAD"

# pair NAME ARGS...: a packwire and a git daemon with the same options
pair() {
	local name=$1
	shift
	PP=$(free_port) GP=$(free_port)
	start_daemon "pw-$name" pw "$PP" --informative-errors "$@"
	start_daemon "git-$name" git "$GP" --informative-errors "$@"
}
# ask WHAT PATH [HOST]: the same answer from both daemons of the last pair
ask() {
	local what=$1 path=$2 host=${3:-x}
	$RAW "$PP" send "pkt:git-upload-pack $path\\0host=$host\\0" 0000 >ans-pw 2>&1 || true
	$RAW "$GP" send "pkt:git-upload-pack $path\\0host=$host\\0" 0000 >ans-git 2>&1 || true
	same_file "$what: answered as git daemon answers" ans-git ans-pw
}

pair wl --export-all "$T/srv/sub" "$T/srv/a.git"
ask "whitelist: listed repository" "$T/srv/a.git"
contains "whitelist: listed repository served" ans-pw "$HEADLINE"
ask "whitelist: repository below a listed directory" "$T/srv/sub/b.git"
ask "whitelist: .git suffix added" "$T/srv/a"
ask "whitelist: not listed" "$T/srv/off.git"
contains "whitelist: not listed refused" ans-pw "ERR no such repository: $T/srv/off.git"

pair strict --export-all --strict-paths "$T/srv/sub" "$T/srv/a.git"
ask "--strict-paths: exact path" "$T/srv/a.git"
# (git daemon 2.39 dies here on a "dubious ownership" check of the missing
# directory and closes the connection; packwire answers as for any path
# that is not a repository)
$RAW "$PP" send "pkt:git-upload-pack $T/srv/a\\0host=x\\0" >ans-pw 2>&1 || true
contains "--strict-paths: no suffix added" ans-pw "ERR no such repository: $T/srv/a"
ask "--strict-paths: below a listed directory" "$T/srv/sub/b.git"

pair relaxed --base-path="$T/vhost" --base-path-relaxed
ask "--base-path-relaxed: under the base path" /example.com/v.git
ask "--base-path-relaxed: falls back to the full path" "$T/srv/a.git"

pair interp --interpolated-path="$T/vhost/%H%D"
ask "--interpolated-path: %H%D" /v.git EXAMPLE.com
contains "--interpolated-path: served" ans-pw "$HEADLINE"
ask "--interpolated-path: other host" /v.git other.org
ask "--interpolated-path: host with a port" /v.git example.com:1234

# %CH %IP %P %%: the canonical name and address of the requested host, its
# port, a literal %
mkdir -p "vhost/127.0.0.1/9999%"
git clone -q --bare work "vhost/127.0.0.1/9999%/w.git"
pair interp2 --export-all --interpolated-path="$T/vhost/%IP/%P%%%D"
ask "--interpolated-path: %IP/%P%%%D" /w.git 127.0.0.1:9999
contains "--interpolated-path: %IP %P %% served" ans-pw "$HEADLINE"
pair interp3 --export-all --interpolated-path="$T/vhost/%CH/%P%%%D"
ask "--interpolated-path: %CH/%P%%%D" /w.git 127.0.0.1:9999
contains "--interpolated-path: %CH served" ans-pw "$HEADLINE"
ask "--interpolated-path: %CH of an unknown host" /w.git no.such.host.invalid:9999

# --disable=upload-pack: refused, unless the repository's daemon.uploadpack
# says otherwise (overridable by default); with --forbid-override as well,
# daemon.uploadpack=true does not help
mkdir -p dis
git clone -q --bare work dis/plain.git
git clone -q --bare work dis/on.git
git -C dis/on.git config daemon.uploadpack true
pair disable --export-all --base-path="$T/dis" --disable=upload-pack
ask "--disable=upload-pack" /plain.git
contains "--disable=upload-pack refuses" ans-pw "ERR service not enabled: /plain.git"
ask "--disable=upload-pack, daemon.uploadpack=true" /on.git
contains "--disable=upload-pack: daemon.uploadpack=true serves" ans-pw "$HEADLINE"
pair disable2 --export-all --base-path="$T/dis" --disable=upload-pack --forbid-override=upload-pack
ask "--disable and --forbid-override" /on.git
contains "--disable and --forbid-override refuse" ans-pw "ERR service not enabled"

# --timeout (upload-pack's, v0): a client silent after the advertisement
# is dropped
pair timeout --export-all --base-path="$T/srv" --timeout=1
for k in pw git; do
	p=$PP
	[ $k = git ] && p=$GP
	start=$(date +%s)
	$RAW "$p" send "pkt:git-upload-pack /a.git\\0host=x\\0" >"to-$k" 2>&1 || true
	echo "$(($(date +%s) - start))" >"to-$k.secs"
done
# (git's upload-pack dies of SIGALRM in silence, and so does packwire's:
# no ERR line)
check "--timeout: the same advertisement and close as git daemon's" diff to-git to-pw
check "--timeout: dropped within the timeout ($(cat to-pw.secs) s)" test "$(cat to-pw.secs)" -le 4
check "--timeout: git daemon drops it too ($(cat to-git.secs) s)" test "$(cat to-git.secs)" -le 4
contains "--timeout: closed" to-pw closed

# --verbose: the same log lines as git daemon's (pids and ports masked):
# connection, host and protocol attributes, request, refusals, disconnects
pair verbose --export-all --base-path="$T/srv" --verbose
for k in pw git; do
	p=$PP
	[ $k = git ] && p=$GP
	git -c protocol.version=2 ls-remote "git://127.0.0.1:$p/a.git" >/dev/null 2>&1 || true
	git -c protocol.version=0 ls-remote "git://127.0.0.1:$p/nothere.git" >/dev/null 2>&1 || true
	$RAW "$p" send "pkt:git-frobnicate /a.git\\0host=x\\0" >/dev/null 2>&1 || true
	sleep 0.5
done
masklog() { sed -E 's/\[[0-9]+\]/[PID]/g; s/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g' "$T/$1.log"; }
# (a "Disconnected" line is written when the daemon reaps the child, which
# under load may come after the next connection's lines: those are compared
# by count, the rest in order)
check "--verbose: log lines as git daemon's" diff <(masklog git-verbose | grep -v Disconnected) \
	<(masklog pw-verbose | grep -v Disconnected)
check "--verbose: as many disconnects logged as git daemon's" test \
	"$(masklog git-verbose | grep -c Disconnected)" = "$(masklog pw-verbose | grep -c Disconnected)"
contains "--verbose: the protocol attribute logged" pw-verbose.log 'Extended attribute "protocol": version=2'
contains "--verbose: the host attribute logged" pw-verbose.log 'Extended attribute "host": 127.0.0.1'

pair override --base-path="$T/srv"
ask "daemon.uploadpack=false" /off.git
contains "daemon.uploadpack=false refuses" ans-pw "ERR service not enabled: /off.git"
pair forbid --base-path="$T/srv" --forbid-override=upload-pack
ask "--forbid-override: daemon.uploadpack ignored" /off.git
contains "--forbid-override: served" ans-pw "$HEADLINE"

cat >hook <<'EOF'
#!/bin/sh
echo "$*" >>"${0%/*}/hook.log"
case $2 in
*a.git) exit 0 ;;
*) echo "go away, $1"; exit 1 ;;
esac
EOF
chmod +x hook
pair hook --base-path="$T/srv" --access-hook="$T/hook"
ask "--access-hook: allowed" /a.git
contains "--access-hook: allowed repository served" ans-pw "$HEADLINE"
ask "--access-hook: refused with its message" /sub/b.git
contains "--access-hook: its first line in the ERR" ans-pw "ERR go away, upload-pack: /sub/b.git"
# the hook's arguments (service, path, host, canonical host, its address,
# port) and REMOTE_ADDR, as git daemon gives them
cat >arghook <<'EOF'
#!/bin/sh
echo "$* | ${REMOTE_ADDR:-no REMOTE_ADDR} ${REMOTE_PORT:+port}" >>"${0%/*}/arghook.log"
EOF
chmod +x arghook
pair args --base-path="$T/srv" --access-hook="$T/arghook"
for k in pw git; do
	p=$PP
	[ $k = git ] && p=$GP
	rm -f arghook.log
	for h in x 127.0.0.1:1234 localhost LocalHost..:99; do
		$RAW "$p" send "pkt:git-upload-pack /a.git\\0host=$h\\0" 0000 >/dev/null 2>&1 || true
	done
	mv arghook.log "arghook-$k"
done
same_file "--access-hook: arguments and REMOTE_ADDR as git daemon's" arghook-git arghook-pw
contains "--access-hook: %H %CH %IP %P" arghook-pw "upload-pack $T/srv/a.git 127.0.0.1 127.0.0.1 127.0.0.1 1234 | 127.0.0.1 port"

# --inetd: one request on stdin/stdout
for k in pw git; do
	if [ $k = pw ]; then cmd=("$PACKWIRE" daemon); else cmd=(git daemon); fi
	python3 -c 'import sys; d = b"git-upload-pack /nothere\0host=x\0"; sys.stdout.buffer.write(b"%04x" % (len(d) + 4) + d)' |
		"${cmd[@]}" --inetd --informative-errors --base-path="$T/srv" >"inetd-$k" 2>/dev/null || true
	python3 -c 'import sys; d = b"git-upload-pack /a.git\0host=x\0"; sys.stdout.buffer.write(b"%04x" % (len(d) + 4) + d + b"0000")' |
		"${cmd[@]}" --inetd --base-path="$T/srv" 2>/dev/null | head -c 48 | tail -c 44 >"inetd-ok-$k" || true
done
same_file "--inetd: refusal as git daemon's" inetd-git inetd-pw
contains "--inetd: ERR" inetd-pw "ERR no such repository: /nothere"
same_file "--inetd: serves" inetd-ok-git inetd-ok-pw

# --detach: returns at once, the pid file names the daemon, SIGTERM ends it
DP=$(free_port)
"$PACKWIRE" daemon --detach --listen=127.0.0.1 --port="$DP" --pid-file="$T/det.pid" \
	--base-path="$T/srv" --log-destination=none
# the detached process writes it (as git daemon's does)
for i in $(seq 1 100); do [ -s det.pid ] && break; sleep 0.05; done
check "--detach: pid file written" test -s det.pid
dpid=$(cat det.pid)
DAEMON_PIDS+=("$dpid")
git ls-remote "git://127.0.0.1:$DP/a.git" >ls-det 2>&1 || true
contains "--detach: serves" ls-det "$(git -C srv/a.git rev-parse HEAD)"
kill "$dpid"
for i in $(seq 1 100); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.05; done
check "--detach: SIGTERM stops it" test "$i" -lt 100
check "--detach: pid file removed" test ! -e det.pid
daemon_logs_clean
finish
