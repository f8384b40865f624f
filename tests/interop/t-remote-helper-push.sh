#!/usr/bin/env bash
# packwire pushing through a remote helper's own "push" command (no connect):
# a helper written here lists with "list for-push" and pushes into a local
# bare repository with stock git, reading the objects from $GIT_DIR as Git's
# helpers do. Statuses, options (dry-run, atomic, push-option, force), the
# helper's private refs (refspec capability), remote-tracking refs, and
# failures that must leave both repositories as they were. SHA-1 and SHA-256,
# checked with fsck --strict, refs and objects.
. "$(dirname "$0")/lib.sh"
unset GIT_ALLOW_PROTOCOL GIT_PROTOCOL_FROM_USER
pw() { "$PACKWIRE" "$@"; }

mkdir -p bin
cat >bin/git-remote-pwpush <<'HELPER'
#!/bin/bash
# git-remote-pwpush <remote> <path>: list, fetch and push <path> with stock git
dst=$2 log=${PWPUSH_LOG:-/dev/null}
flags=() deepen=()
while read -r cmd arg rest; do
	echo "$cmd${arg:+ $arg}${rest:+ $rest}" >>"$log"
	case $cmd in
	capabilities)
		printf 'fetch\npush\noption\nobject-format\nrefspec refs/heads/*:refs/pwpush/heads/*\n\n' ;;
	option)
		case $arg in
		object-format) echo ok ;;
		dry-run) [ "$rest" = true ] && flags+=(--dry-run); echo ok ;;
		atomic) [ "$rest" = true ] && flags+=(--atomic); echo ok ;;
		push-option)
			if [ -n "${PWPUSH_NO_PUSH_OPTION:-}" ]; then echo unsupported; else flags+=("--push-option=$rest"); echo ok; fi ;;
		force) echo ok ;;
		cas) flags+=("--force-with-lease=$rest"); echo ok ;;
		depth | deepen-since | deepen-not)
			if [ -n "${PWPUSH_NO_DEEPEN:-}" ]; then echo unsupported; else
				case $arg in
				depth) deepen+=("--depth=$rest") ;;
				deepen-since) deepen+=("--shallow-since=$rest") ;;
				deepen-not) deepen+=("--shallow-exclude=$rest") ;;
				esac
				echo ok
			fi ;;
		*) echo unsupported ;;
		esac ;;
	list)
		[ "${PWPUSH_CRASH:-}" = list ] && exit 3
		echo ":object-format $(git --git-dir="$dst" rev-parse --show-object-format)"
		if h=$(git --git-dir="$dst" symbolic-ref -q HEAD); then echo "@$h HEAD"; fi
		git --git-dir="$dst" for-each-ref --format='%(objectname) %(refname)'
		echo ;;
	fetch)
		oids=$arg names=$rest
		while read -r c2 a2 r2; do [ -n "$c2" ] || break; oids="$oids $a2" names="$names $r2"; done
		if [ ${#deepen[@]} -gt 0 ]; then
			# shellcheck disable=SC2086
			git fetch-pack -q "${deepen[@]}" "$dst" $names >/dev/null
			echo
			continue
		fi
		git --git-dir="$dst" pack-objects --revs --stdout -q <<<"$(printf '%s\n' $oids)" |
			git index-pack --stdin >/dev/null
		echo ;;
	push)
		specs=("$arg")
		while read -r c2 a2; do [ -n "$c2" ] || break; echo "$c2 $a2" >>"$log"; specs+=("$a2"); done
		case ${PWPUSH_CRASH:-} in
		push) exit 3 ;;
		nonsense) echo "this is not a status"; echo; continue ;;
		esac
		git push --porcelain "${flags[@]}" "$dst" "${specs[@]}" >"$log.out" 2>"$log.err" || true
		while IFS=$'\t' read -r flag ref summary; do
			case $flag in
			' ' | '+' | '-' | '*') echo "ok ${ref#*:}" ;;
			'=') echo "ok ${ref#*:} up to date" ;;
			'!') why=${summary#*(}; echo "error ${ref#*:} ${why%)}" ;;
			esac
		done <"$log.out"
		echo ;;
	'') exit 0 ;;
	*) echo "unknown $cmd" >&2; exit 1 ;;
	esac
