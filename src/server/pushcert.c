/* Push certificates: see pushcert.h. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "repo/hook.h"
#include "server/pushcert.h"
#include "util/fs.h"
#include "util/spawn.h"

const char pw_nonce_unsolicited[] = "UNSOLICITED", pw_nonce_bad[] = "BAD",
           pw_nonce_missing[] = "MISSING", pw_nonce_ok[] = "OK", pw_nonce_slop[] = "SLOP";

/* What the verifiers may print back to us. */
#define MAX_TOOL_OUTPUT (1u << 20)

/* ---- nonce --------------------------------------------------------------- */

/* RFC 2104 with the repository's hash. */
static void hmac(const struct pw_hash_algo *algo, const char *key, size_t klen, const char *text,
                 size_t tlen, uint8_t *out)
{
	uint8_t k[128], pad[128];
	struct pw_hash_ctx ctx;
	size_t i, b = algo->blksz;

	memset(k, 0, sizeof(k));
	if (klen > b) {
		algo->init(&ctx);
		algo->update(&ctx, key, klen);
		algo->final_raw(&ctx, k);
	} else {
		memcpy(k, key, klen);
	}
	for (i = 0; i < b; i++)
		pad[i] = k[i] ^ 0x36;
	algo->init(&ctx);
	algo->update(&ctx, pad, b);
	algo->update(&ctx, text, tlen);
	algo->final_raw(&ctx, out);
	for (i = 0; i < b; i++)
		pad[i] = k[i] ^ 0x5c;
	algo->init(&ctx);
	algo->update(&ctx, pad, b);
	algo->update(&ctx, out, algo->rawsz);
	algo->final_raw(&ctx, out);
}

char *pw_push_cert_nonce(const struct pw_hash_algo *algo, const char *seed, const char *path,
                         uint64_t stamp)
{
	struct pw_buf b = PW_BUF_INIT;
	uint8_t mac[64];
	char *out;
	size_t i;

	if (pw_buf_addf(&b, "%s:%llu", path, (unsigned long long)stamp))
		return NULL;
	hmac(algo, seed, strlen(seed), b.data, b.len, mac);
	pw_buf_reset(&b);
	if (pw_buf_addf(&b, "%llu-", (unsigned long long)stamp)) {
		pw_buf_free(&b);
		return NULL;
	}
	for (i = 0; i < algo->rawsz; i++)
		if (pw_buf_addf(&b, "%02x", mac[i])) {
			pw_buf_free(&b);
			return NULL;
		}
	out = pw_buf_detach(&b, NULL);
	return out;
}

/* ---- parts of the certificate --------------------------------------------- */

static int opens_signature(const char *p, size_t n)
{
	static const char *const starts[] = {
	        "-----BEGIN PGP SIGNATURE-----", "-----BEGIN PGP MESSAGE-----",
	        "-----BEGIN SIGNED MESSAGE-----", "-----BEGIN SSH SIGNATURE-----"};
	size_t i;

	for (i = 0; i < sizeof(starts) / sizeof(starts[0]); i++)
		if (n >= strlen(starts[i]) && !memcmp(p, starts[i], strlen(starts[i])))
			return (int)i + 1;
	return 0;
}

size_t pw_push_cert_sig_start(const char *buf, size_t len)
{
	size_t pos = 0, match = len;

	while (pos < len) {
		const char *eol = memchr(buf + pos, '\n', len - pos);

		if (opens_signature(buf + pos, len - pos))
			match = pos;
		pos = eol ? (size_t)(eol - buf) + 1 : len;
	}
	return match;
}

int pw_push_cert_header(const char *buf, size_t len, const char *key, size_t *pos,
                        struct pw_str *val)
{
	size_t klen = strlen(key), p = *pos;

	while (p < len) {
		const char *line = buf + p, *eol = memchr(line, '\n', len - p);
		size_t n = eol ? (size_t)(eol - line) : len - p;

		if (!n)
			return 0; /* end of the headers */
		p += n + (eol ? 1 : 0);
		if (n > klen && !memcmp(line, key, klen) && line[klen] == ' ') {
			val->p = line + klen + 1;
			val->len = n - klen - 1;
			*pos = p;
			return 1;
		}
	}
	return 0;
}

int pw_push_cert_commands(const char *buf, size_t len, struct pw_receive_cmds *cmds,
                          struct pw_error *err)
{
	size_t eoc = pw_push_cert_sig_start(buf, len), pos = 0;
	int rc;

