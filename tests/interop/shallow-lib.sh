# shellcheck shell=bash
# --shallow-since / --shallow-exclude scenarios for t-shallow-since*.sh
# (sourced after lib.sh): the same clone or fetch by packwire and by stock
# git against the same server must give the same .git/shallow, the same
# `rev-list --all`, the same refs and a clean fsck; and a server's answer is
# compared with stock git upload-pack's for the same request (REF_DIR: the
# results of git against git upload-pack over file://).

# make_dated_repo DIR ALGO: a history whose commits are days apart (none
# on 2020-01-04): main c1..c7 (2020-01-01..07, c4 a merge of side), side
# s1 s2 from c2, branch old at c2, annotated tag v1 at c3, tag v2 at c6,
# and branches near now (10, 8, 3 and 1 days ago) for relative dates.
make_dated_repo() {
	local dir=$1 algo=$2 now d
	now=$(date +%s)
	git init -q --object-format="$algo" "$dir"
	(
		cd "$dir"
		at() { export GIT_AUTHOR_DATE="$1" GIT_COMMITTER_DATE="$1"; }
		at "2020-01-01T12:00:00Z"; echo 1 >f; git add f; git commit -q -m c1
		at "2020-01-02T12:00:00Z"; echo 2 >f; git commit -q -am c2
		git branch old
		git checkout -q -b side
		at "2020-01-03T09:00:00Z"; echo s1 >s; git add s; git commit -q -m s1
		at "2020-01-05T09:00:00Z"; echo s2 >s; git commit -q -am s2
		git checkout -q main
		at "2020-01-03T12:00:00Z"; echo 3 >f; git commit -q -am c3
		git tag -a v1 -m "version 1"
		at "2020-01-05T12:00:00Z"; git merge -q --no-edit side -m c4
		at "2020-01-06T12:00:00Z"; echo 6 >f; git commit -q -am c6
		git tag v2
		at "2020-01-07T12:00:00Z"; echo 7 >f; git commit -q -am c7
		git checkout -q -b recent
		for d in 10 8 3 1; do
			at "$((now - d * 86400)) +0000"
			echo "$d days" >r && git add r && git commit -q -m "$d days ago"
		done
		git checkout -q main
	)
}

# sh_state DIR: what a shallow clone is made of (SH_NO_TAGS=1: tags left
# out of the refs)
sh_state() {
	cat "$1/.git/shallow" 2>/dev/null || echo "(not shallow)"
	echo "--"
	git -C "$1" rev-list --all
	echo "--"
	if [ "${SH_NO_TAGS:-0}" = 1 ]; then
		git -C "$1" for-each-ref --format='%(objectname) %(refname)' refs/heads refs/remotes
	else
		git -C "$1" for-each-ref --format='%(objectname) %(refname)'
	fi
}

# same_clone WHAT A B: the states of clones A and B are equal, and A is fsck-clean
same_clone() {
	if diff <(sh_state "$2") <(sh_state "$3") >"$T/sdiff"; then ok "$1"; else
		not_ok "$1"
		head -20 "$T/sdiff"
	fi
}

# shallow_clones P URL V SERVER [full]: for each scenario, packwire and git
# clone (and fetch) from URL with protocol V; with SERVER=packwire git's
# result is also compared with git against git upload-pack ($REF_DIR).
# The packwire client's clone must pass fsck.
# PW_UP / GIT_UP: extra arguments (--upload-pack=...) for each client.
SH_SCENARIOS=(
	"since-iso|--shallow-since=2020-01-03T18:00:00Z"
	"since-date|--shallow-since=2020-01-04"
	"since-rfc2822|--shallow-since=Fri, 03 Jan 2020 10:00:00 +0000"
	"since-gitlog|--shallow-since=Sat Jan 4 00:00:00 2020 +0100"
	"since-epoch|--shallow-since=@1578000000"
	"since-relative|--shallow-since=5 days ago|--branch=recent"
	"since-all-branches|--shallow-since=2020-01-04|--no-single-branch"
	"exclude-branch|--shallow-exclude=old"
	"exclude-tag|--shallow-exclude=v1"
	"exclude-two|--shallow-exclude=old|--shallow-exclude=side"
	"since-and-exclude|--shallow-since=2020-01-02T18:00:00Z|--shallow-exclude=side"
	"exclude-full-name|--shallow-exclude=refs/heads/old|--no-single-branch"
)

run_clone() { # KIND DIR ARGS...
	local kind=$1 dir=$2
	shift 2
	if [ "$kind" = pw ]; then
		"$PACKWIRE" -c protocol.version="$SH_V" clone -q "${PW_UP[@]}" "$@" "$SH_URL" "$dir"
	else
		git -c protocol.version="$SH_V" clone -q "${GIT_UP[@]}" "$@" "$SH_URL" "$dir"
	fi
}

