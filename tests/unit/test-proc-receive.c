/* receive.procReceiveRefs matching, the proc-receive hook's report parser
 * and the push-certificate parsers (headers, commands, nonce, gpg status),
 * on both algorithms, with malformed input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/proc-receive.h"
#include "server/pushcert.h"
#include "test.h"

static void hexfill(char *dst, char c, const struct pw_hash_algo *algo)
{
	memset(dst, c, algo->hexsz);
	dst[algo->hexsz] = '\0';
}

static void add_cmd(struct pw_receive_cmds *c, const char *o, const char *n, const char *ref)
{
	struct pw_error err;
	char line[300];
	int len = snprintf(line, sizeof(line), "%s %s %s", o, n, ref);

	CHECK_EQ_INT(pw_receive_cmds_add_line(c, line, (size_t)len, &err), 0);
}

static int line(struct pw_proc_report *p, const char *s)
{
	return pw_proc_report_line(p, s, strlen(s));
}

static void refs_match(const struct pw_hash_algo *algo)
{
	struct pw_proc_refs r = {NULL, 0};
	struct pw_receive_cmds c;
	char a[65], z[65];

	hexfill(a, 'a', algo);
	hexfill(z, '0', algo);
	pw_receive_cmds_init(&c, algo);
	add_cmd(&c, z, a, "refs/for/main/topic"); /* create */
	add_cmd(&c, a, a, "refs/heads/main");     /* modify */
	add_cmd(&c, a, z, "refs/heads/gone");     /* delete */
	add_cmd(&c, z, a, "refs/forx");           /* not under refs/for */
	CHECK(!pw_proc_refs_match(&r, &c.v[0]));
	CHECK_EQ_INT(pw_proc_refs_add(&r, "refs/for/"), 0);
	CHECK(pw_proc_refs_match(&r, &c.v[0]));
	CHECK(!pw_proc_refs_match(&r, &c.v[1]));
	CHECK(!pw_proc_refs_match(&r, &c.v[3]));
	CHECK_EQ_INT(pw_proc_refs_add(&r, "m:refs/heads"), 0);
	CHECK(pw_proc_refs_match(&r, &c.v[1]));
	CHECK(!pw_proc_refs_match(&r, &c.v[2]));
	pw_proc_refs_free(&r);
	/* "!" with a kind: everything of that kind outside the prefix */
	CHECK_EQ_INT(pw_proc_refs_add(&r, "a!:refs/heads"), 0);
	CHECK(pw_proc_refs_match(&r, &c.v[0]));
	CHECK(pw_proc_refs_match(&r, &c.v[3]));
	CHECK(!pw_proc_refs_match(&r, &c.v[1]));
	pw_proc_refs_free(&r);
	/* "!" alone selects no kind: it matches nothing */
	CHECK_EQ_INT(pw_proc_refs_add(&r, "!:refs/heads"), 0);
	CHECK(!pw_proc_refs_match(&r, &c.v[0]) && !pw_proc_refs_match(&r, &c.v[2]));
	CHECK_EQ_INT(pw_proc_refs_add(&r, "d:refs"), 0);
	CHECK(pw_proc_refs_match(&r, &c.v[2]));
	pw_proc_refs_free(&r);
	CHECK_EQ_INT(pw_proc_refs_add(&r, ":"), 0); /* empty prefix: every ref? no kind */
	CHECK(!pw_proc_refs_match(&r, &c.v[0]));
	pw_proc_refs_free(&r);
	pw_receive_cmds_free(&c);
}

