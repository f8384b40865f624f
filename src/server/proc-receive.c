/* The proc-receive hook: see proc-receive.h. The hook's stdout carries
 * pkt-lines; its stderr goes to the user as it arrives, so every wait on
 * the hook also drains stderr (and what it writes ahead on stdout), and a
 * hook that dies mid-conversation is an error, never a SIGPIPE or a hang. */
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "repo/hook.h"
#include "server/proc-receive.h"
#include "util/spawn.h"

/* The hook's stdout may run ahead of us by this much before it is an error. */
#define MAX_AHEAD (16u << 20)

/* ---- receive.procReceiveRefs -------------------------------------------- */

int pw_proc_refs_add(struct pw_proc_refs *r, const char *value)
{
	struct pw_proc_ref ref, *v;
	const char *colon = strchr(value, ':');
	size_t len;

	if (r->nr >= PW_PROC_MAX_REFS)
		return PW_ETOOBIG;
	memset(&ref, 0, sizeof(ref));
	if (colon) {
		for (; value < colon; value++) {
			if (*value == 'a')
				ref.add = 1;
			else if (*value == 'd')
				ref.del = 1;
			else if (*value == 'm')
				ref.mod = 1;
			else if (*value == '!')
				ref.neg = 1;
		}
		value++;
	} else {
		ref.add = ref.del = ref.mod = 1;
	}
	len = strlen(value);
	while (len && value[len - 1] == '/')
		len--;
	if (!(ref.prefix = strndup(value, len)))
		return PW_ENOMEM;
	v = realloc(r->v, (r->nr + 1) * sizeof(*v));
	if (!v) {
		free(ref.prefix);
		return PW_ENOMEM;
	}
	r->v = v;
	r->v[r->nr++] = ref;
	return 0;
}

void pw_proc_refs_free(struct pw_proc_refs *r)
{
	size_t i;

	for (i = 0; i < r->nr; i++)
		free(r->v[i].prefix);
	free(r->v);
	r->v = NULL;
	r->nr = 0;
}

/* Git's rule: the first entry whose kind fits decides; a prefix matches a
 * whole path component ("refs/for" matches "refs/for/x", not "refs/forx");
 * a negated entry matches every ref its prefix does not. */
int pw_proc_refs_match(const struct pw_proc_refs *r, const struct pw_receive_cmd *c)
{
	int create = pw_oid_is_zero(&c->old_oid), del = pw_oid_is_zero(&c->new_oid);
	size_t i;

	for (i = 0; i < r->nr; i++) {
		const struct pw_proc_ref *p = &r->v[i];
		size_t n = strlen(p->prefix);
		int hit;

		if ((!p->add && create) || (!p->del && del) || (!p->mod && !create && !del))
			continue;
		hit = !strncmp(c->name, p->prefix, n) && (!c->name[n] || c->name[n] == '/');
		if (hit != (int)p->neg)
			return 1;
	}
	return 0;
}

/* ---- the report ---------------------------------------------------------- */

void pw_proc_report_init(struct pw_proc_report *p, struct pw_receive_cmds *cmds, struct pw_buf *msg)
{
	memset(p, 0, sizeof(*p));
	p->cmds = cmds;
	p->msg = msg;
}

/* Collected text is bounded: past PW_PROC_MAX_MSG it is dropped. */
static void say(struct pw_proc_report *p, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
static void say(struct pw_proc_report *p, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n > 0 && p->msg->len + (size_t)n < PW_PROC_MAX_MSG)
		pw_buf_adds(p->msg, line);
}

static int find_cmd(struct pw_proc_report *p, size_t from, const char *name, size_t *at)
{
	size_t i;

	for (i = from; i < p->cmds->nr; i++)
		if (!strcmp(p->cmds->v[i].name, name)) {
			*at = i;
			return 1;
		}
	return 0;
}

static int parse_hex(struct pw_proc_report *p, const char *v, struct pw_oid *oid)
{
	size_t hexsz = p->cmds->algo->hexsz;

	return v && strlen(v) >= hexsz && !pw_oid_from_hex(oid, v, hexsz, p->cmds->algo);
}

