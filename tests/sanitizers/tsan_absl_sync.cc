// ThreadSanitizer and Debian's Abseil. libabsl_synchronization is built without
// -fsanitize=thread: the TSan annotations in its mutex.cc are compiled out and its atomics are
// invisible, so TSan sees no happens-before edge through absl::Mutex, CondVar, Notification or
// BlockingCounter, and reports every access they guard as a race. Linked into each binary of a
// GIFTWALL_SANITIZE=thread build (and only there), this library interposes their out-of-line
// entry points: each calls the real one (dlsym RTLD_NEXT) and tells TSan what it did, with the
// annotations Abseil's own TSan build makes. gRPC's calls into absl::Mutex come through here too.
//
// Only the entry points that do not forward to another interposed one are wrapped: the
// *WithTimeout ones call their *WithDeadline twin through the PLT (checked with objdump against
// libabsl_synchronization.so.20220623), and would otherwise be annotated twice.
#include <dlfcn.h>
#include <sanitizer/tsan_interface.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

// The real function of the Abseil library (Debian's inline namespace is absl::debian3).
template <typename Fn>
Fn Real(const char* symbol) {
  void* fn = dlsym(RTLD_NEXT, symbol);
  if (fn == nullptr) {
    std::fprintf(stderr, "tsan_absl_sync: %s not found: %s\n", symbol, dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(fn);
}
#define REAL(type, symbol) static const auto real = Real<type>(symbol)

// Await and CondVar::Wait keep the mode the caller holds the mutex in: its word's writer bit
// (kMuWriter in mutex.cc).
unsigned HeldMode(const absl::Mutex* mu) {
  static_assert(sizeof(absl::Mutex) == sizeof(std::atomic<intptr_t>));
  const auto* word = reinterpret_cast<const std::atomic<intptr_t>*>(mu);
  return (word->load(std::memory_order_relaxed) & 0x0008) != 0 ? 0 : __tsan_mutex_read_lock;
}

// Waiting releases the mutex and takes it again; what the real function does meanwhile
// (evaluating the condition) is not seen, as in Abseil's own TSan build.
template <typename Wait>
auto Reacquiring(absl::Mutex* mu, Wait wait) {
  const unsigned mode = HeldMode(mu);
  __tsan_mutex_pre_unlock(mu, mode);
  __tsan_mutex_post_unlock(mu, mode);
  __tsan_mutex_pre_lock(mu, mode);
  auto result = wait();
  __tsan_mutex_post_lock(mu, mode, 0);
  return result;
}

}  // namespace

namespace absl {
inline namespace debian3 {

void Mutex::Lock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex4LockEv");
  __tsan_mutex_pre_lock(this, 0);
  real(this);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex10ReaderLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

bool Mutex::TryLock() {
  REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex7TryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, locked ? __tsan_mutex_try_lock : __tsan_mutex_try_lock | __tsan_mutex_try_lock_failed,
      0);
  return locked;
}

bool Mutex::ReaderTryLock() {
  REAL(bool (*)(Mutex*), "_ZN4absl7debian35Mutex13ReaderTryLockEv");
  __tsan_mutex_pre_lock(this, __tsan_mutex_try_read_lock);
  const bool locked = real(this);
  __tsan_mutex_post_lock(
      this, locked ? __tsan_mutex_try_read_lock : __tsan_mutex_try_read_lock_failed, 0);
  return locked;
}

void Mutex::Unlock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex6UnlockEv");
  __tsan_mutex_pre_unlock(this, 0);
  real(this);
  __tsan_mutex_post_unlock(this, 0);
}

void Mutex::ReaderUnlock() {
  REAL(void (*)(Mutex*), "_ZN4absl7debian35Mutex12ReaderUnlockEv");
  __tsan_mutex_pre_unlock(this, __tsan_mutex_read_lock);
  real(this);
  __tsan_mutex_post_unlock(this, __tsan_mutex_read_lock);
}

void Mutex::LockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&), "_ZN4absl7debian35Mutex8LockWhenERKNS0_9ConditionE");
  __tsan_mutex_pre_lock(this, 0);
  real(this, cond);
  __tsan_mutex_post_lock(this, 0, 0);
}

void Mutex::ReaderLockWhen(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&),
       "_ZN4absl7debian35Mutex14ReaderLockWhenERKNS0_9ConditionE");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  real(this, cond);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
}

