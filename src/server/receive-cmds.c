/* The command list of a push: "<old> <new> <refname>" lines, the first one
 * with "\0<capabilities>". Pure parsing, no I/O. */
#include <stdlib.h>
#include <string.h>

#include "server/receive-cmds.h"

#define MAX_REFNAME 4096

void pw_receive_cmds_init(struct pw_receive_cmds *c, const struct pw_hash_algo *algo)
{
	memset(c, 0, sizeof(*c));
	c->algo = algo;
}

void pw_receive_cmds_free(struct pw_receive_cmds *c)
{
	size_t i;

	for (i = 0; i < c->nr; i++) {
		free(c->v[i].name);
		free(c->v[i].error_own);
		free(c->v[i].worktree);
		free(c->v[i].worktree_git_dir);
		while (c->v[i].reports) {
			struct pw_receive_report *r = c->v[i].reports;

			c->v[i].reports = r->next;
			free(r->ref_name);
			free(r);
		}
	}
	free(c->v);
	free(c->caps);
	memset(c, 0, sizeof(*c));
}

void pw_receive_line_caps(const char *line, size_t len, struct pw_str *caps)
{
	const char *nul = memchr(line, '\0', len);

	caps->p = nul ? nul + 1 : line + len;
	caps->len = nul ? len - (size_t)(nul + 1 - line) : 0;
	if (caps->len && caps->p[caps->len - 1] == '\n')
		caps->len--;
}

static void show(char *dst, size_t n, const char *s, size_t len)
{
	size_t i, k = 0;

	for (i = 0; i < len && k + 1 < n; i++)
		dst[k++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
	dst[k] = '\0';
}

int pw_receive_cmds_add_line(struct pw_receive_cmds *c, const char *line, size_t len,
                             struct pw_error *err)
{
	const struct pw_hash_algo *algo = c->algo;
	size_t hexsz = algo->hexsz, cmdlen, namelen;
	const char *nul = memchr(line, '\0', len), *name;
	struct pw_receive_cmd *cmd;
	struct pw_str caps;
	char shown[96];

	cmdlen = nul ? (size_t)(nul - line) : len;
	if (!nul && cmdlen && line[cmdlen - 1] == '\n')
		cmdlen--;
	show(shown, sizeof(shown), line, cmdlen);
	if (cmdlen < 2 * hexsz + 3 || line[hexsz] != ' ' || line[2 * hexsz + 1] != ' ')
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: expected '<old> <new> <ref>' with %s ids, got "
		                    "'%s'",
		                    algo->name, shown);
	if (c->nr >= PW_RECEIVE_MAX_CMDS)
		return pw_error_set(err, PW_ETOOBIG, "too many commands in one push (more than %d)",
		                    PW_RECEIVE_MAX_CMDS);
	name = line + 2 * hexsz + 2;
	namelen = cmdlen - (2 * hexsz + 2);
	if (!namelen || namelen > MAX_REFNAME || memchr(name, '\0', namelen) ||
	    memchr(name, '\n', namelen))
		return pw_error_set(err, PW_EPROTO, "protocol error: bad ref name in '%s'", shown);
	if (c->nr == c->alloc) {
		size_t n = c->alloc ? c->alloc * 2 : 8;
		struct pw_receive_cmd *v = realloc(c->v, n * sizeof(*v));

		if (!v)
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		c->v = v;
		c->alloc = n;
	}
	cmd = &c->v[c->nr];
	memset(cmd, 0, sizeof(*cmd));
	if (pw_oid_from_hex(&cmd->old_oid, line, hexsz, algo) ||
	    pw_oid_from_hex(&cmd->new_oid, line + hexsz + 1, hexsz, algo))
		return pw_error_set(err, PW_EPROTO,
		                    "protocol error: expected '<old> <new> <ref>' with %s ids, got "
		                    "'%s'",
		                    algo->name, shown);
	cmd->name = malloc(namelen + 1);
	if (!cmd->name)
		return pw_error_set(err, PW_ENOMEM, "out of memory");
	memcpy(cmd->name, name, namelen);
	cmd->name[namelen] = '\0';
	if (!c->seen_caps) {
		pw_receive_line_caps(line, len, &caps);
		c->caps = malloc(caps.len + 1);
		if (!c->caps) {
			free(cmd->name);
			return pw_error_set(err, PW_ENOMEM, "out of memory");
		}
		memcpy(c->caps, caps.p, caps.len);
		c->caps[caps.len] = '\0';
		c->seen_caps = 1;
	}
	c->nr++;
	return 0;
}
