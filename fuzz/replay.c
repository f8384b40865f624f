/* Standalone driver: feeds every file of the given folders (or files) to
 * LLVMFuzzerTestOneInput, so the corpora run as ordinary tests under ASan
 * without libFuzzer. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n > 0 ? (size_t)n : 1);
	if (!buf || (n > 0 && fread(buf, 1, (size_t)n, f) != (size_t)n)) {
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

/* Every input of one folder; the number replayed, or -1 after a message. */
static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int count = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open corpus %s\n", dir);
		return -1;
	}
	while ((de = readdir(d))) {
		char path[4096];

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (run_file(path)) {
			fprintf(stderr, "replay: cannot read %s\n", path);
			closedir(d);
			return -1;
		}
		count++;
	}
	closedir(d);
	if (!count)
		fprintf(stderr,
		        "replay: corpus %s is empty (add inputs, or the test proves nothing)\n",
		        dir);
	return count ? count : -1;
}

/* A corpus that is missing or empty fails the test: a replay of nothing
 * would pass while checking nothing. */
int main(int argc, char **argv)
{
	int i, n, count = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s <corpus-dir-or-file>...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: corpus %s is missing\n", argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i])) {
				fprintf(stderr, "replay: cannot read %s\n", argv[i]);
				return 1;
			}
			count++;
			continue;
		}
		if ((n = run_dir(argv[i])) < 0)
			return 1;
		count += n;
	}
	/* an empty input must be handled too */
	LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
	printf("%d passed, 0 failed\n", count + 1);
	return 0;
}
