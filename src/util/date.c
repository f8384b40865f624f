/* Dates for --shallow-since (see date.h): absolute dates in the usual
 * spellings, seconds since the epoch, and "<n> <unit>s ago", each worked
 * out the way Git's approxidate works it out. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "util/date.h"

#define DATE_MAX_LEN   256
#define NO_ZONE        INT_MIN
#define RELATIVE_LIMIT 1000000 /* "<n> years ago": n at most this */

static const char *const month_names[12] = {"january",   "february", "march",    "april",
                                            "may",       "june",     "july",     "august",
                                            "september", "october",  "november", "december"};
static const char *const day_names[7] = {"sunday",   "monday", "tuesday", "wednesday",
                                         "thursday", "friday", "saturday"};

/* A word names `name` in full or by its first three letters. */
static int is_name(const char *w, size_t len, const char *name)
{
	return (len == 3 || len == strlen(name)) && !strncasecmp(w, name, len);
}

static int word_is(const char *w, size_t len, const char *word)
{
	return len == strlen(word) && !strncasecmp(w, word, len);
}

/* Days from 1970-01-01 to a date of the proleptic Gregorian calendar; a
 * day past the month's end rolls over, as Git's own arithmetic does. */
static int64_t days_from_civil(int64_t y, int m, int64_t d)
{
	int64_t era, yoe, doy;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	return era * 146097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719468;
}

/* Up to max digits at *p: their value, *n how many (0: none). */
static long digits(const char **p, int max, int *n)
{
	long v = 0;

	for (*n = 0; isdigit((unsigned char)**p) && *n < max; (*p)++, (*n)++)
		v = v * 10 + (**p - '0');
	return v;
}

struct fields {
	int year, mon, mday; /* -1: not given; mon 0..11 */
	int hour, min, sec;
	int zone; /* minutes east of UTC, NO_ZONE when not given */
	int weekday;
};

/* "+HHMM", "-HH:MM", "+HH" at p: 0 with f->zone set and *pp moved on. */
static int parse_zone(const char **pp, struct fields *f)
{
	const char *p = *pp;
	int sign = *p++ == '-' ? -1 : 1, n, h, m = 0;

	h = (int)digits(&p, 2, &n);
	if (n != 2 || f->zone != NO_ZONE)
		return -1;
	if (*p == ':')
		p++;
	if (isdigit((unsigned char)*p)) {
		m = (int)digits(&p, 2, &n);
		if (n != 2)
			return -1;
	}
	if (h > 14 || m > 59 || isdigit((unsigned char)*p))
		return -1;
	f->zone = sign * (h * 60 + m);
	*pp = p;
	return 0;
}

/* A token that starts with a digit: a date (YYYY-MM-DD, '/' or '.'), a
 * time (HH:MM[:SS[.frac]]), a year or a day of the month. */
static int parse_number(const char **pp, struct fields *f)
{
	const char *p = *pp;
	int n, n2, n3;
	long a = digits(&p, 10, &n), b, c;

	if (isdigit((unsigned char)*p))
		return -1;
	if (*p == ':') {
		if (n > 2 || f->hour >= 0)
			return -1;
		p++;
		b = digits(&p, 2, &n2);
		c = 0;
		if (n2 != 2)
			return -1;
		if (*p == ':') {
			p++;
			c = digits(&p, 2, &n3);
			if (n3 != 2)
				return -1;
			if (*p == '.' && isdigit((unsigned char)p[1])) /* a fraction: dropped */
				for (p++; isdigit((unsigned char)*p); p++)
					;
		}
		if (a > 24 || b > 59 || c > 60)
			return -1;
		f->hour = (int)a;
		f->min = (int)b;
		f->sec = (int)c;
	} else if ((*p == '-' || *p == '/' || *p == '.') && isdigit((unsigned char)p[1])) {
		char sep = *p++;

		b = digits(&p, 2, &n2);
		if (n != 4 || f->year >= 0 || f->mon >= 0 || f->mday >= 0 || *p != sep ||
		    !isdigit((unsigned char)p[1]))
			return -1;
		p++;
		c = digits(&p, 2, &n3);
		if (isdigit((unsigned char)*p) || b < 1 || b > 12 || c < 1 || c > 31)
			return -1;
		f->year = (int)a;
		f->mon = (int)b - 1;
		f->mday = (int)c;
	} else if (n == 4 && f->year < 0) {
		f->year = (int)a;
	} else if (n <= 2 && a >= 1 && a <= 31 && f->mday < 0) {
		f->mday = (int)a;
	} else {
		return -1;
	}
	*pp = p;
	return 0;
}

/* A word: a month, a weekday, a zone name, or the 'T' before a time. */
static int parse_word(const char **pp, struct fields *f)
{
	const char *w = *pp, *p = w;
	size_t len;
	int i;

	while (isalpha((unsigned char)*p))
		p++;
	len = (size_t)(p - w);
	*pp = p;
	if (len == 1 && (*w == 'T' || *w == 't') && isdigit((unsigned char)*p) && f->hour < 0)
		return 0;
	if (word_is(w, len, "z") || word_is(w, len, "utc") || word_is(w, len, "gmt")) {
		if (f->zone != NO_ZONE)
			return -1;
		f->zone = 0;
		return 0;
	}
	for (i = 0; i < 12; i++)
		if (is_name(w, len, month_names[i])) {
			if (f->mon >= 0)
				return -1;
			f->mon = i;
			return 0;
		}
	for (i = 0; i < 7; i++)
		if (is_name(w, len, day_names[i]) && !f->weekday) {
			f->weekday = 1;
			return 0;
		}
	return -1;
}

