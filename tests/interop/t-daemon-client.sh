#!/usr/bin/env bash
# packwire's git:// client against stock `git daemon`, beside stock git's:
# ls-remote, clone, fetch, shallow, partial clone, push (enabled and
# refused) for SHA-1 and SHA-256 and protocol v0, v1, v2; fsck --strict,
# refs and object format as git's results, and git's messages for the
# failures (connection refused, ERR from the daemon, not exported, service
# not enabled). Also GIT_PROXY_COMMAND, core.gitProxy and an IPv6 literal.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"

cd "$T"
mkdir -p srv
for algo in sha1 sha256; do
	make_repo "work-$algo" "$algo" >/dev/null 2>&1
	git clone -q --bare "work-$algo" "srv/$algo.git"
	git -C "srv/$algo.git" config uploadpack.allowFilter true
	git -C "srv/$algo.git" config uploadpack.allowAnySHA1InWant true
	for k in pw git; do
		git clone -q --bare "work-$algo" "srv/push-$k-$algo.git"
		git -C "srv/push-$k-$algo.git" config daemon.receivepack true
	done
	git clone -q --bare "work-$algo" "srv/nopush-$algo.git"
	git clone -q --bare "work-$algo" "srv/hidden-$algo.git"
done
for r in srv/*.git; do
	case $r in *hidden*) ;; *) touch "$r/git-daemon-export-ok" ;; esac
done

GP=$(free_port)
start_daemon gitd git "$GP" --base-path="$T/srv" --allow-override=receive-pack
IP=$(free_port)
start_daemon gitdi git "$IP" --base-path="$T/srv" --informative-errors
U=git://127.0.0.1:$GP

pw() { local v=$1; shift; "$PACKWIRE" -c protocol.version="$v" "$@"; }
g() { local v=$1; shift; git -c protocol.version="$v" "$@"; }

for algo in sha1 sha256; do
	S=$T/srv/$algo.git
	for v in 0 1 2; do
		w="$algo v$v"
		pw $v ls-remote "$U/$algo.git" >ls-pw 2>ls-pw.err || not_ok "$w: ls-remote"
		g $v ls-remote "$U/$algo.git" >ls-git 2>ls-git.err
		same_file "$w: ls-remote as git's" ls-git ls-pw
		same_msgs "$w: ls-remote messages" ls-git.err ls-pw.err

		pw $v clone "$U/$algo.git" "c-pw-$algo-$v" >clone-pw.out 2>&1 || not_ok "$w: clone"
		g $v clone -q "$U/$algo.git" "c-git-$algo-$v"
		C=c-pw-$algo-$v
		check "$w: clone fsck --strict" fsck_ok "$C"
		check "$w: clone refs as git's" same_refs "$C" "c-git-$algo-$v"
		check "$w: clone object format" test "$(git -C "$C" rev-parse --show-object-format)" = "$algo"
		contains "$w: clone says what it clones" clone-pw.out "Cloning into 'c-pw-$algo-$v'..."

		pw $v clone -q --depth=1 "$U/$algo.git" "d-pw-$algo-$v" 2>err || { not_ok "$w: --depth=1"; cat err; }
		g $v clone -q --depth=1 "$U/$algo.git" "d-git-$algo-$v"
		check "$w: --depth=1 fsck" fsck_ok "d-pw-$algo-$v"
		check "$w: --depth=1 shallow as git's" cmp -s "d-pw-$algo-$v/.git/shallow" "d-git-$algo-$v/.git/shallow"
		check "$w: --depth=1 refs as git's" same_refs "d-pw-$algo-$v" "d-git-$algo-$v"

		pw $v clone -q --filter=blob:none "$U/$algo.git" "f-pw-$algo-$v" 2>err || { not_ok "$w: --filter"; cat err; }
		check "$w: partial clone fsck" fsck_ok "f-pw-$algo-$v"
		check "$w: partial clone is a promisor" test "$(git -C "f-pw-$algo-$v" config remote.origin.promisor)" = true
		check "$w: partial clone refs" same_refs "f-pw-$algo-$v" "c-git-$algo-$v"

		(cd "work-$algo" && echo "more $v" >>a.txt && git commit -q -am "more $v" && git push -q "$S" main)
		(cd "$C" && pw $v fetch origin) >fetch-pw.out 2>&1 || not_ok "$w: fetch"
		(cd "c-git-$algo-$v" && g $v fetch origin) >fetch-git.out 2>&1
		same_msgs "$w: fetch messages as git's" fetch-git.out fetch-pw.out
		check "$w: fetch fsck" fsck_ok "$C"
		check "$w: fetch refs as git's" same_refs "$C" "c-git-$algo-$v"

		for k in pw git; do
			(cd "c-$k-$algo-$v" && git checkout -q -B "p$v" origin/main && echo "push $v" >"p$v.txt" &&
				git add "p$v.txt" && git commit -q -m "push $v" &&
				if [ $k = pw ]; then pw $v push "$U/push-$k-$algo.git" "p$v:refs/heads/p$v"; else
					g $v push "$U/push-$k-$algo.git" "p$v:refs/heads/p$v"; fi) >"push-$k.out" 2>&1 ||
				echo failed >>"push-$k.out"
		done
		sed -i "s/push-git-/push-pw-/" push-git.out
		same_msgs "$w: push messages as git's" push-git.out push-pw.out
		check "$w: pushed repository fsck" fsck_ok "srv/push-pw-$algo.git"
		check "$w: pushed ref" test "$(git -C "srv/push-pw-$algo.git" rev-parse "p$v")" = "$(git -C "$C" rev-parse "p$v")"
		(cd "$C" && pw $v push "$U/nopush-$algo.git" "p$v:refs/heads/p$v") >nopush-pw.out 2>&1 &&
			not_ok "$w: push refused" || ok "$w: push refused"
		(cd "$C" && g $v push "$U/nopush-$algo.git" "p$v:refs/heads/p$v") >nopush-git.out 2>&1 || true
		same_msgs "$w: refused push message as git's" nopush-git.out nopush-pw.out
	done
done

# failures, worded as git words them
msg_case() {
	local what=$1; shift
	"$PACKWIRE" "$@" >pw.out 2>&1 && echo "exit 0" >>pw.out || echo "exit $?" >>pw.out
	git "$@" >git.out 2>&1 && echo "exit 0" >>git.out || echo "exit $?" >>git.out
	same_msgs "$what: message and exit code as git's" git.out pw.out
}
DEAD=$(free_port)
msg_case "connection refused" ls-remote "git://127.0.0.1:$DEAD/sha1.git"
msg_case "no such repository" ls-remote "$U/nothere.git"
msg_case "not exported" ls-remote "$U/hidden-sha1.git"
msg_case "informative: no such repository" ls-remote "git://127.0.0.1:$IP/nothere.git"
msg_case "informative: not exported" ls-remote "git://127.0.0.1:$IP/hidden-sha1.git"
msg_case "informative: clone of a missing repository" clone "git://127.0.0.1:$IP/nothere.git" nothere
check "failed clone leaves nothing behind" test ! -e nothere
(cd c-pw-sha1-0 && msg_case "informative: service not enabled" push "git://127.0.0.1:$IP/sha1.git" main:refs/heads/x)

# GIT_PROXY_COMMAND and core.gitProxy: "<cmd> <host> <port>" carries the stream
cat >proxy <<PROXY
#!/bin/sh
echo "\$@" >>"$T/proxy.log"
exec python3 -c '
import socket, sys, os, threading
s = socket.create_connection(("127.0.0.1", $GP))
def up():
    while True:
        d = os.read(0, 65536)
        if not d: break
        s.sendall(d)
    s.shutdown(socket.SHUT_WR)
threading.Thread(target=up, daemon=True).start()
while True:
    d = s.recv(65536)
    if not d: break
    os.write(1, d)
'
PROXY
chmod +x proxy
GIT_PROXY_COMMAND=$T/proxy "$PACKWIRE" ls-remote git://example.invalid:1234/sha256.git >ls-proxy 2>err || { not_ok "GIT_PROXY_COMMAND"; cat err; }
git ls-remote "$U/sha256.git" >ls-direct
same_file "GIT_PROXY_COMMAND: ls-remote through the proxy" ls-direct ls-proxy
contains "GIT_PROXY_COMMAND: gets host and port" proxy.log "example.invalid 1234"
git -C c-pw-sha1-2 config --add core.gitProxy "none for example.org"
git -C c-pw-sha1-2 config --add core.gitProxy "$T/proxy for invalid"
(cd c-pw-sha1-2 && "$PACKWIRE" ls-remote git://a.example.invalid/sha1.git) >ls-proxy 2>err || { not_ok "core.gitProxy"; cat err; }
git ls-remote "$U/sha1.git" >ls-direct
same_file "core.gitProxy 'cmd for domain' is used" ls-direct ls-proxy
contains "core.gitProxy: gets host and the default port" proxy.log "a.example.invalid 9418"
(cd c-pw-sha1-2 && GIT_PROXY_COMMAND= "$PACKWIRE" ls-remote "$U/sha1.git") >ls-proxy 2>&1 || not_ok "empty GIT_PROXY_COMMAND connects directly"
same_file "empty GIT_PROXY_COMMAND connects directly" ls-direct ls-proxy

# an IPv6 literal, when the machine has ::1
if python3 -c 'import socket; s=socket.socket(socket.AF_INET6); s.bind(("::1", 0))' 2>/dev/null; then
	V6=$(python3 -c 'import socket
s = socket.socket(socket.AF_INET6); s.bind(("::1", 0)); print(s.getsockname()[1]); s.close()')
	git daemon --listen=::1 --port="$V6" --pid-file="$T/v6.pid" --base-path="$T/srv" 2>v6.log &
	DAEMON_PIDS+=($!)
	for i in $(seq 1 100); do [ -s v6.pid ] && break; sleep 0.05; done
	"$PACKWIRE" ls-remote "git://[::1]:$V6/sha1.git" >ls-v6 2>err || { not_ok "IPv6 literal"; cat err; }
	same_file "IPv6 literal: ls-remote" ls-direct ls-v6
	"$PACKWIRE" clone -q "git://[::1]:$V6/sha256.git" v6clone 2>err || { not_ok "IPv6 clone"; cat err; }
	check "IPv6 literal: clone fsck" fsck_ok v6clone
else
	skip "no IPv6 loopback"
fi
daemon_logs_clean
finish