static void report(const struct pw_hash_algo *algo)
{
	struct pw_receive_cmds c;
	struct pw_proc_report p;
	struct pw_buf msg = PW_BUF_INIT;
	char a[65], b[65], z[65], buf[300];
	size_t i;

	hexfill(a, 'a', algo);
	hexfill(b, 'b', algo);
	hexfill(z, '0', algo);
	pw_receive_cmds_init(&c, algo);
	add_cmd(&c, z, a, "refs/for/main/one");
	add_cmd(&c, z, a, "refs/for/main/two");
	add_cmd(&c, z, a, "refs/for/main/three");
	add_cmd(&c, a, b, "refs/heads/main");
	add_cmd(&c, z, a, "refs/for/main/four");
	for (i = 0; i < 3; i++)
		c.v[i].run_proc = PW_RECEIVE_PROC_SCHEDULED;
	c.v[4].run_proc = PW_RECEIVE_PROC_SCHEDULED;
	pw_proc_report_init(&p, &c, &msg);
	CHECK_EQ_INT(line(&p, "ok refs/for/main/one\n"), 0);
	CHECK_EQ_INT(line(&p, "option refname refs/changes/1"), 0);
	snprintf(buf, sizeof(buf), "option old-oid %s", b);
	CHECK_EQ_INT(line(&p, buf), 0);
	snprintf(buf, sizeof(buf), "option new-oid %s", a);
	CHECK_EQ_INT(line(&p, buf), 0);
	CHECK_EQ_INT(line(&p, "option forced-update"), 0);
	CHECK_EQ_INT(line(&p, "ok refs/for/main/one"), 0); /* a second rewrite */
	CHECK_EQ_INT(line(&p, "option new-oid not-hex"), 0);
	CHECK_EQ_INT(line(&p, "ng refs/for/main/two too bad"), 0);
	CHECK_EQ_INT(line(&p, "option refname after-ng"), 0);
	CHECK_EQ_INT(line(&p, "ok refs/for/main/three"), 0);
	CHECK_EQ_INT(line(&p, "option fall-through"), 0);
	CHECK_EQ_INT(line(&p, "ok refs/heads/main"), 0);
	CHECK_EQ_INT(line(&p, "ok refs/heads/nowhere"), 0);
	CHECK_EQ_INT(line(&p, "ok"), 0);
	CHECK_EQ_INT(line(&p, "xx refs/for/main/one"), 0);
	CHECK_EQ_INT(pw_proc_report_line(&p, "ok refs/for\0/main/one", 21), 0);
	CHECK_EQ_INT(pw_proc_report_line(&p, "", 0), 0);
	pw_proc_report_finish(&p);
	CHECK(p.failed);
	CHECK(c.v[0].run_proc & PW_RECEIVE_PROC_RETURNED);
	CHECK(!c.v[0].error);
	CHECK(c.v[0].reports && c.v[0].reports->next && !c.v[0].reports->next->next);
	if (c.v[0].reports && c.v[0].reports->next) {
		struct pw_receive_report *r = c.v[0].reports;

		CHECK_STR(r->ref_name, "refs/changes/1");
		CHECK(r->has_old && r->has_new && r->forced_update);
		CHECK(r->old_oid.algo == algo->id);
		CHECK(!r->next->ref_name && !r->next->has_new);
	}
	CHECK_STR(c.v[1].error, "too bad");
	CHECK(!c.v[2].run_proc && c.v[2].proc_fell_through && !c.v[2].error);
	CHECK(!c.v[3].error && !c.v[3].run_proc);
	CHECK_STR(c.v[4].error, "proc-receive failed to report status");
	CHECK(strstr(msg.data, "'option' without a matching 'ok/ng'") != NULL);
	CHECK(strstr(msg.data, "status on unexpected ref: refs/heads/main") != NULL);
	CHECK(strstr(msg.data, "status on unknown ref: refs/heads/nowhere") != NULL);
	CHECK(strstr(msg.data, "incomplete status line: 'ok'") != NULL);
	CHECK(strstr(msg.data, "bad status 'xx' on ref 'refs/for/main/one'") != NULL);
	CHECK(strstr(msg.data, "unknown ref: refs/for\n") != NULL);
	/* an ng without a reason */
	c.v[4].error = NULL;
	CHECK_EQ_INT(line(&p, "ng refs/for/main/four"), 0);
	CHECK_STR(c.v[4].error, "failed");
	pw_buf_free(&msg);
	pw_receive_cmds_free(&c);

	/* the collected text is bounded */
	pw_receive_cmds_init(&c, algo);
	pw_proc_report_init(&p, &c, &msg);
	for (i = 0; i < 5000; i++)
		line(&p, "garbage");
	CHECK(msg.len < PW_PROC_MAX_MSG);
	pw_buf_free(&msg);
	pw_receive_cmds_free(&c);
}

