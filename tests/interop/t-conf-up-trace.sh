#!/bin/bash
# GIT_TRACE_PACKET (issue 11, Git's t5503 reads the server's trace): packwire
# upload-pack traces every pkt-line it reads and writes as git upload-pack
# does ("packet:  upload-pack< want ..."), for v0 and v2, SHA-1 and SHA-256,
# with a negotiation (have lines) and tag following; the pack is not traced.
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
finish
