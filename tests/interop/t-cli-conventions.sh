#!/usr/bin/env bash
# The command-line conventions a git user expects, for every subcommand:
# `packwire <cmd> -h` prints the usage on stdout and exits 129 (as git),
# an unknown option prints the usage on stderr and exits 129, fatal errors
# exit 128 with "fatal: ..."; clone, fetch and push accept -q/--quiet and
# --progress, show progress on stderr only when it is a terminal (a pty made
# by script(1)) or --progress is given, and never with -q. SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"

cd "$T"
cmds="cat-file clone fetch hash-object index-pack init ls-remote pack-objects push receive-pack repack
rev-list rev-parse show-index show-ref update-ref upload-pack verify-pack"
git init -q inrepo
for c in $cmds; do
	(cd inrepo && "$PACKWIRE" "$c" -h) >out 2>err </dev/null && rc=0 || rc=$?
	check "$c -h: exit 129" test "$rc" = 129
	contains "$c -h: usage on stdout" out "usage: packwire $c"
	check "$c -h: nothing on stderr" test ! -s err
	(cd inrepo && "$PACKWIRE" "$c" --no-such-option) >out 2>err </dev/null && rc=0 || rc=$?
	if [ "$c" = rev-parse ]; then
		# git rev-parse has no unknown options (it passes them on); packwire's is fatal
		check "$c --no-such-option: fatal (128)" test "$rc" = 128
		continue
	fi
	check "$c --no-such-option: exit 129" test "$rc" = 129
	contains "$c --no-such-option: usage on stderr" err "usage: packwire $c"
	check "$c --no-such-option: nothing on stdout" test ! -s out
	# the first line names the option as git's does ("error: unknown option
	# `x'", "unknown switch `J'"), or, where git prints only the usage
	# (index-pack, rev-list), is the usage too
	for opt in --no-such-option -J --bad=1; do
		(cd inrepo && "$PACKWIRE" "$c" $opt) >out 2>err </dev/null && rc=0 || rc=$?
		(cd inrepo && git "$c" $opt) >/dev/null 2>git.err </dev/null && grc=0 || grc=$?
		check "$c $opt: exit $grc as git" test "$rc" = "$grc"
		head -1 git.err | sed 's/^usage: git[ -]/usage: packwire /; s/^\(usage: packwire [a-z-]*\).*/\1/' >want
		head -1 err | sed 's/^\(usage: packwire [a-z-]*\).*/\1/' >got
		same_file "$c $opt: first line as git's" got want
	done
done
# ls-remote: -h alone is the usage, with other arguments it is --heads (as git)
make_repo srv-sha1 sha1 >/dev/null 2>&1
"$PACKWIRE" ls-remote -h "$T/srv-sha1" >out
git ls-remote -h "$T/srv-sha1" >git.out
same_file "ls-remote -h URL is --heads, as git" out git.out

# fatal errors: exit 128 and a "fatal: " message
fatal() {
	local what=$1 rc
	shift
	"$@" >out 2>err </dev/null && rc=0 || rc=$?
	check "$what: exit 128" test "$rc" = 128
	if head -1 err | grep -q '^fatal: '; then ok "$what: fatal: message"; else
		not_ok "$what: fatal: message"
		head -3 err
	fi
}
mkdir -p outside
fatal "clone of a missing repository" "$PACKWIRE" clone -q "$T/nope" "$T/x"
fatal "ls-remote of a missing repository" "$PACKWIRE" ls-remote "$T/nope"
fatal "fetch outside a repository" sh -c "cd outside && \"$PACKWIRE\" fetch \"$T/srv-sha1\""
fatal "push outside a repository" sh -c "cd outside && \"$PACKWIRE\" push \"$T/srv-sha1\" main"
fatal "upload-pack of a non-repository" "$PACKWIRE" upload-pack "$T/outside"
fatal "receive-pack of a non-repository" "$PACKWIRE" receive-pack "$T/outside"
fatal "push to a missing repository" sh -c "cd srv-sha1 && \"$PACKWIRE\" push \"$T/nope\" main"

