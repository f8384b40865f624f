/* Git config files: parsing ([section "sub"] key = value), typed getters and
 * an in-place writer that edits one key under a lock. */
#ifndef PACKWIRE_CONFIG_H
#define PACKWIRE_CONFIG_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/error.h"

/*
 * A struct pw_config is a parsed set of entries, owned by whoever created it
 * (pw_config_parse / _load_file / _new) and freed with pw_config_free
 * (NULL is fine); entries, keys and values returned by the getters are
 * borrowed from it and stay valid until it is freed or parsed into again.
 * The set a repository holds (pw_repo_config) is the repository's: do not
 * free it. Errors: the message goes to err when one is taken (err may be
 * NULL); PW_ENOMEM, PW_EINVAL for syntax or bad values, PW_ENOTFOUND for a
 * missing key or file, PW_EIO for file errors. Threads: reading one set from
 * several threads at once is safe (the getters only read); parsing into it
 * or freeing it is not. The file editors are safe between threads and
 * processes on different files; on the same file one of them gets
 * PW_ELOCKED.
 */

struct pw_config;

/* One "key = value" line. key is canonical: "section.name" or
 * "section.subsection.name" with section and name lower-cased and the
 * subsection kept as written. value is NULL for a key written without '='
 * (Git reads that as boolean true). */
struct pw_config_entry {
	const char *key;
	const char *value;
	const char *origin; /* file name or the origin given to pw_config_parse */
	int line;           /* 1-based line where the key starts */
};

/* Parse a config text into a new set (*out). On a syntax error nothing is
 * returned and err says "bad config line N in file <origin>". [include] and
 * [includeIf] sections are NOT followed: they are kept as ordinary keys. */
PW_API int pw_config_parse(struct pw_config **out, const char *data, size_t len, const char *origin,
                           struct pw_error *err);
/* Same, appending to an existing set (later entries win for single gets). */
PW_API int pw_config_parse_into(struct pw_config *cfg, const char *data, size_t len,
                                const char *origin, struct pw_error *err);
/* Read and parse a file. PW_ENOTFOUND when it does not exist. */
PW_API int pw_config_load_file(struct pw_config **out, const char *path, struct pw_error *err);
/*
 * The layers of Git's configuration, lowest first: system, global (the XDG
 * file, then ~/.gitconfig), the repository's file, then command-line
 * settings. The caller says where each comes from; the library reads no
 * environment variable (pw_options_from_env in packwire/env.h fills this
 * from GIT_CONFIG_*, HOME and XDG_CONFIG_HOME as Git does). Every member
 * may be NULL / 0: that layer is absent. Strings are borrowed.
 */
struct pw_config_layers {
	const char *system; /* "/etc/gitconfig" */
	const char *xdg;    /* "$XDG_CONFIG_HOME/git/config" or "~/.config/git/config" */
	const char *global; /* "~/.gitconfig" (or $GIT_CONFIG_GLOBAL) */
	/* command-line settings in the form of GIT_CONFIG_PARAMETERS, as
	 * written by `git -c` ('key=value' words, shell-quoted; a bare 'key'
	 * is true) */
	const char *parameters;
	/* GIT_CONFIG_COUNT pairs: keys[i] = values[i], after parameters */
	const char *const *keys;
	const char *const *values;
	size_t nr_pairs;
};

/* Load every layer into a new set (*out): the files that exist (a missing
 * file is no error; a syntax error is), repo_config (may be NULL, e.g.
 * outside a repository) between global and the command line, then the
 * command-line settings, which win. PW_EINVAL "bogus format in
 * GIT_CONFIG_PARAMETERS" / "bogus config key K" for malformed settings. */
PW_API int pw_config_load_layers(struct pw_config **out, const struct pw_config_layers *layers,
                                 const char *repo_config, struct pw_error *err);
/* Append only the command-line settings of layers (NULL is fine). */
PW_API int pw_config_apply_overrides(struct pw_config *cfg, const struct pw_config_layers *layers,
                                     struct pw_error *err);
/* Quote one "key=value" (or bare "key") setting and append it to params (a
 * GIT_CONFIG_PARAMETERS value; may be NULL or ""): the malloc'd result is
 * what a child process should get, as `git -c` passes it on. NULL on ENOMEM. */
PW_API char *pw_config_parameters_add(const char *params, const char *kv);
/* An empty set (to fill with pw_config_parse_into). */
/* (Returns 0 or PW_ENOMEM.) */
PW_API int pw_config_new(struct pw_config **out);
PW_API void pw_config_free(struct pw_config *cfg);

/* Getters take keys in any case ("Core.Bare", "remote.origin.URL"); the
 * subsection part stays case-sensitive. The last value wins. All return 0,
 * PW_ENOTFOUND when the key is absent, or PW_EINVAL (message in err, which
 * may be NULL) when the value cannot be read as the wanted type.
 * Returned strings are borrowed from cfg. */
PW_API int pw_config_get_string(const struct pw_config *cfg, const char *key, const char **out,
                                struct pw_error *err);
/* The entry itself (value may be NULL); NULL when absent. */
PW_API const struct pw_config_entry *pw_config_get_entry(const struct pw_config *cfg,
                                                         const char *key);
PW_API int pw_config_get_bool(const struct pw_config *cfg, const char *key, int *out,
                              struct pw_error *err);
/* Integers with optional k/m/g suffix (x1024^n); out-of-range is PW_EINVAL. */
PW_API int pw_config_get_int64(const struct pw_config *cfg, const char *key, int64_t *out,
                               struct pw_error *err);
PW_API int pw_config_get_int(const struct pw_config *cfg, const char *key, int *out,
                             struct pw_error *err);

/* Call fn for every value of key, in file order; a non-zero return stops and
 * is returned. Returns PW_ENOTFOUND when there is none. */
PW_API int pw_config_get_all(const struct pw_config *cfg, const char *key,
                             int (*fn)(const struct pw_config_entry *e, void *data), void *data);
/* Call fn for every entry in file order (e.g. to scan "extensions.*"). */
PW_API int pw_config_foreach(const struct pw_config *cfg,
                             int (*fn)(const struct pw_config_entry *e, void *data), void *data);
PW_API size_t pw_config_count(const struct pw_config *cfg);
PW_API const struct pw_config_entry *pw_config_at(const struct pw_config *cfg, size_t i);

/* Value parsers, as Git reads them. bool: true/yes/on/1.., false/no/off/0/""
 * (NULL value = true; other integers = non-zero). 0 or PW_EINVAL. */
PW_API int pw_config_parse_bool(const char *value, int *out);
PW_API int pw_config_parse_int64(const char *value, int64_t *out);

/* Canonicalize a key as the parser does ("Remote.x.URL" -> "remote.x.url");
 * malloc'd, NULL when the key is malformed (no section or no name) or on ENOMEM. */
/* The caller frees the result with free(). */
PW_API char *pw_config_canonical_key(const char *key);

/* Edit the config file at path under path.lock: set key to value (replacing
 * every existing value of key, keeping the position of the last one), or
 * add it to the last matching section, or append a new section. value ==
 * NULL removes the key. The file is created when missing. */
/* PW_ELOCKED when path.lock exists, PW_EINVAL for a malformed key,
 * PW_EIO when the file cannot be read or written; the message is in err. */
PW_API int pw_config_set_in_file(const char *path, const char *key, const char *value,
                                 struct pw_error *err);
/* Like set, but adds one more value of a multi-valued key ("git config --add"). */
PW_API int pw_config_add_in_file(const char *path, const char *key, const char *value,
                                 struct pw_error *err);

#endif
