#!/usr/bin/env bash
# packwire ls-remote against stock git upload-pack: byte-identical output to
# git ls-remote for protocol v0, v1, v2, over file:// and ssh, SHA-1 and
# SHA-256, with --heads/--tags/--refs/--symref and patterns; works outside
# a repository; empty repositories.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

cd "$T"
for algo in sha1 sha256; do
	make_repo "srv-$algo" "$algo" >/dev/null 2>&1
	git init -q --bare --object-format=$algo "empty-$algo.git"
done
mkdir outside && cd outside
for algo in sha1 sha256; do
	for tr in file ssh path; do
		u=$(url $tr "$T/srv-$algo")
		for v in 0 1 2; do
			for opts in "" "--symref" "--heads" "--tags" "--refs" "--tags --refs" "-q"; do
				pw $v ls-remote $opts "$u" >pw.out 2>pw.err || true
				g $v ls-remote $opts "$u" >git.out 2>git.err || true
				same_file "$algo $tr v$v ls-remote $opts" pw.out git.out
			done
			pw $v ls-remote "$u" main 'v0.*' >pw.out
			g $v ls-remote "$u" main 'v0.*' >git.out
			same_file "$algo $tr v$v ls-remote patterns" pw.out git.out
		done
	done
	for v in 0 2; do
		u=$(url file "$T/empty-$algo.git")
		pw $v ls-remote "$u" >pw.out
		g $v ls-remote "$u" >git.out
		same_file "$algo v$v empty repository" pw.out git.out
		check_fails "$algo v$v --exit-code on empty" pw $v ls-remote --exit-code "$u"
		pw $v ls-remote --exit-code "$u" >/dev/null 2>&1 && rc=0 || rc=$?
		check "$algo v$v --exit-code gives 2" test "$rc" = 2
	done
done
# --upload-pack runs the given command (with arguments) through the shell
pw 2 ls-remote --upload-pack='git upload-pack' "$T/srv-sha256" >pw.out
git ls-remote "$T/srv-sha256" >git.out
same_file "--upload-pack with arguments" pw.out git.out
# ssh URLs reach the ssh command with the host and a quoted path
FAKE_SSH_LOG=$T/ssh.log pw 2 ls-remote "localhost:$T/srv-sha1" >pw.out
git ls-remote "$T/srv-sha1" >git.out
same_file "scp-like address" pw.out git.out
contains "ssh saw the host" "$T/ssh.log" "localhost"
contains "ssh asked to pass GIT_PROTOCOL on" "$T/ssh.log" "-o SendEnv=GIT_PROTOCOL"
FAKE_SSH_LOG=$T/ssh2.log pw 2 ls-remote "ssh://me@localhost:2222$T/srv-sha1" >pw.out
same_file "ssh:// with user and port" pw.out git.out
contains "ssh got -p and user@host" "$T/ssh2.log" "-p 2222 me@localhost"
contains "remote command single-quoted" "$T/ssh2.log" "git-upload-pack '$T/srv-sha1'"
check_fails "missing repository fails" pw 2 ls-remote "$T/nope"
finish
