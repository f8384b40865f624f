/* Push certificates on the receiving side (git push --signed): the nonce
 * receive-pack hands out (receive.certNonceSeed), the certificate's parts
 * (headers, commands, signature), the nonce check and the signature check
 * with gpg / gpgsm, whose result the hooks see as GIT_PUSH_CERT_*. The
 * parsers do no I/O and are reached by the unit tests and a fuzz target. */
#ifndef PW_SERVER_PUSHCERT_H
#define PW_SERVER_PUSHCERT_H

#include <stddef.h>
#include <stdint.h>

#include "packwire/buf.h"
#include "packwire/config.h"
#include "packwire/error.h"
#include "packwire/hash.h"
#include "server/receive-cmds.h"

/* The certificate as received (between push-cert and push-cert-end). */
#define PW_PUSH_CERT_MAX (16u << 20)

/* "<stamp>-<hex HMAC(seed, "<path>:<stamp>")>" with the repository's
 * algorithm, as Git forms it (malloc'd; NULL when out of memory). */
char *pw_push_cert_nonce(const struct pw_hash_algo *algo, const char *seed, const char *path,
                         uint64_t stamp);

/* Where the signature starts: the last line that opens one (whole buffer
 * length when none). */
size_t pw_push_cert_sig_start(const char *buf, size_t len);

/* The value of header `key` ("key value" lines before the first empty one),
 * searched from *pos, which is moved past the line found: 1 with *val, or 0. */
int pw_push_cert_header(const char *buf, size_t len, const char *key, size_t *pos,
                        struct pw_str *val);

/* Append the certificate's commands (after the headers, before the
 * signature) to cmds. PW_EPROTO with a message when it is malformed. */
int pw_push_cert_commands(const char *buf, size_t len, struct pw_receive_cmds *cmds,
                          struct pw_error *err);

/* 1 when the certificate's push-option headers are exactly opts, in order. */
int pw_push_cert_options_match(const char *buf, size_t len, char *const *opts, size_t nopts);

/* Git's GIT_PUSH_CERT_NONCE_STATUS values. */
extern const char pw_nonce_unsolicited[], pw_nonce_bad[], pw_nonce_missing[], pw_nonce_ok[],
        pw_nonce_slop[];

struct pw_nonce_check {
	const struct pw_hash_algo *algo;
	const char *seed, *path;
	const char *issued; /* the nonce we advertised, or NULL */
	int stateless;      /* another instance may have issued it */
	long slop_limit;    /* receive.certNonceSlop (0: none) */
	/* out */
	const char *status; /* one of pw_nonce_* */
	long slop;          /* with pw_nonce_slop */
	char *adopted;      /* within the slop: the nonce to report as ours (malloc'd) */
};

/* Check the nonce header of the certificate's payload. 0 or PW_ENOMEM. */
int pw_push_cert_check_nonce(struct pw_nonce_check *c, const char *payload, size_t len);

/* The result of a signature check, as Git reports it. */
struct pw_sigcheck {
	char result;        /* G, B, U, X, Y, R, E or N (no check possible) */
	char *signer, *key; /* malloc'd, NULL when unknown */
};

void pw_sigcheck_free(struct pw_sigcheck *s);
/* Read gpg's --status-fd output ("[GNUPG:] GOODSIG <key> <uid>", ...). */
int pw_sigcheck_parse_gpg(struct pw_sigcheck *s, const char *status, size_t len);

/*
 * Verify sig over payload with the program gpg.format's signature calls for
 * (gpg.program / gpg.openpgp.program, gpg.x509.program), env as for hooks.
 * 0 with s filled (result 'N' when the signature's kind is unknown or the
 * program could not run), PW_ENOMEM.
 */
int pw_push_cert_verify(struct pw_sigcheck *s, const struct pw_config *cfg, const char *const *env,
                        const char *payload, size_t plen, const char *sig, size_t slen);

#endif
