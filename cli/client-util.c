/* Helpers shared by the commands: the environment as the library's options
 * (read once, here, through pw_options_from_env), "-c key=value" overrides
 * given before the subcommand, config look-ups through the library's
 * layering, the protocol version to ask for, and the rendering of what the
 * library reports (progress, warnings, the server's band-2 text). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client-util.h"
#include "cmds.h"
#include "packwire/env.h"
#include "packwire/packwire.h"
#include "packwire/pkt.h"
#include "trace-curl.h"

static struct pw_env_options env_opts;
static struct pw_repo_opts repo_opts;
static int env_loaded;
static struct pw_config *no_repo_config; /* the layers without a repository */

const struct pw_env_options *pw_cli_env(void)
{
	struct pw_error err = {0};

	if (env_loaded)
		return &env_opts;
	if (pw_options_from_env(&env_opts, &err)) {
		pw_cli_fatal("%s", err.msg);
		exit(PW_EXIT_FATAL);
	}
	env_loaded = 1;
	pw_cli_trace_curl_setup(&env_opts.http);
	repo_opts.config = &env_opts.config;
	repo_opts.ceiling_dirs = env_opts.ceiling_dirs;
	repo_opts.work_tree = env_opts.work_tree;
	return &env_opts;
}

const struct pw_repo_opts *pw_cli_repo_opts(void)
{
	pw_cli_env();
	return &repo_opts;
}

/* Append 'kv' to GIT_CONFIG_PARAMETERS, as git -c does: the library gets it
 * through pw_cli_env(), the processes packwire starts inherit it. */
int pw_cli_config_override(const char *kv)
{
	const char *eq = strchr(kv, '=');
	char *key, *canon, *v;
	int rc;

	key = eq ? strndup(kv, (size_t)(eq - kv)) : strdup(kv);
	if (!key)
		return -1;
	canon = pw_config_canonical_key(key);
	free(key);
	if (!canon)
		return -1;
	free(canon);
	if (!(v = pw_config_parameters_add(getenv("GIT_CONFIG_PARAMETERS"), kv)))
		return -1;
	rc = setenv("GIT_CONFIG_PARAMETERS", v, 1);
	free(v);
	return rc ? -1 : 0;
}

/* The config a command sees: the repository's handle has every layer;
 * without a repository, system, global and -c. */
static const struct pw_config *config_of(const struct pw_repo *repo)
{
	struct pw_error err = {0};

	if (repo)
		return pw_repo_config(repo);
	if (!no_repo_config &&
	    pw_config_load_layers(&no_repo_config, &pw_cli_env()->config, NULL, &err)) {
		pw_cli_fatal("%s", err.msg);
		exit(PW_EXIT_FATAL);
	}
	return no_repo_config;
}

const struct pw_config *pw_cli_config(const struct pw_repo *repo)
{
	return config_of(repo);
}

const char *pw_cli_config_get(const struct pw_repo *repo, const char *key, int *found)
{
	const struct pw_config_entry *e = pw_config_get_entry(config_of(repo), key);

	*found = e != NULL;
	return e ? e->value : NULL;
}

/* Is this entry one of the user's files (system, global)? Their
 * protocol.version is read leniently, as before the layering. */
static int from_user_files(const struct pw_config_entry *e)
{
	const struct pw_config_layers *l = &pw_cli_env()->config;

	return (l->system && !strcmp(e->origin, l->system)) ||
	       (l->xdg && !strcmp(e->origin, l->xdg)) ||
	       (l->global && !strcmp(e->origin, l->global));
}

/* protocol.version from -c, the repository, or the global config; default 2. */
int pw_cli_protocol_version(const struct pw_repo *repo)
{
	const struct pw_config_entry *e = pw_config_get_entry(config_of(repo), "protocol.version");
	const char *v = e ? e->value : NULL;

	if (!e)
		return 2;
	if (from_user_files(e)) {
		int n = v ? atoi(v) : 2;

		return n >= 0 && n <= 2 ? n : 2;
	}
	if (v && (!strcmp(v, "0") || !strcmp(v, "1") || !strcmp(v, "2")))
		return v[0] - '0';
	fprintf(stderr, "warning: unknown value for protocol.version: %s\n", v ? v : "");
	return 2;
}

