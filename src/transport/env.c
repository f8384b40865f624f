/* pw_options_from_env: the only file of the library that reads environment
 * variables, and only for a caller that asks (the CLI does; an embedding
 * server need not). Everything else takes these values as options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/env.h"

static const char *env(const char *name)
{
	return getenv(name);
}

static char *join(const char *a, const char *b)
{
	size_t n = strlen(a) + strlen(b) + 1;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s%s", a, b);
	return p;
}

static int env_bool(const char *name)
{
	const char *v = env(name);
	int b = 0;

	return v && !pw_config_parse_bool(v, &b) && b;
}

static int config_pairs(struct pw_env_options *o, struct pw_error *err)
{
	const char *count = env("GIT_CONFIG_COUNT");
	char *end, name[64];
	long i, n;

	if (!count || !*count)
		return 0;
	n = strtol(count, &end, 10);
	if (*end || n < 0 || n > 100000)
		return pw_error_set(err, PW_EINVAL, "bogus count in GIT_CONFIG_COUNT");
	if (!n)
		return 0;
	if (!(o->pairs_ = calloc(2 * (size_t)n, sizeof(*o->pairs_))))
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "GIT_CONFIG_KEY_%ld", i);
		o->pairs_[i] = env(name);
		snprintf(name, sizeof(name), "GIT_CONFIG_VALUE_%ld", i);
		o->pairs_[n + i] = env(name);
	}
	o->config.keys = o->pairs_;
	o->config.values = o->pairs_ + n;
	o->config.nr_pairs = (size_t)n;
	return 0;
}

int pw_options_from_env(struct pw_env_options *o, struct pw_error *err)
{
	const char *home = env("HOME"), *xdg = env("XDG_CONFIG_HOME"), *v;

	memset(o, 0, sizeof(*o));
	if (!env_bool("GIT_CONFIG_NOSYSTEM"))
		o->config.system = (v = env("GIT_CONFIG_SYSTEM")) ? v : "/etc/gitconfig";
	if ((v = env("GIT_CONFIG_GLOBAL"))) {
		o->config.global = v;
	} else {
		if (xdg && *xdg)
			o->paths_[0] = join(xdg, "/git/config");
		else if (home && *home)
			o->paths_[0] = join(home, "/.config/git/config");
		if (home && *home)
			o->paths_[1] = join(home, "/.gitconfig");
		if (((xdg && *xdg) || (home && *home)) && !o->paths_[0])
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		if (home && *home && !o->paths_[1])
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		o->config.xdg = o->paths_[0];
		o->config.global = o->paths_[1];
	}
	o->config.parameters = env("GIT_CONFIG_PARAMETERS");
	o->ceiling_dirs = env("GIT_CEILING_DIRECTORIES");
	o->git_dir = env("GIT_DIR");
	o->work_tree = env("GIT_WORK_TREE");
	o->ssh.command = env("GIT_SSH_COMMAND");
	o->ssh.program = env("GIT_SSH");
	o->ssh.variant = env("GIT_SSH_VARIANT");
	o->pwd = env("PWD");
	o->http.ssl_no_verify = env("GIT_SSL_NO_VERIFY");
	o->http.ssl_cainfo = env("GIT_SSL_CAINFO");
	o->http.user_agent = env("GIT_HTTP_USER_AGENT");
	o->http.low_speed_limit = env("GIT_HTTP_LOW_SPEED_LIMIT");
	o->http.low_speed_time = env("GIT_HTTP_LOW_SPEED_TIME");
	o->http.terminal_prompt = env("GIT_TERMINAL_PROMPT");
	o->http.askpass = env("GIT_ASKPASS");
	o->http.ssh_askpass = env("SSH_ASKPASS");
	/* as curl reads them: http_proxy only in lower case */
	o->http.http_proxy = env("http_proxy");
	o->http.https_proxy = (v = env("HTTPS_PROXY")) ? v : env("https_proxy");
	o->http.all_proxy = (v = env("ALL_PROXY")) ? v : env("all_proxy");
	o->http.no_proxy = (v = env("NO_PROXY")) ? v : env("no_proxy");
	o->http.smart_http = env("GIT_SMART_HTTP");
	o->http.language = env("LANGUAGE");
	o->http.lc_all = env("LC_ALL");
	o->http.lc_messages = env("LC_MESSAGES");
	o->http.lang = env("LANG");
	o->http.trace_curl_no_data = env("GIT_TRACE_CURL_NO_DATA");
	o->http.curl_verbose = env("GIT_CURL_VERBOSE");
	o->http.trace_redact = env("GIT_TRACE_REDACT");
	o->protocol.allow_protocol = env("GIT_ALLOW_PROTOCOL");
	o->protocol.protocol_from_user = env("GIT_PROTOCOL_FROM_USER");
	o->protocol.exec_path = env("GIT_EXEC_PATH");
	if (home && *home) {
		if (!(o->paths_[3] = join(home, "/.netrc")))
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		o->http.netrc = o->paths_[3];
	}
	return config_pairs(o, err);
}

void pw_env_options_free(struct pw_env_options *o)
{
	size_t i;

	for (i = 0; i < sizeof(o->paths_) / sizeof(o->paths_[0]); i++)
		free(o->paths_[i]);
	free(o->pairs_);
	memset(o, 0, sizeof(*o));
}
