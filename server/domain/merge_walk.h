#ifndef GIFTWALL_SERVER_DOMAIN_MERGE_WALK_H_
#define GIFTWALL_SERVER_DOMAIN_MERGE_WALK_H_

// Walks two sorted maps side by side, as a verify compares what the events say with what is
// stored: each key is seen once, with the entry of the one map that has it or of both.

#include <cstdint>

namespace giftwall::domain {

// Calls only_expected(entry), only_actual(entry) or both(expected_entry, actual_entry) for each
// key of either map, in key order; returns how many keys there were.
template <typename Map, typename OnlyExpected, typename OnlyActual, typename Both>
int64_t MergeWalk(const Map& expected, const Map& actual, OnlyExpected only_expected,
                  OnlyActual only_actual, Both both) {
  int64_t keys = 0;
  auto e = expected.begin(), a = actual.begin();
  while (e != expected.end() || a != actual.end()) {
    ++keys;
    if (a == actual.end() || (e != expected.end() && e->first < a->first)) {
      only_expected(*e++);
    } else if (e == expected.end() || a->first < e->first) {
      only_actual(*a++);
    } else {
      both(*e++, *a++);
    }
  }
  return keys;
}

}  // namespace giftwall::domain

#endif  // GIFTWALL_SERVER_DOMAIN_MERGE_WALK_H_
