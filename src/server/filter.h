/* Partial-clone filters on the serving side (filter.c): the repository's
 * uploadpackfilter.* rules, and which objects a filter keeps. */
#ifndef PW_SERVER_FILTER_H
#define PW_SERVER_FILTER_H

#include "server/session.h"

struct pw_srv_sparse;

/* The filter of one fetch, ready to answer per object. */
struct pw_srv_filter {
	struct pw_upload_session *s;
	struct pw_srv_sparse *sparse; /* one per sparse:oid in the filter */
	size_t nr_sparse;
};

/* Is s->args.filter allowed here? Git's messages: "filter 'X' not
 * supported", "tree filter allows max depth N, but got M". */
int pw_srv_check_filter(struct pw_upload_session *s);
/* Load what the filter needs (sparse:oid pattern blobs: "unable to access
 * sparse blob in '...'", "unable to parse sparse filter data in <oid>").
 * Free with pw_srv_filter_free also after an error. */
int pw_srv_filter_init(struct pw_srv_filter *sf, struct pw_upload_session *s);
void pw_srv_filter_free(struct pw_srv_filter *sf);
/* 1 to send the object, 0 to leave it out (commits and tags are always sent). */
int pw_srv_filter_keeps(const struct pw_srv_filter *sf, const struct pw_oid *oid, int type,
                        const char *path, size_t path_len);

#endif