static void cert(const struct pw_hash_algo *algo)
{
	struct pw_receive_cmds c;
	struct pw_error err;
	struct pw_nonce_check nc;
	struct pw_str v;
	struct pw_buf b = PW_BUF_INIT;
	char a[65], z[65], *nonce, *other;
	char *opts[] = {"foo", "bar"};
	size_t pos = 0, payload;

	hexfill(a, 'a', algo);
	hexfill(z, '0', algo);
	nonce = pw_push_cert_nonce(algo, "sekrit", "/repo.git", 1700000000);
	CHECK_STR(nonce, algo == &pw_hash_sha1
	                         ? "1700000000-09e06f7f07d696ca9c6486add6192991416e26fd"
	                         : "1700000000-af7c3673f490920b1be738e62f3e028910fa617d1640836da"
	                           "8c4037238ea616d");
	if (algo == &pw_hash_sha256) { /* a key longer than the block */
		char key[101], *n;

		memset(key, 'k', 100);
		key[100] = '\0';
		n = pw_push_cert_nonce(algo, key, "/repo.git", 1700000000);
		CHECK_STR(n, "1700000000-441392d3faa9427cf1514786440faba968849da150db007f927a190f3"
		             "6b79ca1");
		free(n);
	}
	pw_buf_addf(&b,
	            "certificate version 0.1\npusher P <p@x> 1700000000 +0000\npushee /r\n"
	            "nonce %s\npush-option foo\npush-option bar\n\n%s %s refs/heads/a\n"
	            "%s %s refs/heads/b\n-----BEGIN PGP SIGNATURE-----\nxyz\n"
	            "-----END PGP SIGNATURE-----\n",
	            nonce, z, a, a, z);
	payload = pw_push_cert_sig_start(b.data, b.len);
	CHECK(payload < b.len && !strncmp(b.data + payload, "-----BEGIN PGP", 14));
	CHECK(pw_push_cert_header(b.data, b.len, "pushee", &pos, &v) && v.len == 2);
	CHECK(!pw_push_cert_header(b.data, b.len, "refs/heads/a", &pos, &v));
	CHECK(pw_push_cert_options_match(b.data, payload, opts, 2));
	CHECK(!pw_push_cert_options_match(b.data, payload, opts, 1));
	opts[1] = "baz";
	CHECK(!pw_push_cert_options_match(b.data, payload, opts, 2));
	CHECK(pw_push_cert_options_match("", 0, opts, 2)); /* no certificate */
	pw_receive_cmds_init(&c, algo);
	CHECK_EQ_INT(pw_push_cert_commands(b.data, b.len, &c, &err), 0);
	CHECK_EQ_INT((int)c.nr, 2);
	if (c.nr == 2)
		CHECK_STR(c.v[1].name, "refs/heads/b");
	pw_receive_cmds_free(&c);
	pw_receive_cmds_init(&c, algo);
	CHECK_EQ_INT(pw_push_cert_commands("no blank line\nat all\n", 21, &c, &err), PW_EPROTO);
	CHECK(strstr(err.msg, "malformed push certificate") != NULL);
	CHECK_EQ_INT(pw_push_cert_commands("h\n\nnot a command\n", 17, &c, &err), PW_EPROTO);
	pw_receive_cmds_free(&c);

	/* the nonce */
	memset(&nc, 0, sizeof(nc));
	nc.algo = algo;
	nc.seed = "sekrit";
	nc.path = "/repo.git";
	nc.issued = nonce;
	CHECK_EQ_INT(pw_push_cert_check_nonce(&nc, b.data, payload), 0);
	CHECK(nc.status == pw_nonce_ok);
	nc.issued = NULL;
	pw_push_cert_check_nonce(&nc, b.data, payload);
	CHECK(nc.status == pw_nonce_unsolicited);
	pw_push_cert_check_nonce(&nc, "a b\n\n", 5);
	CHECK(nc.status == pw_nonce_missing);
	other = pw_push_cert_nonce(algo, "sekrit", "/repo.git", 1700000010);
	nc.issued = other;
	pw_push_cert_check_nonce(&nc, b.data, payload);
	CHECK(nc.status == pw_nonce_bad); /* not stateless */
	nc.stateless = 1;
	pw_push_cert_check_nonce(&nc, b.data, payload);
	CHECK(nc.status == pw_nonce_slop && nc.slop == 10 && !nc.adopted);
	nc.slop_limit = 30;
	pw_push_cert_check_nonce(&nc, b.data, payload);
	CHECK(nc.status == pw_nonce_ok && nc.adopted && !strcmp(nc.adopted, nonce));
	free(nc.adopted);
	nc.seed = "other seed";
	pw_push_cert_check_nonce(&nc, b.data, payload);
	CHECK(nc.status == pw_nonce_bad);
	pw_push_cert_check_nonce(&nc, "nonce x-1\n\n", 11);
	CHECK(nc.status == pw_nonce_bad);
	pw_push_cert_check_nonce(&nc, "nonce 99999999999999999999999-1\n\n", 33);
	CHECK(nc.status == pw_nonce_bad);
	free(other);
	free(nonce);
	pw_buf_free(&b);
}

