/* git push --signed's client side for packwire's commands: the pusher of a
 * push certificate and its signature by GPG (gpg.program, user.signingKey),
 * as Git's send-pack makes them. */
#ifndef PW_CLI_PUSH_SIGN_H
#define PW_CLI_PUSH_SIGN_H

#include <stddef.h>

#include "packwire/buf.h"
#include "packwire/error.h"

struct pw_repo;

/* "<user.signingKey or committer ident> <timestamp> <zone>" into out
 * (GIT_COMMITTER_NAME/EMAIL, else user.name/email; GIT_COMMITTER_DATE
 * when it is "[@]<seconds> <zone>", else now). -1 when no email is known. */
int pw_cli_push_pusher(const struct pw_repo *repo, char *out, size_t n);
/* A pw_push_opts.sign callback, ctx the repository (const struct pw_repo
 * *): runs "<gpg.program> --status-fd=2 -bsau <key>" on the certificate. */
int pw_cli_push_sign(void *ctx, const char *cert, size_t len, struct pw_buf *sig,
                     struct pw_error *err);

#endif
