#!/bin/bash
# Session ids on pushes (issue 11, Git's t5705 push cases): with
# transfer.advertiseSID packwire receive-pack advertises session-id=<sid>
# and, with GIT_TRACE2_EVENT, logs the client's id as Git's "client-sid"
# data event; without it, nothing is advertised. SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"

RP="$PACKWIRE receive-pack"

for algo in sha1 sha256; do
	C=$T/c-$algo S=$T/s-$algo.git
	make_repo "$C" "$algo"
	git init -q --bare --object-format="$algo" "$S"
	$RP --advertise-refs "$S" >"$T/adv-off"
	check_fails "$algo: no session-id without transfer.advertiseSID" grep -qa session-id "$T/adv-off"
	git -C "$S" config transfer.advertiseSID true
	git -C "$C" config transfer.advertiseSID true
	$RP --advertise-refs "$S" >"$T/adv"
	contains "$algo: session-id advertised" "$T/adv" " session-id="
	for v in 0 1; do
		rm -f "$T/tr2-server" "$T/tr2-client"
		# (the client logs server-sid inside a region: deeper than the default nesting)
		GIT_TRACE2_EVENT_NESTING=100 GIT_TRACE2_EVENT=$T/tr2-client git -C "$C" -c protocol.version=$v push -q \
			--receive-pack="GIT_TRACE2_EVENT='$T/tr2-server' $RP" "$S" "HEAD:refs/heads/v$v" \
			2>"$T/err" || { not_ok "$algo v$v: push"; cat "$T/err"; }
		contains "$algo v$v: the client saw the server's sid" "$T/tr2-client" '"key":"server-sid"'
		contains "$algo v$v: the server logged the client's sid" "$T/tr2-server" '"key":"client-sid"'
	done
done
finish
