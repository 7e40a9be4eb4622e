// What storage splices into its SQL string constants (macros, for that reason). One clock
// (DESIGN §2.9): leases, backoff and ledger times come from the database, in Unix milliseconds
// (sessions run in UTC), so replicas with skewed clocks cannot steal each other's leases.
#ifndef GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_
#define GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_

#include "server/domain/projection.h"

#define GIFTWALL_DB_NOW_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

// domain::kGiftWallProjection as an SQL string literal: every statement on the ledger names its
// projection with it.
#define GIFTWALL_SQL_PROJECTION "'" GIFTWALL_GIFT_WALL_PROJECTION "'"

#endif  // GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_
