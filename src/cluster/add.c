/* packwire cluster add: see packwire/cluster.h (pw_cluster_add) and the
 * keys in cluster.c. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster-priv.h"
#include "cluster/etcd.h"
#include "packwire/cluster.h"
#include "packwire/config.h"
#include "packwire/hash.h"
#include "packwire/refs.h"
#include "packwire/repo.h"

/* ---- packwire cluster add ------------------------------------------------ */

struct add_state {
	struct pw_etcd_op *ops;
	char **vals;
	size_t nr, cap;
	const char *prefix;
	int rc;
};

static int add_one(const struct pw_ref *ref, void *data)
{
	struct add_state *a = data;
	char *key, *val;
	size_t kl;

	if (ref->symref_target || a->rc)
		return 0;
	if (a->nr == a->cap) {
		a->rc = PW_ETOOBIG;
		return 1;
	}
	kl = strlen(a->prefix) + strlen(ref->name) + 1;
	key = malloc(kl);
	val = malloc(80);
	if (!key || !val) {
		free(key);
		free(val);
		a->rc = PW_ENOMEM;
		return 1;
	}
	snprintf(key, kl, "%s%s", a->prefix, ref->name);
	pw_cluster__fmt_value(val, 80, &ref->oid);
	a->ops[a->nr].key = key;
	a->ops[a->nr].value = val;
	a->vals[a->nr] = key;
	a->nr++;
	return 0;
}

int pw_cluster_add(const char *etcd_urls, const char *base_path, const char *name,
                   struct pw_error *err)
{
	struct pw_etcd *e = NULL;
	struct pw_repo *repo = NULL;
	struct add_state a;
	struct pw_etcd_group g;
	struct pw_etcd_cmp cmp[2];
	char path[PATH_MAX], regkey[PATH_MAX + 64], repokey[PATH_MAX + 64], headkey[PATH_MAX + 64];
	char head[300], rpkey[PATH_MAX + 64];
	char *target = NULL;
	int rp = 0;
	struct pw_oid hoid;
	size_t i;
	int rc;

	memset(&a, 0, sizeof(a));
	if (!pw_cluster__name_ok(name))
		return pw_error_set(err, PW_EINVAL,
		                    "'%s': a repository's name in a cluster is its path under the "
		                    "base path, without ':' or '..'",
		                    name);
	snprintf(path, sizeof(path), "%s/%s", base_path ? base_path : ".", name);
	if ((rc = pw_repo_open(&repo, path, err)))
		return rc;
	if ((rc = pw_etcd_new(&e, etcd_urls, 0, err)))
		goto out;
	snprintf(regkey, sizeof(regkey), KP "refs/%s:", name);
	snprintf(repokey, sizeof(repokey), KP "repos/%s", name);
	snprintf(headkey, sizeof(headkey), KP "refs/%s:HEAD", name);
	snprintf(rpkey, sizeof(rpkey), KP "refs/%s:receivepack", name);
	a.cap = PW_ETCD_MAX_TXN_OPS - 4;
	a.ops = calloc(a.cap + 4, sizeof(*a.ops));
	a.vals = calloc(a.cap, sizeof(char *));
	if (!a.ops || !a.vals) {
		rc = pw_error_set(err, PW_ENOMEM, "out of memory");
		goto out;
	}
	a.prefix = regkey;
	pw_refs_foreach(repo, "refs/", 0, add_one, &a);
	if (a.rc) {
		rc = pw_error_set(err, a.rc,
		                  a.rc == PW_ETOOBIG
		                          ? "%s has more than %zu refs: more than one etcd "
		                            "transaction takes"
		                          : "out of memory reading %s's refs",
		                  name, a.cap);
		goto out;
	}
	if (pw_refs_read(repo, "HEAD", &hoid, &target) || !target)
		snprintf(head, sizeof(head), "ref: refs/heads/master");
	else
		snprintf(head, sizeof(head), "ref: %.280s", target);
	a.ops[a.nr].key = regkey;
	a.ops[a.nr++].value = pw_repo_algo(repo)->name;
	a.ops[a.nr].key = repokey;
	a.ops[a.nr++].value = pw_repo_algo(repo)->name;
	a.ops[a.nr].key = headkey;
	a.ops[a.nr++].value = head;
	if (!pw_config_get_bool(pw_repo_config(repo), "http.receivepack", &rp, NULL) && rp) {
		a.ops[a.nr].key = rpkey;
		a.ops[a.nr++].value = "true";
	}
	cmp[0].key = regkey;
	cmp[0].value = NULL;
	cmp[1].key = repokey;
	cmp[1].value = NULL;
	memset(&g, 0, sizeof(g));
	g.cmps = cmp;
	g.ncmps = 2;
	g.ops = a.ops;
	g.nops = a.nr;
	if ((rc = pw_etcd_txn(e, &g, 1, NULL, err)))
		goto out;
	if (!g.succeeded)
		rc = pw_error_set(err, PW_EEXISTS, "%s is already in the cluster's care", name);
out:
	for (i = 0; i < a.nr && a.vals; i++)
		if (i < a.cap && a.vals[i]) {
			free(a.vals[i]);
			free((char *)a.ops[i].value);
		}
	free(a.vals);
	free(a.ops);
	free(target);
	pw_etcd_free(e);
	pw_repo_free(repo);
	return rc;
}
