#!/usr/bin/env bash
# Hostile git:// clients against `packwire daemon`, each answered as `git
# daemon` answers it (the connection closed, or the same ERR line with
# --informative-errors) and each followed by a normal clone that succeeds:
# malformed, oversized, empty and NUL-less request lines, unknown services,
# "..", ~user without --user-path, a path outside the whitelist, a symlink
# out of --base-path, a repository not exported, a silent client
# (--init-timeout), a flood beyond --max-connections, and clients that
# vanish mid-pack and mid-push (the repository stays as it was).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/daemon-lib.sh"
RAW="python3 $(dirname "$0")/daemon-raw.py"

cd "$T"
mkdir -p srv outside
for algo in sha1 sha256; do
	make_repo "work-$algo" "$algo" >/dev/null 2>&1
	git clone -q --bare "work-$algo" "srv/$algo.git"
	git clone -q --bare "work-$algo" "srv/push-$algo.git"
done
git clone -q --bare work-sha1 srv/hidden.git
git clone -q --bare work-sha1 outside/secret.git
touch outside/secret.git/git-daemon-export-ok
ln -s "$T/outside/secret.git" srv/evil.git
for r in srv/sha1.git srv/sha256.git srv/push-*.git; do touch "$r/git-daemon-export-ok"; done

A=(--base-path="$T/srv" --informative-errors --init-timeout=1 --max-connections=4 --enable=receive-pack)
B=(--export-all --informative-errors --init-timeout=1 "$T/srv/sha1.git")
PA=$(free_port) GA=$(free_port) PB=$(free_port) GB=$(free_port)
start_daemon pwa pw "$PA" "${A[@]}"
start_daemon gita git "$GA" "${A[@]}"
start_daemon pwb pw "$PB" --export-all --informative-errors --init-timeout=1 "$T/srv/sha1.git"
start_daemon gitb git "$GB" "${B[@]}"

n=0
clone_works() {
	n=$((n + 1))
	if git clone -q "git://127.0.0.1:$PA/sha256.git" "after-$n" 2>err && fsck_ok "after-$n"; then
		ok "$1: a normal clone still succeeds"
	else
		not_ok "$1: a normal clone still succeeds"; cat err
	fi
}

# same_answer WHAT PWPORT GITPORT BYTES: same reply from both daemons
same_answer() {
	local what=$1 pp=$2 gp=$3
	shift 3
	$RAW "$pp" send "$@" >ans-pw 2>&1 || true
	$RAW "$gp" send "$@" >ans-git 2>&1 || true
	same_file "$what: answered as git daemon answers" ans-git ans-pw
	clone_works "$what"
}
req() { echo "pkt:$1"; }

same_answer "malformed length" "$PA" "$GA" 'zzzzgit-upload-pack /sha1.git\0host=x\0'
same_answer "length 0003" "$PA" "$GA" '0003'
same_answer "empty request (flush)" "$PA" "$GA" '0000'
same_answer "oversized packet" "$PA" "$GA" "ffff$(head -c 65531 /dev/zero | tr '\0' a)"
long=$(head -c 60000 /dev/zero | tr '\0' a)
same_answer "path far over PATH_MAX" "$PA" "$GA" "$(req "git-upload-pack /$long\\0host=x\\0")"
same_answer "request without NUL (served)" "$PA" "$GA" "$(req 'git-upload-pack /sha1.git')" 0000
contains "request without NUL: the advertisement" ans-pw "$(git -C srv/sha1.git rev-parse HEAD) HEAD"
same_answer "unknown service" "$PA" "$GA" "$(req 'git-frobnicate /sha1.git\0host=x\0')"
same_answer "service without a path" "$PA" "$GA" "$(req 'git-upload-pack \0host=x\0')"
same_answer "upload-archive (not enabled)" "$PA" "$GA" "$(req 'git-upload-archive /sha1.git\0host=x\0')"
contains "upload-archive: ERR service not enabled" ans-pw "ERR service not enabled: /sha1.git"
same_answer "'..' in the path" "$PA" "$GA" "$(req 'git-upload-pack /../srv/sha1.git\0host=x\0')"
contains "'..': ERR no such repository" ans-pw "ERR no such repository: /../srv/sha1.git"
same_answer "'..' at the end" "$PA" "$GA" "$(req 'git-upload-pack /sha1.git/..\0host=x\0')"
same_answer "relative path under --base-path" "$PA" "$GA" "$(req 'git-upload-pack sha1.git\0host=x\0')"
same_answer "~user without --user-path" "$PA" "$GA" "$(req 'git-upload-pack ~root/sha1.git\0host=x\0')"
same_answer "not exported" "$PA" "$GA" "$(req 'git-upload-pack /hidden.git\0host=x\0')"
contains "not exported: ERR" ans-pw "ERR repository not exported: /hidden.git"
same_answer "host with a port and extra parameters" "$PA" "$GA" "$(req 'git-upload-pack /sha1.git\0host=EXAMPLE.com:99\0\0x=y\0')" 0000
same_answer "outside the whitelist" "$PB" "$GB" "$(req "git-upload-pack $T/srv/sha256.git\\0host=x\\0")"
contains "outside the whitelist: ERR" ans-pw "ERR no such repository: $T/srv/sha256.git"
same_answer "inside the whitelist (served)" "$PB" "$GB" "$(req "git-upload-pack $T/srv/sha1.git\\0host=x\\0")" 0000
contains "inside the whitelist: the advertisement" ans-pw "$(git -C srv/sha1.git rev-parse HEAD) HEAD"

