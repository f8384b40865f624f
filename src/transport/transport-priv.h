/* What a transport implementation provides behind struct pw_conn. */
#ifndef PW_TRANSPORT_PRIV_H
#define PW_TRANSPORT_PRIV_H

#include "packwire/transport.h"

struct pw_conn_ops {
	/* Close the streams and release the server (reap, end the request). */
	int (*finish)(struct pw_conn *c, int *status, struct pw_error *err);
	/* Stateless only: the request is complete. NULL for stateful ones. */
	int (*end_request)(struct pw_conn *c, struct pw_error *err);
	/* Release priv_. May be NULL. */
	void (*free)(struct pw_conn *c);
};

int pw_transport__local(struct pw_conn *c, const char *path, const char *cmd, int version,
                        struct pw_error *err);
int pw_transport__ssh(struct pw_conn *c, const struct pw_url *u, const char *cmd, int version,
                      const struct pw_ssh_opts *ssh, struct pw_error *err);

#endif
