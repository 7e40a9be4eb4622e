// Passing an absl::Status up without changing it: its code and payloads (the MySQL errno that
// storage attaches) stay as they were, so a caller can still tell a transient failure from a
// bug. Context is added once, where it is known, with Annotate.
#ifndef GIFTWALL_SERVER_COMMON_STATUS_MACROS_H_
#define GIFTWALL_SERVER_COMMON_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace giftwall {

// `status` with "context: " before its message; the same code and payloads.
inline absl::Status Annotate(const absl::Status& status, absl::string_view context) {
  if (status.ok()) return status;
  absl::Status annotated(status.code(), absl::StrCat(context, ": ", status.message()));
  status.ForEachPayload([&](absl::string_view type_url, const absl::Cord& payload) {
    annotated.SetPayload(type_url, payload);
  });
  return annotated;
}

}  // namespace giftwall

#define GIFTWALL_STATUS_CONCAT_INNER_(a, b) a##b
#define GIFTWALL_STATUS_CONCAT_(a, b) GIFTWALL_STATUS_CONCAT_INNER_(a, b)

// Returns the status of `expr` (an absl::Status) from the enclosing function unless it is OK.
#define RETURN_IF_ERROR(expr)                                                                    \
  do {                                                                                           \
    if (absl::Status giftwall_status_ = (expr); !giftwall_status_.ok()) return giftwall_status_; \
  } while (false)

// Declares or assigns `lhs` from the value of `expr` (an absl::StatusOr), or returns its status
// from the enclosing function.
#define ASSIGN_OR_RETURN(lhs, expr) \
  GIFTWALL_ASSIGN_OR_RETURN_IMPL_(GIFTWALL_STATUS_CONCAT_(giftwall_status_or_, __LINE__), lhs, expr)

#define GIFTWALL_ASSIGN_OR_RETURN_IMPL_(status_or, lhs, expr) \
  auto status_or = (expr);                                    \
  if (!status_or.ok()) return std::move(status_or).status();  \
  lhs = *std::move(status_or)

#endif  // GIFTWALL_SERVER_COMMON_STATUS_MACROS_H_
