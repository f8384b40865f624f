/* What cluster.c and add.c share. */
#ifndef PW_CLUSTER_PRIV_H
#define PW_CLUSTER_PRIV_H

#include <stddef.h>

#include "packwire/hash.h"

#define KP "/packwire/" /* every key of packwire's in etcd */

/* A repository name a cluster takes: its path under the base path, without
 * ':', a leading '/' or "..". */
int pw_cluster__name_ok(const char *name);
/* "<algo>:<hex>", the value of a ref in etcd. */
void pw_cluster__fmt_value(char *buf, size_t cap, const struct pw_oid *oid);

#endif
