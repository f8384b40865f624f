# shellcheck shell=bash
# bench/lib.sh: what the server benches share (sourced after
# tests/interop/lib.sh, which sets $T).

# bench/rusage.c, compiled into $T/rusage: `rusage OUT CMD...` runs CMD and
# writes "<wall> <user> <sys> <peak KiB>" of it and its children to OUT. It
# costs next to nothing itself, which matters for servers that run a few
# tens of milliseconds (a Python or /usr/bin/time in between adds its own
# fork and exec to the measured process).
bench_rusage() {
	cc -O2 -o "$T/rusage" "$(dirname "${BASH_SOURCE[0]}")/rusage.c" ||
		{ echo "bench: cannot compile bench/rusage.c (apt-get install gcc)" >&2; exit 1; }
}

# median FILE: the median of the runs in FILE (a run per line, four fields),
# field by field
median() {
	awk '{ for (f = 1; f <= 4; f++) v[f, NR] = $f }
		END { m = int((NR + 1) / 2)
			for (f = 1; f <= 4; f++) {
				for (i = 1; i <= NR; i++) a[i] = v[f, i]
				for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++)
					if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
				printf "%s%s", a[m], f < 4 ? " " : "\n"
			} }' "$1"
}

# median1 FILE: the median of a file of one number per line
median1() {
	sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

# row WIDTH LABEL git(wall cpu rss size) pw(wall cpu rss size): one line of
# the server benches' table, ratios packwire/git
row() {
	awk -v w="$1" -v l="$2" -v gt="$3" -v gc="$4" -v gm="$5" -v gs="$6" -v pt="$7" -v pc="$8" -v pm="$9" -v ps="${10}" 'BEGIN{
		printf "%-*s git %6.3fs cpu %6.3fs %4.0fMiB %9d B | packwire %6.3fs cpu %6.3fs %4.0fMiB %9d B | time x%.2f cpu x%.2f rss x%.2f size x%.3f\n",
			w, l, gt, gc, gm/1024, gs, pt, pc, pm/1024, ps, pt/gt, (gc > 0 ? pc/gc : 0), pm/gm, ps/gs }'
}
