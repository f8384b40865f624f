/* What the embedded server (http-serve.c) asks the HTTP handler (http.c)
 * beyond packwire/http.h: which service a request is for, to count it. */
#ifndef PW_SERVER_HTTP_PRIV_H
#define PW_SERVER_HTTP_PRIV_H

/* The services requests are counted by (the `service` label of
 * /metrics); the order is the labels' order in metrics.c. */
enum pw_http_svc {
	PW_SVC_UPLOAD_PACK,  /* POST .../git-upload-pack */
	PW_SVC_RECEIVE_PACK, /* POST .../git-receive-pack */
	PW_SVC_INFO_REFS,    /* GET .../info/refs?service=... (smart advertisement) */
	PW_SVC_DUMB,         /* the dumb files: HEAD, info/refs, objects/... */
	PW_SVC_BROWSE,       /* the browse pages */
	PW_SVC_METRICS,      /* GET /metrics */
	PW_SVC_HEALTHZ,      /* GET /healthz */
	PW_SVC_OTHER,        /* anything else (404s, bad requests) */
	PW_SVC_NR
};

/* The service of a request for path (as PATH_INFO) and query, by the
 * routes of pw_http_serve: PW_SVC_UPLOAD_PACK, _RECEIVE_PACK, _INFO_REFS,
 * _DUMB or _OTHER (the front knows its own endpoints). Pure. */
int pw_http__service(const char *path, const char *query);

#endif
