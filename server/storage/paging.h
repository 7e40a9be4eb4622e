// Keyset pages: a read asks for one row more than the page holds, to learn whether another
// page follows without counting.
#ifndef GIFTWALL_SERVER_STORAGE_PAGING_H_
#define GIFTWALL_SERVER_STORAGE_PAGING_H_

#include <cstdint>
#include <vector>

namespace giftwall::storage {

// How many rows to fetch for a page of `limit`.
inline int64_t RowsToFetch(int limit) { return int64_t{limit} + 1; }

// Cuts `rows` (fetched with RowsToFetch) to the page; true if another page follows.
template <typename T>
bool TrimToPage(std::vector<T>* rows, int limit) {
  if (rows->size() <= static_cast<size_t>(limit)) return false;
  rows->resize(static_cast<size_t>(limit));
  return true;
}

}  // namespace giftwall::storage

#endif  // GIFTWALL_SERVER_STORAGE_PAGING_H_
