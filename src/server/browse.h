/* The browse pages of `packwire serve` (browse.c): an HTML list of the
 * repositories under the base path and a page per repository, read-only
 * and bounded. The HTTP handler (http.c) answers them when a request asks
 * for them (pw_http_request.browse). */
#ifndef PW_SERVER_BROWSE_H
#define PW_SERVER_BROWSE_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/error.h"
#include "packwire/http.h"

/* The bounds of one page (docs/limits.md). */
#define PW_BROWSE_MAX_PAGE   (4u << 20) /* bytes of HTML */
#define PW_BROWSE_MAX_DEPTH  4          /* directory levels searched below the listed one */
#define PW_BROWSE_MAX_SCAN   10000      /* directory entries looked at for one list */
#define PW_BROWSE_MAX_REPOS  500        /* repositories on one list */
#define PW_BROWSE_TIP_REFS   32         /* branch tips read for a repository's last change */
#define PW_BROWSE_MAX_REFS   1000       /* branches, and tags, read for a repository page */
#define PW_BROWSE_SHOW_REFS  100        /* of them shown (the newest) */
#define PW_BROWSE_LOG        20         /* commits shown on HEAD */
#define PW_BROWSE_LOG_READ   200        /* commits read to find them */
#define PW_BROWSE_MAX_OBJECT (1u << 20) /* bytes of a commit or tag read; larger ones are not */
#define PW_BROWSE_SHOW_NAME  256        /* bytes of a name shown */
#define PW_BROWSE_SHOW_TEXT  200        /* bytes of a subject, an author, a description */

/* 1 when path (a PATH_INFO) names a browse page: "/" or a path ending in '/'. */
int pw_browse_is_page(const char *path);

/* The page for req->path_info under req->project_root, appended to out
 * (whose max bounds it): the list of the repositories under a directory,
 * or the page of the repository there. 0; PW_ENOTFOUND when there is
 * neither (or the path is aliased, leads outside the root, or is not
 * exported), with the message in err; PW_ETOOBIG, PW_ENOMEM. */
int pw_browse_page(struct pw_buf *out, const struct pw_http_request *req, struct pw_error *err);

/* Append s[0..len) as HTML text (fit for an element or a quoted attribute):
 * & < > " ' as entities, control bytes as the Unicode control pictures
 * (U+2400...), C1 controls, bidirectional overrides and every byte that is
 * not part of valid UTF-8 as U+FFFD; at most `shown` input bytes, then
 * "..." (U+2026). 0, PW_ETOOBIG or PW_ENOMEM. Pure but for out. */
int pw_browse_escape(struct pw_buf *out, const char *s, size_t len, size_t shown);

/* What a commit's page row shows, parsed from the raw object (pointers
 * into data). Missing parts stay empty/zero: any bytes parse. */
struct pw_browse_commit {
	const char *author; /* the author's name, without the email */
	size_t author_len;
	int64_t author_time; /* seconds; has_time says whether one parsed */
	int author_tz;       /* minutes east of UTC, |tz| < 24 h */
	int has_time;
	int64_t commit_time; /* the committer's, for ordering; 0 when none */
	const char *subject; /* the first line of the message */
	size_t subject_len;
};
void pw_browse_commit_parse(struct pw_browse_commit *out, const char *data, size_t len);

/* "2023-11-14 22:13 +0100" (into 64 bytes) for a time and an offset in minutes, or
 * "(bad date)" when it has no calendar date (years 1 to 9999). */
void pw_browse_format_date(char out[64], int64_t t, int tz_minutes);

#endif
