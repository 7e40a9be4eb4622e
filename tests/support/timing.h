// Wall-clock and memory bounds in tests: they hold only where the code runs at its own speed. Under
// a sanitizer (ASan, TSan) it runs several times slower, so there a test asserts the order and the
// outcomes of what happened, not how long it took.
#ifndef GIFTWALL_TESTS_SUPPORT_TIMING_H_
#define GIFTWALL_TESTS_SUPPORT_TIMING_H_

namespace giftwall::testing {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
inline constexpr bool kWallClockBoundsHold = false;
#else
inline constexpr bool kWallClockBoundsHold = true;
#endif

// Memory bounds likewise: a sanitizer's shadow memory and its quarantine of freed blocks (256 MB
// under ASan) make a process's RSS and peak say nothing about what the code keeps.
inline constexpr bool kMemoryBoundsHold = kWallClockBoundsHold;

}  // namespace giftwall::testing

#endif  // GIFTWALL_TESTS_SUPPORT_TIMING_H_
