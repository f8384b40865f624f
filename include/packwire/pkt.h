/* pkt-line framing (gitprotocol-common), side-band multiplexing, and the
 * blocking fd reader/writer that servers and clients drive them with.
 * The decoders do no I/O: they look at bytes the caller holds and return
 * views into them. */
#ifndef PACKWIRE_PKT_H
#define PACKWIRE_PKT_H

#include "packwire/export.h"

#include <stddef.h>
#include <stdint.h>
#include "packwire/buf.h"
#include "packwire/error.h"

/*
 * Contract: the decoders and encoders are pure (any thread, on data each
 * thread owns); encoders append to a pw_buf the caller owns. Messages go to
 * the err given (may be NULL). A reader or a relay belongs to its caller
 * (init, then _free, which releases only what init allocated) and is used
 * by one thread at a time; a reader never closes its fd.
 */

/* Largest packet on the wire, 4-byte length header included. */
#define PW_PKT_MAX 65520
/* Largest payload of a data packet. */
#define PW_PKT_DATA_MAX (PW_PKT_MAX - 4)

enum pw_pkt_kind {
	PW_PKT_DATA = 0,         /* "LLLL" + payload; "0004" is a valid empty data packet */
	PW_PKT_FLUSH = 1,        /* "0000" */
	PW_PKT_DELIM = 2,        /* "0001" (v2) */
	PW_PKT_RESPONSE_END = 3, /* "0002" (v2, stateless transports) */
	PW_PKT_EOF = 4,          /* only from pw_pkt_read: the peer closed at a packet boundary */
};

struct pw_pkt {
	enum pw_pkt_kind kind;
	const char *data; /* view into the input (not NUL-terminated); NULL for control packets */
	size_t len;       /* 0 for everything but non-empty data packets */
};

/*
 * Decode one packet from in[0..avail). On success returns 0, fills *out and
 * sets *used to the bytes consumed (4 + payload). Returns PW_EMORE when avail
 * holds only part of a packet (*used = 0), PW_EPROTO with a message for a
 * length that is not 4 hex digits, 0003, or more than PW_PKT_MAX.
 *
 * "0004" is an empty data packet, not an error: gitprotocol-common says
 * senders SHOULD NOT send it and that it differs from a flush; Git's reader
 * returns it as a normal zero-length line. Whether an empty line is allowed is
 * up to the grammar above (the side-band demultiplexer rejects it, for one).
 * Git's own reader tolerates lengths up to 65523 (its buffer size); we hold
 * to the documented maximum of 65520.
 */
PW_API int pw_pkt_decode(const uint8_t *in, size_t avail, struct pw_pkt *out, size_t *used,
                         struct pw_error *err);

/* Strip one trailing LF from a data packet's view (what Git calls chomp). */
PW_API void pw_pkt_chomp(struct pw_pkt *pkt);

/*
 * Encoders: append one packet to `out`. They fail only with PW_ENOMEM,
 * PW_ETOOBIG (payload over PW_PKT_DATA_MAX, or out->max reached) or PW_EINVAL
 * (bad format); on failure `out` is left as it was.
 */
