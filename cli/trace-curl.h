/* GIT_TRACE_CURL and GIT_CURL_VERBOSE for packwire's HTTP client: where
 * the library's trace lines go (pw_http_env.trace), as Git's trace keys. */
#ifndef PW_CLI_TRACE_CURL_H
#define PW_CLI_TRACE_CURL_H

#include "packwire/transport.h"

/* Set http->trace when GIT_CURL_VERBOSE or GIT_TRACE_CURL asks for it. */
void pw_cli_trace_curl_setup(struct pw_http_env *http);

#endif
