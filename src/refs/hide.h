/* hideRefs: which refs a server keeps out of its advertisement and refuses
 * to update, from transfer.hideRefs and <section>.hideRefs (section is
 * "uploadpack" or "receive"), as Git reads them:
 *  - each value is a ref name prefix matched on a '/' boundary ("refs/pull"
 *    hides refs/pull and refs/pull/1/head, not refs/pulls); trailing slashes
 *    are dropped;
 *  - "!" before it un-hides what an earlier value hid;
 *  - "^" (after any "!") matches the full name, namespace included, instead
 *    of the name with the namespace stripped;
 *  - the last matching value decides; no match means visible.
 * Used by upload-pack (advertisement, ls-refs, wants) and receive-pack. */
#ifndef PW_REFS_HIDE_H
#define PW_REFS_HIDE_H

#include <stddef.h>

#include "packwire/config.h"
#include "packwire/error.h"

struct pw_hide_refs {
	char **v; /* the values in config order, trailing slashes removed */
	size_t nr;
};

#define PW_HIDE_REFS_INIT                                                                          \
	{                                                                                          \
		NULL, 0                                                                            \
	}

/* Collect the values of transfer.hideRefs and section.hideRefs from cfg in
 * file order. A key with no value is PW_EINVAL (Git's "missing value");
 * PW_ENOMEM. On failure h is left empty. */
int pw_hide_refs_load(struct pw_hide_refs *h, const struct pw_config *cfg, const char *section,
                      struct pw_error *err);

/* 1 when the ref is hidden. name is the ref name with any namespace
 * stripped (NULL when the ref lies outside the namespace), full the name as
 * stored; without namespaces both are the same string. */
int pw_hide_refs_match(const struct pw_hide_refs *h, const char *name, const char *full);

void pw_hide_refs_free(struct pw_hide_refs *h);

#endif
