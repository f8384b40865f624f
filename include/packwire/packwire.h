/* The public API of libpackwire: including this header includes them all. */
/* Each header states its contract (who owns what, where errors go, what
 * may be shared between threads); error.h has the rules common to all, and
 * docs/api.md is a tour. */
#ifndef PACKWIRE_H
#define PACKWIRE_H

#include "packwire/export.h"

#include "packwire/version.h"

#include "packwire/error.h"
#include "packwire/buf.h"
#include "packwire/fs.h"
#include "packwire/report.h"
#include "packwire/hash.h"
#include "packwire/object.h"
#include "packwire/config.h"
#include "packwire/repo.h"
#include "packwire/refs.h"
#include "packwire/odb.h"
#include "packwire/compat.h"
#include "packwire/convert.h"
#include "packwire/idx.h"
#include "packwire/revlist.h"
#include "packwire/pack-write.h"
#include "packwire/index-pack.h"
#include "packwire/bitmap.h"
#include "packwire/repack.h"
#include "packwire/revision.h"
#include "packwire/pkt.h"
#include "packwire/proto.h"
#include "packwire/transport.h"
#include "packwire/dumb.h"
#include "packwire/client.h"
#include "packwire/push.h"
#include "packwire/bundle.h"
#include "packwire/server.h"
#include "packwire/pack-cache.h"
#include "packwire/receive.h"
#include "packwire/daemon.h"
#include "packwire/env.h"
#include "packwire/helper-serve.h"
#include "packwire/http.h"
#include "packwire/helper.h"
#include "packwire/serve.h"
#include "packwire/cluster.h"

#endif
