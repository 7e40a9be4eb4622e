// The senders who opted out of being shown (DESIGN §2.18), per app, as wall reads use them
// (AppCache): read once per --opt_out_cache_ttl and shared, never per wall.
#ifndef GIFTWALL_SERVER_READS_OPT_OUT_CACHE_H_
#define GIFTWALL_SERVER_READS_OPT_OUT_CACHE_H_

#include "server/domain/viewer.h"
#include "server/reads/app_cache.h"

namespace giftwall::reads {

using OptOutCache = AppCache<domain::OptOuts>;

}  // namespace giftwall::reads

#endif  // GIFTWALL_SERVER_READS_OPT_OUT_CACHE_H_
