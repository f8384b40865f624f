#!/bin/bash
# packwire push shows what a proc-receive hook reports (issue 11, Git's t5411
# output): report-status-v2 "option refname/old-oid/new-oid/forced-update"
# lines after an "ok" rewrite the line of the ref, and several "ok" lines for
# one ref print one line each, as git push prints them. Pushed to git
# receive-pack and to packwire receive-pack, SHA-1 and SHA-256; the lines are
# compared with git push's.
. "$(dirname "$0")/lib.sh"

# the hook answers with the lines of the file "report" in the repository
cat >"$T/proc-receive" <<'HOOK'
#!/usr/bin/env python3
import sys
inp, out = sys.stdin.buffer, sys.stdout.buffer
def read_pkt():
    head = inp.read(4)
    if len(head) < 4:
        return None
    n = int(head, 16)
    return b"" if n == 0 else inp.read(n - 4)
def until_flush():
    while read_pkt():
        pass
def write_pkt(b):
    out.write(b"%04x" % (len(b) + 4) + b)
until_flush()
write_pkt(b"version=1\n")
out.write(b"0000")
out.flush()
until_flush()
for line in open("report", "rb").read().splitlines():
    write_pkt(line + b"\n")
out.write(b"0000")
out.flush()
HOOK
chmod +x "$T/proc-receive"

# "To <url>" and the ref lines of a push's output
ref_lines() { grep -E '^(To | [-+*! =] )' "$1" || true; }

for algo in sha1 sha256; do
	C=$T/c-$algo
	make_repo "$C" "$algo"
	A=$(git -C "$C" rev-parse main~1)
	B=$(git -C "$C" rev-parse main)
	Z=$(git -C "$C" rev-parse main | tr 0-9a-f 0)
	n=0
	while read -r name report; do
		n=$((n + 1))
		for rp in git-receive-pack "$PACKWIRE receive-pack"; do
			S=$T/s-$algo.git
			rm -rf "$S"
			git init -q --bare --object-format="$algo" "$S"
			git -C "$S" config receive.procReceiveRefs refs/for
			cp "$T/proc-receive" "$S/hooks/proc-receive"
			git -C "$C" push -q --receive-pack="$rp" "$S" "$A:refs/heads/main" 2>/dev/null
			printf '%s\n' $report | sed "s/_/ /g; s/=A/$A/; s/=B/$B/; s/=Z/$Z/" >"$S/report"
			git -C "$C" push --receive-pack="$rp" "$S" "HEAD:refs/for/main/topic" \
				>"$T/git-out" 2>&1 || true
			$PACKWIRE -C "$C" push --receive-pack="$rp" "$S" "HEAD:refs/for/main/topic" \
				>"$T/pw-out" 2>&1 || true
			ref_lines "$T/git-out" >"$T/git-lines"
			ref_lines "$T/pw-out" >"$T/pw-lines"
			same_file "$algo $name (${rp%% *}): the lines of git push" "$T/git-lines" "$T/pw-lines"
			cp "$T/pw-lines" "$T/lines-$algo-$name"
		done
	done <<-'CASES'
	plain ok_refs/for/main/topic
	refname ok_refs/for/main/topic option_refname_refs/changes/1
	oids ok_refs/for/main/topic option_refname_refs/heads/main option_old-oid_=A option_new-oid_=B
	forced ok_refs/for/main/topic option_refname_refs/heads/main option_old-oid_=B option_new-oid_=A option_forced-update
	new-tag ok_refs/for/main/topic option_refname_refs/tags/v9 option_old-oid_=Z option_new-oid_=B
	multi ok_refs/for/main/topic option_old-oid_=A option_new-oid_=B ok_refs/for/main/topic option_refname_refs/changes/24/124/1 option_old-oid_=Z option_new-oid_=A ok_refs/for/main/topic option_refname_refs/changes/25/125/1
	ng-then-option ng_refs/for/main/topic_nope option_refname_refs/changes/2
	CASES
	check "$algo: a report per \"ok\" line" test "$(grep -c ' -> ' "$T/lines-$algo-multi")" = 3
	contains "$algo: ... with the refname and the values reported" "$T/lines-$algo-multi" \
		" * [new reference]   HEAD -> refs/changes/24/124/1"
	contains "$algo: forced-update" "$T/lines-$algo-forced" "forced update"
	# a server repeating reports without end: a bounded error
	for i in $(seq 1100); do
		echo "ok refs/for/main/topic"
		echo "option refname refs/changes/$i"
	done >"$S/report"
	check_fails "$algo: 1100 reports for a ref are refused" \
		$PACKWIRE -C "$C" push --receive-pack=git-receive-pack "$S" "HEAD:refs/for/main/topic" \
		>"$T/pw-out" 2>&1
	contains "$algo: ... as a protocol error" "$T/pw-out" "more than 1024 reports"
done
finish
