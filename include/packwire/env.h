/* The one place libpackwire looks at the process environment, and only when
 * the caller asks: pw_options_from_env reads the GIT_* variables a Git
 * command honours and returns them as the options the library's calls take
 * (config layers, discovery ceilings, ssh command, the logical working
 * directory). A program that serves many repositories simply does not call
 * it, and is not steered by its environment. */
#ifndef PACKWIRE_ENV_H
#define PACKWIRE_ENV_H

#include "packwire/export.h"

#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/transport.h"

struct pw_env_options {
	/* GIT_CONFIG_NOSYSTEM / GIT_CONFIG_SYSTEM (else /etc/gitconfig),
	 * GIT_CONFIG_GLOBAL (else $XDG_CONFIG_HOME/git/config or
	 * ~/.config/git/config, and ~/.gitconfig), GIT_CONFIG_PARAMETERS,
	 * GIT_CONFIG_COUNT with GIT_CONFIG_KEY_<n> / GIT_CONFIG_VALUE_<n> */
	struct pw_config_layers config;
	const char *ceiling_dirs; /* GIT_CEILING_DIRECTORIES */
	const char *git_dir;      /* GIT_DIR */
	const char *work_tree;    /* GIT_WORK_TREE */
	struct pw_ssh_opts ssh;   /* GIT_SSH_COMMAND, GIT_SSH, GIT_SSH_VARIANT */
	const char *pwd;          /* PWD: the working directory as the user sees it */
	struct pw_http_env http;  /* GIT_SSL_*, GIT_HTTP_*, curl's proxy variables, ~/.netrc */
	/* GIT_ALLOW_PROTOCOL, GIT_PROTOCOL_FROM_USER, GIT_EXEC_PATH */
	struct pw_protocol_env protocol;
	/* private: storage of the strings above */
	char *paths_[4];
	const char **pairs_;
};

/* Fill *out from the environment (unset variables give NULL). The strings
 * point into the environment or into *out: valid until pw_env_options_free
 * and as long as the variables are not changed. PW_EINVAL "bogus count in
 * GIT_CONFIG_COUNT"; PW_ENOMEM. *out needs pw_env_options_free even then.
 * Threads: it reads the process environment, so no other thread may change
 * that environment (setenv, putenv) meanwhile; the filled struct is then
 * only read by the library and may be shared by threads until freed. */
PW_API int pw_options_from_env(struct pw_env_options *out, struct pw_error *err);
PW_API void pw_env_options_free(struct pw_env_options *o);

#endif
