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

int main(int argc, char **argv)
{
	int i, count = 0;

	for (i = 1; i < argc; i++) {
		struct stat st;
		DIR *d;
		struct dirent *de;

		if (stat(argv[i], &st))
			continue;
		if (!S_ISDIR(st.st_mode)) {
			count += run_file(argv[i]) == 0;
			continue;
		}
		d = opendir(argv[i]);
		while (d && (de = readdir(d))) {
			char path[4096];

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			count += run_file(path) == 0;
		}
		if (d)
			closedir(d);
	}
	/* an empty input must be handled too */
	LLVMFuzzerTestOneInput((const uint8_t *)"", 0);
	printf("%d passed, 0 failed\n", count + 1);
	return 0;
}
