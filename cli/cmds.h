/* One entry point per subcommand; each lives in cmd-<name>.c. They return the
 * process exit status (0, 1 for "not found"-style answers, 128 for fatal errors,
 * 129 for usage errors), as Git does. */
#ifndef PW_CLI_CMDS_H
#define PW_CLI_CMDS_H

#include "packwire/error.h"

#define PW_EXIT_FATAL 128
#define PW_EXIT_USAGE 129

int cmd_version(int argc, char **argv);
int cmd_hash_object(int argc, char **argv);
int cmd_hash_file(int argc, char **argv);
int cmd_index_pack(int argc, char **argv);
int cmd_verify_pack(int argc, char **argv);
int cmd_cat_file(int argc, char **argv);
int cmd_ls_remote(int argc, char **argv);
int cmd_clone(int argc, char **argv);
int cmd_fetch(int argc, char **argv);
int cmd_show_index(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_upload_pack(int argc, char **argv);
int cmd_rev_parse(int argc, char **argv);
int cmd_show_ref(int argc, char **argv);
int cmd_update_ref(int argc, char **argv);
int cmd_update_server_info(int argc, char **argv);
int cmd_receive_pack(int argc, char **argv);
int cmd_push(int argc, char **argv);
int cmd_pack_objects(int argc, char **argv);
int cmd_repack(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_rev_list(int argc, char **argv);
int cmd_bundle(int argc, char **argv);
int cmd_daemon(int argc, char **argv);
int cmd_http_backend(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_remote_http(int argc, char **argv);
int cmd_compat(int argc, char **argv);

struct pw_repo;
struct pw_oid;
/* Open the repository of the current directory (or $GIT_DIR); on failure
 * prints Git's fatal message and returns 128. */
int pw_cli_open_repo(struct pw_repo **out);
/* Options for opening a repository as git would in this environment: config
 * layers, GIT_CEILING_DIRECTORIES, GIT_WORK_TREE (client-util.c). */
const struct pw_repo_opts *pw_cli_repo_opts(void);
/* The same, but outside a repository 0 with *out = NULL (required = 0). */
int pw_cli_find_repo(struct pw_repo **out, int required);
/* A full hex oid, or a ref name in Git's DWIM order (HEAD, main, tags,
 * remotes); *full_name (optional, malloc'd) gets the ref it matched.
 * PW_ENOTFOUND when nothing matches. */
int pw_cli_resolve_rev(struct pw_repo *repo, const char *arg, struct pw_oid *out, char **full_name);

/* compatObjectFormat (compat-util.c): the compat algorithm (the extension,
 * else the other one); a full hex id of it mapped to the storage id, a
 * storage id mapped to it, and an object's content translated into it.
 * PW_ENOTFOUND when the map has no entry. */
struct pw_buf;
struct pw_hash_algo;
const struct pw_hash_algo *pw_cli_compat_algo(struct pw_repo *repo);
int pw_cli_compat_resolve(struct pw_repo *repo, const char *arg, struct pw_oid *out);
/* The stored view (cmd-compat.c): whether to write it (opt 1/0, -1: the
 * config compat.viewPack, else whether one exists), and writing it. */
int pw_cli_compat_view_wanted(struct pw_repo *repo, int opt);
struct pw_compat_lock;
int pw_cli_compat_view_write(struct pw_repo *repo, const struct pw_hash_algo *compat,
                             struct pw_compat_lock *lock, int quiet);
void pw_cli_compat_locked_hook(void);
/* --submodule=<path>=<repo> into *s (made on first use); then what repo's
 * gitlinks are mapped through after them (pw_compat_submodules_for_repo:
 * its compat.submodule.<path>.repository config, its .gitmodules URLs
 * under base, NULL: the directory holding it). 0, or the exit code after
 * the message. */
struct pw_compat_submodules;
int pw_cli_submodule_opt(struct pw_compat_submodules **s, const char *arg);
int pw_cli_submodules_repo(struct pw_compat_submodules **s, struct pw_repo *repo, const char *base);
int pw_cli_compat_map_oid(struct pw_repo *repo, const struct pw_oid *storage, struct pw_oid *out);
int pw_cli_compat_convert(struct pw_repo *repo, int type, const struct pw_buf *in,
                          struct pw_buf *out, struct pw_error *err);

/* "warning: <msg>" on stderr: the library's warning callbacks. */
void pw_cli_warning_cb(void *data, const char *msg);

/* "fatal: <msg>" on stderr; returns 128. */
int pw_cli_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "error: <msg>" on stderr; returns 1. */
int pw_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "usage: <text>" on stderr (stdout for "packwire <cmd> -h"); returns 129. */
int pw_cli_usage(const char *usage);
/* An option the command does not know: git's "error: unknown option `name'"
 * (or "unknown switch `c'" for a single dash), then the usage; returns 129.
 * Arguments that are not options (and -h) get the usage alone. */
int pw_cli_unknown_option(const char *arg, const char *usage);
/* An option with a value, as "--name=V", "--name V" or (shortname, may be
 * NULL) "-s V": 1 and *val set when argv[*i] is one (*i moves past the value),
 * else 0. */
int pw_cli_opt_value(int argc, char **argv, int *i, const char *name, const char *shortname,
                     const char **val);
/* Is stderr a terminal (for progress), and was --quiet not given. */
int pw_cli_progress_wanted(int quiet);

#endif
