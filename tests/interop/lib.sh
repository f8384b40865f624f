# Shared helpers for interop tests: source it first. Every test builds its own
# repositories with stock git.
#
# Real history (../shared/data, absent on CI): a check that needs it never
# hides inside a test that passes without it. A test that needs the data
# throughout starts with `require_data WHAT`; a test with a part that needs
# it puts that part in a block
#     if real_part "WHAT"; then ...; finish; fi
# after its helpers and before its other checks. CMake registers such a
# script twice (CMakeLists.txt looks for "if real_part"): interop/t-NAME runs
# it without arguments (real_part is false), interop/t-NAME/real runs it
# with the argument `real` (the block runs, then finish ends the test).
# Without the data, require_data and real_part exit 77, which CTest reports
# as Skipped. data_repo works only after one of them.
#
# A test passes only when it ran at least one check and none failed; one
# that only skipped exits 77 (Skipped); one that checked nothing fails.
set -eEuo pipefail
# A command failing outside check/contains ends the test (set -e); say which
# one and where, or CI's log shows only the earlier "ok" lines. On stderr:
# the failure may happen inside $(...). Silent while a test runs with set +e.
pw_t_abort() {
	local rc=$? i
	case $- in *e*) ;; *) return 0 ;; esac
	[ "${BASH_SUBSHELL:-0}" -eq 0 ] || return 0
	echo "not ok - test aborted: '$BASH_COMMAND' exited with status $rc" >&2
	for ((i = 0; i < ${#BASH_LINENO[@]} - 1; i++)); do
		echo "    at ${BASH_SOURCE[i + 1]##*/}:${BASH_LINENO[i]} (${FUNCNAME[i + 1]})" >&2
	done
}
trap pw_t_abort ERR

: "${PACKWIRE:?PACKWIRE must point at the packwire binary}"
PW_SRC=${PW_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
PW_BUILD=${PW_BUILD:-$PW_SRC/build}
PW_SHARED=${PW_SHARED:-$PW_SRC/../shared}
PACKWIRE=$(realpath "$PACKWIRE")
export PACKWIRE

# isolate from the user's and system git configuration
export GIT_CONFIG_NOSYSTEM=1 HOME="$PW_BUILD/tmp/home" GIT_AUTHOR_NAME=Test \
	GIT_AUTHOR_EMAIL=test@example.com GIT_COMMITTER_NAME=Test \
	GIT_COMMITTER_EMAIL=test@example.com GIT_AUTHOR_DATE='1700000000 +0000' \
	GIT_COMMITTER_DATE='1700000000 +0000'
unset GIT_DIR GIT_WORK_TREE GIT_OBJECT_DIRECTORY GIT_PROTOCOL 2>/dev/null || true
mkdir -p "$HOME"
# created atomically: parallel tests race here ("could not lock config file")
if [ ! -f "$HOME/.gitconfig" ]; then
	printf '[init]\n\tdefaultBranch = main\n' >"$HOME/.gitconfig.$$"
	mv -f "$HOME/.gitconfig.$$" "$HOME/.gitconfig"
fi

# the part of the script this run is: "" (the main one) or "real" (only a
# test's own argument: benchmarks source this file too)
PW_PART=
case $(basename "$0") in t-*.sh) PW_PART=${1:-} ;; esac
case $PW_PART in
'' | real) ;;
*) echo "$0: unknown part '$PW_PART' (want no argument or 'real')" >&2; exit 2 ;;
esac
T_NAME=$(basename "$0" .sh)${PW_PART:+.$PW_PART}
T=$PW_BUILD/tmp/$T_NAME
rm -rf "$T"
mkdir -p "$T"
# the build tree may sit inside a checkout: git and packwire must not find
# that repository from a test's directories
GIT_CEILING_DIRECTORIES=$(realpath "$PW_BUILD/tmp")
export GIT_CEILING_DIRECTORIES
cd "$T"
t_pass=0 t_fail=0 t_skip=0

ok() { t_pass=$((t_pass + 1)); echo "ok $*"; }
not_ok() { t_fail=$((t_fail + 1)); echo "not ok $*"; }
skip() { t_skip=$((t_skip + 1)); echo "skipped: $*"; }

