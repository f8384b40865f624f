#!/usr/bin/env bash
# The interop harness itself (lib.sh): a test passes only when a check ran
# and none failed, one that only skipped is Skipped (77), one that checked
# nothing fails; the real-history part of a script runs as its own test,
# Skipped without ../shared/data; data_repo outside require_data/real_part
# aborts. Each case is a small script run as CTest would run it.
set -u
: "${PACKWIRE:?PACKWIRE must point at the packwire binary}"
: "${PW_BUILD:?PW_BUILD must point at the build tree}"
lib=$(cd "$(dirname "$0")" && pwd)/lib.sh
dir=$PW_BUILD/tmp/lib-selftest
rm -rf "$dir"
mkdir -p "$dir/empty-shared"
fails=0

# expect WANT_RC NAME [ARG] <<BODY: run a t-NAME.sh made of BODY after lib.sh
expect() {
	local want=$1 name=$2 arg=${3:-} rc
	{ echo ". '$lib'"; cat; } >"$dir/t-$name.sh"
	PW_SHARED=${SHARED:-$dir/empty-shared} bash "$dir/t-$name.sh" $arg >"$dir/$name.out" 2>&1
	rc=$?
	if [ "$rc" = "$want" ]; then
		echo "ok - $name${arg:+ $arg}: exit $rc"
	else
		echo "not ok - $name${arg:+ $arg}: exit $rc, want $want"
		sed 's/^/    /' "$dir/$name.out"
		fails=$((fails + 1))
	fi
}

expect 1 no-checks <<'T'
finish
T
grep -q 'no check ran' "$dir/no-checks.out" || { echo "not ok - no-checks: no message"; fails=$((fails + 1)); }
expect 0 one-check <<'T'
check "true is true" true
finish
T
expect 1 one-failure <<'T'
check "true is true" true
check "false is true" false
finish
T
expect 77 only-skips <<'T'
skip "nothing to do here"
finish
T
expect 0 check-and-skip <<'T'
check "true is true" true
skip "one part did not apply"
finish
T
# a script with a real-history part, without the data
real_script() {
	cat <<'T'
if real_part "the real part"; then
	check "real check" true
	finish
fi
check "main check" true
finish
T
}
real_script | expect 0 parts
real_script | expect 77 parts real
grep -q '^skipped: the real part: .* not available' "$dir/parts.out" ||
	{ echo "not ok - parts real: no skip message"; fails=$((fails + 1)); }
# with data present (a stand-in), the real part runs, and only it
mkdir -p "$dir/fake-shared/data"
: >"$dir/fake-shared/data/git-v1.5.0.bundle"
: >"$dir/fake-shared/data/git-v2.0.0.bundle"
printf '#!/bin/sh\nexit 1\n' >"$dir/fake-shared/data/make-repo"
chmod +x "$dir/fake-shared/data/make-repo"
real_script | SHARED=$dir/fake-shared expect 0 parts real
{ grep -q 'ok real check' "$dir/parts.out" && ! grep -q 'main check' "$dir/parts.out"; } ||
	{ echo "not ok - parts real: ran the wrong part"; sed 's/^/    /' "$dir/parts.out"; fails=$((fails + 1)); }
real_script | PW_SKIP_DATA=1 SHARED=$dir/fake-shared expect 77 parts real
# run as the real part, a script without a real part fails
expect 1 no-real-part real <<'T'
check "main check" true
finish
T
# data_repo only inside require_data / real_part
SHARED=$dir/fake-shared expect 1 data-outside <<'T'
r=$(data_repo small sha1)
check "never reached" true
finish
T
grep -q 'data_repo outside require_data' "$dir/data-outside.out" ||
	{ echo "not ok - data-outside: no message"; fails=$((fails + 1)); }

rm -rf "$dir"
if [ "$fails" -ne 0 ]; then
	echo "lib-selftest: $fails failed"
	exit 1
fi
echo "lib-selftest: ok"
