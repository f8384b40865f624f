/* The public API of libpackwire. */
#ifndef PACKWIRE_H
#define PACKWIRE_H

#include "packwire/export.h"

#include "packwire/version.h"

#include "packwire/error.h"
#include "packwire/buf.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/config.h"
#include "packwire/repo.h"
#include "packwire/refs.h"

#endif