static int option_line(struct pw_proc_report *p, char *rest)
{
	struct pw_receive_cmd *hint = p->has_hint ? &p->cmds->v[p->hint] : NULL;
	char *key = rest, *val = strchr(rest, ' ');
	struct pw_receive_report *r;

	if (!hint || !(p->report || p->new_report)) {
		if (!p->option_once++)
			say(p, "proc-receive reported 'option' without a matching 'ok/ng' "
			       "directive\n");
		p->failed = 1;
		return 0;
	}
	if (p->new_report) {
		if (p->nreports >= PW_PROC_MAX_REPORTS) {
			say(p, "proc-receive reported too many refs (more than %d)\n",
			    PW_PROC_MAX_REPORTS);
			p->failed = 1;
			p->new_report = 0;
			return 0;
		}
		if (!(r = calloc(1, sizeof(*r))))
			return PW_ENOMEM;
		if (!hint->reports) {
			hint->reports = r;
		} else {
			struct pw_receive_report *t = hint->reports;

			while (t->next)
				t = t->next;
			t->next = r;
		}
		p->report = r;
		p->nreports++;
		p->new_report = 0;
	}
	r = p->report;
	if (val)
		*val++ = '\0';
	if (!strcmp(key, "refname")) {
		free(r->ref_name);
		r->ref_name = NULL;
		if (val && !(r->ref_name = strdup(val)))
			return PW_ENOMEM;
	} else if (!strcmp(key, "old-oid") && parse_hex(p, val, &r->old_oid)) {
		r->has_old = 1;
	} else if (!strcmp(key, "new-oid") && parse_hex(p, val, &r->new_oid)) {
		r->has_new = 1;
	} else if (!strcmp(key, "forced-update")) {
		r->forced_update = 1;
	} else if (!strcmp(key, "fall-through")) {
		/* handed back: receive-pack updates the ref itself */
		hint->run_proc = 0;
		hint->proc_fell_through = 1;
	}
	return 0;
}

int pw_proc_report_line(struct pw_proc_report *p, const char *line, size_t len)
{
	char *buf, *head, *rest, *reason;
	struct pw_receive_cmd *c;
	size_t at;
	int rc = 0;

	p->responses++;
	len = strnlen(line, len);
	if (len && line[len - 1] == '\n')
		len--;
	if (!(buf = strndup(line, len)))
		return PW_ENOMEM;
	head = buf;
	if (!(rest = strchr(head, ' '))) {
		say(p, "proc-receive reported incomplete status line: '%.200s'\n", head);
		p->failed = 1;
		goto out;
	}
	*rest++ = '\0';
	if (!strcmp(head, "option")) {
		rc = option_line(p, rest);
		goto out;
	}
	p->report = NULL;
	p->new_report = 0;
	if ((reason = strchr(rest, ' ')))
		*reason++ = '\0';
	if (strcmp(head, "ok") && strcmp(head, "ng")) {
		say(p, "proc-receive reported bad status '%.200s' on ref '%.200s'\n", head, rest);
		p->failed = 1;
		goto out;
	}
	/* from the last ref named on, then from the start */
	if (!(p->has_hint && find_cmd(p, p->hint, rest, &at)) && !find_cmd(p, 0, rest, &at)) {
		p->has_hint = 0;
		say(p, "proc-receive reported status on unknown ref: %.200s\n", rest);
		p->failed = 1;
		goto out;
	}
	p->hint = at;
	p->has_hint = 1;
	c = &p->cmds->v[at];
	if (!c->run_proc) {
		say(p, "proc-receive reported status on unexpected ref: %.200s\n", rest);
		p->failed = 1;
		goto out;
	}
	c->run_proc |= PW_RECEIVE_PROC_RETURNED;
	if (!strcmp(head, "ng")) {
		free(c->error_own);
		c->error_own = NULL;
		if (reason && !(c->error_own = strdup(reason))) {
			rc = PW_ENOMEM;
			goto out;
		}
		c->error = c->error_own ? c->error_own : "failed";
		p->failed = 1;
		goto out;
	}
	p->new_report = 1;
out:
	free(buf);
	return rc;
}

void pw_proc_report_finish(struct pw_proc_report *p)
{
	size_t i;

	for (i = 0; i < p->cmds->nr; i++) {
		struct pw_receive_cmd *c = &p->cmds->v[i];

		if (c->run_proc && !c->error && !(c->run_proc & PW_RECEIVE_PROC_RETURNED)) {
			c->error = "proc-receive failed to report status";
			p->failed = 1;
		}
	}
}

/* ---- the conversation ---------------------------------------------------- */

struct proc {
	int pid, in, out, err;
	struct pw_buf rd; /* stdout not yet parsed, from rpos */
	size_t rpos;
	const struct pw_proc_receive *r;
};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Wait for the hook once: relay stderr, buffer stdout, and write from
 * *data when wlen is given. 0, or PW_EIO (writing failed, stdout overran). */
