/* How the library tells its caller what is happening: one shape for fetch,
 * clone and push. The library never writes to a terminal or to fd 1/2 and
 * never asks whether one is a terminal: rendering (progress bars, "\033[K"
 * or spaces after remote lines, -q) is the caller's. Every member may be
 * NULL (that report is dropped). */
#ifndef PACKWIRE_REPORT_H
#define PACKWIRE_REPORT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>

/*
 * Progress of a local step ("Receiving objects", "Resolving deltas",
 * "Enumerating objects", "Compressing objects", "Writing objects"): n of
 * total (total 0 = unknown), done = 1 on the step's last call. Fetch and
 * clone call it with title NULL once after their last step, so a renderer
 * that keeps a line open can end it. Calls come one at a time, but may come
 * from a library thread (index-pack's first delta worker).
 */
typedef void (*pw_progress_fn)(void *data, const char *title, uint64_t n, uint64_t total, int done);

struct pw_report {
	pw_progress_fn progress;
	/* A warning, one line without the "warning: " prefix or newline. */
	void (*warning)(void *data, const char *msg);
	/* The server's side-band band-2 text (its progress and messages), as
	 * received: lines end in '\n' or '\r' and may be split across calls.
	 * text NULL (len 0) marks the end of the stream. May be called from a
	 * library thread while the calling thread reports progress. */
	void (*remote)(void *data, const char *text, size_t len);
	void *data; /* passed to every callback */
	/* An error the library met before the call fails with its own
	 * message, where Git prints an "error: " line before its fatal one
	 * (fetch.fsckObjects: "object <id>: badEmail: ..."); one line without
	 * the prefix or newline. */
	void (*error)(void *data, const char *msg);
};

#endif
