#!/bin/bash
# packwire upload-pack fed raw pkt-line requests, as Git's t5701/t5704 do:
# advertisements and responses byte-identical to stock git upload-pack, the
# object-format rules of the SHA-256 protocol series, and bad input (each an
# explained error, exit 128, repository untouched).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

export GIT_USER_AGENT=test-agent/1

# run_both NAME ENV-PROTOCOL REPO [ARGS...] < input: packwire and git, outputs
# in $T/NAME.pw / $T/NAME.git, exit codes in $T/NAME.rc-pw / .rc-git
run_both() {
	local name=$1 proto=$2 repo=$3
	shift 3
	cat >"$T/$name.in"
	GIT_PROTOCOL=$proto $PACKWIRE upload-pack "$@" "$repo" <"$T/$name.in" >"$T/$name.pw" \
		2>"$T/$name.err-pw" && echo 0 >"$T/$name.rc-pw" || echo $? >"$T/$name.rc-pw"
	GIT_PROTOCOL=$proto git upload-pack "$@" "$repo" <"$T/$name.in" >"$T/$name.git" \
		2>"$T/$name.err-git" && echo 0 >"$T/$name.rc-git" || echo $? >"$T/$name.rc-git"
}

# run_pw NAME ENV-PROTOCOL REPO [ARGS...] < input
# The input is read whole first: fed straight from `{ pkt_nl ...; } |`, a
# packwire that stops at the first bad line may exit before the writer's
# next printf, which then dies of SIGPIPE and (pipefail) ends the test.
run_pw() {
	local name=$1 proto=$2 repo=$3
	shift 3
	cat >"$T/$name.in"
	run_pw_fd "$name" "$proto" "$repo" "$@" <"$T/$name.in"
}
# run_pw_fd NAME ENV-PROTOCOL REPO [ARGS...]: stdin passed as it is
run_pw_fd() {
	local name=$1 proto=$2 repo=$3
	shift 3
	GIT_PROTOCOL=$proto timeout 20 $PACKWIRE upload-pack "$@" "$repo" >"$T/$name.out" \
		2>"$T/$name.err" && echo 0 >"$T/$name.rc" || echo $? >"$T/$name.rc"
}

