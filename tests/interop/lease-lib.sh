# shellcheck shell=bash
# --force-with-lease scenarios for t-push-lease*.sh (sourced after lib.sh):
# two identical clients, $CA pushing with packwire and $CB with git, into
# twin servers $SA and $SB that the remote "origin" of each names (any
# transport). Every push is compared: exit status, stdout (--porcelain),
# stderr (hints aside), the servers' refs, the commands the servers were
# sent (their pre-receive hooks log "<old> <new> <ref>"), git fsck of the
# server and the clients' remote-tracking refs.
#
# The caller sets CA CB SA SB, the arrays UA/UB (the servers' URLs, for a
# push by URL)
# and may define srv_changed (run after the test changed a server's files
# itself, e.g. to give them back to the web server's user).

srv_changed() { :; }

# lease_setup: the servers log what they are sent; both clients push main,
# topic and a tag and fetch, so that their tracking refs are current
lease_setup() {
	local s
	for s in "$SA" "$SB"; do
		printf '#!/bin/sh\ncat >>cmds.log\n' >"$s/hooks/pre-receive"
		chmod +x "$s/hooks/pre-receive"
		: >"$s/cmds.log"
	done
	srv_changed
	in_both push -q origin main topic v0.1
	in_both fetch -q origin
}

in_both() { git -C "$CA" "$@" && git -C "$CB" "$@"; }

# srv_advance REF: someone else pushes a commit onto REF of both servers
# (the same commit: the dates are fixed)
srv_advance() {
	local s c
	for s in "$SA" "$SB"; do
		c=$(git -C "$s" commit-tree "refs/heads/$1^{tree}" -p "refs/heads/$1" -m "elsewhere")
		git -C "$s" update-ref "refs/heads/$1" "$c"
	done
	srv_changed
}

lnorm() {
	sed -e 's/srv-[ab]\.git/SRV/g' -e '/^hint:/d' "$1"
}

# push_both WHAT ARGS...: packwire push in $CA, git push in $CB; an
# argument @URL@ stands for the client's own server (the words of the arrays
# UA and UB: a URL, perhaps after --receive-pack=...)
push_both() {
	local what=$1 rc_a=0 rc_b=0 a args_a=() args_b=()
	shift
	for a in "$@"; do
		if [ "$a" = @URL@ ]; then
			args_a+=("${UA[@]}")
			args_b+=("${UB[@]}")
		else
			args_a+=("$a")
			args_b+=("$a")
		fi
	done
	(cd "$CA" && "$PACKWIRE" push "${args_a[@]}") >"$T/lo-a" 2>"$T/le-a" || rc_a=$?
	(cd "$CB" && git push "${args_b[@]}") >"$T/lo-b" 2>"$T/le-b" || rc_b=$?
	if [ "$rc_a" = "$rc_b" ]; then ok "$what: exit status $rc_a"; else
		not_ok "$what: exit $rc_a vs git push's $rc_b"
		sed 's/^/    packwire: /' "$T/lo-a" "$T/le-a"
		sed 's/^/    git: /' "$T/lo-b" "$T/le-b"
	fi
	if diff <(lnorm "$T/lo-a") <(lnorm "$T/lo-b") >"$T/ldiff" &&
		diff <(lnorm "$T/le-a") <(lnorm "$T/le-b") >>"$T/ldiff"; then
		ok "$what: same output"
	else
		not_ok "$what: output differs from git push"
		diff <(lnorm "$T/lo-a") <(lnorm "$T/lo-b") | head -20 || true
		diff <(lnorm "$T/le-a") <(lnorm "$T/le-b") | head -20 || true
	fi
	if same_refs "$SA" "$SB"; then ok "$what: same server refs"; else
		not_ok "$what: server refs differ"
		diff <(refs "$SA") <(refs "$SB") | head || true
	fi
	if cmp -s "$SA/cmds.log" "$SB/cmds.log"; then ok "$what: same commands sent"; else
		not_ok "$what: the servers were sent different commands"
		diff "$SA/cmds.log" "$SB/cmds.log" | head || true
	fi
	check "$what: server fsck" fsck_ok "$SA"
	if [ "$(git -C "$CA" for-each-ref refs/remotes)" = "$(git -C "$CB" for-each-ref refs/remotes)" ]; then
		ok "$what: same tracking refs"
	else
		not_ok "$what: tracking refs differ"
		diff <(git -C "$CA" for-each-ref refs/remotes) <(git -C "$CB" for-each-ref refs/remotes) | head || true
	fi
}

