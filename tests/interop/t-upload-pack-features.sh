#!/bin/bash
# packwire upload-pack features not covered by the clone matrix, each
# compared with stock git upload-pack on the same repository, SHA-1 and
# SHA-256: --strict and --timeout arguments; allowTipSHA1InWant /
# allowReachableSHA1InWant / allowRefInWant / allowSidebandAll in the
# advertisements; v2 want-ref (wanted-refs section, unknown ref), v2
# shallow-info; git fetch using want-ref and sideband-all; filters
# blob:limit=N and tree:0 in v0, v1 and v2; include-tag; progress and
# no-progress.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/upload-lib.sh"

export GIT_USER_AGENT=test-agent/1

# same_file with a printable diff (pkt-lines carry NULs, which CTest's
# output capture does not survive)
same_file() {
	if cmp -s "$2" "$3"; then ok "$1"; else
		not_ok "$1"
		diff -u <(cat -v "$2") <(cat -v "$3") | head -20 || true
	fi
}

# both NAME ENV-PROTOCOL ARGS... < input: packwire and git upload-pack;
# output in $T/NAME.pw / .git, stderr in .err-pw / .err-git, exit in .rc-pw / .rc-git
both() {
	local name=$1 proto=$2
	shift 2
	cat >"$T/$name.in"
	GIT_PROTOCOL=$proto timeout 20 $PACKWIRE upload-pack "$@" <"$T/$name.in" >"$T/$name.pw" \
		2>"$T/$name.err-pw" && echo 0 >"$T/$name.rc-pw" || echo $? >"$T/$name.rc-pw"
	GIT_PROTOCOL=$proto git upload-pack "$@" <"$T/$name.in" >"$T/$name.git" \
		2>"$T/$name.err-git" && echo 0 >"$T/$name.rc-git" || echo $? >"$T/$name.rc-git"
}
same_rc() { check "$1: exit status as git's ($(cat "$T/$2.rc-git"))" test "$(cat "$T/$2.rc-pw")" = "$(cat "$T/$2.rc-git")"; }
# up to (and including) the packfile section header, NULs dropped. No
# `| head` at the end of a pipeline: a writer killed by SIGPIPE fails the
# pipeline (pipefail), which set -e turns into an abort.
sections() { head -c 2000 "$1" | tr -d '\0' | sed -n '1,/packfile/p'; }
# first_lines N FILE: the first N lines, NULs dropped
first_lines() { tr -d '\0' <"$2" | sed -n "1,$1p"; }
# bands FILE: the side-band numbers used after the packfile section header
bands() {
	python3 -c '
import sys
d = open(sys.argv[1], "rb").read()
i, seen, inpack = 0, set(), False
while i + 4 <= len(d):
    n = int(d[i:i + 4], 16)
    if n < 4:
        i += 4
        continue
    p = d[i + 4:i + n]
    i += n
    if inpack:
        seen.add(p[0])
    elif p.rstrip(b"\n") == b"packfile":
        inpack = True
print(" ".join(str(b) for b in sorted(seen)))' "$1"
}
types() { git -C "$1" cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype)' 2>/dev/null | sort; }