# expect_fail NAME MESSAGE: exit 128, message in an ERR packet and on stderr
expect_fail() {
	local name=$1 msg=$2
	if [ "$(cat "$T/$name.rc")" = 128 ]; then ok "$name: exit 128"; else not_ok "$name: exit $(cat "$T/$name.rc"), want 128"; fi
	contains "$name: ERR packet" "$T/$name.out" "ERR $msg"
	contains "$name: message on stderr" "$T/$name.err" "fatal: $msg"
}
# a client that hung up is not answered (git upload-pack dies without an ERR)
expect_hangup() {
	local name=$1
	if [ "$(cat "$T/$name.rc")" = 128 ]; then ok "$name: exit 128"; else not_ok "$name: exit $(cat "$T/$name.rc"), want 128"; fi
	check "$name: no ERR packet" bash -c "! grep -qa ERR '$T/$name.out'"
	contains "$name: message on stderr" "$T/$name.err" "fatal: the remote end hung up unexpectedly"
}

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	git -C "$R" config uploadpack.allowFilter true
	before_refs=$(refs "$R")
	before_objs=$(all_objects "$R" | md5sum)
	head=$(git -C "$R" rev-parse HEAD)
	first=$(git -C "$R" rev-list --max-parents=0 HEAD)
	blob=$(git -C "$R" rev-parse HEAD:a.txt)
	zero=$(git -C "$R" rev-parse HEAD | tr 0-9a-f 0)
	other=sha1
	[ "$algo" = sha1 ] && other=sha256
	wf=""
	[ "$algo" = sha256 ] && wf="object-format=sha256"

	# ---- advertisements, byte for byte --------------------------------------
	run_both adv0-$algo "" "$R" --advertise-refs </dev/null
	same_file "$algo: v0 advertisement identical to git's" "$T/adv0-$algo.git" "$T/adv0-$algo.pw"
	run_both adv1-$algo "version=1" "$R" --advertise-refs </dev/null
	same_file "$algo: v1 advertisement identical to git's" "$T/adv1-$algo.git" "$T/adv1-$algo.pw"
	run_both adv2-$algo "version=2" "$R" --advertise-refs </dev/null
	same_file "$algo: v2 capability advertisement identical to git's" "$T/adv2-$algo.git" "$T/adv2-$algo.pw"
	contains "$algo: v2 advertises object-format=$algo" "$T/adv2-$algo.pw" "object-format=$algo"
	{ flush; } | run_both adv0s-$algo "" "$R"
	same_file "$algo: v0 advertisement then flush identical" "$T/adv0s-$algo.git" "$T/adv0s-$algo.pw"

	# ---- v2 commands, byte for byte ----------------------------------------------
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl peel; pkt_nl symrefs
	  pkt_nl "ref-prefix HEAD"; pkt_nl "ref-prefix refs/tags/"; flush; } |
		run_both lsrefs-$algo version=2 "$R" --stateless-rpc
	same_file "$algo: ls-refs peel symrefs ref-prefix identical to git's" "$T/lsrefs-$algo.git" "$T/lsrefs-$algo.pw"
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; flush; } |
		run_both lsrefs2-$algo version=2 "$R" --stateless-rpc
	same_file "$algo: ls-refs without arguments identical" "$T/lsrefs2-$algo.git" "$T/lsrefs2-$algo.pw"
	{ pkt_nl "command=object-info"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl size
	  pkt_nl "oid $blob"; pkt_nl "oid $head"; pkt_nl "oid $zero"; flush; } |
		run_both oinfo-$algo version=2 "$R" --stateless-rpc
	same_file "$algo: object-info identical to git's" "$T/oinfo-$algo.git" "$T/oinfo-$algo.pw"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl "have $zero"; flush; } |
		run_both acks-$algo version=2 "$R" --stateless-rpc
	same_file "$algo: v2 fetch acknowledgments (NAK) identical to git's" "$T/acks-$algo.git" "$T/acks-$algo.pw"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl "have $first"; pkt_nl "have $zero"; pkt_nl "wait-for-done"; flush; } |
		run_both acks2-$algo version=2 "$R" --stateless-rpc
	same_file "$algo: v2 fetch acknowledgments (ACK, wait-for-done) identical" "$T/acks2-$algo.git" "$T/acks2-$algo.pw"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl "have $first"; flush; } |
		run_both acks3-$algo version=2 "$R" --stateless-rpc
	head -c 100 "$T/acks3-$algo.pw" | tr -d '\0' | sed -n '1,/packfile/p' >"$T/acks3.pw"
	head -c 100 "$T/acks3-$algo.git" | tr -d '\0' | sed -n '1,/packfile/p' >"$T/acks3.git"
	same_file "$algo: v2 fetch acknowledgments (ready) identical up to the pack" "$T/acks3.git" "$T/acks3.pw"
	# v0 stateless negotiation rounds (multi_ack_detailed, multi_ack, none)
	for caps in "multi_ack_detailed side-band-64k ofs-delta" "multi_ack side-band" "ofs-delta"; do
		{ pkt_nl "want $head $caps"; flush; pkt_nl "have $zero"; pkt_nl "have $first"; flush; } |
			run_both neg-$algo --stateless-rpc "$R" --stateless-rpc 2>/dev/null
		GIT_PROTOCOL= $PACKWIRE upload-pack --stateless-rpc "$R" <"$T/neg-$algo.in" >"$T/neg-$algo.pw" 2>/dev/null || true
		git upload-pack --stateless-rpc "$R" <"$T/neg-$algo.in" >"$T/neg-$algo.git" 2>/dev/null || true
		same_file "$algo: v0 negotiation round ($caps) identical to git's" "$T/neg-$algo.git" "$T/neg-$algo.pw"
	done
	# v0 shallow lines of deepen 1 (before the pack)
	{ pkt_nl "want $head multi_ack_detailed side-band-64k ofs-delta"; pkt_nl "deepen 1"; flush; } |
		run_both deep-$algo "" "$R" --stateless-rpc
	same_file "$algo: v0 deepen 1 shallow lines identical" "$T/deep-$algo.git" "$T/deep-$algo.pw"

	# a whole v2 fetch: the pack indexes and the objects are complete
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl ofs-delta; pkt_nl no-progress; pkt_nl done; flush; } >"$T/fetch.in"
	run_pw fetch-$algo version=2 "$R" --stateless-rpc <"$T/fetch.in"
	if [ "$(cat "$T/fetch-$algo.rc")" = 0 ] && head -c 20 "$T/fetch-$algo.out" | grep -q packfile; then
		ok "$algo: v2 fetch request answered with a packfile section"
	else
		not_ok "$algo: v2 fetch request answered with a packfile section"
	fi

	# ---- the object-format rules of the seeds --------------------------------
	if [ "$algo" = sha256 ]; then
		{ pkt_nl "command=ls-refs"; flush; } | run_pw nofmt-$algo version=2 "$R" --stateless-rpc
		expect_fail nofmt-$algo "mismatched object format: server sha256; client sha1"
	else
		{ pkt_nl "command=ls-refs"; flush; } | run_pw nofmt-$algo version=2 "$R" --stateless-rpc
		if [ "$(cat "$T/nofmt-$algo.rc")" = 0 ] && grep -q "refs/heads/main" "$T/nofmt-$algo.out"; then
			ok "$algo: a request without object-format means sha1"
		else
			not_ok "$algo: a request without object-format means sha1"
		fi
	fi
	{ pkt_nl "command=ls-refs"; pkt_nl "object-format=$other"; flush; } |
		run_pw mism-$algo version=2 "$R" --stateless-rpc
	expect_fail mism-$algo "mismatched object format: server $algo; client $other"
	{ pkt_nl "command=fetch"; pkt_nl "object-format=$other"; delim; pkt_nl "want $head"; pkt_nl done; flush; } |
		run_pw mismf-$algo version=2 "$R" --stateless-rpc
	expect_fail mismf-$algo "mismatched object format: server $algo; client $other"
	{ pkt_nl "command=ls-refs"; pkt_nl "object-format=md5"; flush; } |
		run_pw md5-$algo version=2 "$R" --stateless-rpc
	expect_fail md5-$algo "unknown object format 'md5'"
	# the same after the advertisement, without --stateless-rpc
	{ pkt_nl "command=ls-refs"; pkt_nl "object-format=md5"; flush; } | run_pw md5b-$algo version=2 "$R"
	expect_fail md5b-$algo "unknown object format 'md5'"

	# ---- bad requests ----------------------------------------------------------------
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl peel; delim; flush; } |
		run_pw delim-ls-$algo version=2 "$R" --stateless-rpc
	expect_fail delim-ls-$algo "expected flush after ls-refs arguments"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"; delim; delim; flush; } |
		run_pw delim-fetch-$algo version=2 "$R" --stateless-rpc
	expect_fail delim-fetch-$algo "expected flush after fetch arguments"
	{ pkt_nl "command=frobnicate"; [ -z "$wf" ] || pkt_nl "$wf"; flush; } |
		run_pw badcmd-$algo version=2 "$R" --stateless-rpc
	expect_fail badcmd-$algo "invalid command 'frobnicate'"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"; pkt_nl "frobnicate"; flush; } |
		run_pw badarg-$algo version=2 "$R" --stateless-rpc
	expect_fail badarg-$algo "unexpected line: 'frobnicate'"
	{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "frobnicate"; flush; } |
		run_pw badlsarg-$algo version=2 "$R" --stateless-rpc
	expect_fail badlsarg-$algo "unexpected line: 'frobnicate'"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $zero"; pkt_nl done; flush; } |
		run_pw v2missing-$algo version=2 "$R" --stateless-rpc
	expect_fail v2missing-$algo "upload-pack: not our ref $zero"

	# v0: wants of objects that were not advertised, or do not exist
	{ pkt_nl "want $blob multi_ack_detailed side-band-64k"; flush; pkt_nl done; } | run_pw notours-$algo "" "$R"
	expect_fail notours-$algo "upload-pack: not our ref $blob"
	{ pkt_nl "want $zero multi_ack_detailed side-band-64k"; flush; pkt_nl done; } | run_pw missing-$algo "" "$R"
	expect_fail missing-$algo "upload-pack: not our ref $zero"
	# a reachable but unadvertised commit: refused, allowed with allowReachableSHA1InWant
	mid=$(git -C "$R" rev-parse HEAD~2)
	{ pkt_nl "want $mid side-band-64k"; flush; pkt_nl done; } >"$T/reach.in"
	run_pw reach-$algo "" "$R" <"$T/reach.in"
	expect_fail reach-$algo "upload-pack: not our ref $mid"
	git -C "$R" config uploadpack.allowReachableSHA1InWant true
	run_pw reach2-$algo "" "$R" <"$T/reach.in"
	check "$algo: reachable want allowed by allowReachableSHA1InWant" test "$(cat "$T/reach2-$algo.rc")" = 0
	git -C "$R" config --unset uploadpack.allowReachableSHA1InWant

	short=${head:0:20}
	{ pkt_nl "want $short multi_ack_detailed"; flush; } | run_pw shortwant-$algo "" "$R"
	expect_fail shortwant-$algo "protocol error: expected 'want <$algo id>', got 'want $short multi_ack_detailed'"
	{ pkt_nl "want $head multi_ack_detailed"; flush; pkt_nl "have $short"; flush; } | run_pw shorthave-$algo "" "$R"
	expect_fail shorthave-$algo "protocol error: expected 'have <$algo id>'"
	{ pkt_nl "want $head multi_ack_detailed"; flush; pkt_nl "have ${head:0:$((${#head} - 1))}g"; flush; } |
		run_pw hexhave-$algo "" "$R"
	expect_fail hexhave-$algo "protocol error: expected 'have <$algo id>'"
	{ pkt_nl "want $head multi_ack_detailed"; printf 'fff0'; head -c 70000 /dev/zero | tr '\0' a; } |
		run_pw toolong-$algo "" "$R"
	if [ "$(cat "$T/toolong-$algo.rc")" = 128 ] && grep -q "fatal: " "$T/toolong-$algo.err"; then
		ok "$algo: packet longer than the maximum: clear error, exit 128"
	else
		not_ok "$algo: packet longer than the maximum (exit $(cat "$T/toolong-$algo.rc"))"
	fi
	{ pkt_nl "want $head multi_ack_detailed"; flush; pkt_nl "have $first"; } | run_pw eof-$algo "" "$R"
	expect_hangup eof-$algo
	{ pkt_nl "want $head multi_ack_detailed"; } | run_pw eofw-$algo "" "$R"
	expect_hangup eofw-$algo
	# a stateless client ends its first request of a shallow fetch after
	# the wants (git's remote-curl does): the shallow list, and exit 0
	{ pkt_nl "want $head multi_ack_detailed"; pkt_nl "deepen 1"; flush; } |
		run_both sdeep-$algo "" "$R" --stateless-rpc
	same_file "$algo: stateless wants with deepen, then EOF: git's answer" "$T/sdeep-$algo.git" "$T/sdeep-$algo.pw"
	check "$algo: ... and exit 0, as git" test "$(cat "$T/sdeep-$algo.rc-pw") $(cat "$T/sdeep-$algo.rc-git")" = "0 0"
	{ pkt_nl "want $head multi_ack_detailed"; flush; pkt_nl "bogus"; } | run_pw bogus-$algo "" "$R"
	expect_fail bogus-$algo "git upload-pack: expected SHA1 list, got 'bogus'"
	{ pkt_nl "want $head multi_ack_detailed"; pkt_nl "deepen 1"; pkt_nl "deepen-since 12345"; flush; } |
		run_pw deepboth-$algo "" "$R"
	expect_fail deepboth-$algo "protocol error: deepen and deepen-since (or deepen-not) cannot be used together"
	{ pkt_nl "want $head multi_ack_detailed"; pkt_nl "filter blob:none"; flush; } | run_pw nofilter-$algo "" "$R"
	expect_fail nofilter-$algo "git upload-pack: filtering capability not negotiated"

	# ls-remote-like: advertisement, flush, hang-up is fine; a bare hang-up is not (as git)
	flush | run_pw lsr-$algo "" "$R"
	check "$algo: flush after the advertisement ends cleanly" test "$(cat "$T/lsr-$algo.rc")" = 0
	run_pw lsr2-$algo "" "$R" </dev/null
	expect_hangup lsr2-$algo

	check "$algo: refs untouched by all of that" test "$(refs "$R")" = "$before_refs"
	check "$algo: objects untouched by all of that" test "$(all_objects "$R" | md5sum)" = "$before_objs"

	# --timeout: an idle client is dropped. The client holds the pipe open
	# and says nothing for as long as packwire may need (timeout 20 in
	# run_pw): a fixed "sleep N | ..." raced the timeout on a loaded machine,
	# where startup alone may take seconds (and its EOF also gives exit 128).
	rm -f "$T/idle.fifo" && mkfifo "$T/idle.fifo"
	exec 8<>"$T/idle.fifo"
	start=$(date +%s)
	run_pw_fd idle-$algo "" "$R" --timeout=1 <&8
	el=$(($(date +%s) - start))
	exec 8>&-
	if [ "$(cat "$T/idle-$algo.rc")" = 128 ] && grep -q "timed out" "$T/idle-$algo.err"; then
		ok "$algo: --timeout=1 drops an idle client (${el}s)"
	else
		not_ok "$algo: --timeout=1 (rc $(cat "$T/idle-$algo.rc"), ${el}s, want 128 and a timeout message)"
		sed 's/^/    /' "$T/idle-$algo.err"
	fi