void pw_cli_client_signals(void)
{
	/* a server that goes away must be an error code, not a dead client */
	signal(SIGPIPE, SIG_IGN);
}

/* ---- rendering what the library reports -------------------------------- */

/* fetch and clone: "Receiving objects:  42% (n/N)" rewritten in place with
 * \r, ", done." on the last count, the line ended when the next meter
 * starts or when the library says the meters are over (title NULL) */
static struct {
	char title[64];
	int open;
} meter;

static void fetch_progress(void *data, const char *title, uint64_t n, uint64_t total, int done)
{
	int same;

	(void)data;
	if (!title) {
		if (meter.open)
			fputc('\n', stderr);
		meter.open = 0;
		meter.title[0] = '\0';
		return;
	}
	same = meter.open && !strcmp(meter.title, title);
	if (!same && meter.open)
		fputc('\n', stderr);
	snprintf(meter.title, sizeof(meter.title), "%s", title);
	meter.open = 1;
	fprintf(stderr, "%s%s: %3u%% (%llu/%llu)%s", same ? "\r" : "", title,
	        total ? (unsigned)(n * 100 / total) : 100, (unsigned long long)n,
	        (unsigned long long)total, done ? ", done." : "");
}

/* the server's band 2, as git shows it: "remote: " before every line and
 * "\033[K" (a terminal) or 8 spaces after it */
static struct pw_progress_relay relay;
static int relay_on;

static void remote_text(void *data, const char *text, size_t len)
{
	(void)data;
	if (!relay_on) {
		pw_progress_relay_init(&relay, isatty(2) ? "\033[K" : "        ");
		relay_on = 1;
	}
	if (text) {
		pw_progress_relay_feed(&relay, text, len);
		pw_progress_relay_flush_fd(&relay, 2, NULL);
		return;
	}
	pw_progress_relay_finish(&relay);
	pw_progress_relay_flush_fd(&relay, 2, NULL);
	pw_progress_relay_free(&relay);
	relay_on = 0;
}

static void warning(void *data, const char *msg)
{
	(void)data;
	fprintf(stderr, "warning: %s\n", msg);
}

static void error_line(void *data, const char *msg)
{
	(void)data;
	fprintf(stderr, "error: %s\n", msg);
}

void pw_cli_report(struct pw_report *r, pw_progress_fn progress)
{
	memset(r, 0, sizeof(*r));
	r->progress = progress ? progress : fetch_progress;
	r->warning = warning;
	r->error = error_line;
	r->remote = remote_text;
}

struct pw_pack_cache *pw_cli_pack_cache_from_config(void)
{
	struct pw_pack_cache_opts o;
	struct pw_pack_cache *c = NULL;
	struct pw_error err;
	const char *max;
	int64_t n;
	int found;

	/* system, global and -c only: a repository's own file could make
	 * whoever serves it write (and evict) files anywhere */
	pw_pack_cache_opts_init(&o);
	o.dir = pw_cli_config_get(NULL, "uploadpack.packcache", &found);
	if (!o.dir || !*o.dir)
		return NULL;
	max = pw_cli_config_get(NULL, "uploadpack.packcachemax", &found);
	if (max && *max) {
		if (pw_config_parse_int64(max, &n) || n < 0) {
			fprintf(stderr,
			        "warning: bad uploadpack.packCacheMax '%s'; serving without the "
			        "pack "
			        "cache\n",
			        max);
			return NULL;
		}
		o.max_bytes = (uint64_t)n;
	}
	if (pw_pack_cache_open(&c, &o, &err)) {
		fprintf(stderr, "warning: %s; serving without the pack cache\n", err.msg);
		return NULL;
	}
	return c;
}