done
HELPER
chmod +x bin/git-remote-pwpush
export PATH=$T/bin:$PATH PWPUSH_LOG=$T/pwpush.log

# state DIR: refs and objects, to compare before and after
state() { refs "$1"; all_objects "$1"; }

for algo in sha1 sha256; do
	t="pwpush $algo"
	make_repo "src-$algo" "$algo"
	srv=$T/srv-$algo.git
	git clone -q --bare "src-$algo" "$srv"
	git -C "$srv" config receive.advertisePushOptions true
	if ! pw clone -q "pwpush::$srv" "c-$algo" 2>"c-$algo.err"; then
		not_ok "$t: clone through the helper"
		cat "c-$algo.err"
		continue
	fi
	c=$T/c-$algo
	git -C "$c" config user.name Test
	(cd "$c" && echo more >>a.txt && git commit -q -am "pushed through a helper")
	: >"$PWPUSH_LOG"
	if pw -C "$c" push origin main 2>"p1-$algo.err"; then
		check "$t: the server has the new commit" \
			test "$(git -C "$srv" rev-parse main)" = "$(git -C "$c" rev-parse main)"
		check "$t: server is fsck --strict clean" fsck_ok "$srv"
		check "$t: server's object format" test "$(git -C "$srv" rev-parse --show-object-format)" = "$algo"
		check "$t: remote-tracking ref updated" \
			test "$(git -C "$c" rev-parse origin/main)" = "$(git -C "$c" rev-parse main)"
		check "$t: the helper's private ref updated (refspec capability)" \
			test "$(git -C "$c" rev-parse refs/pwpush/heads/main)" = "$(git -C "$c" rev-parse main)"
		contains "$t: list for-push" "$PWPUSH_LOG" "list for-push"
		contains "$t: the batch" "$PWPUSH_LOG" "push refs/heads/main:refs/heads/main"
	else
		not_ok "$t: push"
		cat "p1-$algo.err"
	fi
	# several refs, a new branch, a tag, a delete, an oid source
	git -C "$c" tag -a v1.0 -m "a tag pushed through a helper"
	if pw -C "$c" push origin main:refs/heads/copy v1.0 :refs/heads/topic \
		"$(git -C "$c" rev-parse main~1):refs/heads/by-oid" 2>"p2-$algo.err"; then
		check "$t: new branch" test "$(git -C "$srv" rev-parse copy)" = "$(git -C "$c" rev-parse main)"
		check "$t: annotated tag" \
			test "$(git -C "$srv" rev-parse refs/tags/v1.0)" = "$(git -C "$c" rev-parse refs/tags/v1.0)"
		check_fails "$t: deleted branch" git -C "$srv" rev-parse -q --verify refs/heads/topic
		check "$t: a commit id as the source" \
			test "$(git -C "$srv" rev-parse by-oid)" = "$(git -C "$c" rev-parse main~1)"
		check "$t: server is fsck --strict clean after several refs" fsck_ok "$srv"
	else
		not_ok "$t: push of several refs"
		cat "p2-$algo.err"
	fi
	# nothing to do: no batch at all
	: >"$PWPUSH_LOG"
	check "$t: up to date push succeeds" pw -C "$c" push origin main
	check_fails "$t: up to date: no push batch sent" grep -q '^push ' "$PWPUSH_LOG"
	# dry-run: the option goes to the helper, nothing changes
	(cd "$c" && echo dry >>a.txt && git commit -q -am "dry run")
	state "$srv" >before
	: >"$PWPUSH_LOG"
	check "$t: --dry-run succeeds" pw -C "$c" push --dry-run origin main
	contains "$t: option dry-run true sent" "$PWPUSH_LOG" "option dry-run true"
	state "$srv" >after
	same_file "$t: --dry-run changed nothing on the server" before after
	# a non-fast-forward is refused before the helper is asked
	git -C "$c" update-ref refs/heads/rewound "$(git -C "$c" rev-parse main~2)"
	state "$srv" >before
	check_fails "$t: non-fast-forward refused" pw -C "$c" push origin rewound:refs/heads/main
	state "$srv" >after
	same_file "$t: refused push changed nothing on the server" before after
	# forced with +
	: >"$PWPUSH_LOG"
	if pw -C "$c" push origin +rewound:refs/heads/copy 2>"p3-$algo.err"; then
		contains "$t: + reaches the helper" "$PWPUSH_LOG" "push +refs/heads/rewound:refs/heads/copy"
		check "$t: forced update done" test "$(git -C "$srv" rev-parse copy)" = "$(git -C "$c" rev-parse rewound)"
	else
		not_ok "$t: forced push"
		cat "p3-$algo.err"
	fi
	# --force-with-lease: decided here, and the lease goes to the helper
	# as "option cas <ref>:<oid>" for it to hold the server to
	cur=$(git -C "$srv" rev-parse copy)
	: >"$PWPUSH_LOG"
	if pw -C "$c" push --force-with-lease=copy:"$cur" origin rewound~1:refs/heads/copy 2>"p4-$algo.err"; then
		contains "$t: the lease reaches the helper" "$PWPUSH_LOG" "option cas refs/heads/copy:$cur"
		check "$t: the lease held" test "$(git -C "$srv" rev-parse copy)" = "$(git -C "$c" rev-parse rewound~1)"
	else
		not_ok "$t: push with a lease that holds"
		cat "p4-$algo.err"
	fi
	state "$srv" >before
	: >"$PWPUSH_LOG"
	if pw -C "$c" push --force-with-lease=copy:"$cur" origin rewound:refs/heads/copy 2>"p5-$algo.err"; then
		not_ok "$t: a stale lease pushed"
	else
		contains "$t: a stale lease is refused" "p5-$algo.err" "! [rejected]        rewound -> copy (stale info)"
	fi
	check_fails "$t: stale lease: no push batch sent" grep -q '^push ' "$PWPUSH_LOG"
	state "$srv" >after
	same_file "$t: stale lease changed nothing on the server" before after
	# push options, to the server's pre-receive hook
	mkdir -p "$srv/hooks"
	cat >"$srv/hooks/pre-receive" <<-'HOOK'
	#!/bin/sh
	echo "${GIT_PUSH_OPTION_0:-none}" >"$GIT_DIR/../push-option.$$"
	cat >/dev/null
	HOOK
	chmod +x "$srv/hooks/pre-receive"
	if pw -C "$c" push -o hello-helper origin main 2>"p4-$algo.err"; then
		check "$t: push option reached the server" grep -qx hello-helper "$T"/push-option.*
	else
		not_ok "$t: push with -o"
		cat "p4-$algo.err"
	fi
	rm -f "$T"/push-option.*
	# a helper that does not take push options: Git's error, nothing sent
	(cd "$c" && echo po >>a.txt && git commit -q -am "push option refused")
	state "$srv" >before
	PWPUSH_NO_PUSH_OPTION=1 pw -C "$c" push -o x origin main 2>"p5-$algo.err" && not_ok "$t: unsupported push-option refused" ||
		contains "$t: unsupported push-option refused" "p5-$algo.err" "does not support 'push-option'"
	state "$srv" >after
	same_file "$t: nothing pushed when the option is refused" before after
	# the server declines (hook): error lines, nothing changed, exit status
	printf '#!/bin/sh\necho "no thanks" >&2\nexit 1\n' >"$srv/hooks/pre-receive"
	state "$srv" >before
	state "$c" >before-local
	check_fails "$t: declined push fails" pw -C "$c" push origin main 2>"p6-$algo.err"
	pw -C "$c" push origin main 2>"p6-$algo.err" || true
	contains "$t: the helper's error reason is shown" "p6-$algo.err" "pre-receive hook declined"
	state "$srv" >after
	state "$c" >after-local
	same_file "$t: declined push left the server as it was" before after
	same_file "$t: declined push left the local repository as it was" before-local after-local
	# atomic: one ref declined, none updated
	printf '#!/bin/sh\nwhile read o n r; do [ "$r" = refs/heads/bad ] && exit 1; done; exit 0\n' >"$srv/hooks/pre-receive"
	state "$srv" >before
	: >"$PWPUSH_LOG"
	check_fails "$t: atomic push with a declined ref fails" \
		pw -C "$c" push --atomic origin main main:refs/heads/bad
	contains "$t: option atomic true sent" "$PWPUSH_LOG" "option atomic true"
	state "$srv" >after
	same_file "$t: atomic push changed nothing" before after
	rm -f "$srv/hooks/pre-receive"
	# the helper crashes or talks nonsense: a clear error, nothing written
	for how in list push nonsense; do
		state "$srv" >before
		state "$c" >before-local
		PWPUSH_CRASH=$how pw -C "$c" push origin main 2>"crash-$how-$algo.err" &&
			not_ok "$t: helper failing at $how: push fails" ||
			ok "$t: helper failing at $how: push fails"
		contains "$t: helper failing at $how: names the helper" "crash-$how-$algo.err" "pwpush"
		state "$srv" >after
		state "$c" >after-local
		same_file "$t: helper failing at $how: server as it was" before after
		same_file "$t: helper failing at $how: local repository as it was" before-local after-local
	done
	# and a good push afterwards
	check "$t: push after the failures" pw -C "$c" push origin main
	check "$t: server has it" test "$(git -C "$srv" rev-parse main)" = "$(git -C "$c" rev-parse main)"
	check "$t: server is fsck --strict clean at the end" fsck_ok "$srv"
	check "$t: client is fsck --strict clean at the end" fsck_ok "$c"
	check "$t: the objects pushed are the client's" \
		test -z "$(comm -23 <(all_objects "$srv") <(all_objects "$c"))"
	# deepen-since / deepen-not / depth reach a fetch helper
	t="deepen $algo"
	sh=$T/sh-$algo
	git init -q --object-format="$algo" "$sh"
	git -C "$sh" remote add origin "pwpush::$srv"
	: >"$PWPUSH_LOG"
	if pw -C "$sh" fetch -q --shallow-exclude=v0.1 origin main 2>"sh1-$algo.err"; then
		contains "$t: option deepen-not sent" "$PWPUSH_LOG" "option deepen-not v0.1"
		check "$t: the branch arrived" test "$(git -C "$sh" rev-parse origin/main)" = "$(git -C "$srv" rev-parse main)"
		check "$t: the repository is shallow" test -s "$sh/.git/shallow"
		check "$t: history cut at v0.1" test "$(git -C "$sh" rev-list --count origin/main)" -lt "$(git -C "$srv" rev-list --count main)"
		check "$t: shallow repository is fsck clean" fsck_ok "$sh"
	else
		not_ok "$t: fetch --shallow-exclude"
		cat "sh1-$algo.err"
	fi
	: >"$PWPUSH_LOG"
	if pw -C "$sh" fetch -q --shallow-since=2000-01-01 origin main 2>"sh2-$algo.err"; then
		contains "$t: option deepen-since sent" "$PWPUSH_LOG" "option deepen-since 2000-01-01"
		check "$t: deepened to the whole history" \
			test "$(git -C "$sh" rev-list --count origin/main)" = "$(git -C "$srv" rev-list --count main)"
	else
		not_ok "$t: fetch --shallow-since"
		cat "sh2-$algo.err"
	fi
	git -C "$srv" update-ref refs/heads/later "$(git -C "$srv" rev-parse main)"
	state "$sh" >before-local
	PWPUSH_NO_DEEPEN=1 pw -C "$sh" fetch -q --shallow-since=2000-01-01 origin later 2>"sh3-$algo.err" &&
		not_ok "$t: a helper without deepen-since: fetch fails" ||
		contains "$t: a helper without deepen-since: Git's error" "sh3-$algo.err" "does not support 'deepen-since'"
	state "$sh" >after-local
	same_file "$t: refused deepen-since left the repository as it was" before-local after-local
	check "$t: the smart protocol takes it too (a path)" \
		pw -C "$sh" fetch -q --shallow-since=2000-01-01 "$srv" main
	if pw -C "$sh" fetch -q --depth=1 origin later 2>"sh4-$algo.err"; then
		contains "$t: option depth sent" "$PWPUSH_LOG" "option depth 1"
		check "$t: --depth 1 through the helper" test "$(git -C "$sh" rev-list --count FETCH_HEAD)" = 1
	else
		not_ok "$t: fetch --depth"
		cat "sh4-$algo.err"
	fi
done
finish
