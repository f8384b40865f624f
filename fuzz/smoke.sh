#!/usr/bin/env bash
# fuzz/smoke.sh BUILD_DIR [SECONDS]: run every libFuzzer target built in
# BUILD_DIR (make fuzz) for SECONDS each (FUZZ_SECONDS, default 30), one after
# the other, from a scratch copy of its corpus so new inputs stay out of the
# repository. Fails on any crash, leak, timeout or out-of-memory (2 GB RSS, and
# no single allocation above it). Reproducers are kept in BUILD_DIR/fuzz-artifacts.
set -euo pipefail
build=${1:?usage: fuzz/smoke.sh BUILD_DIR [SECONDS]}
secs=${2:-${FUZZ_SECONDS:-30}}
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$build" && pwd)
art=$build/fuzz-artifacts
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pw-fuzz-smoke.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$art"

failed=() n=0
for corpus in "$src"/corpus/fuzz-*; do
	t=$(basename "$corpus")
	bin=$build/$t
	if [ ! -x "$bin" ]; then
		echo "fuzz-smoke: $t is not built in $build (make fuzz)" >&2
		failed+=("$t(missing)")
		continue
	fi
	mkdir -p "$scratch/$t"
	cp -R "$corpus"/. "$scratch/$t"/
	st=0
	start=$(date +%s)
	(cd "$scratch" && "$bin" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
		-timeout=25 -print_final_stats=1 -artifact_prefix="$art/$t-" "$scratch/$t" \
		>"$scratch/$t.log" 2>&1) || st=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$t.log" | tail -1)
	n=$((n + 1))
	if [ "$st" -ne 0 ]; then
		failed+=("$t")
		echo "FAIL $t: exit $st after $(($(date +%s) - start)) s, ${execs:-?} executions"
		grep -E '^==[0-9]+==|^SUMMARY|ERROR: libFuzzer|Test unit written' "$scratch/$t.log" | head -20
		cp "$scratch/$t.log" "$art/$t.log"
	else
		echo "ok   $t: $(($(date +%s) - start)) s, ${execs:-?} executions"
	fi
done
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz-smoke: ${#failed[@]} of $n targets failed: ${failed[*]} (logs and inputs in $art)"
	exit 1
fi
echo "fuzz-smoke: $n targets clean, $secs s each"
