/*
 * bench/rusage OUT CMD [ARG...]: runs CMD and writes "<wall> <user> <sys>
 * <peak KiB>" of it and its children to OUT, then exits with CMD's status.
 *
 * The benches' servers run for a few tens of milliseconds, so what measures
 * them must cost next to nothing itself. A forked Python running
 * /usr/bin/time added about 17 ms of CPU to every run on the 2-core VM
 * (the fork's copied page tables, then two execs), the same for git and
 * packwire, which pulled every ratio towards 1. Spawned (vfork and exec)
 * from this small process, the child costs nothing before its exec, and
 * the peak RSS it inherits until then is this process's, about 1 MiB, not
 * a Python's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double seconds(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;
	FILE *out;

	if (argc < 3) {
		fprintf(stderr, "usage: rusage OUT CMD [ARG...]\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errno = posix_spawnp(&pid, argv[2], NULL, NULL, argv + 2, environ);
	if (errno) {
		fprintf(stderr, "rusage: cannot run %s: %s\n", argv[2], strerror(errno));
		return 127;
	}
	if (wait4(pid, &status, 0, &ru) < 0) {
		perror("rusage: wait4");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	out = fopen(argv[1], "w");
	if (!out) {
		perror(argv[1]);
		return 2;
	}
	fprintf(out, "%.4f %.4f %.4f %ld\n",
	        (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
	        seconds(ru.ru_utime), seconds(ru.ru_stime), ru.ru_maxrss);
	if (fclose(out) != 0) {
		perror(argv[1]);
		return 2;
	}
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + WTERMSIG(status);
}
