/* Dates as people give them to --shallow-since: the forms of Git's
 * approxidate that matter in practice, each read as Git reads it. */
#ifndef PW_UTIL_DATE_H
#define PW_UTIL_DATE_H

#include <stdint.h>

#include "packwire/error.h"

/* What pw_date_parse's error message lists. */
#define PW_DATE_FORMS                                                                              \
	"YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS] [+ZZZZ], an RFC 2822 or git log date, "                 \
	"@<seconds>, '<n> <unit>s ago' with unit second, minute, hour, day, week, month or year, " \
	"yesterday or now"

/*
 * Read s into *out (seconds since the epoch), `now` being the present:
 *   - "@<seconds>", or a plain number of 9 digits or more: seconds (UTC);
 *   - a date "YYYY-MM-DD" ('/' or '.' also separate), or "<day> <month>
 *     <year>" / "<month> <day> <year>" with month names, an optional
 *     weekday, and "HH:MM[:SS]" (after a space or 'T') and a zone
 *     ("+HHMM", "-HH:MM", "Z", "UTC", "GMT") in any order, as RFC 2822 and
 *     git log print dates: without a zone the time is local; without a time
 *     it is now's local time of day on that date (Git's approxidate);
 *   - "<n> <unit>[s] [ago]" (several may follow each other; '.' and '_'
 *     separate too), "yesterday", "now": back from now, months and years
 *     on the local calendar, the others in seconds, as Git counts them.
 * 0, or PW_EINVAL with a message in err that names the forms understood.
 * Pure apart from the local time zone (localtime_r, mktime).
 */
int pw_date_parse(const char *s, int64_t now, int64_t *out, struct pw_error *err);

#endif