for algo in sha1 sha256; do
	R=$T/repo-$algo
	make_repo "$R" "$algo" 2>/dev/null
	head=$(git -C "$R" rev-parse HEAD)
	wf=""
	[ "$algo" = sha256 ] && wf="object-format=sha256"

	# ---- command-line arguments --------------------------------------------------
	both strict1-$algo "" --strict --advertise-refs "$R" </dev/null
	same_rc "$algo: --strict on a work tree directory" strict1-$algo
	check "$algo: --strict on a work tree refused" test "$(cat "$T/strict1-$algo.rc-pw")" = 128
	same_file "$algo: --strict message as git's" "$T/strict1-$algo.err-git" "$T/strict1-$algo.err-pw"
	both strict2-$algo "" --strict --advertise-refs "$R/.git" </dev/null
	same_rc "$algo: --strict on the git directory" strict2-$algo
	same_file "$algo: --strict on the git directory: same advertisement" "$T/strict2-$algo.git" "$T/strict2-$algo.pw"
	both nostrict-$algo "" --advertise-refs "$R" </dev/null
	same_file "$algo: without --strict the work tree's .git is found" "$T/nostrict-$algo.git" "$T/nostrict-$algo.pw"
	both timeout-$algo "" --timeout=x --advertise-refs "$R" </dev/null
	same_rc "$algo: --timeout with a bad value" timeout-$algo

	# ---- advertisements with the allow* settings ---------------------------------
	for cfg in allowTipSHA1InWant allowReachableSHA1InWant allowAnySHA1InWant allowRefInWant \
		allowSidebandAll allowFilter; do
		git -C "$R" config "uploadpack.$cfg" true
		both adv0-$cfg-$algo "" --advertise-refs "$R" </dev/null
		same_file "$algo: v0 advertisement with uploadpack.$cfg identical" \
			"$T/adv0-$cfg-$algo.git" "$T/adv0-$cfg-$algo.pw"
		both adv2-$cfg-$algo version=2 --advertise-refs "$R" </dev/null
		same_file "$algo: v2 advertisement with uploadpack.$cfg identical" \
			"$T/adv2-$cfg-$algo.git" "$T/adv2-$cfg-$algo.pw"
		[ $cfg = allowAnySHA1InWant ] && git -C "$R" config --unset "uploadpack.$cfg"
	done
	contains "$algo: allow-tip-sha1-in-want advertised" "$T/adv0-allowTipSHA1InWant-$algo.pw" "allow-tip-sha1-in-want"
	contains "$algo: ref-in-want advertised in v2" "$T/adv2-allowRefInWant-$algo.pw" "ref-in-want"
	contains "$algo: sideband-all advertised in v2" "$T/adv2-allowSidebandAll-$algo.pw" "sideband-all"

	# ---- v0 no-done: the server sends the pack once ready, without "done" -----------
	first=$(git -C "$R" rev-list --max-parents=0 HEAD)
	{ pkt_nl "want $head multi_ack_detailed no-done side-band-64k ofs-delta"; flush
	  pkt_nl "have $first"; flush; } | both nodone-$algo "" --stateless-rpc "$R"
	first_lines 4 "$T/nodone-$algo.pw" >"$T/nd.pw"
	first_lines 4 "$T/nodone-$algo.git" >"$T/nd.git"
	same_file "$algo: v0 no-done: ACK common/ready, NAK, ACK as git's" "$T/nd.git" "$T/nd.pw"
	contains "$algo: v0 no-done: ready" "$T/nd.pw" "ACK $first ready"
	check "$algo: v0 no-done: the pack follows without done" grep -qa PACK "$T/nodone-$algo.pw"

	# ---- v2 ls-refs unborn: an empty repository, an unborn HEAD ---------------------
	E=$T/empty-$algo.git
	git init -q --bare --object-format=$algo "$E"
	for repo in "$E" "$R"; do
		[ "$repo" = "$R" ] && git -C "$R" symbolic-ref HEAD refs/heads/not-yet
		{ pkt_nl "command=ls-refs"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl symrefs; pkt_nl peel
		  pkt_nl unborn; pkt_nl "ref-prefix HEAD"; pkt_nl "ref-prefix refs/heads/"; flush; } |
			both unborn-$algo version=2 --stateless-rpc "$repo"
		same_file "$algo: ls-refs unborn ($(basename "$repo")) identical to git's" \
			"$T/unborn-$algo.git" "$T/unborn-$algo.pw"
		contains "$algo: ls-refs unborn HEAD line" "$T/unborn-$algo.pw" "unborn HEAD symref-target:refs/heads/"
	done
	git -C "$R" symbolic-ref HEAD refs/heads/main

	# ---- v2 want-ref: wanted-refs section ----------------------------------------
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want-ref refs/heads/main"
	  pkt_nl "want-ref refs/heads/topic"; pkt_nl no-progress; pkt_nl done; flush; } |
		both wantref-$algo version=2 --stateless-rpc "$R"
	sections "$T/wantref-$algo.pw" >"$T/wr.pw"
	sections "$T/wantref-$algo.git" >"$T/wr.git"
	same_file "$algo: v2 want-ref: wanted-refs section identical" "$T/wr.git" "$T/wr.pw"
	contains "$algo: v2 want-ref: wanted-refs names the ref" "$T/wr.pw" "$head refs/heads/main"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want-ref refs/heads/nope"
	  pkt_nl done; flush; } | both wantref-bad-$algo version=2 --stateless-rpc "$R"
	same_rc "$algo: v2 want-ref of an unknown ref" wantref-bad-$algo
	same_file "$algo: v2 want-ref of an unknown ref: same ERR" "$T/wantref-bad-$algo.git" "$T/wantref-bad-$algo.pw"
	# sideband-all: every section multiplexed
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want-ref refs/heads/main"
	  pkt_nl sideband-all; pkt_nl no-progress; pkt_nl done; flush; } |
		both sball-$algo version=2 --stateless-rpc "$R"
	sections "$T/sball-$algo.pw" >"$T/sb.pw"
	sections "$T/sball-$algo.git" >"$T/sb.git"
	same_file "$algo: v2 sideband-all sections identical" "$T/sb.git" "$T/sb.pw"

	# ---- v2 shallow-info -----------------------------------------------------------
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl "deepen 2"; pkt_nl no-progress; pkt_nl done; flush; } |
		both shinfo-$algo version=2 --stateless-rpc "$R"
	sections "$T/shinfo-$algo.pw" >"$T/si.pw"
	sections "$T/shinfo-$algo.git" >"$T/si.git"
	same_file "$algo: v2 deepen 2: shallow-info section identical" "$T/si.git" "$T/si.pw"
	contains "$algo: v2 shallow-info present" "$T/si.pw" "shallow-info"

	# ---- stock git fetch through want-ref and sideband-all -------------------------
	for up in pw git; do
		rm -rf "$T/wr-$up"
		git init -q --object-format=$algo "$T/wr-$up"
		opt=()
		[ $up = pw ] && opt=(--upload-pack="$UP")
		GIT_TRACE_PACKET=$T/trace-$up git -C "$T/wr-$up" -c protocol.version=2 fetch -q "${opt[@]}" \
			"file://$R" refs/heads/main:refs/x/main refs/heads/topic:refs/x/topic 2>"$T/err" ||
			{ not_ok "$algo: git fetch with want-ref ($up)"; cat "$T/err"; }
	done
	contains "$algo: git fetch sent want-ref to packwire" "$T/trace-pw" "fetch> want-ref refs/heads/main"
	contains "$algo: git fetch sent sideband-all to packwire" "$T/trace-pw" "fetch> sideband-all"
	contains "$algo: packwire answered with wanted-refs" "$T/trace-pw" "wanted-refs"
	check "$algo: git fetch via want-ref: refs as from git" same_refs "$T/wr-pw" "$T/wr-git"
	check "$algo: git fetch via want-ref: fsck" fsck_ok "$T/wr-pw"
	if diff <(types "$T/wr-pw") <(types "$T/wr-git") >/dev/null; then ok "$algo: git fetch via want-ref: same objects"; else
		not_ok "$algo: git fetch via want-ref: objects differ"; fi
	git -C "$R" config --unset uploadpack.allowRefInWant
	git -C "$R" config --unset uploadpack.allowSidebandAll

	# ---- filters blob:limit=N and tree:0, every protocol version -------------------
	for v in 0 1 2; do
		for f in blob:limit=200 tree:0 tree:1; do
			w="$algo v$v --filter=$f"
			d=$T/f-$algo-$v-${f//[:=]/-}
			git -c protocol.version=$v clone -q --bare --filter=$f --upload-pack="$UP" "file://$R" "$d-pw" 2>"$T/err" ||
				{ not_ok "$w: clone"; cat "$T/err"; continue; }
			git -c protocol.version=$v clone -q --bare --filter=$f "file://$R" "$d-git"
			if diff <(types "$d-pw") <(types "$d-git") >/dev/null; then ok "$w: same objects as git's"; else
				not_ok "$w: objects differ from git's ($(types "$d-pw" | wc -l) vs $(types "$d-git" | wc -l))"; fi
			check "$w: fsck --strict" fsck_ok "$d-pw"
			check "$w: same refs" same_refs "$d-pw" "$R"
		done
	done

	# ---- include-tag: a tag pointing into fetched history comes along -------------
	for v in 0 2; do
		for up in pw git; do
			d=$T/it-$algo-$v-$up
			rm -rf "$d"
			git init -q --object-format=$algo "$d"
			opt=()
			[ $up = pw ] && opt=(--upload-pack="$UP")
			git -C "$d" -c protocol.version=$v fetch -q "${opt[@]}" "file://$R" main:refs/x/main 2>"$T/err" ||
				{ not_ok "$algo v$v include-tag: fetch ($up)"; cat "$T/err"; }
		done
		check "$algo v$v include-tag: tags followed as with git" same_refs "$T/it-$algo-$v-pw" "$T/it-$algo-$v-git"
		check "$algo v$v include-tag: annotated tag arrived" git -C "$T/it-$algo-$v-pw" cat-file -e v0.2-annotated
		check "$algo v$v include-tag: fsck" fsck_ok "$T/it-$algo-$v-pw"
	done

	# ---- progress: sent on the sideband unless no-progress -------------------------
	rm -rf "$T/prog-$algo" "$T/quiet-$algo"
	git clone --progress --bare --upload-pack="$UP" "file://$R" "$T/prog-$algo" 2>"$T/prog.err" ||
		{ not_ok "$algo: clone --progress"; cat -v "$T/prog.err" | tail -5; }
	contains "$algo: progress relayed when asked for" "$T/prog.err" "remote: "
	git clone -q --bare --upload-pack="$UP" "file://$R" "$T/quiet-$algo" 2>"$T/quiet.err" ||
		{ not_ok "$algo: clone -q"; cat "$T/quiet.err"; }
	check "$algo: no-progress: nothing from the remote" test ! -s "$T/quiet.err"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl no-progress; pkt_nl done; flush; } | both noprog-$algo version=2 --stateless-rpc "$R"
	check "$algo: no-progress: no band-2 packets, as git" test \
		"$(bands "$T/noprog-$algo.pw")" = "$(bands "$T/noprog-$algo.git")"
	{ pkt_nl "command=fetch"; [ -z "$wf" ] || pkt_nl "$wf"; delim; pkt_nl "want $head"
	  pkt_nl done; flush; } | both prog-$algo version=2 --stateless-rpc "$R"
	check "$algo: progress requested: band-2 packets sent" test "$(bands "$T/prog-$algo.pw")" = "1 2"
done
finish
