#!/usr/bin/env bash
# packwire clone against stock git upload-pack, for protocol v0, v1, v2,
# file:// and ssh, SHA-1 and SHA-256: the result matches what stock git
# clone makes (refs, HEAD, config, shallow), passes git fsck --strict, has a
# clean work tree and index, and the server's object format. Also --bare,
# --mirror, --depth=1, -b, -o, -n, empty repositories, failures leaving
# nothing behind; real history in interop/t-client-clone/real.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/client-lib.sh"

cd "$T"

# compare DESC PWCLONE GITCLONE: refs, HEAD, config and shallow as git made them
compare() {
	local what=$1 a=$2 b=$3 ga gb
	ga=$(git -C "$a" rev-parse --absolute-git-dir)
	gb=$(git -C "$b" rev-parse --absolute-git-dir)
	check "$what: fsck --strict" fsck_ok "$a"
	check "$what: refs as git clone" same_refs "$a" "$b"
	check "$what: HEAD as git clone" cmp -s "$ga/HEAD" "$gb/HEAD"
	check "$what: config as git clone" cmp -s "$ga/config" "$gb/config"
	check "$what: object format" test "$(git -C "$a" rev-parse --show-object-format)" = \
		"$(git -C "$b" rev-parse --show-object-format)"
	if [ -f "$gb/shallow" ]; then
		check "$what: shallow as git clone" cmp -s "$ga/shallow" "$gb/shallow"
	fi
}

worktree_clean() {
	[ -z "$(git -C "$1" status --porcelain)" ] && git -C "$1" diff --quiet &&
		git -C "$1" diff --cached --quiet
}

# ---- real history: interop/t-client-clone/real -----------------------------
if real_part "clones of git v1.5.0"; then
	for algo in sha1 sha256; do
		src=$(data_repo small $algo)
		pw 2 clone -q --bare "file://$src" "pw-data-$algo.git"
		check "real history $algo: fsck" fsck_ok "pw-data-$algo.git"
		check "real history $algo: refs" same_refs "pw-data-$algo.git" "$src"
		pw 0 clone -q "file://$src" "pw-data-wt-$algo"
		check "real history $algo v0: work tree clean" worktree_clean "pw-data-wt-$algo"
	done
	finish
fi

for algo in sha1 sha256; do
	make_repo "srv-$algo" "$algo" >/dev/null 2>&1
	git init -q --bare --object-format=$algo "empty-$algo.git"
done

n=0
for algo in sha1 sha256; do
	for tr in file ssh; do
		for v in 0 1 2; do
			n=$((n + 1))
			u=$(url $tr "$T/srv-$algo")
			d="$algo-$tr-v$v"
			pw $v clone -q "$u" "pw-$n" 2>err || { not_ok "$d: clone"; cat err; continue; }
			g $v clone -q "$u" "git-$n" 2>/dev/null
			compare "$d clone" "pw-$n" "git-$n"
			check "$d: work tree and index clean" worktree_clean "pw-$n"
			check "$d: executable bit" test -x "pw-$n/run.sh"
			check "$d: symlink" test -L "pw-$n/link"
			check "$d: index readable" git -C "pw-$n" ls-files --stage >/dev/null

			pw $v clone -q --bare "$u" "pw-$n.git"
			g $v clone -q --bare "$u" "git-$n.git" 2>/dev/null
			compare "$d clone --bare" "pw-$n.git" "git-$n.git"
			check "$d --bare: refs equal to the server's" same_refs "pw-$n.git" "srv-$algo"

			pw $v clone -q --depth=1 "$u" "pwd-$n"
			g $v clone -q --depth=1 "$u" "gitd-$n" 2>/dev/null
			compare "$d clone --depth=1" "pwd-$n" "gitd-$n"
			check "$d --depth=1: work tree clean" worktree_clean "pwd-$n"
		done
	done
done

u=$(url file "$T/srv-sha256")
pw 2 clone -q --mirror "$u" pw-mirror.git
git clone -q --mirror "$u" git-mirror.git
compare "--mirror" pw-mirror.git git-mirror.git
pw 2 clone -q -b topic -o up "$u" pw-b
git clone -q -b topic -o up "$u" git-b
compare "-b topic -o up" pw-b git-b
check "-b topic: work tree clean" worktree_clean pw-b
pw 2 clone -q -n "$u" pw-n
check "-n: no index" test ! -e pw-n/.git/index
check "-n: no files" test ! -e pw-n/a.txt

# messages on stderr
pw 2 clone "$u" pw-msg 2>err
contains "Cloning into message" err "Cloning into 'pw-msg'..."
pw 2 clone --bare "$u" 2>err
check "directory name guessed for --bare" test -d srv-sha256.git
contains "bare message" err "Cloning into bare repository 'srv-sha256.git'..."

# empty repositories stay empty and keep their object format
for algo in sha1 sha256; do
	for v in 0 2; do
		pw $v clone "$(url file "$T/empty-$algo.git")" "pw-empty-$algo-$v" 2>err
		g $v clone -q "$(url file "$T/empty-$algo.git")" "git-empty-$algo-$v" 2>/dev/null
		contains "empty $algo v$v: warning" err "warning: You appear to have cloned an empty repository."
		# git 2.39's upload-pack says nothing but a flush for an empty
		# repository in v0 (no capabilities^{} line), so there the client
		# can only assume sha1, as git clone does; v2 names the format.
		# (git 2.39's clone itself ignores the v2 object-format of an
		# empty repository and makes sha1; packwire keeps the server's.)
		if [ $v = 0 ]; then
			check "empty $algo v0: object format as git clone" test \
				"$(git -C "pw-empty-$algo-$v" rev-parse --show-object-format)" = \
				"$(git -C "git-empty-$algo-$v" rev-parse --show-object-format)"
		else
			check "empty $algo v2: object format $algo" test \
				"$(git -C "pw-empty-$algo-$v" rev-parse --show-object-format)" = "$algo"
		fi
		check "empty $algo v$v: HEAD as git" cmp -s "pw-empty-$algo-$v/.git/HEAD" \
			"git-empty-$algo-$v/.git/HEAD"
		check "empty $algo v$v: fsck" fsck_ok "pw-empty-$algo-$v"
		check "empty $algo v$v: no refs" test -z "$(refs "pw-empty-$algo-$v")"
	done
done

# failures remove what they created
check_fails "clone of a missing repository fails" pw 2 clone -q "$T/nope" pw-fail
check "failed clone leaves no directory" test ! -e pw-fail
check_fails "clone with a bad upload-pack fails" pw 2 clone -q --upload-pack=false "$u" pw-fail2
check "failed clone (server died) leaves no directory" test ! -e pw-fail2
mkdir pw-full && echo x >pw-full/f
check_fails "clone into a non-empty directory fails" pw 2 clone -q "$u" pw-full
check "non-empty directory untouched" test -f pw-full/f
mkdir pw-emptydir
check_fails "failed clone into an existing empty dir" pw 2 clone -q --upload-pack=false "$u" pw-emptydir
check "existing empty directory kept, emptied" test -d pw-emptydir -a -z "$(ls -A pw-emptydir)"
finish
