// `giftwall admin ...`: operating the projection through giftwall.v1.ProjectionAdminService
// (served when the server runs with --enable_admin).
#ifndef GIFTWALL_CLIENT_ADMIN_COMMANDS_H_
#define GIFTWALL_CLIENT_ADMIN_COMMANDS_H_

#include "absl/strings/string_view.h"

namespace giftwall::client {

// The admin subcommands and their flags, for usage messages.
extern const char kAdminUsage[];

// Runs one admin subcommand ("status", "event", "dead", "requeue", "catch-up", "verify",
// "rebuild") and returns the exit code: 0 done, 1 the call failed, 2 bad usage (including an
// empty or unknown subcommand), 4 `verify` found drift.
int RunAdmin(absl::string_view subcommand);

// `giftwall admin catalog import|list`: the app's gift catalogue, through GiftWallService
// (PutGiftCatalog needs the catalog role, ListGiftCatalog the reader role). Exit codes as
// RunAdmin's.
int RunCatalog(absl::string_view action);

}  // namespace giftwall::client

#endif  // GIFTWALL_CLIENT_ADMIN_COMMANDS_H_
