/* fetch.fsckObjects / transfer.fsckObjects on the fetching side, as Git
 * 2.39's fetch-pack and index-pack --strict do it: every commit, tree and
 * tag of the received pack is checked (odb/fsck.c) before any ref moves;
 * fetch.fsck.<msg-id> (error, warn or ignore) and fetch.fsck.skipList
 * change the verdicts. Git does not fall back on fsck.<msg-id> here, and
 * neither do we. Only packs that come through fetch-pack are checked (the
 * smart protocol over every transport, and helpers that connect): Git 2.39
 * checks neither bundles nor dumb HTTP. */
#ifndef PW_CLIENT_FETCH_FSCK_H
#define PW_CLIENT_FETCH_FSCK_H

#include "odb/fsck.h"
#include "packwire/client.h"
#include "packwire/report.h"

struct pw_fetch_fsck {
	int on; /* fetch.fsckObjects, else transfer.fsckObjects */
	struct pw_fsck_opts opts;
	/* a setting index-pack would refuse once started (a skipList it
	 * cannot read, a fatal id demoted): the fetch fails when a pack
	 * arrives, with this message */
	char *deferred;
	const struct pw_report *report;
};

/* A severity as fetch.fsck.<msg-id> takes it: "error", "warn" or "ignore",
 * spelled so (Git compares them case-sensitively). 1 when valid, else 0. */
int pw_fetch__fsck_severity_ok(const char *value);

/* Read the configuration (whether fsck is on or not, as Git reads it):
 * unknown ids are skipped with a warning through report; a bad boolean, a
 * bad severity or a fetch.fsck.<id> without a value are errors. */
int pw_fetch__fsck_setup(struct pw_fetch_fsck *f, struct pw_repo *repo,
                         const struct pw_report *report, struct pw_error *err);

/* Check the pack a fetch stored (res->idx_path; nothing to do without
 * one, or with fsck off). A bad object goes to report->error as Git's
 * "object <id>: <msg-id>: <text>", and the call fails with PW_ECORRUPT and
 * Git's fatal lines: "fsck error in packed object", then "index-pack
 * failed" or, when Git would have kept the pack (a clone, or as many
 * objects as the unpack limit), "fetch-pack: invalid index-pack output".
 * The caller rolls the pack back. */
int pw_fetch__fsck_check(struct pw_fetch_fsck *f, struct pw_repo *repo,
                         const struct pw_fetch_result *res, int cloning, struct pw_error *err);

void pw_fetch__fsck_free(struct pw_fetch_fsck *f);

#endif
