/* The mark on every public symbol. The library is built with
 * -fvisibility=hidden, so only what carries PW_API is exported. */
#ifndef PACKWIRE_EXPORT_H
#define PACKWIRE_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define PW_API __attribute__((visibility("default")))
#else
#define PW_API
#endif

#endif
