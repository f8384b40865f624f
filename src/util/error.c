#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "packwire/error.h"

int pw_error_set(struct pw_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int pw_error_wrap(struct pw_error *err, const char *fmt, ...)
{
	char old[PW_ERROR_MSG_MAX];
	size_t n;
	va_list ap;

	if (!err)
		return PW_ERROR;
	memcpy(old, err->msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	if (n + 2 < sizeof(err->msg)) {
		memcpy(err->msg + n, ": ", 2);
		n += 2;
		old[sizeof(old) - 1] = '\0';
		strncpy(err->msg + n, old, sizeof(err->msg) - n - 1);
		err->msg[sizeof(err->msg) - 1] = '\0';
	}
	return err->code ? err->code : PW_ERROR;
}

void pw_error_clear(struct pw_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
	}
}

int pw_error_copy(struct pw_error *dst, const struct pw_error *src)
{
	if (dst && src && dst != src)
		memcpy(dst, src, sizeof(*dst));
	return src ? src->code : PW_ERROR;
}

const char *pw_strerror(int code)
{
	switch (code) {
	case PW_OK:
		return "success";
	case PW_ENOMEM:
		return "out of memory";
	case PW_ENOTFOUND:
		return "not found";
	case PW_EPROTO:
		return "protocol error";
	case PW_EMORE:
		return "need more input";
	case PW_EIO:
		return "input/output error";
	case PW_EINVAL:
		return "invalid argument";
	case PW_ECORRUPT:
		return "corrupt data";
	case PW_EEXISTS:
		return "already exists";
	case PW_ELOCKED:
		return "locked by another process";
	case PW_EMISMATCH:
		return "mismatch";
	case PW_EUNSUPPORTED:
		return "unsupported";
	case PW_ETOOBIG:
		return "too large";
	case PW_ECOLLISION:
		return "SHA-1 collision attack detected";
	default:
		return "error";
	}
}