shallow_clones() {
	local p=$1 server=$4 full=${5:-1} sc name args i d
	SH_URL=$2 SH_V=$3
	d=$T/sh-$(echo "$p" | tr '/ ' '--')
	mkdir -p "$d"
	for sc in "${SH_SCENARIOS[@]}"; do
		IFS='|' read -r -a args <<<"$sc"
		name=${args[0]}
		args=("${args[@]:1}")
		case $name in since-iso | since-date | exclude-tag | since-and-exclude) ;;
		*) [ "$full" = 1 ] || continue ;;
		esac
		if ! run_clone pw "$d/pw-$name" "${args[@]}" 2>"$d/pw-$name.err"; then
			not_ok "$p $name: packwire clone"
			sed 's/^/    /' "$d/pw-$name.err"
			continue
		fi
		run_clone git "$d/git-$name" "${args[@]}" 2>"$d/git-$name.err" ||
			{ not_ok "$p $name: git clone"; cat "$d/git-$name.err"; continue; }
		same_clone "$p $name: as git's clone" "$d/pw-$name" "$d/git-$name"
		check "$p $name: fsck" fsck_ok "$d/pw-$name"
		if [ "$server" = packwire ] && [ -d "$REF_DIR/git-$name" ]; then
			same_clone "$p $name: the server cuts as git upload-pack" "$d/git-$name" "$REF_DIR/git-$name"
		fi
	done
	[ "$full" = 1 ] || return 0
	# fetch: deepen a --depth=1 clone back to a date, then cut at a ref
	for i in pw git; do
		run_clone $i "$d/$i-fetch" --depth=1 2>/dev/null
	done
	(cd "$d/pw-fetch" && "$PACKWIRE" -c protocol.version="$SH_V" fetch -q "${PW_UP[@]}" \
		--shallow-since=2020-01-02T18:00:00Z origin) 2>"$d/pw-fetch.err" ||
		{ not_ok "$p fetch --shallow-since: packwire"; cat "$d/pw-fetch.err"; }
	(cd "$d/git-fetch" && git -c protocol.version="$SH_V" fetch -q "${GIT_UP[@]}" \
		--shallow-since=2020-01-02T18:00:00Z origin) 2>/dev/null
	# git over stateless v0 (smart HTTP) does not follow the tags of the
	# commits a deepening fetch brings (its fetch runs in git-remote-http
	# and the new pack is not looked at), over v2 and file:// it does, and
	# so does packwire: the tags are left out of that comparison
	case $SH_URL in http*) [ "$SH_V" = 2 ] || SH_NO_TAGS=1 ;; esac
	same_clone "$p fetch --shallow-since deepens as git's" "$d/pw-fetch" "$d/git-fetch"
	SH_NO_TAGS=0
	check "$p fetch --shallow-since: fsck" fsck_ok "$d/pw-fetch"
	(cd "$d/pw-fetch" && "$PACKWIRE" -c protocol.version="$SH_V" fetch -q "${PW_UP[@]}" \
		--shallow-exclude=v1 origin) 2>"$d/pw-fetch.err" ||
		{ not_ok "$p fetch --shallow-exclude: packwire"; cat "$d/pw-fetch.err"; }
	(cd "$d/git-fetch" && git -c protocol.version="$SH_V" fetch -q "${GIT_UP[@]}" \
		--shallow-exclude=v1 origin) 2>/dev/null
	same_clone "$p fetch --shallow-exclude as git's" "$d/pw-fetch" "$d/git-fetch"
	# what the server refuses, both clients see refused; the server's
	# words where they reach git's client (its stderr, or an ERR packet)
	for i in git pw; do
		if run_clone $i "$d/$i-none" --shallow-since=2030-01-01T00:00:00Z 2>"$d/$i-none.err"; then
			not_ok "$p $i: a date after every commit cloned"
		elif grep -q "no commits selected" "$d/git-none.err"; then
			contains "$p $i: a date after every commit" "$d/$i-none.err" "no commits selected for shallow requests"
		else
			ok "$p $i: a date after every commit refused"
		fi
		check "$p $i: nothing left behind" test ! -e "$d/$i-none"
		if run_clone $i "$d/$i-amb" --shallow-exclude=no-such-ref 2>"$d/$i-amb.err"; then
			not_ok "$p $i: an unknown ref to exclude cloned"
		elif grep -q "ambiguous deepen-not" "$d/git-amb.err"; then
			contains "$p $i: an unknown ref to exclude" "$d/$i-amb.err" "ambiguous deepen-not: deepen-not no-such-ref"
		else
			ok "$p $i: an unknown ref to exclude refused"
		fi
		check "$p $i: nothing left behind" test ! -e "$d/$i-amb"
	done
}