static void gpg_status(void)
{
	static const char good[] =
	        "[GNUPG:] NEWSIG\n[GNUPG:] KEY_CONSIDERED X 0\n"
	        "[GNUPG:] GOODSIG 13B6F51ECDDE430D C O Mitter <c@x.com>\n"
	        "[GNUPG:] VALIDSIG ABC 2020-01-01\n[GNUPG:] TRUST_ULTIMATE 0 pgp\n";
	static const char two[] = "[GNUPG:] GOODSIG A a\n[GNUPG:] BADSIG B b\n";
	struct pw_sigcheck s;

	memset(&s, 0, sizeof(s));
	s.result = 'N';
	CHECK_EQ_INT(pw_sigcheck_parse_gpg(&s, good, sizeof(good) - 1), 0);
	CHECK(s.result == 'G');
	CHECK_STR(s.key, "13B6F51ECDDE430D");
	CHECK_STR(s.signer, "C O Mitter <c@x.com>");
	pw_sigcheck_free(&s);
	s.result = 'N';
	pw_sigcheck_parse_gpg(&s, "[GNUPG:] ERRSIG 0123 1 8 00 1 9\n", 32);
	CHECK(s.result == 'E');
	CHECK_STR(s.key, "0123");
	CHECK(!s.signer);
	pw_sigcheck_free(&s);
	s.result = 'N';
	pw_sigcheck_parse_gpg(&s, two, sizeof(two) - 1);
	CHECK(s.result == 'E' && !s.key && !s.signer); /* two signatures: refused */
	s.result = 'N';
	pw_sigcheck_parse_gpg(&s, "[GNUPG:] GOODSIG", 16); /* cut short */
	CHECK(s.result == 'N');
	pw_sigcheck_parse_gpg(&s, "[GNUPG:] EXPKEYSIG K", 20);
	CHECK(s.result == 'Y');
	CHECK_STR(s.key, "K");
	pw_sigcheck_free(&s);
}

int main(void)
{
	refs_match(&pw_hash_sha1);
	refs_match(&pw_hash_sha256);
	report(&pw_hash_sha1);
	report(&pw_hash_sha256);
	cert(&pw_hash_sha1);
	cert(&pw_hash_sha256);
	gpg_status();
	return pw_test_done();
}
