/* libmicrohttpd, loaded when packwire serve starts rather than linked: only
 * the embedded web server needs it (see transport/curl-load.h for why this
 * matters to every other packwire process). Include this instead of
 * <microhttpd.h>; the MHD_* names below go through the table. */
#ifndef PW_SERVER_MHD_LOAD_H
#define PW_SERVER_MHD_LOAD_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <microhttpd.h>

#include "packwire/error.h"

#define PW_MHD_FUNCS(X)                                                                            \
	X(MHD_start_daemon)                                                                        \
	X(MHD_stop_daemon)                                                                         \
	X(MHD_quiesce_daemon)                                                                      \
	X(MHD_get_daemon_info)                                                                     \
	X(MHD_get_connection_info)                                                                 \
	X(MHD_get_connection_values)                                                               \
	X(MHD_lookup_connection_value)                                                             \
	X(MHD_suspend_connection)                                                                  \
	X(MHD_resume_connection)                                                                   \
	X(MHD_create_response_from_buffer)                                                         \
	X(MHD_create_response_from_callback)                                                       \
	X(MHD_add_response_header)                                                                 \
	X(MHD_queue_response)                                                                      \
	X(MHD_queue_basic_auth_fail_response)                                                      \
	X(MHD_destroy_response)                                                                    \
	X(MHD_basic_auth_get_username_password)                                                    \
	X(MHD_free)

struct pw_mhd_api {
#define PW_MHD_SLOT(name) __typeof__(name) *name;
	PW_MHD_FUNCS(PW_MHD_SLOT)
#undef PW_MHD_SLOT
};

extern struct pw_mhd_api pw_mhd__api;

/* Load libmicrohttpd once per process (thread-safe). 0, or PW_EIO with a
 * message naming the library. */
int pw_mhd_load(struct pw_error *err);

#ifndef PW_MHD_LOAD_IMPL
#define MHD_start_daemon                     pw_mhd__api.MHD_start_daemon
#define MHD_stop_daemon                      pw_mhd__api.MHD_stop_daemon
#define MHD_quiesce_daemon                   pw_mhd__api.MHD_quiesce_daemon
#define MHD_get_daemon_info                  pw_mhd__api.MHD_get_daemon_info
#define MHD_get_connection_info              pw_mhd__api.MHD_get_connection_info
#define MHD_get_connection_values            pw_mhd__api.MHD_get_connection_values
#define MHD_lookup_connection_value          pw_mhd__api.MHD_lookup_connection_value
#define MHD_suspend_connection               pw_mhd__api.MHD_suspend_connection
#define MHD_resume_connection                pw_mhd__api.MHD_resume_connection
#define MHD_create_response_from_buffer      pw_mhd__api.MHD_create_response_from_buffer
#define MHD_create_response_from_callback    pw_mhd__api.MHD_create_response_from_callback
#define MHD_add_response_header              pw_mhd__api.MHD_add_response_header
#define MHD_queue_response                   pw_mhd__api.MHD_queue_response
#define MHD_queue_basic_auth_fail_response   pw_mhd__api.MHD_queue_basic_auth_fail_response
#define MHD_destroy_response                 pw_mhd__api.MHD_destroy_response
#define MHD_basic_auth_get_username_password pw_mhd__api.MHD_basic_auth_get_username_password
#define MHD_free                             pw_mhd__api.MHD_free
#endif

#endif