# check DESCRIPTION COMMAND...: passes when the command succeeds
check() {
	local what=$1; shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
# check_fails DESCRIPTION COMMAND...: passes when the command fails (exit != 0)
check_fails() {
	local what=$1; shift
	if "$@"; then not_ok "$what (unexpectedly succeeded)"; else ok "$what"; fi
}
# same_output DESCRIPTION FILE1 FILE2
same_file() {
	if cmp -s "$2" "$3"; then ok "$1"; else not_ok "$1"; diff -u "$2" "$3" | head -20 || true; fi
}
# contains DESCRIPTION FILE PATTERN (fixed string)
# (the file may be protocol output: cat -v keeps NULs and other binary
# bytes out of the log)
contains() {
	if grep -qaF -- "$3" "$2"; then ok "$1"; else
		not_ok "$1: '$3' not in $2"
		head -c 4000 "$2" | cat -v | sed 's/^/    /' | head -20
	fi
}

finish() {
	echo "$t_pass passed, $t_fail failed, $t_skip skipped"
	if [ "$PW_PART" = real ] && [ -z "${pw_t_real:-}" ]; then
		echo "not ok - run as the real-history part, but no 'if real_part' block ran"
		exit 1
	fi
	[ "$t_fail" -eq 0 ] || exit 1
	if [ "$t_pass" -eq 0 ]; then
		[ "$t_skip" -eq 0 ] || exit 77
		echo "not ok - no check ran: a test that checks nothing does not pass"
		exit 1
	fi
	exit 0
}

# refs DIR: every ref with its value, sorted (for before/after comparisons)
refs() { git -C "$1" for-each-ref --format='%(objectname) %(refname)' | sort; }
# objects DIR: every object id in the repository, sorted
all_objects() { git -C "$1" cat-file --batch-all-objects --batch-check='%(objectname)' | sort; }
same_refs() { diff <(refs "$1") <(refs "$2") >/dev/null; }
fsck_ok() { git -C "$1" fsck --strict --no-progress >/dev/null 2>&1; }

# make_repo DIR ALGO: a small non-bare repository with merges, tags, a
# subdirectory, an executable, a symlink and a file that deltas well; packed
# (with deltas) and with some loose objects on top.
make_repo() {
	local dir=$1 algo=$2 i
	git init -q --object-format="$algo" "$dir"
	(
		cd "$dir"
		mkdir -p sub/deeper
		for i in $(seq 1 200); do echo "line $i of a file that will delta nicely"; done >big.txt
		echo hello >a.txt
		printf '#!/bin/sh\necho hi\n' >run.sh && chmod +x run.sh
		ln -s a.txt link
		echo nested >sub/deeper/n.txt
		git add -A && git commit -q -m initial
		git tag -a v0.1 -m "first release"
		for i in 1 2 3; do
			sed -i "s/line $((i * 10)) /line $((i * 10)) changed /" big.txt
			echo "change $i" >>a.txt
			git commit -q -am "change $i"
		done
		git checkout -q -b topic HEAD~2
		echo topic >sub/topic.txt
		git add sub/topic.txt && git commit -q -m "topic work"
		git checkout -q main
		git merge -q --no-edit topic -m "merge topic"
		git tag v0.2
		git tag -a v0.2-annotated -m "annotated tag of a tag" v0.1
		git repack -q -a -d --window=10
		echo loose >loose.txt && git add loose.txt && git commit -q -m "loose objects"
	)
}

# sanitized: the packwire under test is a sanitizer build (make asan). The
# output is matched whole: `| grep -q` would end ldd or nm with SIGPIPE, which
# pipefail turns into "not sanitized".
sanitized() {
	case "$(ldd "$PACKWIRE" 2>/dev/null; nm -D "$PACKWIRE" 2>/dev/null)" in
	*libasan* | *__asan_init*) return 0 ;;
	esac
	return 1
}
# have_data: 0 when ../shared/data is there (and PW_SKIP_DATA is not set)
have_data() {
	[ -z "${PW_SKIP_DATA:-}" ] && [ -f "$PW_SHARED/data/git-v1.5.0.bundle" ] &&
		[ -f "$PW_SHARED/data/git-v2.0.0.bundle" ] && [ -x "$PW_SHARED/data/make-repo" ]
}
# require_data WHAT: the rest of this test needs the real history; without
# it the test ends here as Skipped (exit 77), saying so.
require_data() {
	if ! have_data; then
		echo "skipped: $*: $PW_SHARED/data not available${PW_SKIP_DATA:+ (PW_SKIP_DATA is set)}"
		exit 77
	fi
	pw_t_data=1
}
# real_part WHAT: true when this run is the script's real-history part
# (argument "real"), which then needs the data (require_data); false in
# the main part.
real_part() {
	[ "$PW_PART" = real ] || return 1
	pw_t_real=1
	require_data "$@"
}

# data_repo small|large ALGO: path of a bare repository built once per build
# tree from the real history (v1.5.0 = small, v2.0.0 = large).
# use_fake_ssh: a stand-in for ssh that runs the remote command locally,
# $FAKE_SSH, exported as GIT_SSH_COMMAND. It is called "ssh" so that git and
# packwire both treat it as OpenSSH (-o SendEnv=..., -p PORT) and speak
# protocol v2 through it; GIT_PROTOCOL reaches the command through the
# environment. Each call's arguments go to $FAKE_SSH_LOG when that is set.
use_fake_ssh() {
	mkdir -p "$T/bin"
	FAKE_SSH=$T/bin/ssh
	cat >"$FAKE_SSH" <<'EOS'
#!/bin/sh
echo "$*" >>"${FAKE_SSH_LOG:-/dev/null}"
while [ $# -gt 2 ]; do
	case $1 in
	-o | -p | -P) shift 2 ;;
	*) shift ;;
	esac
done
exec sh -c "$2"
EOS
	chmod +x "$FAKE_SSH"
	export GIT_SSH_COMMAND=$FAKE_SSH
}

data_repo() {
	local which=$1 algo=$2 bundle out
	if [ -z "${pw_t_data:-}" ]; then
		echo "not ok - data_repo outside require_data / real_part: a check on real history must be its own test (see the top of lib.sh)" >&2
		exit 1
	fi
	case $which in
	small) bundle=$PW_SHARED/data/git-v1.5.0.bundle ;;
	large) bundle=$PW_SHARED/data/git-v2.0.0.bundle ;;
	esac
	out=$PW_BUILD/data/$which-$algo.git
	mkdir -p "$PW_BUILD/data"
	(
		flock 9
		if [ ! -f "$out/.complete" ]; then
			rm -rf "$out"
			"$PW_SHARED/data/make-repo" "$bundle" "$out" "$algo" >&2
			touch "$out/.complete"
		fi
	) 9>"$PW_BUILD/data/.lock-$which-$algo"
	echo "$out"
}