static int pump_once(struct proc *p, const char *data, size_t *wlen)
{
	struct pollfd fds[3];
	int n = 0, iw = -1, io = -1, ie = -1;
	char buf[8192];
	ssize_t got;

	if (p->out >= 0) {
		fds[n].fd = p->out;
		fds[n].events = POLLIN;
		io = n++;
	}
	if (p->err >= 0) {
		fds[n].fd = p->err;
		fds[n].events = POLLIN;
		ie = n++;
	}
	if (wlen && p->in >= 0) {
		fds[n].fd = p->in;
		fds[n].events = POLLOUT;
		iw = n++;
	}
	if (!n)
		return PW_EIO;
	if (poll(fds, (nfds_t)n, -1) < 0)
		return errno == EINTR ? 0 : PW_EIO;
	if (ie >= 0 && fds[ie].revents) {
		got = read(p->err, buf, sizeof(buf));
		if (got > 0 && p->r->output)
			p->r->output(p->r->ctx, buf, (size_t)got);
		else if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN))
			close_fd(&p->err);
	}
	if (io >= 0 && fds[io].revents) {
		got = read(p->out, buf, sizeof(buf));
		if (got > 0) {
			if (p->rd.len - p->rpos + (size_t)got > MAX_AHEAD ||
			    pw_buf_add(&p->rd, buf, (size_t)got))
				return PW_EIO;
		} else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
			close_fd(&p->out);
		}
	}
	if (iw >= 0 && fds[iw].revents) {
		got = write(p->in, data, *wlen);
		if (got > 0)
			*wlen -= (size_t)got;
		else if (got < 0 && errno != EAGAIN && errno != EINTR)
			return PW_EIO; /* EPIPE: the hook is gone */
	}
	return 0;
}

static int send_all(struct proc *p, const struct pw_buf *b)
{
	size_t left = b->len;
	int rc;

	if (p->in < 0)
		return PW_EIO;
	while (left)
		if ((rc = pump_once(p, b->data + (b->len - left), &left)))
			return rc;
	return 0;
}

/* The next pkt-line on the hook's stdout: 0 with *pkt (a view valid until
 * the next call), 1 at end of file, PW_EPROTO/PW_EIO. */
static int next_pkt(struct proc *p, struct pw_pkt *pkt)
{
	struct pw_error e;
	size_t used;
	int rc;

	for (;;) {
		rc = pw_pkt_decode((const uint8_t *)p->rd.data + p->rpos, p->rd.len - p->rpos, pkt,
		                   &used, &e);
		if (!rc) {
			p->rpos += used;
			return 0;
		}
		if (rc != PW_EMORE)
			return PW_EPROTO;
		/* keep the unread tail at the front before reading more */
		if (p->rpos) {
			memmove(p->rd.data, p->rd.data + p->rpos, p->rd.len - p->rpos);
			pw_buf_setlen(&p->rd, p->rd.len - p->rpos);
			p->rpos = 0;
		}
		if (p->out < 0)
			return 1;
		if ((rc = pump_once(p, NULL, NULL)))
			return rc;
	}
}

static int negotiate(struct proc *p, int *use_options, struct pw_buf *msg)
{
	struct pw_buf b = PW_BUF_INIT;
	struct pw_pkt pkt;
	long version = 0;
	int rc;

	if (p->r->atomic || p->r->push_options)
		rc = pw_pkt_writef(&b, "version=1%c%s%s%s\n", '\0', p->r->atomic ? "atomic" : "",
		                   p->r->atomic && p->r->push_options ? " " : "",
		                   p->r->push_options ? "push-options" : "");
	else
		rc = pw_pkt_writes(&b, "version=1\n");
	if (!rc)
		rc = pw_pkt_flush(&b);
	if (rc) {
		pw_buf_free(&b);
		return PW_ENOMEM;
	}
	rc = send_all(p, &b);
	pw_buf_free(&b);
	while (!rc) {
		if ((rc = next_pkt(p, &pkt)))
			break;
		if (pkt.kind != PW_PKT_DATA)
			break;
		pw_pkt_chomp(&pkt);
		if (pkt.len > 8 && !memcmp(pkt.data, "version=", 8)) {
			size_t vlen = strnlen(pkt.data, pkt.len);
			char num[16];

			snprintf(num, sizeof(num), "%.*s", (int)(vlen - 8 < 15 ? vlen - 8 : 15),
			         pkt.data + 8);
			version = strtol(num, NULL, 10);
			if (vlen < pkt.len &&
			    pw_caps_has(pkt.data + vlen + 1, pkt.len - vlen - 1, "push-options"))
				*use_options = 1;
		}
	}
	if (rc) {
		pw_buf_adds(msg, "fail to negotiate version with proc-receive hook");
		return 1;
	}
	if (version != 0 && version != 1) {
		pw_buf_addf(msg, "proc-receive version '%ld' is not supported", version);
		return 1;
	}
	return 0;
}

