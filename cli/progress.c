/* The progress printer of rev-list, pack-objects and push: "Title: 42%
 * (n/N)" on stderr, or phase timings with PW_TRACE_PHASES for benchmarks. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "progress.h"

void pw_cli_progress(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	(void)data;
	if (getenv("PW_TRACE_PHASES")) { /* phase timings for benchmarking */
		static struct timespec last;
		struct timespec now;

		if (!done)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (last.tv_sec)
			fprintf(stderr, "%s: %.3f s\n", title,
			        (double)(now.tv_sec - last.tv_sec) +
			                (double)(now.tv_nsec - last.tv_nsec) / 1e9);
		else
			fprintf(stderr, "%s: done\n", title);
		last = now;
		return;
	}
	if (total)
		fprintf(stderr, "\r%s: %3u%% (%llu/%llu)%s", title,
		        (unsigned)(total ? n * 100 / total : 100), (unsigned long long)n,
		        (unsigned long long)total, done ? ", done.\n" : "");
	else
		fprintf(stderr, "\r%s: %llu%s", title, (unsigned long long)n,
		        done ? ", done.\n" : "");
}
