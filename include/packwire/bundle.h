/* Git bundles (gitformat-bundle): a header (signature, v3 capabilities,
 * prerequisites, references, blank line) followed by a pack. The header
 * parser is pure and bounded (fuzzed); a struct pw_bundle is an open bundle
 * file positioned at its pack; create writes one from revision arguments;
 * unbundle indexes the pack into a repository. clone, fetch and ls-remote
 * take a bundle file as their remote (pw_session_open). */
#ifndef PACKWIRE_BUNDLE_H
#define PACKWIRE_BUNDLE_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/client.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/report.h"

/* Bounds on what a bundle header may make the library read or allocate
 * (docs/limits.md). */
#define PW_BUNDLE_MAX_LINE   65536                /* bytes of one header line, LF included */
#define PW_BUNDLE_MAX_HEADER (256u * 1024 * 1024) /* bytes of the whole header */
#define PW_BUNDLE_MAX_ITEMS  4194304              /* prerequisites + references (2^22) */
#define PW_BUNDLE_MAX_CAPS   64                   /* v3 capability lines */

/* One prerequisite ("-<oid> <comment>") or reference ("<oid> <refname>"). */
struct pw_bundle_ref {
	struct pw_oid oid;
	char *name; /* refname, or the prerequisite's comment ("" when none) */
};

struct pw_bundle_header {
	int version;                     /* 2 or 3 */
	const struct pw_hash_algo *algo; /* @object-format, else from the id length */
	int algo_from_caps;              /* v3 said @object-format */
	char *filter;                    /* v3 @filter=<spec>, else NULL */
	struct pw_bundle_ref *prereqs;
	size_t nr_prereqs;
	struct pw_bundle_ref *refs;
	size_t nr_refs;
	size_t alloc_prereqs, alloc_refs;
};

/* The struct is the caller's; free releases what parse stored. */
PW_API void pw_bundle_header_init(struct pw_bundle_header *h);
PW_API void pw_bundle_header_free(struct pw_bundle_header *h);
/* Does the buffer start with a v2 or v3 signature line? 1 or 0. */
PW_API int pw_bundle_has_signature(const uint8_t *in, size_t len);
/*
 * Parse a whole header from in[0..len): 0 with *used = the bytes up to and
 * including the blank line (the pack starts there), PW_EMORE when the blank
 * line was not reached yet (feed more), PW_ETOOBIG past the limits above,
 * PW_EPROTO for anything malformed: a signature that is not v2/v3, an unknown
 * capability ("unknown capability '<cap>'", as Git), an unknown
 * @object-format, ids of mixed lengths or of the wrong length for the
 * algorithm, a line that is neither prerequisite nor reference. Pure.
 */
PW_API int pw_bundle_header_parse(struct pw_bundle_header *h, const uint8_t *in, size_t len,
                                  size_t *used, struct pw_error *err);
/* Serialise a header (signature, capabilities, prerequisites, refs, blank
 * line). v2 with SHA-256 is refused as Git does ("cannot write bundle
 * version 2 with algorithm sha256"). */
PW_API int pw_bundle_header_write(const struct pw_bundle_header *h, struct pw_buf *out,
                                  struct pw_error *err);

/* ---- bundle files ------------------------------------------------------- */

struct pw_bundle;
struct pw_repo;

/* Open path ("-" = standard input) and read its header: no pack byte is
 * read. PW_ENOTFOUND ("could not open '<path>'"), PW_EPROTO ("'<path>' does
 * not look like a v2 or v3 bundle file", or the parser's messages). Free with
 * pw_bundle_free (NULL is fine). A bundle is used by one thread. */
PW_API int pw_bundle_open(struct pw_bundle **out, const char *path, struct pw_error *err);
PW_API void pw_bundle_free(struct pw_bundle *b);
/* Borrowed, valid until pw_bundle_free. */
PW_API const struct pw_bundle_header *pw_bundle_get_header(const struct pw_bundle *b);
PW_API const char *pw_bundle_path(const struct pw_bundle *b);
/* May a repository of `local` read this bundle? PW_EMISMATCH "bundle '<p>'
 * uses sha256, but the repository uses sha1" otherwise. */
PW_API int pw_bundle_check_algo(const struct pw_bundle *b, const struct pw_hash_algo *local,
                                struct pw_error *err);
/* The prerequisites the repository lacks: *missing (malloc'd, the caller
 * frees it; NULL when none) and *nr. 0 or an error (the algorithm is checked
 * first). */
PW_API int pw_bundle_missing_prereqs(const struct pw_bundle *b, struct pw_repo *repo,
                                     struct pw_oid **missing, size_t *nr, struct pw_error *err);

struct pw_bundle_read_opts {
	int progress;            /* report "Receiving objects"/"Resolving deltas" */
	struct pw_report report; /* where progress goes */
};

/*
 * Store the bundle's pack in the repository (objects/pack), after checking
 * the algorithm and the prerequisites ("Repository lacks these prerequisite
 * commits: <oid>..."): thin deltas against prerequisites are completed from
 * the repository (as Git's unbundle). Then every reference's object and all
 * it reaches, short of the prerequisites, must be there. On failure nothing
 * stays behind. res as pw_session_fetch fills it (free with
 * pw_fetch_result_free). Can be called once per bundle.
 */
PW_API int pw_bundle_unbundle(struct pw_bundle *b, struct pw_repo *repo,
                              const struct pw_bundle_read_opts *opts, struct pw_fetch_result *res,
                              struct pw_error *err);

/* ---- writing ------------------------------------------------------------ */

struct pw_bundle_create_opts {
	int version; /* 2, 3, or 0: v2 for SHA-1, v3 for SHA-256 (as Git) */
	/* rev-list arguments: "X", "^X", "A..B", "--not", "--all" */
	const char *const *args;
	size_t nr_args;
	int64_t since;           /* --since: commits older than this are left out (0 = none) */
	long max_count;          /* --max-count: at most this many commits (<0 = no limit) */
	int progress;            /* counting, compressing, writing progress through report */
	struct pw_report report; /* progress and warnings ("ref 'x' is excluded by ...") */
};

/* Write a bundle of repo to fd: the refs named by the arguments (as Git
 * picks them), the boundary commits as prerequisites, and a thin pack.
 * PW_EINVAL "Refusing to create empty bundle." when no ref is left. */
PW_API int pw_bundle_create(struct pw_repo *repo, const struct pw_bundle_create_opts *opts, int fd,
                            struct pw_error *err);

#endif