/* An absolute date: 0 with *out, -1 when s is none. */
static int parse_absolute(const char *s, int64_t now, int64_t *out)
{
	struct fields f = {-1, -1, -1, -1, -1, -1, NO_ZONE, 0};
	const char *p = s;
	struct tm tm;
	time_t t;

	while (*p) {
		unsigned char c = (unsigned char)*p;
		int rc;

		if (isspace(c) || c == ',') {
			p++;
			continue;
		}
		if (isalpha(c))
			rc = parse_word(&p, &f);
		else if (isdigit(c))
			rc = parse_number(&p, &f);
		else if (c == '+' || c == '-')
			rc = parse_zone(&p, &f);
		else
			rc = -1;
		if (rc)
			return -1;
	}
	if (f.year < 1970 || f.year > 2099 || f.mon < 0 || f.mday < 0 ||
	    (f.zone != NO_ZONE && f.hour < 0))
		return -1;
	if (f.hour >= 0 && f.zone != NO_ZONE) {
		*out = days_from_civil(f.year, f.mon + 1, f.mday) * 86400 + f.hour * 3600 +
		       f.min * 60 + f.sec - (int64_t)f.zone * 60;
		return 0;
	}
	t = (time_t)now;
	if (!localtime_r(&t, &tm))
		return -1;
	tm.tm_year = f.year - 1900;
	tm.tm_mon = f.mon;
	tm.tm_mday = f.mday;
	if (f.hour >= 0) {
		/* a local time; without one, now's time of day (approxidate) */
		tm.tm_hour = f.hour;
		tm.tm_min = f.min;
		tm.tm_sec = f.sec;
		tm.tm_isdst = -1;
	}
	t = mktime(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = (int64_t)t;
	return 0;
}

/* "<n> <unit>[s]", several, then "ago" or nothing; "yesterday", "now".
 * Git steps back from now unit by unit: seconds to weeks as seconds,
 * months and years on the local calendar. */
static int parse_relative(const char *s, int64_t now, int64_t *out)
{
	static const struct {
		const char *name;
		long secs; /* 0: month, -1: year */
	} units[] = {{"second", 1},    {"minute", 60}, {"hour", 3600}, {"day", 86400},
	             {"week", 604800}, {"month", 0},   {"year", -1}};
	const char *p = s;
	long pending = -1;
	int any = 0;
	struct tm tm;
	time_t t = (time_t)now;

	if (!localtime_r(&t, &tm))
		return -1;
	while (*p) {
		unsigned char c = (unsigned char)*p;
		const char *w;
		size_t len, i;

		if (isspace(c) || c == '.' || c == '_' || c == ',') {
			p++;
			continue;
		}
		if (isdigit(c)) {
			int n;

			if (pending >= 0)
				return -1;
			pending = digits(&p, 7, &n);
			if (isdigit((unsigned char)*p) || pending > RELATIVE_LIMIT)
				return -1;
			continue;
		}
		if (!isalpha(c))
			return -1;
		for (w = p; isalpha((unsigned char)*p); p++)
			;
		len = (size_t)(p - w);
		if (pending < 0 && word_is(w, len, "now")) {
			any = 1;
			continue;
		}
		if (pending < 0 && word_is(w, len, "yesterday")) {
			t = mktime(&tm) - 86400;
			if (!localtime_r(&t, &tm))
				return -1;
			any = 1;
			continue;
		}
		if (word_is(w, len, "ago") && pending < 0 && any)
			continue;
		for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
			if (len >= strlen(units[i].name) && len <= strlen(units[i].name) + 1 &&
			    !strncasecmp(w, units[i].name, strlen(units[i].name)) &&
			    (len == strlen(units[i].name) || w[len - 1] == 's' ||
			     w[len - 1] == 'S'))
				break;
		if (i == sizeof(units) / sizeof(units[0]) || pending < 0)
			return -1;
		if (units[i].secs > 0) {
			t = mktime(&tm) - (time_t)pending * units[i].secs;
			if (!localtime_r(&t, &tm))
				return -1;
		} else if (units[i].secs == 0) {
			tm.tm_year -= (int)(pending / 12);
			tm.tm_mon -= (int)(pending % 12);
			if (tm.tm_mon < 0) {
				tm.tm_mon += 12;
				tm.tm_year--;
			}
		} else {
			tm.tm_year -= (int)pending;
		}
		pending = -1;
		any = 1;
	}
	if (pending >= 0 || !any)
		return -1;
	t = mktime(&tm);
	if (t == (time_t)-1)
		return -1;
	*out = (int64_t)t;
	return 0;
}

int pw_date_parse(const char *s, int64_t now, int64_t *out, struct pw_error *err)
{
	const char *p = s;
	size_t len = strnlen(s, DATE_MAX_LEN + 1);
	int n;

	if (len <= DATE_MAX_LEN) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '@' || isdigit((unsigned char)*p)) {
			const char *q = p + (*p == '@');
			long long v = 0;

			for (n = 0; isdigit((unsigned char)*q) && n < 18; q++, n++)
				v = v * 10 + (*q - '0');
			while (isspace((unsigned char)*q))
				q++;
			/* Git takes 9 digits or more for seconds, not for a date */
			if (!*q && n && v >= 100000000) {
				*out = (int64_t)v;
				return 0;
			}
		}
		if (*p && (!parse_absolute(p, now, out) || !parse_relative(p, now, out)) &&
		    *out >= 0)
			return 0;
	}
	return pw_error_set(err, PW_EINVAL, "'%.*s' is not a date packwire understands (%s)",
	                    (int)(len > 64 ? 64 : len), s, PW_DATE_FORMS);
}
