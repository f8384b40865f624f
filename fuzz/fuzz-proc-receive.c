/* Fuzz what receive-pack reads from a proc-receive hook and from a signed
 * push: the first byte picks the algorithm, the rest is read three ways —
 * as a pkt-line stream of proc-receive report lines (against a fixed set of
 * commands, some sent to the hook), as a push certificate (commands,
 * headers, push options, nonce) and as gpg --status-fd output. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "packwire/pkt.h"
#include "server/proc-receive.h"
#include "server/pushcert.h"

static void commands(struct pw_receive_cmds *c, const struct pw_hash_algo *algo)
{
	static const char *const names[] = {"refs/for/main/topic", "refs/heads/main",
	                                    "refs/for/next/topic", "refs/heads/gone"};
	char line[256], a[65], z[65];
	struct pw_error err;
	size_t i;

	memset(a, 'a', algo->hexsz);
	a[algo->hexsz] = '\0';
	memset(z, '0', algo->hexsz);
	z[algo->hexsz] = '\0';
	for (i = 0; i < 4; i++) {
		size_t n = (size_t)snprintf(line, sizeof(line), "%s %s %s", i == 3 ? a : z,
		                            i == 3 ? z : a, names[i]);

		if (pw_receive_cmds_add_line(c, line, n, &err))
			return;
		c->v[c->nr - 1].run_proc = (i % 2) ? 0 : PW_RECEIVE_PROC_SCHEDULED;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct pw_hash_algo *algo;
	struct pw_receive_cmds cmds;
	struct pw_proc_report rep;
	struct pw_buf msg = PW_BUF_INIT;
	struct pw_error err;
	struct pw_sigcheck sig;
	struct pw_nonce_check nc;
	struct pw_proc_refs refs = {NULL, 0};
	const char *text;
	char *opts[] = {"foo", "bar"}, *cfg;
	size_t pos = 1, used, len, payload, i;

	if (!size)
		return 0;
	algo = (data[0] & 1) ? &pw_hash_sha256 : &pw_hash_sha1;
	text = (const char *)data + 1;
	len = size - 1;

	/* the hook's report */
	pw_receive_cmds_init(&cmds, algo);
	commands(&cmds, algo);
	pw_proc_report_init(&rep, &cmds, &msg);
	while (pos < size) {
		struct pw_pkt pkt;

		if (pw_pkt_decode(data + pos, size - pos, &pkt, &used, &err))
			break;
		pos += used;
		if (pkt.kind != PW_PKT_DATA)
			break;
		if (pw_proc_report_line(&rep, pkt.data, pkt.len))
			break;
	}
	pw_proc_report_finish(&rep);
	pw_buf_free(&msg);
	pw_receive_cmds_free(&cmds);

	/* receive.procReceiveRefs values, one per line, against the commands */
	pw_receive_cmds_init(&cmds, algo);
	commands(&cmds, algo);
	if ((cfg = strndup(text, len)) != NULL) {
		char *save = NULL, *v;

		for (v = strtok_r(cfg, "\n", &save); v; v = strtok_r(NULL, "\n", &save))
			if (pw_proc_refs_add(&refs, v))
				break;
		for (i = 0; i < cmds.nr; i++)
			(void)pw_proc_refs_match(&refs, &cmds.v[i]);
		pw_proc_refs_free(&refs);
		free(cfg);
	}
	pw_receive_cmds_free(&cmds);

	/* a push certificate */
	pw_receive_cmds_init(&cmds, algo);
	(void)pw_push_cert_commands(text, len, &cmds, &err);
	pw_receive_cmds_free(&cmds);
	payload = pw_push_cert_sig_start(text, len);
	(void)pw_push_cert_options_match(text, payload, opts, 2);
	memset(&nc, 0, sizeof(nc));
	nc.algo = algo;
	nc.seed = "sekrit";
	nc.path = "/repo.git";
	nc.issued = "1700000000-00";
	nc.stateless = 1;
	nc.slop_limit = 30;
	if (!pw_push_cert_check_nonce(&nc, text, payload))
		free(nc.adopted);

	/* gpg's status output */
	memset(&sig, 0, sizeof(sig));
	sig.result = 'N';
	(void)pw_sigcheck_parse_gpg(&sig, text, len);
	pw_sigcheck_free(&sig);
	return 0;
}