// Locked when it returns, whether or not the condition became true.
bool Mutex::LockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  REAL(bool (*)(Mutex*, const Condition&, absl::Time),
       "_ZN4absl7debian35Mutex20LockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_mutex_pre_lock(this, 0);
  const bool met = real(this, cond, deadline);
  __tsan_mutex_post_lock(this, 0, 0);
  return met;
}

bool Mutex::ReaderLockWhenWithDeadline(const Condition& cond, absl::Time deadline) {
  REAL(bool (*)(Mutex*, const Condition&, absl::Time),
       "_ZN4absl7debian35Mutex26ReaderLockWhenWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  __tsan_mutex_pre_lock(this, __tsan_mutex_read_lock);
  const bool met = real(this, cond, deadline);
  __tsan_mutex_post_lock(this, __tsan_mutex_read_lock, 0);
  return met;
}

void Mutex::Await(const Condition& cond) {
  REAL(void (*)(Mutex*, const Condition&), "_ZN4absl7debian35Mutex5AwaitERKNS0_9ConditionE");
  Reacquiring(this, [&] {
    real(this, cond);
    return true;
  });
}

bool Mutex::AwaitWithDeadline(const Condition& cond, absl::Time deadline) {
  REAL(bool (*)(Mutex*, const Condition&, absl::Time),
       "_ZN4absl7debian35Mutex17AwaitWithDeadlineERKNS0_9ConditionENS0_4TimeE");
  return Reacquiring(this, [&] { return real(this, cond, deadline); });
}

void CondVar::Wait(Mutex* mu) {
  REAL(void (*)(CondVar*, Mutex*), "_ZN4absl7debian37CondVar4WaitEPNS0_5MutexE");
  Reacquiring(mu, [&] {
    real(this, mu);
    return true;
  });
}

bool CondVar::WaitWithDeadline(Mutex* mu, absl::Time deadline) {
  REAL(bool (*)(CondVar*, Mutex*, absl::Time),
       "_ZN4absl7debian37CondVar16WaitWithDeadlineEPNS0_5MutexENS0_4TimeE");
  return Reacquiring(mu, [&] { return real(this, mu, deadline); });
}

// Notification and BlockingCounter publish through an atomic the waiter may read without taking
// their mutex: the notifier releases, a waiter that saw the notification acquires. The inline
// HasBeenNotified() reads notified_yet_ with an instrumented acquire load, so Notify releases at
// its address too: it follows the mutex (absl/synchronization/notification.h).
namespace {
const void* NotifiedYet(const Notification* n) {
  static_assert(sizeof(Notification) == 2 * sizeof(Mutex));
  return reinterpret_cast<const char*>(n) + sizeof(Mutex);
}
}  // namespace

void Notification::Notify() {
  REAL(void (*)(Notification*), "_ZN4absl7debian312Notification6NotifyEv");
  __tsan_release(this);
  __tsan_release(const_cast<void*>(NotifiedYet(this)));
  real(this);
}

void Notification::WaitForNotification() const {
  REAL(void (*)(const Notification*), "_ZNK4absl7debian312Notification19WaitForNotificationEv");
  real(this);
  __tsan_acquire(const_cast<Notification*>(this));
}

bool Notification::WaitForNotificationWithTimeout(absl::Duration timeout) const {
  REAL(bool (*)(const Notification*, absl::Duration),
       "_ZNK4absl7debian312Notification30WaitForNotificationWithTimeoutENS0_8DurationE");
  const bool notified = real(this, timeout);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool Notification::WaitForNotificationWithDeadline(absl::Time deadline) const {
  REAL(bool (*)(const Notification*, absl::Time),
       "_ZNK4absl7debian312Notification31WaitForNotificationWithDeadlineENS0_4TimeE");
  const bool notified = real(this, deadline);
  if (notified) __tsan_acquire(const_cast<Notification*>(this));
  return notified;
}

bool BlockingCounter::DecrementCount() {
  REAL(bool (*)(BlockingCounter*), "_ZN4absl7debian315BlockingCounter14DecrementCountEv");
  __tsan_release(this);
  return real(this);
}

void BlockingCounter::Wait() {
  REAL(void (*)(BlockingCounter*), "_ZN4absl7debian315BlockingCounter4WaitEv");
  real(this);
  __tsan_acquire(this);
}

}  // namespace debian3
}  // namespace absl
