// One clock (DESIGN §2.9): leases, backoff and ledger times come from the database, in Unix
// milliseconds (sessions run in UTC), so replicas with skewed clocks cannot steal each other's
// leases. A macro, so that it can be spliced into SQL string constants.
#ifndef GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_
#define GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_

#define GIFTWALL_DB_NOW_MS "CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED)"

#endif  // GIFTWALL_SERVER_STORAGE_DB_CLOCK_H_
