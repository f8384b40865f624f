#!/bin/bash
# Session ids (issue 11, Git's t5705): with transfer.advertiseSID packwire
# upload-pack advertises session-id=<sid> (v0/v1 capability, v2 line) and,
# with GIT_TRACE2_EVENT, logs Git's trace2 data events "client-sid" and
# "negotiated-version"; without it, nothing is advertised. SHA-1 and SHA-256.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	GIT_PROTOCOL= $PACKWIRE upload-pack --advertise-refs "$R" >"$T/adv-off" </dev/null
	check "$algo: no session-id without transfer.advertiseSID" bash -c "! grep -qa session-id '$T/adv-off'"
	git -C "$R" config transfer.advertiseSID true
	GIT_PROTOCOL= $PACKWIRE upload-pack --advertise-refs "$R" >"$T/adv0" </dev/null
	contains "$algo: v0 advertises session-id" "$T/adv0" " session-id="
	GIT_PROTOCOL=version=2 $PACKWIRE upload-pack --advertise-refs "$R" >"$T/adv2" </dev/null
	contains "$algo: v2 advertises session-id" "$T/adv2" "session-id="

	for v in 0 1 2; do
		c=$T/clone-$algo-$v
		rm -f "$T/tr2-server" "$T/tr2-client"
		git clone -q --no-local "$R" "$c"
		git -C "$c" config transfer.advertiseSID true
		(cd "$R" && echo "$v" >>a.txt && git commit -q -am "more $v")
		# (the client sends its id with a fetch command that wants something)
		GIT_TRACE2_EVENT=$T/tr2-client git -C "$c" -c protocol.version=$v fetch -q \
			--upload-pack="GIT_TRACE2_EVENT='$T/tr2-server' $UP" origin 2>"$T/err" ||
			{ not_ok "$algo v$v: fetch"; cat "$T/err"; }
		contains "$algo v$v: the client saw the server's sid" "$T/tr2-client" '"key":"server-sid"'
		contains "$algo v$v: the server logged the client's sid" "$T/tr2-server" '"key":"client-sid"'
		contains "$algo v$v: the server logged the negotiated version" "$T/tr2-server" \
			"\"key\":\"negotiated-version\",\"value\":\"$v\""
	done
done
finish