	/* the commands follow the first empty line */
	for (;;) {
		const char *eol = pos < len ? memchr(buf + pos, '\n', len - pos) : NULL;

		if (!eol)
			return pw_error_set(err, PW_EPROTO, "malformed push certificate %.*s",
			                    (int)(len < 100 ? len : 100), buf);
		pos = (size_t)(eol - buf) + 1;
		if (pos < len && buf[pos] == '\n') {
			pos++;
			break;
		}
	}
	while (pos < eoc) {
		const char *eol = memchr(buf + pos, '\n', eoc - pos);
		size_t n = eol ? (size_t)(eol - (buf + pos)) : eoc - pos;

		if ((rc = pw_receive_cmds_add_line(cmds, buf + pos, n, err)))
			return rc;
		pos += n + (eol ? 1 : 0);
	}
	return 0;
}

int pw_push_cert_options_match(const char *buf, size_t len, char *const *opts, size_t nopts)
{
	struct pw_str v;
	size_t pos = 0, seen = 0;

	if (!len)
		return 1;
	while (pw_push_cert_header(buf, len, "push-option", &pos, &v)) {
		if (seen >= nopts || strlen(opts[seen]) != v.len || memcmp(opts[seen], v.p, v.len))
			return 0;
		seen++;
	}
	return seen == nopts;
}

/* ---- nonce check ---------------------------------------------------------- */

int pw_push_cert_check_nonce(struct pw_nonce_check *c, const char *payload, size_t len)
{
	struct pw_str v;
	size_t pos = 0, i;
	char *nonce = NULL, *expect = NULL, *end;
	unsigned long long stamp, ostamp;
	int diff = 0;

	c->status = pw_nonce_bad;
	c->slop = 0;
	c->adopted = NULL;
	if (!pw_push_cert_header(payload, len, "nonce", &pos, &v)) {
		c->status = pw_nonce_missing;
		return 0;
	}
	if (!c->issued) {
		c->status = pw_nonce_unsolicited;
		return 0;
	}
	if (!(nonce = strndup(v.p, v.len)))
		return PW_ENOMEM;
	if (!strcmp(nonce, c->issued)) {
		c->status = pw_nonce_ok;
		goto out;
	}
	/* only a stateless server can see a nonce another instance gave out:
	 * it is genuine when our seed and path sign it */
	if (!c->stateless || nonce[0] <= '0' || nonce[0] > '9')
		goto out;
	errno = 0;
	stamp = strtoull(nonce, &end, 10);
	if (errno || *end != '-')
		goto out;
	if (!(expect = pw_push_cert_nonce(c->algo, c->seed, c->path, stamp))) {
		free(nonce);
		return PW_ENOMEM;
	}
	if (strlen(expect) != strlen(nonce))
		goto out;
	for (i = 0; expect[i]; i++) /* constant time */
		diff |= expect[i] ^ nonce[i];
	if (diff)
		goto out;
	ostamp = strtoull(c->issued, NULL, 10);
	c->slop = (long)ostamp - (long)stamp;
	if (c->slop_limit && labs(c->slop) <= c->slop_limit) {
		c->adopted = nonce;
		nonce = NULL;
		c->status = pw_nonce_ok;
	} else {
		c->status = pw_nonce_slop;
	}
out:
	free(nonce);
	free(expect);
	return 0;
}

/* ---- signature check ------------------------------------------------------ */

void pw_sigcheck_free(struct pw_sigcheck *s)
{
	free(s->signer);
	free(s->key);
	s->signer = s->key = NULL;
}

static int set_str(char **dst, const char *p, size_t n)
{
	free(*dst);
	*dst = strndup(p, n);
	return *dst ? 0 : PW_ENOMEM;
}