done

# ---- empty repositories ------------------------------------------------------
for algo in sha1 sha256; do
	E=$T/empty-$algo.git
	git init -q --bare --object-format=$algo "$E"
	run_pw empty-$algo "" "$E" --advertise-refs </dev/null
	zero=$(printf '%0*d' "$([ $algo = sha1 ] && echo 40 || echo 64)" 0)
	contains "$algo empty: capabilities^{} with the zero id" "$T/empty-$algo.out" "$zero capabilities^{}"
	contains "$algo empty: object-format" "$T/empty-$algo.out" "object-format=$algo"
	# git 2.39's clone only learns the algorithm when there are refs, so the
	# clone of an empty repository is compared with stock git's, not assumed
	for v in 0 2; do
		rm -rf "$T/empty-clone" "$T/empty-clone-git"
		git -c protocol.version=$v clone -q --upload-pack="$UP" "file://$E" "$T/empty-clone" 2>/dev/null
		git -c protocol.version=$v clone -q "file://$E" "$T/empty-clone-git" 2>/dev/null
		check "$algo v$v: clone of an empty repository like stock git's" \
			test "$(git -C "$T/empty-clone" rev-parse --show-object-format)" = \
			"$(git -C "$T/empty-clone-git" rev-parse --show-object-format)"
	done
done
finish
