#!/bin/bash
# clone --shallow-since/--shallow-exclude and fetch with them, by packwire
# and by stock git from the same server (git upload-pack and packwire
# upload-pack) over file:// and ssh, protocol v0, v1 and v2, SHA-1 and
# SHA-256: the same .git/shallow, rev-list --all and refs (shallow-lib.sh),
# and packwire upload-pack cuts as git upload-pack does. A server without
# the deepen-since/deepen-not capabilities (or v2's shallow feature) gets
# git's refusal; a date packwire cannot read a clear error; a plain local
# path ignores them with git's warnings.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/shallow-lib.sh"

use_fake_ssh
STRIP=$PW_SRC/tests/interop/strip-caps.py

for algo in sha1 sha256; do
	make_dated_repo "$T/src-$algo" "$algo"
	git clone -q --bare "$T/src-$algo" "$T/srv-$algo.git"
	REF_DIR=
	for server in git packwire; do
		PW_UP=() GIT_UP=()
		if [ $server = packwire ]; then
			PW_UP=(--upload-pack="$PACKWIRE upload-pack")
			GIT_UP=(--upload-pack="$PACKWIRE upload-pack")
		fi
		for transport in file ssh; do
			for v in 0 1 2; do
				url=file://$T/srv-$algo.git
				[ $transport = ssh ] && url=ssh://localhost$T/srv-$algo.git
				full=0
				[ $transport = file ] && [ $v != 1 ] && full=1
				shallow_clones "$algo/$server/$transport/v$v" "$url" $v $server $full
				# the reference: git against git upload-pack over file://, v2
				[ -n "$REF_DIR" ] || REF_DIR=$T/sh-$algo-git-file-v2
			done
		done
	done
done

# commit dates out of order (a commit older than its parent on both lines):
# packwire upload-pack cuts where git upload-pack cuts, and packwire's client
# gets what git's gets
git init -q --object-format=sha256 "$T/skew"
(
	cd "$T/skew"
	c() { GIT_COMMITTER_DATE="$1" GIT_AUTHOR_DATE="$1" git commit -q --allow-empty -m "$2"; }
	c 2020-01-02T00:00Z a && git branch base
	c 2020-01-10T00:00Z b && c 2020-01-01T00:00Z c-old && c 2020-01-20T00:00Z d && c 2020-01-21T00:00Z e
	git checkout -q -b x base
	c 2020-01-15T00:00Z x1 && c 2019-12-01T00:00Z x2-old && c 2020-01-16T00:00Z x3
	git checkout -q main
	GIT_COMMITTER_DATE=2020-01-22T00:00Z git merge -q --no-edit x -m m
	git tag mid HEAD~2
)
n=0
for args in "--shallow-since=2020-01-05" "--shallow-exclude=mid" \
	"--shallow-since=2019-12-15|--shallow-exclude=base" "--shallow-since=2020-01-12|--shallow-exclude=x"; do
	IFS='|' read -r -a a <<<"$args"
	for v in 0 2; do
		n=$((n + 1))
		git -c protocol.version=$v clone -q "${a[@]}" "file://$T/skew" "$T/skew-g-$n" 2>/dev/null
		git -c protocol.version=$v clone -q --upload-pack="$PACKWIRE upload-pack" "${a[@]}" \
			"file://$T/skew" "$T/skew-gp-$n" 2>/dev/null
		"$PACKWIRE" -c protocol.version=$v clone -q "${a[@]}" "file://$T/skew" "$T/skew-p-$n" 2>/dev/null
		same_clone "skewed dates, $args v$v: packwire upload-pack as git's" "$T/skew-gp-$n" "$T/skew-g-$n"
		same_clone "skewed dates, $args v$v: packwire clone as git's" "$T/skew-p-$n" "$T/skew-g-$n"
	done
done

# deepen-not names as git upload-pack's expand_ref reads them: a name
# under refs/remotes/ resolves, one that is both a branch and a tag does not
git clone -q --bare "$T/src-sha1" "$T/names.git"
git -C "$T/names.git" update-ref refs/remotes/up/old refs/heads/old
git -C "$T/names.git" tag dup refs/heads/old
git -C "$T/names.git" branch dup refs/heads/side
for server in git packwire; do
	up=()
	[ $server = packwire ] && up=(--upload-pack="$PACKWIRE upload-pack")
	git clone -q "${up[@]}" --shallow-exclude=up/old "file://$T/names.git" "$T/names-$server" 2>"$T/names.err" ||
		{ not_ok "$server: --shallow-exclude=up/old (refs/remotes/up/old)"; cat "$T/names.err"; }
	if git clone -q "${up[@]}" --shallow-exclude=dup "file://$T/names.git" "$T/dup-$server" 2>"$T/dup-$server.err"; then
		not_ok "$server: --shallow-exclude of a name both a branch and a tag cloned"
	else
		contains "$server: a name both a branch and a tag is ambiguous" "$T/dup-$server.err" \
			"ambiguous deepen-not: deepen-not dup"
	fi
done
same_clone "--shallow-exclude=up/old: packwire upload-pack as git's" "$T/names-packwire" "$T/names-git"

# a server that lacks what the request needs: git's refusals, and nothing left
for c in pw git; do
	for sc in "0|deepen-since|--shallow-since=2020-01-04|Server does not support --shallow-since" \
		"0|deepen-not|--shallow-exclude=v1|Server does not support --shallow-exclude" \
		"2|shallow|--shallow-since=2020-01-04|Server does not support shallow requests" \
		"2|shallow|--shallow-exclude=v1|Server does not support shallow requests"; do
		IFS='|' read -r v cap arg msg <<<"$sc"
		cmd=git
		[ $c = pw ] && cmd=$PACKWIRE
		if $cmd -c protocol.version=$v clone -q --upload-pack="python3 $STRIP $cap -- git-upload-pack" \
			"$arg" "file://$T/srv-sha256.git" "$T/nocap-$c" 2>"$T/nocap.err"; then
			not_ok "$c v$v without $cap: $arg cloned"
		else
			contains "$c v$v without $cap: $arg refused" "$T/nocap.err" "fatal: $msg"
		fi
		check "$c v$v without $cap: nothing left" test ! -e "$T/nocap-$c"
	done
done

# dates packwire does not read: a clear error before anything is fetched
for d in "last tuesday" "2020-13-01" "soon"; do
	if "$PACKWIRE" clone -q --shallow-since="$d" "file://$T/srv-sha1.git" "$T/baddate" 2>"$T/baddate.err"; then
		not_ok "--shallow-since='$d' cloned"
	else
		contains "--shallow-since='$d': clear error" "$T/baddate.err" "fatal: '$d' is not a date packwire understands"
	fi
	check "--shallow-since='$d': nothing left" test ! -e "$T/baddate"
done

# a plain local path: git copies the repository whole, warns, stays single-branch
for c in pw git; do
	cmd=git
	[ $c = pw ] && cmd=$PACKWIRE
	mkdir -p "$T/local-$c"
	(cd "$T/local-$c" && $cmd clone --shallow-since=2020-01-04 --shallow-exclude=v1 \
		"../srv-sha1.git" clone) >"$T/local-$c.out" 2>&1
	sed -i '/^done\.$/d' "$T/local-$c.out"
done
same_file "local path: git's warnings" "$T/local-git.out" "$T/local-pw.out"
same_clone "local path: the history is whole, one branch" "$T/local-pw/clone" "$T/local-git/clone"

finish