int pw_sigcheck_parse_gpg(struct pw_sigcheck *s, const char *status, size_t len)
{
	static const struct {
		char result;
		const char *word;
		int uid; /* the key id is followed by the signer */
	} kinds[] = {{'G', "GOODSIG ", 1}, {'B', "BADSIG ", 1},    {'E', "ERRSIG ", 0},
	             {'X', "EXPSIG ", 1},  {'Y', "EXPKEYSIG ", 1}, {'R', "REVKEYSIG ", 1}};
	size_t pos = 0, k;
	int exclusive = 0;

	while (pos < len) {
		const char *line = status + pos, *eol = memchr(line, '\n', len - pos);
		size_t n = eol ? (size_t)(eol - line) : len - pos;

		pos += n + (eol ? 1 : 0);
		if (n < 9 || memcmp(line, "[GNUPG:] ", 9))
			continue;
		line += 9;
		n -= 9;
		for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			size_t wl = strlen(kinds[k].word), idl;
			const char *id, *sp;

			if (n < wl || memcmp(line, kinds[k].word, wl))
				continue;
			/* one signature only: a second status of this kind is fishy */
			if (exclusive++) {
				pw_sigcheck_free(s);
				s->result = 'E';
				return 0;
			}
			s->result = kinds[k].result;
			id = line + wl;
			sp = memchr(id, ' ', n - wl);
			idl = sp ? (size_t)(sp - id) : n - wl;
			if (set_str(&s->key, id, idl))
				return PW_ENOMEM;
			if (sp && kinds[k].uid && set_str(&s->signer, sp + 1, n - wl - idl - 1))
				return PW_ENOMEM;
			break;
		}
	}
	return 0;
}

/* Run argv with input on stdin; stdout into out, stderr dropped. 0 when it
 * ran and exited 0, 1 when it failed, PW_ENOMEM. */
static int run_tool(const char *const *argv, const char *const *env, const char *input, size_t ilen,
                    struct pw_buf *out)
{
	struct pw_hook_run h;
	struct pw_error e;
	int pid, in, o, er, st = -1, rc = 0;
	size_t off = 0;

	memset(&h, 0, sizeof(h));
	h.path = argv[0];
	h.args = argv + 1;
	h.env = env;
	if ((rc = pw_hook_spawn(&h, &pid, &in, &o, &er, &e)))
		return rc == PW_ENOMEM ? rc : 1;
	if (!ilen) {
		close(in);
		in = -1;
	}
	while (o >= 0 || er >= 0) {
		struct pollfd p[3];
		int n = 0, io = -1, ie = -1, iw = -1;
		char buf[4096];
		ssize_t got;

		if (o >= 0) {
			p[n].fd = o;
			p[n].events = POLLIN;
			io = n++;
		}
		if (er >= 0) {
			p[n].fd = er;
			p[n].events = POLLIN;
			ie = n++;
		}
		if (in >= 0) {
			p[n].fd = in;
			p[n].events = POLLOUT;
			iw = n++;
		}
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (iw >= 0 && p[iw].revents) {
			got = write(in, input + off, ilen - off);
			if (got > 0)
				off += (size_t)got;
			if ((got < 0 && errno != EAGAIN && errno != EINTR) || off == ilen) {
				close(in);
				in = -1;
			}
		}
		if (io >= 0 && p[io].revents) {
			got = read(o, buf, sizeof(buf));
			if (got > 0) {
				if (out->len + (size_t)got <= MAX_TOOL_OUTPUT)
					pw_buf_add(out, buf, (size_t)got);
			} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
				close(o);
				o = -1;
			}
		}
		if (ie >= 0 && p[ie].revents) {
			got = read(er, buf, sizeof(buf));
			if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) {
				close(er);
				er = -1;
			}
		}
	}
	if (in >= 0)
		close(in);
	if (o >= 0)
		close(o);
	if (er >= 0)
		close(er);
	pw_spawn_wait(pid, &st, NULL, NULL);
	return st == 0 ? 0 : 1;
}

static const char *cfg_str(const struct pw_config *cfg, const char *key)
{
	const char *v = NULL;

	if (pw_config_get_string(cfg, key, &v, NULL) || !v || !*v)
		return NULL;
	return v;
}

/* ssh-keygen's "Good "git" signature for <principal> with <kind> key <fp>". */
static int parse_ssh(struct pw_sigcheck *s, const char *out, size_t len)
{
	static const char good_for[] = "Good \"git\" signature for ",
	                  good_with[] = "Good \"git\" signature with ";
	size_t n = strcspn(out, "\n"), gl;
	char *line, *p, *with, *key;
	int rc = 0;

	(void)len;
	s->result = 'B';
	if (!(line = strndup(out, n)))
		return PW_ENOMEM;
	gl = strlen(good_for);
	if (!strncmp(line, good_for, gl)) {
		p = line + gl;
		with = NULL;
		for (key = strstr(p, " with "); key; key = strstr(key + 1, " with "))
			with = key;
		if (!with)
			goto out;
		s->result = 'G';
		if ((rc = set_str(&s->signer, p, (size_t)(with - p))))
			goto out;
		p = with + 1;
	} else if (!strncmp(line, good_with, strlen(good_with))) {
		s->result = 'G';
		p = line + strlen(good_with);
	} else {
		goto out;
	}
	if ((key = strstr(p, "key ")))
		rc = set_str(&s->key, key + 4, strlen(key + 4));
	else
		s->result = 'B';
out:
	free(line);
	return rc;
}

