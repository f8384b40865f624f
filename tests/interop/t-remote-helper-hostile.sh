#!/usr/bin/env bash
# Hostile remote helpers: one that crashes, one that prints nonsense (an
# unknown mandatory capability, a bad answer to connect, an endless line,
# half a packet), one that hangs (helperTimeout), one that serves the other
# object format; and packwire
# remote-http fed malformed commands. Each gets a clear error, and nothing
# is written (no clone directory, refs and objects unchanged).
. "$(dirname "$0")/lib.sh"
unset GIT_ALLOW_PROTOCOL GIT_PROTOCOL_FROM_USER
pw() { "$PACKWIRE" "$@"; }

mkdir -p bin
# git-remote-bad <remote> <mode>: the mode is the address
cat >bin/git-remote-bad <<'HELPER'
#!/bin/sh
mode=$2
read -r cmd
case $mode in
crash) exit 3 ;;
mandatory) printf 'connect\n*frobnicate\n\n' ;;
badconnect) printf 'connect\n\n'; read -r cmd; echo hello; exit 0 ;;
longline) head -c 200000 /dev/zero | tr '\0' x; exit 0 ;;
halfpkt) printf 'connect\n\n'; read -r cmd; printf '\n00ff# short'; exit 0 ;;
garbage) printf 'connect\n\n'; read -r cmd; printf '\nzzzz not a packet\n'; exit 0 ;;
badlist) printf 'fetch\n\n'; read -r cmd; printf 'this is no ref line\n\n' ;;
badformat) printf 'fetch\n\n'; read -r cmd; printf ':object-format sha256\n%040d refs/heads/main\n\n' 0 ;;
nofetch) printf 'fetch\n\n'; read -r cmd; printf '%040d refs/heads/main\n\n' 1; read -r cmd; read -r cmd; echo ;;
hang) echo $$ >"$BAD_PIDFILE"; printf 'fetch\npush\n\n'; read -r cmd; exec sleep 60 ;;
*) exit 1 ;;
esac
while read -r cmd; do :; done
HELPER
chmod +x bin/git-remote-bad
# git-remote-other <remote> <path>: connect to the repository at path
cat >bin/git-remote-other <<'HELPER'
#!/bin/sh
while read -r cmd arg; do
	case $cmd in
	capabilities) printf 'connect\n\n' ;;
	connect) echo; exec git "${arg#git-}" "$2" ;;
	esac
done
HELPER
chmod +x bin/git-remote-other
export PATH=$T/bin:$PATH

for mode in crash mandatory badconnect longline halfpkt garbage badlist badformat nofetch; do
	if pw clone -q "bad::$mode" "c-$mode" 2>"err-$mode"; then
		not_ok "$mode: clone succeeded"
	else
		ok "$mode: clone fails"
	fi
	check "$mode: nothing written" test ! -e "c-$mode"
	check "$mode: one fatal line, no crash" test "$(grep -c '^fatal: ' "err-$mode")" -ge 1
done
contains "crash: the helper is named" err-crash "remote helper 'bad' aborted session"
contains "mandatory: Git's message" err-mandatory "unknown mandatory capability frobnicate"
contains "badconnect: the answer is shown" err-badconnect "unknown response to connect: hello"
contains "longline: the bound is named" err-longline "longer than"
contains "badlist: the line is shown" err-badlist "malformed sha1 object id: this is no ref line"
contains "badformat: ids of the wrong length" err-badformat "malformed sha256 object id"
contains "nofetch: the missing object is named" err-nofetch "did not fetch 0000000000000000000000000000000000000001"

# a helper that hangs: helperTimeout stops it (Git waits for ever)
export BAD_PIDFILE=$T/hang.pid
git init -q hang-repo
git -C hang-repo commit -q --allow-empty -m x
git -C hang-repo remote add origin bad::hang
before=$(refs hang-repo)
start=$SECONDS
check_fails "hang: ls-remote with packwire.helperTimeout=1 fails" \
	"$PACKWIRE" -c packwire.helperTimeout=1 ls-remote bad::hang
check "hang: ... within a few seconds" test $((SECONDS - start)) -lt 20
pw -c packwire.helperTimeout=1 ls-remote bad::hang 2>err-hang || true
contains "hang: the message says why" err-hang "printed nothing for 1 seconds"
sleep 0.5
check_fails "hang: the helper was stopped" sh -c 'kill -0 "$1" 2>/dev/null' _ "$(cat "$BAD_PIDFILE")"
check_fails "hang: push with remote.origin.helperTimeout=1 fails" \
	"$PACKWIRE" -C hang-repo -c remote.origin.helperTimeout=1 push origin main
check_fails "hang: fetch with remote.origin.helperTimeout=1 fails" \
	"$PACKWIRE" -C hang-repo -c remote.origin.helperTimeout=1 fetch origin
check "hang: refs unchanged" test "$(refs hang-repo)" = "$before"

check "unknown helper: Git's message" sh -c '! "$PACKWIRE" ls-remote nosuch::x 2>err-nosuch && grep -q "unable to find remote helper for .nosuch." err-nosuch'

# the other object format: a sha1 repository fetching from a sha256 one
make_repo src256 sha256
make_repo src1 sha1
git clone -q src1 local1
before=$(refs local1)
objs=$(all_objects local1)
if pw -C local1 fetch "other::$T/src256" "+refs/heads/*:refs/remotes/x/*" 2>err-format; then
	not_ok "wrong object format: fetch succeeded"
else
	ok "wrong object format: fetch fails"
fi
check "wrong object format: refs unchanged" test "$(refs local1)" = "$before"
check "wrong object format: no object added" test "$(all_objects local1)" = "$objs"
check "wrong object format: the message names the formats" grep -qiE "object format|algorithm" err-format

# packwire remote-http fed nonsense on stdin
for input in 'bogus' 'fetch nothex refs/heads/main' 'option' 'connect a b' $'capabilities\x01'; do
	printf '%s\n' "$input" >in
	st=0
	pw remote-http origin http://127.0.0.1:9/x.git <in >out 2>err || st=$?
	check "remote-http refuses '$(printf %q "$input")' with status 128" test "$st" -eq 128
	check "remote-http says why ('$(printf %q "$input")')" grep -q '^fatal: ' err
done
printf 'capabilities\n\n' | pw remote-http origin http://127.0.0.1:9/x.git >caps
contains "remote-http offers stateless-connect" caps "stateless-connect"
contains "remote-http offers object-format" caps "object-format"
finish
