#!/usr/bin/env bash
# The summary a git user reads after `push` and `fetch`: the "To <url>" /
# "From <url>" header and one line per ref (new branch, new tag, fast-forward,
# forced update, rejections, deletions, "Everything up-to-date"), and clone's
# messages and stored URL. Each case
# runs on two identical copies of one setup, once with stock git and once
# with packwire, and stderr must be byte-identical (progress is off: stderr
# is not a terminal). Git's advice hints are turned off, packwire has none.
# SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"

# the same setup for both tools, so that object ids (and abbreviations) match
setup_push() {
	local base=$1 algo=$2
	mkdir "$base"
	make_repo "$base/src" "$algo" >/dev/null 2>&1
	git clone -q --bare "$base/src" "$base/remote.git"
	git clone -q "$base/remote.git" "$base/work"
	git clone -q "$base/remote.git" "$base/other"
	(
		cd "$base/other"
		git checkout -q -b side
		echo other >other.txt && git add other.txt && git commit -q -m "other side"
		git push -q origin side
	)
	(
		cd "$base/work"
		git remote set-url origin ../remote.git
		git config advice.pushUpdateRejected false
		echo ff >ff.txt && git add ff.txt && git commit -q -m "fast-forward"
		git branch newb
		git tag v9
		git tag -f v0.2 HEAD~1 >/dev/null
		git checkout -q -b topic origin/topic
		git reset -q --hard HEAD~1
		echo rewound >r.txt && git add r.txt && git commit -q -m "rewound topic"
		git checkout -q -b side main
		echo mine >mine.txt && git add mine.txt && git commit -q -m "my side"
		git checkout -q main
	)
}

setup_fetch() {
	local base=$1 algo=$2
	mkdir "$base"
	make_repo "$base/src" "$algo" >/dev/null 2>&1
	git clone -q --bare "$base/src" "$base/up.git"
	git clone -q "$base/up.git" "$base/work"
	git -C "$base/work" remote set-url origin ../up.git
	(
		cd "$base/src"
		git remote add up ../up.git
		echo ff >ff.txt && git add ff.txt && git commit -q -m "fast-forward"
		git tag -a v9 -m "new annotated tag"
		git branch newb
		git checkout -q topic
		git reset -q --hard HEAD~1
		echo rewound >r.txt && git add r.txt && git commit -q -m "rewound topic"
		git checkout -q main
		git push -q up main newb v9 +topic
		git push -q up :refs/tags/v0.1
	)
}

# run_both NAME DIR CMD...: CMD (with $TOOL being "git" or packwire) in
# $T/<algo>-git/DIR and $T/<algo>-pw/DIR, then compare exit codes and stderr
run_both() {
	local name=$1 dir=$2 rcg rcp
	shift 2
	(cd "$G/$dir" && TOOL=git && eval "$*") >/dev/null 2>git.err && rcg=0 || rcg=$?
	(cd "$P/$dir" && TOOL=$PACKWIRE && eval "$*") >/dev/null 2>pw.err && rcp=0 || rcp=$?
	check "$algo $name: exit $rcg as git" test "$rcg" = "$rcp"
	if [ -n "${FROM_TO:-}" ]; then
		sed -i -n '/^To /,$p' git.err
		sed -i -n '/^To /,$p' pw.err
	fi
	if cmp -s git.err pw.err; then ok "$algo $name: same summary as git"; else
		not_ok "$algo $name: same summary as git"
		diff git.err pw.err | head -20 || true
	fi
}

for algo in sha1 sha256; do
	setup_push "$T/base-push-$algo" "$algo"
	G=$T/$algo-git P=$T/$algo-pw
	mkdir -p "$G" "$P"
	cp -a "$T/base-push-$algo"/. "$G"
	cp -a "$T/base-push-$algo"/. "$P"
	run_both "push: new branch, new tag, fast-forward" work '$TOOL push origin main newb v9'
	run_both "push: up to date" work '$TOOL push origin main'
	run_both "push -v: up to date" work '$TOOL push -v origin main newb'
	run_both "push: non-fast-forward rejected" work '$TOOL push origin topic'
	run_both "push: forced update" work '$TOOL push origin +topic'
	run_both "push: fetch first" work '$TOOL push origin side'
	run_both "push: tag already exists" work '$TOOL push origin v0.2'
	run_both "push: rejected and accepted together" work \
		'git commit -q --allow-empty -m more && $TOOL push origin main side'
	run_both "push: delete" work '$TOOL push origin :newb'
	run_both "push --delete of a missing ref" work '$TOOL push origin --delete nope'
	run_both "push: new ref outside heads and tags" work '$TOOL push origin main:refs/x/y'
	run_both "push -v: new branch" work '$TOOL push -v origin main:refs/heads/vb'
	run_both "push -n: new branch" work '$TOOL push -n origin main:refs/heads/dry'
	run_both "push --tags" work 'git tag -f v0.1 main >/dev/null && $TOOL push origin --tags'
	run_both "push --force of a tag" work '$TOOL push -f origin v0.1'
	run_both "push --all" work 'git branch -f newb HEAD~1 && $TOOL push --all origin'
	# git first says "error: atomic push failed for ref ... status: <its
	# internal number>" and "fatal: the remote end hung up unexpectedly";
	# packwire does not: the table is compared
	FROM_TO=1 run_both "push --atomic with a rejection" work \
		'git commit -q --allow-empty -m atomic && $TOOL push --atomic origin main side'
	run_both "push to a URL" work '$TOOL push ../remote.git main:refs/heads/byurl'
	check "$algo push: same remote refs as git" same_refs "$G/remote.git" "$P/remote.git"

	setup_fetch "$T/base-fetch-$algo" "$algo"
	cp -a "$T/base-fetch-$algo"/. "$G"
	cp -a "$T/base-fetch-$algo"/. "$P"
	run_both "fetch: new branch, new tag, forced, fast-forward" work '$TOOL fetch'
	run_both "fetch: nothing new" work '$TOOL fetch'
	run_both "fetch --prune" work \
		'git -C ../up.git update-ref -d refs/heads/newb && $TOOL fetch --prune'
	run_both "fetch of a named branch" work '$TOOL fetch origin main'
	run_both "fetch into a new local branch" work '$TOOL fetch origin topic:refs/heads/t2'
	run_both "fetch by URL" work '$TOOL fetch ../up.git topic'
	run_both "fetch of a missing ref" work '$TOOL fetch origin nope'
	run_both "fetch of a missing ref by URL" work '$TOOL fetch ../up.git newb'
	check "$algo fetch: same refs as git" same_refs "$G/work" "$P/work"

	# clone's messages; a plain path is copied by git, which then says "done."
	git init -q --bare --object-format=$algo "$G/empty.git"
	git init -q --bare --object-format=$algo "$P/empty.git"
	run_both "clone of a path" . '$TOOL clone up.git c1'
	run_both "clone of a path with .. and a slash" . '$TOOL clone ../$(basename "$PWD")/up.git/ c2'
	run_both "clone of a file:// URL" . '$TOOL clone "file://$PWD/up.git" c3'
	run_both "clone --bare" . '$TOOL clone --bare up.git c4.git'
	run_both "clone --no-local" . '$TOOL clone --no-local up.git c5'
	run_both "clone of an empty repository" . '$TOOL clone empty.git c6'
	for c in c1 c2 c3 c4.git c5 c6; do
		check "$algo clone $c: remote.origin.url as git stores it" test \
			"$(git -C "$P/$c" config remote.origin.url)" = \
			"$(git -C "$G/$c" config remote.origin.url | sed "s|$algo-git|$algo-pw|g")"
	done
done
finish
