/* pw_date_parse: the forms of --shallow-since, each against the value stock
 * git 2.39 gives it (git rev-parse --since=<date> prints --max-age=<value>),
 * with "now" fixed at 1700000000 (2023-11-14 22:13:20 UTC). */
#define _DEFAULT_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"
#include "util/date.h"

#define NOW 1700000000

static void expect(const char *s, int64_t want)
{
	struct pw_error err = {0};
	int64_t got = -1;
	int rc = pw_date_parse(s, NOW, &got, &err);

	if (rc || got != want)
		fprintf(stderr, "date '%s': rc %d, %lld (want %lld) %s\n", s, rc, (long long)got,
		        (long long)want, err.msg);
	CHECK_EQ_INT(rc, 0);
	CHECK_EQ_INT(got, want);
}

static void refused(const char *s)
{
	struct pw_error err = {0};
	int64_t got = -1;

	CHECK_EQ_INT(pw_date_parse(s, NOW, &got, &err), PW_EINVAL);
	CHECK(strstr(err.msg, "is not a date packwire understands") != NULL);
}

int main(void)
{
	static const char *const bad[] = {"",
	                                  "garbage",
	                                  "last tuesday",
	                                  "2005-13-01",
	                                  "2005-04-32",
	                                  "20050407",
	                                  "12345678",
	                                  "ago",
	                                  "weeks ago",
	                                  "2 fortnights ago",
	                                  "2005-04-07 +0200",
	                                  "2005-04-07 25:00",
	                                  "1969-12-31 12:00 +0000",
	                                  "2005-04-07 10:00 +2500",
	                                  "Apr 2005",
	                                  "@12",
	                                  "2005-04-07 2005-04-08"};
	size_t i;

	setenv("TZ", "UTC", 1);
	tzset();
	/* absolute, with a zone: the same in any time zone */
	expect("2005-04-07 22:13:13 +0200", 1112904793);
	expect("Thu, 07 Apr 2005 22:13:13 +0200", 1112904793);
	expect("Thu Apr 7 22:13:13 2005 +0200", 1112904793);
	expect("@1112904793", 1112904793);
	expect("1112904793", 1112904793);
	expect("2005-04-07T20:13:13Z", 1112904793);
	expect("7 Apr 2005 20:13:13 UTC", 1112904793);
	expect("2005-04-07T20:13:13.5+02:00", 1112897593);
	expect("2005-04-07 20:13:13 -0130", 1112910193);
	/* local time (UTC here) */
	expect("2005-04-07 20:13:13", 1112904793);
	expect("2005/04/07 20:13", 1112904780);
	expect("2005.04.07 20:13:13", 1112904793);
	/* a date alone: now's time of day */
	expect("2005-04-07", 1112912000);
	expect("April 7, 2005", 1112912000);
	/* relative to now */
	expect("now", NOW);
	expect("yesterday", NOW - 86400);
	expect("2 weeks ago", NOW - 14 * 86400);
	expect("3.days.ago", NOW - 3 * 86400);
	expect("90 minutes ago", NOW - 5400);
	expect("1 month ago", 1697321600);
	expect("13 months ago", 1665785600);
	expect("1 year 2 days ago", 1668291200);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		refused(bad[i]);
	/* another zone: local times move, explicit zones do not */
	setenv("TZ", "Europe/Berlin", 1);
	tzset();
	expect("2005-04-07 20:13:13", 1112897593);
	expect("2005-04-07 22:13:13 +0200", 1112904793);
	return pw_test_done();
}
