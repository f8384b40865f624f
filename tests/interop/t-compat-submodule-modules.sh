#!/usr/bin/env bash
# A work tree's submodule as git submodule keeps it (docs/compat-map.md,
# "Submodules"): the clone lives in the superproject's .git/modules/NAME,
# and compat build finds it there through .gitmodules, with no --submodule,
# no config and the URL's repository gone. Both directions: a SHA-1
# superproject with a SHA-1 submodule mapped to SHA-256, and a SHA-256 one
# with a SHA-256 submodule mapped to SHA-1. The view stock git clones has
# the submodule's own compat ids in its gitlinks. A .gitmodules name with a
# ".." component is not followed out of modules/, as git refuses it.
. "$(dirname "$0")/lib.sh"
cd "$T"

other() { [ "$1" = sha1 ] && echo sha256 || echo sha1; }

for algo in sha1 sha256; do
	to=$(other $algo)
	rm -rf "src-$algo" "super-$algo"
	git init -q --object-format=$algo "src-$algo"
	echo one >"src-$algo/file" && git -C "src-$algo" add file && git -C "src-$algo" commit -q -m one
	git init -q --object-format=$algo "super-$algo"
	echo top >"super-$algo/top" && git -C "super-$algo" add top && git -C "super-$algo" commit -q -m top
	git -C "super-$algo" -c protocol.file.allow=always submodule add -q "$T/src-$algo" libs/a \
		>/dev/null 2>&1
	git -C "super-$algo" commit -q -m "add libs/a"
	echo two >>"super-$algo/libs/a/file"
	git -C "super-$algo/libs/a" commit -q -am two
	git -C "super-$algo" add libs/a && git -C "super-$algo" commit -q -m "update libs/a"
	mods="super-$algo/.git/modules/libs/a"
	# (stock git does not open a repository with a compat map: ids first)
	subs=$(git -C "super-$algo" rev-parse HEAD:libs/a HEAD~1:libs/a)
	check "$algo: git submodule keeps the clone in .git/modules/libs/a" test -f "$mods/HEAD"
	# the URL's repository is gone: only .git/modules can answer
	rm -rf "src-$algo"

	check "$algo: compat build in the submodule's clone" \
		"$PACKWIRE" -C "$mods" compat build -q --object-format=$to
	if "$PACKWIRE" -C "super-$algo" compat build -q --object-format=$to 2>err; then
		ok "$algo: compat build of the superproject finds libs/a in .git/modules"
	else
		not_ok "$algo: compat build of the superproject finds libs/a in .git/modules"
		sed 's/^/    /' err | head -5
	fi
	check "$algo: compat verify" eval '"$PACKWIRE" -C "super-$algo" compat verify >/dev/null'

	# the view as stock git clones it: each gitlink is the submodule's own
	# compat id of the commit
	rm -rf "view-$algo.git"
	check "$algo: stock git clones the $to view" \
		git clone -q --mirror --upload-pack="$PACKWIRE upload-pack --object-format=$to" \
		"file://$T/super-$algo" "view-$algo.git"
	check "$algo: ... fsck clean" git --git-dir="view-$algo.git" fsck --strict --no-progress
	set -- $subs
	for rev in HEAD HEAD~1; do
		sub=$1
		shift
		want=$("$PACKWIRE" -C "$mods" compat lookup "$sub")
		got=$(git --git-dir="view-$algo.git" rev-parse "$rev:libs/a" 2>/dev/null || echo none)
		check "$algo: ... $rev:libs/a is the submodule's $to id of $sub" test "$got" = "$want"
	done
done

# A name with a ".." component: git refuses it; packwire does not follow it
# to .git/x, where a repository that maps the commit waits.
git init -q other
git -C other commit -q --allow-empty -m other
c=$(git -C other rev-parse HEAD)
git init -q evil
git -C evil commit -q --allow-empty -m evil
mkdir -p evil/.git/modules
git clone -q --bare other evil/.git/x
"$PACKWIRE" -C evil/.git/x compat build -q --object-format=sha256
printf '[submodule "../x"]\n\tpath = s\n\turl = /nonexistent/x.git\n' >evil/.gitmodules
git -C evil add .gitmodules
git -C evil update-index --add --cacheinfo "160000,$c,s"
git -C evil commit -q -m "a gitlink whose name climbs out of modules/"
check "the name '../x' resolves to a directory" test -d evil/.git/modules/../x
if "$PACKWIRE" -C evil compat build -q --object-format=sha256 2>err; then
	not_ok "'../x' is not followed out of .git/modules: compat build succeeded"
else
	check "'../x' is not followed out of .git/modules: the error names the path" \
		grep -q "gitlink s " err
fi
finish