static int verify_ssh(struct pw_sigcheck *s, const struct pw_config *cfg, const char *const *env,
                      const char *payload, size_t plen, const char *file)
{
	const char *prog = cfg_str(cfg, "gpg.ssh.program");
	const char *signers = cfg_str(cfg, "gpg.ssh.allowedsignersfile");
	const char *revoked = cfg_str(cfg, "gpg.ssh.revocationfile");
	struct pw_buf principals = PW_BUF_INIT, out = PW_BUF_INIT;
	size_t pos = 0;
	int rc = 0, ran = 1;

	if (!prog)
		prog = "ssh-keygen";
	if (!signers)
		return 0;
	{
		const char *argv[] = {prog, "-Y", "find-principals", "-f", signers, "-s",
		                      file, NULL};

		if ((rc = run_tool(argv, env, NULL, 0, &principals)) < 0)
			goto done;
		ran = !rc && principals.len;
		rc = 0;
	}
	if (!ran) {
		/* no known principal: Git fails the check */
		s->result = 'N';
		goto done;
	}
	while (pos < principals.len) {
		char *line = principals.data + pos, *eol = strchr(line, '\n');
		size_t n = eol ? (size_t)(eol - line) : strlen(line);
		const char *argv[14];
		int k = 0;

		pos += n + (eol ? 1 : 0);
		if (n && line[n - 1] == '\r')
			n--;
		if (!n)
			continue;
		line[n] = '\0';
		argv[k++] = prog;
		argv[k++] = "-Y";
		argv[k++] = "verify";
		argv[k++] = "-n";
		argv[k++] = "git";
		argv[k++] = "-f";
		argv[k++] = signers;
		argv[k++] = "-I";
		argv[k++] = line;
		argv[k++] = "-s";
		argv[k++] = file;
		if (revoked && !access(revoked, F_OK)) {
			argv[k++] = "-r";
			argv[k++] = revoked;
		}
		argv[k] = NULL;
		pw_buf_reset(&out);
		rc = run_tool(argv, env, payload, plen, &out);
		if (rc < 0)
			goto done;
		if (!rc && out.len >= 4 && !memcmp(out.data, "Good", 4))
			break;
	}
	rc = parse_ssh(s, out.data, out.len);
done:
	pw_buf_free(&principals);
	pw_buf_free(&out);
	return rc;
}

int pw_push_cert_verify(struct pw_sigcheck *s, const struct pw_config *cfg, const char *const *env,
                        const char *payload, size_t plen, const char *sig, size_t slen)
{
	char tmpl[] = "/tmp/.packwire_vcert_XXXXXX";
	struct pw_buf out = PW_BUF_INIT;
	int kind = opens_signature(sig, slen), fd, rc = 0;
	size_t off = 0;

	memset(s, 0, sizeof(*s));
	s->result = 'N';
	if (!kind)
		return 0;
	/* the signature goes in a file, the payload on stdin (Git's way) */
	fd = pw_fs_mkstemp_mode(tmpl, 0600);
	if (fd < 0)
		return 0;
	while (off < slen) {
		ssize_t w = write(fd, sig + off, slen - off);

		if (w <= 0) {
			close(fd);
			unlink(tmpl);
			return 0;
		}
		off += (size_t)w;
	}
	close(fd);
	if (kind == 4) {
		rc = verify_ssh(s, cfg, env, payload, plen, tmpl);
	} else {
		const char *prog = kind == 3 ? cfg_str(cfg, "gpg.x509.program") : NULL;
		const char *argv[8];
		int k = 0;

		if (kind != 3 && !(prog = cfg_str(cfg, "gpg.openpgp.program")))
			prog = cfg_str(cfg, "gpg.program");
		if (!prog)
			prog = kind == 3 ? "gpgsm" : "gpg";
		argv[k++] = prog;
		if (kind != 3)
			argv[k++] = "--keyid-format=long";
		argv[k++] = "--status-fd=1";
		argv[k++] = "--verify";
		argv[k++] = tmpl;
		argv[k++] = "-";
		argv[k] = NULL;
		rc = run_tool(argv, env, payload, plen, &out);
		if (rc >= 0)
			rc = pw_sigcheck_parse_gpg(s, out.data, out.len);
	}
	unlink(tmpl);
	pw_buf_free(&out);
	return rc < 0 ? rc : 0;
}