PW_API int pw_pkt_write(struct pw_buf *out, const void *data, size_t len);
PW_API int pw_pkt_writes(struct pw_buf *out, const char *s);
PW_API int pw_pkt_writef(struct pw_buf *out, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
PW_API int pw_pkt_flush(struct pw_buf *out);
PW_API int pw_pkt_delim(struct pw_buf *out);
PW_API int pw_pkt_response_end(struct pw_buf *out);
/* "ERR <message>" (no LF is added, as Git does). */
PW_API int pw_pkt_write_err(struct pw_buf *out, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Is this a data packet "ERR <msg>"? Then *msg (may be NULL) gets the message
 * without one trailing LF. Returns 1 or 0. */
PW_API int pw_pkt_is_err(const struct pw_pkt *pkt, struct pw_str *msg);

/* Write all of data to fd, retrying on EINTR, EAGAIN (via poll) and short
 * writes. PW_EIO with strerror on failure (EPIPE included; SIGPIPE is the
 * process's business). */
PW_API int pw_write_full(int fd, const void *data, size_t len, struct pw_error *err);
/* Write b to fd fully, then empty it (keeps memory). */
PW_API int pw_pkt_send(int fd, struct pw_buf *b, struct pw_error *err);

/* Reader flags. */
#define PW_PKT_READ_CHOMP    0x1 /* strip one trailing LF from data packets */
#define PW_PKT_READ_ERR      0x2 /* "ERR msg" packets become PW_ERROR "remote error: msg" */
#define PW_PKT_READ_NO_AHEAD 0x4 /* never read past the current packet (fd handed on later) */

/*
 * A blocking packet reader over a file descriptor with its own bounded buffer
 * (one packet plus read-ahead). Views returned by pw_pkt_read stay valid until
 * the next pw_pkt_read/pw_pkt_peek on the same reader.
 */
struct pw_pkt_reader {
	int fd;
	unsigned flags;
	int timeout_ms; /* > 0: fail with PW_EIO when no byte arrives for this long */
	uint8_t *buf;
	size_t cap, start, end;
	int eof;
	int peeked; /* pkt below is the result of a peek not yet consumed */
	struct pw_pkt pkt;
	size_t pkt_used;
	int timed_out; /* set when timeout_ms passed without a byte */
};

/* 0 or PW_ENOMEM; flags are PW_PKT_READ_*. */
PW_API int pw_pkt_reader_init(struct pw_pkt_reader *r, int fd, unsigned flags);
PW_API void pw_pkt_reader_free(struct pw_pkt_reader *r);
/*
 * Read the next packet. Returns 0 with out->kind PW_PKT_EOF when the peer
 * closed the stream at a packet boundary; PW_EPROTO "the remote end hung up
 * unexpectedly" when it closed inside a packet (header or payload); PW_EPROTO
 * for a bad length; PW_EIO on read errors and timeouts.
 */
PW_API int pw_pkt_read(struct pw_pkt_reader *r, struct pw_pkt *out, struct pw_error *err);
/* Like pw_pkt_read but the packet stays to be returned by the next read. */
PW_API int pw_pkt_peek(struct pw_pkt_reader *r, struct pw_pkt *out, struct pw_error *err);
/* Bytes read ahead past the last consumed packet (e.g. the start of a raw pack
 * stream that follows the pkt-lines). The view is valid until the next read. */
PW_API void pw_pkt_reader_pending(const struct pw_pkt_reader *r, const uint8_t **data, size_t *len);

/* ---- side-band ---------------------------------------------------------- */

enum pw_sideband_mode {
	PW_SIDEBAND_NONE = 0,
	PW_SIDEBAND_SMALL = 1, /* "side-band": packets of at most 1000 bytes */
	PW_SIDEBAND_64K = 2,   /* "side-band-64k" (and v2): at most 65520 bytes */
};
#define PW_SIDEBAND_SMALL_MAX 1000
#define PW_SIDEBAND_64K_MAX   PW_PKT_MAX

enum pw_sideband_band {
	PW_BAND_DATA = 1,
	PW_BAND_PROGRESS = 2,
	PW_BAND_ERROR = 3,
};

/* Packet size limit (header included) of a mode; 0 for NONE. */
PW_API size_t pw_sideband_max(enum pw_sideband_mode mode);

/* Append data on `band` (1..3) as as many packets as needed, each at most
 * max_pkt bytes long (header and band byte included; 6..PW_PKT_MAX). Nothing
 * is written for len 0. PW_EINVAL for a bad band or size. */
PW_API int pw_sideband_write(struct pw_buf *out, int band, const void *data, size_t len,
                             size_t max_pkt);

/* Split a data packet into band and payload. PW_EPROTO "protocol error: no
 * band designator" for an empty packet, "protocol error: bad band #N" for
 * band 0 or > 3. A band byte with an empty payload is accepted (Git does).
 * Flush and other control packets are the caller's to handle: PW_EINVAL. */
PW_API int pw_sideband_demux(const struct pw_pkt *pkt, int *band, struct pw_str *payload,
                             struct pw_error *err);

/*
 * Relay band-2 text the way Git shows it: every line (ended by \n or \r) is
 * prefixed with "remote: " and, when non-empty, followed by `suffix` (Git uses
 * "\033[K" on a terminal, 8 spaces otherwise) before its terminator; text
 * without a terminator waits for the next packet. A line is at most
 * PW_PROGRESS_LINE_MAX bytes: past that it is ended there (with "\n") and
 * the rest of it dropped up to its terminator, so a server that never ends
 * its line cannot make the relay grow (issue 26). Output is appended to
 * r->out; pw_progress_relay_flush_fd writes and empties it.
 */
#define PW_PROGRESS_LINE_MAX 65536
struct pw_progress_relay {
	struct pw_buf out;
	const char *suffix;
	size_t partial; /* bytes at out's tail that belong to an unterminated line */
	size_t line;    /* text bytes of that line */
	int cut;        /* the line passed PW_PROGRESS_LINE_MAX: dropping its rest */
};
PW_API void pw_progress_relay_init(struct pw_progress_relay *r, const char *suffix);
PW_API void pw_progress_relay_free(struct pw_progress_relay *r);
PW_API int pw_progress_relay_feed(struct pw_progress_relay *r, const char *data, size_t len);
/* End of stream: terminate a pending partial line with "\n". */
PW_API int pw_progress_relay_finish(struct pw_progress_relay *r);
/* Write out whatever complete text is buffered to fd (partial line kept). */
PW_API int pw_progress_relay_flush_fd(struct pw_progress_relay *r, int fd, struct pw_error *err);

#endif