# lease_scenarios P: the scenarios, each named "P <what>"; full=0 runs the
# core of them (the other transports share the decisions)
lease_scenarios() {
	local p=$1 full=${2:-1} cur old tag
	lease_setup

	in_both commit -q --amend --allow-empty -m "main rewritten"
	push_both "$p: lease holds (tracking value)" --force-with-lease origin main

	srv_advance main
	in_both commit -q --amend --allow-empty -m "main rewritten again"
	push_both "$p: stale (bare lease)" --force-with-lease origin main
	push_both "$p: stale (--porcelain)" --porcelain --force-with-lease origin main
	if [ "$full" = 1 ]; then
		push_both "$p: stale (lease named)" --force-with-lease=main origin main
		push_both "$p: stale (full name)" --force-with-lease=refs/heads/main origin main
		push_both "$p: stale (-v)" -v --force-with-lease=main origin main
	fi

	# the value the server has, which this client never saw
	cur=$(git -C "$SA" rev-parse refs/heads/main)
	push_both "$p: explicit value holds" --porcelain --force-with-lease=main:"$cur" origin main

	srv_advance main
	push_both "$p: explicit value stale" --force-with-lease=main:"$cur" origin main
	push_both "$p: + overrides a stale lease" --force-with-lease origin +main
	srv_advance main
	push_both "$p: --force overrides a stale lease" --force-with-lease --force origin main

	push_both "$p: must not exist, and does not" --force-with-lease=fresh: origin main:refs/heads/fresh
	push_both "$p: must not exist, but does" --force-with-lease=fresh: origin main~1:refs/heads/fresh

	# several leases at once: one holds, one does not
	old=$(git -C "$CA" rev-parse main~1)
	in_both commit -q --amend --allow-empty -m "main once more"
	in_both fetch -q origin
	in_both commit -q --amend --allow-empty -m "and again"
	in_both checkout -q topic
	in_both commit -q --amend --allow-empty -m "topic rewritten"
	in_both checkout -q main
	push_both "$p: two leases, one stale" --porcelain --force-with-lease=main \
		--force-with-lease=topic:"$old" origin main topic
	push_both "$p: atomic with a stale lease" --atomic --force-with-lease=topic:"$old" \
		--force-with-lease=main origin main topic
	push_both "$p: lease on another ref (main not protected)" --force-with-lease=topic origin main~1:main
	push_both "$p: deletion, stale" --force-with-lease=fresh:"$old" origin :fresh
	cur=$(git -C "$SA" rev-parse refs/heads/fresh)
	push_both "$p: deletion, lease holds" --force-with-lease=fresh:"$cur" origin :fresh
	if [ "$full" = 1 ]; then
		push_both "$p: --no-force-with-lease" --force-with-lease --no-force-with-lease origin topic
		push_both "$p: dry run" --dry-run --porcelain --force-with-lease origin topic
		push_both "$p: expect as a revision" --force-with-lease=topic:origin/topic origin topic
		push_both "$p: unknown expected value" --force-with-lease=main:no-such-rev origin main
		push_both "$p: by URL (no tracking ref: no ref expected)" --force-with-lease @URL@ topic main:refs/heads/by-url
		tag=$(git -C "$SA" rev-parse refs/tags/v0.1)
		push_both "$p: a tag's lease" --force-with-lease=v0.1:"$tag" origin main:refs/tags/v0.1
		push_both "$p: up to date (--porcelain)" --porcelain --force-with-lease origin main:refs/tags/v0.1
	fi

	# --force-if-includes: a fetch moved the tracking ref, the local branch
	# never took that value in
	srv_advance main
	in_both fetch -q origin
	push_both "$p: --force-if-includes, not integrated" --force-with-lease --force-if-includes origin main
	if [ "$full" = 1 ]; then
		in_both config push.useForceIfIncludes true
		push_both "$p: push.useForceIfIncludes" --force-with-lease origin main
		in_both config --unset push.useForceIfIncludes
	fi
	in_both reset -q --hard origin/main
	in_both commit -q --amend --allow-empty -m "on top of theirs"
	push_both "$p: --force-if-includes, integrated" --force-with-lease --force-if-includes origin main
}