# git daemon follows a symlink out of the base path; packwire refuses it
$RAW "$PA" send "$(req 'git-upload-pack /evil.git\0host=x\0')" >ans-pw 2>&1 || true
contains "symlink out of --base-path refused" ans-pw "ERR no such repository: /evil.git"
contains "symlink out of --base-path: logged" pwa.log "resolves outside the base path"
clone_works "symlink out of --base-path"

# a client that never speaks is dropped after --init-timeout (1 s)
for k in pw git; do
	p=$PA; [ $k = git ] && p=$GA
	start=$(date +%s)
	$RAW "$p" silent 6 >"silent-$k" 2>&1 || true
	echo "$(($(date +%s) - start))" >"silent-$k.secs"
done
same_file "silent client: dropped as by git daemon" silent-git silent-pw
check "silent client: dropped within the init timeout" test "$(cat silent-pw.secs)" -le 3
contains "silent client: closed" silent-pw closed
clone_works "silent client"

# a flood beyond --max-connections=4: the excess is dropped and logged, the
# daemon lives on, and once the flood times out clones work again
closed=$($RAW "$PA" flood 12 1.2)
check "flood: connections beyond the limit dropped ($closed of 12)" test "$closed" -ge 8
contains "flood: logged" pwa.log "Too many children, dropping connection"
sleep 1
clone_works "flood"

# a client vanishing in the middle of the pack
out=$($RAW "$PA" midpack /sha256.git)
check "client vanishing mid-pack ($out)" test -n "$out"
clone_works "client vanishing mid-pack"
kill -0 "$(cat pwa.pid)" && ok "daemon alive after the hostile clients" || not_ok "daemon alive after the hostile clients"

# a push cut in the middle of the pack leaves the repository as it was
for algo in sha1 sha256; do
	(cd "work-$algo" && for i in $(seq 1 30); do echo "new $i $RANDOM" >"n$i.txt"; done &&
		git add . && git commit -q -m "to push")
	new=$(git -C "work-$algo" rev-parse HEAD)
	git -C "work-$algo" pack-objects --revs --stdout -q >"push-$algo.pack" 2>/dev/null <<EOF
$new
^$(git -C "srv/push-$algo.git" rev-parse main)
EOF
	state() { refs "$1"; (cd "$1" && find objects refs -type f | sort); }
	state "srv/push-$algo.git" >before
	out=$($RAW "$PA" midpush "/push-$algo.git" "push-$algo.pack" "$new" refs/heads/cut)
	sleep 0.3
	state "srv/push-$algo.git" >after
	same_file "$algo: push cut mid-pack ($out) leaves the repository as it was" before after
	check "$algo: no quarantine left behind" test -z "$(ls -d srv/push-$algo.git/objects/tmp_objdir* 2>/dev/null || true)"
	check "$algo: repository fsck after the cut push" fsck_ok "srv/push-$algo.git"
	clone_works "$algo: push cut mid-pack"
done
daemon_logs_clean
finish
