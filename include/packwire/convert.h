/* Converting a whole repository into the other hash algorithm (packwire
 * convert): every object translated (pw_compat_convert) into one pack with
 * deltas, the refs, HEAD and the reflogs with the new ids, and the compat
 * map back to the old ids (docs/compat-map.md), so that the old ids still
 * resolve in the new repository. */
#ifndef PACKWIRE_CONVERT_H
#define PACKWIRE_CONVERT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/compat.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "packwire/report.h"

struct pw_convert_opts {
	/* "Translating objects", "Counting objects", "Compressing objects",
	 * "Writing objects", "Converting refs"; may be NULL. */
	pw_progress_fn progress;
	void *progress_data;
	/* Where the submodules' repositories are (borrowed; NULL: none): a
	 * gitlink's commit is mapped through the map of its submodule's
	 * repository or of that repository's converted copy. */
	struct pw_compat_submodules *submodules;
	/* out */
	uint64_t objects, refs, reflogs;
	uint64_t pack_bytes;
	uint32_t deltas;
};

/* Convert the repository at src (a git dir or a work tree) into a new
 * repository at dst (absent, or an empty directory) stored in `to`, bare
 * when src is (a non-bare dst gets no checkout: pw_checkout_fresh does it),
 * with extensions.compatObjectFormat naming src's algorithm. On failure
 * nothing is left at dst (an empty directory that was there stays). Errors
 * in err: PW_EEXISTS for a dst that is not empty, PW_EUNSUPPORTED for a
 * shallow src, PW_EINVAL when src already uses `to`, PW_ENOTFOUND for a
 * missing object or a gitlink whose commit has no id in `to` (the message
 * names the path). */
PW_API int pw_convert_repo(const char *src, const char *dst, const struct pw_hash_algo *to,
                           struct pw_convert_opts *opts, struct pw_error *err);

/* Remove what a conversion into dst that was stopped from outside (a
 * signal) left: dst itself, or only its content when keep_dir (dst was an
 * empty directory before). For callers that run pw_convert_repo in a child
 * process. */
PW_API void pw_convert_discard(const char *dst, int keep_dir);

/* Translate the bytes of a reflog ("<old> <new> <ident>\t<message>\n" per
 * line) from `from` to `to`, appending to out: both ids through lookup (the
 * zero id stays zero); a line with an id that lookup does not know is
 * dropped and counted in *dropped. PW_ECORRUPT (with the line number) for a
 * line that is not of that form. Pure: any thread. */
PW_API int pw_convert_reflog(struct pw_buf *out, const char *data, size_t len,
                             const struct pw_hash_algo *from, const struct pw_hash_algo *to,
                             pw_compat_lookup_fn lookup, void *lookup_data, size_t *dropped,
                             struct pw_error *err);

#endif
