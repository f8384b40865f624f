#!/bin/bash
# GIT_TRACE_PACKET (issue 11, Git's t5503 reads the server's trace): packwire
# upload-pack traces every pkt-line it reads and writes as git upload-pack
# does ("packet:  upload-pack< want ..."), for v0 and v2, SHA-1 and SHA-256,
# with a negotiation (have lines) and tag following; the pack is not traced.
# GIT_TRACE (Git's t5616 reads it): the pack packwire makes in-process is
# traced as the pack-objects command git upload-pack would run, with the same
# options (--filter=combine:... for repeated --filter, --shallow, ...), and the
# uploadpack.packObjectsHook command as Git traces it.
. "$(dirname "$0")/lib.sh"

UP="$PACKWIRE upload-pack"
# the server's lines, agent and session ids left out (they differ by design)
server_lines() { grep -a " upload-pack[<>]" "$1" | sed 's/agent=[^ ]*//; s/session-id=[^ ]*//'; }

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	git -C "$R" tag -a -m t1 t1 main~1
	git -C "$R" branch old main~2
	for v in 0 2; do
		for who in git pw; do
			up=git-upload-pack
			[ $who = pw ] && up=$UP
			c=$T/c-$algo-$v-$who
			rm -f "$T/tr"
			git init -q --object-format="$algo" "$c"
			git -C "$c" fetch -q --no-tags --upload-pack="$up" "$R" old:refs/heads/old
			GIT_TRACE_BARE=1 GIT_TRACE_PACKET=$T/tr git -C "$c" -c protocol.version=$v \
				fetch -q --upload-pack="$up" "$R" main:refs/heads/new 2>/dev/null
			server_lines "$T/tr" >"$T/lines-$who"
		done
		check "$algo v$v: the server traced the wants" grep -q "upload-pack< want " "$T/lines-pw"
		check "$algo v$v: ... and the haves" grep -q "upload-pack< have " "$T/lines-pw"
		same_file "$algo v$v: the trace is git upload-pack's, line for line" \
			"$T/lines-git" "$T/lines-pw"
	done
	# a timestamp and a source place unless GIT_TRACE_BARE
	GIT_TRACE_PACKET=$T/tr-nobare $UP --advertise-refs "$R" >/dev/null </dev/null
	check "$algo: the unbare trace starts with the time" \
		grep -qE "^[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} .*packet:  upload-pack> " "$T/tr-nobare"
	GIT_TRACE_PACKET=relative $UP --advertise-refs "$R" >/dev/null 2>"$T/err" </dev/null
	contains "$algo: a relative trace path is refused with Git's warning" "$T/err" \
		"unknown trace value for 'GIT_TRACE_PACKET'"
done

# pack_objects_opts TRACE: the options of the traced pack-objects command
pack_objects_opts() { grep -a "trace: .*git .*pack-objects " "$1" | head -1 | sed "s/.*pack-objects //"; }

for algo in sha1 sha256; do
	R=$T/repo-$algo
	git -C "$R" config uploadpack.allowFilter true
	for v in 0 2; do
		for args in "--filter=blob:none --filter=tree:1" "--depth=1" "--filter=blob:limit=5 --no-tags"; do
			for who in git pw; do
				up=git-upload-pack
				[ $who = pw ] && up=$UP
				rm -rf "$T/cl" "$T/tr-$who"
				# shellcheck disable=SC2086
				GIT_TRACE=$T/tr-$who git -c protocol.version=$v clone -q --bare \
					--upload-pack="$up" $args "file://$R" "$T/cl" 2>/dev/null
			done
			check "$algo v$v $args: GIT_TRACE shows the pack made in-process" \
				grep -q "trace: in-process: git pack-objects " "$T/tr-pw"
			[ "$(pack_objects_opts "$T/tr-pw")" = "$(pack_objects_opts "$T/tr-git")" ] &&
				ok "$algo v$v $args: with git upload-pack's pack-objects options" ||
				not_ok "$algo v$v $args: options '$(pack_objects_opts "$T/tr-pw")' vs git's '$(pack_objects_opts "$T/tr-git")'"
		done
	done
	# the hook really runs: traced as Git traces it
	rm -rf "$T/cl"
	printf '[uploadpack]\n\tpackObjectsHook = env\n' >"$T/global"
	GIT_TRACE=$T/tr-hook git clone -q --bare \
		--upload-pack="env GIT_CONFIG_GLOBAL=$T/global $UP" "file://$R" "$T/cl" 2>/dev/null
	check "$algo: uploadpack.packObjectsHook traced as run_command" \
		grep -q "trace: run_command: env git pack-objects --revs" "$T/tr-hook"
	check "$algo: ... and the clone through the hook is complete" git -C "$T/cl" fsck --no-progress
done
finish