# progress: with a terminal, --progress, and not with -q/--quiet
has_script=1
script -qc true /dev/null >/dev/null 2>&1 || has_script=0
# on_tty CMD...: run with stdout and stderr on a pty, output in tty.out
on_tty() { script -qec "$*" /dev/null >tty.out 2>&1 </dev/null; }
for algo in sha1 sha256; do
	S=$T/srv-$algo
	[ -d "$S" ] || make_repo "$S" "$algo" >/dev/null 2>&1
	u=file://$S
	for q in -q --quiet; do
		"$PACKWIRE" clone $q "$u" "c$q-$algo" >out 2>err
		check "$algo clone $q: silent" test ! -s err -a ! -s out
		(cd "$S" && git commit -q --allow-empty -m "q $q")
		(cd "c$q-$algo" && "$PACKWIRE" fetch $q) >out 2>err
		check "$algo fetch $q: silent" test ! -s err -a ! -s out
		check "$algo fetch $q: fetched" test "$(git -C "c$q-$algo" rev-parse origin/main)" = "$(git -C "$S" rev-parse main)"
		git init -q --bare --object-format=$algo "p$q-$algo.git"
		(cd "c$q-$algo" && "$PACKWIRE" push $q "$T/p$q-$algo.git" main) >out 2>err
		check "$algo push $q: silent" test ! -s err -a ! -s out
		check "$algo push $q: pushed" test "$(git -C "p$q-$algo.git" rev-parse main)" = "$(git -C "c$q-$algo" rev-parse main)"
	done
	"$PACKWIRE" clone "$u" "c-$algo" 2>err
	check_fails "$algo clone, stderr not a terminal: no progress" grep -q "Receiving objects" err
	"$PACKWIRE" clone --progress "$u" "cp-$algo" 2>err
	contains "$algo clone --progress: progress" err "Receiving objects: 100%"
	contains "$algo clone --progress: remote progress" err "remote: "
	(cd "$S" && echo p >>a.txt && git commit -q -am "progress")
	(cd "cp-$algo" && "$PACKWIRE" fetch --progress) 2>err
	contains "$algo fetch --progress: progress" err "Receiving objects: 100%"
	git init -q --bare --object-format=$algo "pp-$algo.git"
	git -C "pp-$algo.git" config receive.unpackLimit 1
	(cd "cp-$algo" && "$PACKWIRE" push --progress "$T/pp-$algo.git" main) 2>err
	contains "$algo push --progress: remote progress relayed" err "remote: Resolving deltas"
	for ph in "Enumerating objects: [0-9]*, done." "Counting objects: 100% .*done." \
		"Writing objects: 100% .*done." "Total [0-9]* (delta [0-9]*), reused [0-9]* (delta [0-9]*), pack-reused 0"; do
		n=$(tr '\r' '\n' <err | grep -c "^$ph\$") || true
		check "$algo push --progress: '$ph' once" test "$n" = 1
	done
	git init -q --bare --object-format=$algo "pn-$algo.git"
	(cd "cp-$algo" && "$PACKWIRE" push "$T/pn-$algo.git" main) 2>err
	check_fails "$algo push, stderr not a terminal: no local progress" grep -q "Writing objects" err
	check "$algo push, stderr not a terminal: pushed" test "$(git -C "pn-$algo.git" rev-parse main)" = "$(git -C "cp-$algo" rev-parse main)"
	check "$algo push --progress: pushed" test "$(git -C "pp-$algo.git" rev-parse main)" = "$(git -C "cp-$algo" rev-parse main)"
	if [ $has_script = 1 ]; then
		on_tty "\"$PACKWIRE\" clone \"$u\" \"$T/ct-$algo\""
		contains "$algo clone on a terminal: progress" tty.out "Receiving objects: 100%"
		n=$(tr '\r' '\n' <tty.out | grep -c '^Resolving deltas: 100%.*done\.') || true
		check "$algo clone on a terminal: one 'Resolving deltas ... done' line" test "$n" = 1
		n=$(tr '\r' '\n' <tty.out | grep -c '^Receiving objects: 100%.*done\.') || true
		check "$algo clone on a terminal: one 'Receiving objects ... done' line" test "$n" = 1
		on_tty "\"$PACKWIRE\" clone -q \"$u\" \"$T/ctq-$algo\""
		check "$algo clone -q on a terminal: silent" test ! -s tty.out
		(cd "$S" && echo t >>a.txt && git commit -q -am "tty")
		on_tty "cd \"$T/ct-$algo\" && \"$PACKWIRE\" fetch"
		contains "$algo fetch on a terminal: progress" tty.out "Receiving objects: 100%"
		on_tty "cd \"$T/ctq-$algo\" && \"$PACKWIRE\" fetch -q"
		check "$algo fetch -q on a terminal: silent" test ! -s tty.out
		git init -q --bare --object-format=$algo "pt-$algo.git"
		git -C "pt-$algo.git" config receive.unpackLimit 1
		on_tty "cd \"$T/ct-$algo\" && \"$PACKWIRE\" push \"$T/pt-$algo.git\" main"
		contains "$algo push on a terminal: remote progress" tty.out "remote: Resolving deltas"
		contains "$algo push on a terminal: local progress" tty.out "Writing objects: 100%"
		contains "$algo push on a terminal: pack summary" tty.out "pack-reused 0"
		git init -q --bare --object-format=$algo "ptq-$algo.git"
		git -C "ptq-$algo.git" config receive.unpackLimit 1
		on_tty "cd \"$T/ct-$algo\" && \"$PACKWIRE\" push -q \"$T/ptq-$algo.git\" main"
		check "$algo push -q on a terminal: silent" test ! -s tty.out
		check "$algo push -q on a terminal: pushed" git -C "ptq-$algo.git" rev-parse -q --verify main >/dev/null
	else
		skip "$algo: progress on a terminal (no script(1))"
	fi
done
finish