static int send_commands(struct proc *p, int use_options, struct pw_buf *msg)
{
	struct pw_buf b = PW_BUF_INIT;
	char o[PW_MAX_HEXSZ + 1], n[PW_MAX_HEXSZ + 1];
	size_t i;
	int rc = 0;

	for (i = 0; i < p->r->cmds->nr && !rc; i++) {
		struct pw_receive_cmd *c = &p->r->cmds->v[i];

		if (!c->run_proc || c->skip_update || c->error)
			continue;
		rc = pw_pkt_writef(&b, "%s %s %s", pw_oid_to_hex(&c->old_oid, o),
		                   pw_oid_to_hex(&c->new_oid, n), c->name);
	}
	if (!rc)
		rc = pw_pkt_flush(&b);
	if (rc) {
		pw_buf_free(&b);
		return PW_ENOMEM;
	}
	if (send_all(p, &b)) {
		pw_buf_free(&b);
		pw_buf_adds(msg, "fail to write commands to proc-receive hook");
		return 1;
	}
	pw_buf_reset(&b);
	if (!use_options) {
		pw_buf_free(&b);
		return 0;
	}
	for (i = 0; i < p->r->npopts && !rc; i++)
		rc = pw_pkt_writes(&b, p->r->popts[i]);
	if (!rc)
		rc = pw_pkt_flush(&b);
	if (rc) {
		pw_buf_free(&b);
		return PW_ENOMEM;
	}
	rc = send_all(p, &b);
	pw_buf_free(&b);
	if (rc) {
		pw_buf_adds(msg, "fail to write push-options to proc-receive hook");
		return 1;
	}
	return 0;
}

static int read_report(struct proc *p, struct pw_buf *msg)
{
	struct pw_proc_report rep;
	struct pw_pkt pkt;
	int rc;

	pw_proc_report_init(&rep, p->r->cmds, msg);
	for (;;) {
		rc = next_pkt(p, &pkt);
		if (rc || pkt.kind != PW_PKT_DATA) {
			if (rc && !rep.responses) {
				pw_buf_adds(msg, "proc-receive exited abnormally");
				return 1;
			}
			break;
		}
		if ((rc = pw_proc_report_line(&rep, pkt.data, pkt.len)))
			return rc;
	}
	pw_proc_report_finish(&rep);
	return rep.failed;
}

int pw_proc_receive_run(const struct pw_proc_receive *r, struct pw_buf *msg)
{
	struct pw_hook_run h;
	struct pw_error e;
	struct proc p;
	int use_options = 0, rc, st = -1;

	memset(&p, 0, sizeof(p));
	p.r = r;
	p.rd = (struct pw_buf)PW_BUF_INIT;
	memset(&h, 0, sizeof(h));
	h.path = r->path;
	h.env = r->env;
	h.cwd = r->cwd;
	if ((rc = pw_hook_spawn(&h, &p.pid, &p.in, &p.out, &p.err, &e))) {
		if (rc == PW_ENOMEM)
			return rc;
		pw_buf_adds(msg, e.msg);
		return 1;
	}
	rc = negotiate(&p, &use_options, msg);
	if (!rc)
		rc = send_commands(&p, use_options, msg);
	if (!rc)
		rc = read_report(&p, msg);
	/* the hook's last words on stderr come before our verdict */
	close_fd(&p.in);
	close_fd(&p.out);
	while (p.err >= 0)
		if (pump_once(&p, NULL, NULL))
			break;
	close_fd(&p.err);
	pw_spawn_wait(p.pid, &st, NULL, NULL);
	if (rc >= 0 && st != 0)
		rc = 1;
	pw_buf_free(&p.rd);
	while (msg->len && msg->data[msg->len - 1] == '\n')
		pw_buf_setlen(msg, msg->len - 1);
	return rc;
}
