// The soak's traffic: the wallet writing gift events to its outbox, the relay delivering them
// (losing some, duplicating some, redelivering on errors as the real relay does), duplicate
// storms, and readers of the walls. Everything they see goes into one Tally.
#ifndef GIFTWALL_BENCH_SOAK_TRAFFIC_H_
#define GIFTWALL_BENCH_SOAK_TRAFFIC_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "bench/grpc_code_name.h"
#include "giftwall/v1/giftwall.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/storage/mysql_url.h"
#include "server/storage/sql_connection.h"

namespace giftwall::soak {

using bench::CodeName;

inline constexpr char kApp[] = "soak";
// The bad payloads' gift ids start so: a wall row that does is a bad payload counted.
inline constexpr char kBadGiftPrefix[] = "bad-";

// What the traffic checks as it goes (Tally::Problem names them): any failure fails the run.
inline constexpr char kProjectedOnce[] = "an event is PROJECTED at most once";
inline constexpr char kOutcomeByKind[] = "each kind of event gets its outcome";
inline constexpr char kOnlyEnvelopesInvalid[] = "only malformed envelopes are INVALID_ARGUMENT";
inline constexpr char kExpectedCodes[] = "no status code the relay does not expect";
inline constexpr char kResultPerMessage[] = "a batch gets one result per message";
inline constexpr char kNoBadGiftSeen[] = "readers see no bad payload on a wall";
inline constexpr char kWallNeverShrinks[] = "readers never see a gift's count go down";
inline constexpr const char* kTrafficChecks[] = {
    kProjectedOnce,    kOutcomeByKind, kOnlyEnvelopesInvalid, kExpectedCodes,
    kResultPerMessage, kNoBadGiftSeen, kWallNeverShrinks};

enum class EventKind {
  kGift,         // a sound WalletGiftDebited: it must be counted on its wall exactly once
  kBadPayload,   // a WalletGiftDebited whose payload breaks a rule: dead, on no wall
  kOtherType,    // another event type of the wallet: ignored, no ledger row
  kBadEnvelope,  // a relay message with a malformed envelope, in no outbox: INVALID_ARGUMENT
};

const char* KindName(EventKind kind);

// One event and what the soak expects of it.
struct Event {
  EventKind kind = EventKind::kGift;
  v1::WalletOutboxMessage message;
  // kGift: the wall cell it adds to, and how much.
  int64_t user = 0;
  std::string gift;
  int64_t count = 0;
  int64_t coins = 0;
  // The relay never sends it (set before the event is shared).
  bool lost = false;
  // Deliveries the server answered OK, and how many of them said PROJECTED.
  std::atomic<int> answered{0};
  std::atomic<int> projected{0};
};
using EventPtr = std::shared_ptr<Event>;

struct TrafficShape {
  int users = 500;
  int gifts = 20;
  int senders = 2000;
  double bad_payload_share = 0.01;
  double other_type_share = 0.02;
  double bad_envelope_share = 0.002;
  double relay_loss = 0.3;
  double relay_duplicate_share = 0.05;
};

// Makes events from a seed. Ids start with `id_prefix`, so each factory's are its own.
class EventFactory {
 public:
  EventFactory(uint64_t seed, std::string id_prefix, const TrafficShape& shape);
  // Of a kind drawn by the shape's shares.
  EventPtr Next(int64_t now_ms);
  EventPtr Gift(int64_t now_ms);

 private:
  EventPtr NewEvent(EventKind kind, const std::string& type, std::string payload, int64_t now_ms);
  EventPtr BadPayload(int64_t now_ms);
  EventPtr OtherType(int64_t now_ms);
  EventPtr BadEnvelope(int64_t now_ms);

  std::mt19937_64 rng_;
  std::string id_prefix_;
  TrafficShape shape_;
  int64_t next_id_ = 0;
};

// What the soak saw: calls by method and status code, projection outcomes, named counters, and
// problems (anything that must not happen: the run fails). Every thread writes to one.
class Tally {
 public:
  void Call(absl::string_view method, grpc::StatusCode code);
  void Outcome(v1::ProjectionOutcome outcome);
  void Add(absl::string_view counter, int64_t n = 1);
  // Keeps the first few details of each check.
  void Problem(absl::string_view check, const std::string& detail);

  int64_t counter(absl::string_view name) const;
  std::map<std::pair<std::string, grpc::StatusCode>, int64_t> calls() const;
  std::map<std::string, int64_t> outcomes() const;
  // By check: how many times, and the first details.
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> problems() const;

 private:
  mutable absl::Mutex mu_;
  std::map<std::pair<std::string, grpc::StatusCode>, int64_t> calls_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t> outcomes_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, int64_t, std::less<>> counters_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, std::pair<int64_t, std::vector<std::string>>> problems_
      ABSL_GUARDED_BY(mu_);
};

// Every event in the outbox, in the order the wallet committed them.
class EventLog {
 public:
  void Add(const std::vector<EventPtr>& events);
  std::vector<EventPtr> Snapshot() const;
  // Up to `n` events at random that the server has answered for already.
  std::vector<EventPtr> SampleAnswered(size_t n, std::mt19937_64& rng) const;

 private:
  mutable absl::Mutex mu_;
  std::vector<EventPtr> events_ ABSL_GUARDED_BY(mu_);
};

// The wallet's side of the outbox: rows committed as the wallet commits them.
class OutboxWriter {
 public:
  explicit OutboxWriter(storage::MysqlEndpoint endpoint) : endpoint_(std::move(endpoint)) {}
  // Commits the events' rows in one transaction, retrying on a fresh session until it succeeds;
  // false if `abandon` was set first. A commit whose answer was lost may have committed, so a
  // retry leaves rows that are there already as they are.
  bool Write(const std::vector<EventPtr>& events, const std::atomic<bool>& abandon);

 private:
  storage::MysqlEndpoint endpoint_;
  std::unique_ptr<storage::SqlConnection> session_;
  std::mt19937_64 rng_;  // backoff jitter
};

// A channel to every server at once, as the relay and the readers call them: round robin over
// the servers whose `readiness` says SERVING (OPERATIONS.md's recommended service config).
std::shared_ptr<grpc::Channel> ServersChannel(const std::vector<std::string>& addresses,
                                              int channel_id);

// Delivers the events (one: ProjectMessage; more: ProjectMessages) until the server answers
// anything but a code the relay redelivers on, with capped exponential backoff between
// attempts, as the wallet's relay does. Stops early, leaving them unanswered, once `give_up`.
void Deliver(v1::GiftWallService::Stub& stub, const std::vector<EventPtr>& events, Tally& tally,
             std::mt19937_64& rng, const std::atomic<bool>& give_up);

// The wallet's relay: workers that take queued messages, alone or in batches, and deliver them.
class Relay {
 public:
  Relay(const std::vector<std::string>& addresses, int workers, uint64_t seed, Tally& tally);
  ~Relay();
  void Enqueue(EventPtr event);
  // Waits until every queued message has been answered, up to `deadline`; false if it had not.
  bool Drain(absl::Time deadline);
  // Workers stop redelivering and exit.
  void GiveUp();

 private:
  void Work(int worker);
  // Up to `max` messages; empty once stopped. A malformed envelope travels alone: in a batch it
  // would make the whole batch INVALID_ARGUMENT.
  std::vector<EventPtr> Take(size_t max);

  Tally& tally_;
  uint64_t seed_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::atomic<bool> give_up_{false};
  absl::Mutex mu_;
  std::deque<EventPtr> queue_ ABSL_GUARDED_BY(mu_);
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

// The wallet: `events_per_second` new events, committed to the outbox every 100 ms; the relay
// loses some and sends some twice (at-least-once), at random.
class Wallet {
 public:
  Wallet(storage::MysqlEndpoint endpoint, const TrafficShape& shape, double events_per_second,
         uint64_t seed, EventLog& log, Relay& relay, Tally& tally);
  ~Wallet();
  // Stops making events once the outbox write in progress has committed.
  void Stop();
  // Gives up an outbox write in progress (the database never came back).
  void Abandon() { abandon_ = true; }

 private:
  void Run(double events_per_second);

  OutboxWriter outbox_;
  EventFactory factory_;
  std::mt19937_64 rng_;
  TrafficShape shape_;
  EventLog& log_;
  Relay& relay_;
  Tally& tally_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> abandon_{false};
  std::thread thread_;
};

// A duplicate storm: `fresh` new events (committed to the outbox first) and up to `old` events
// answered before, each delivered by `callers` callers at once, half of them one message a
// call, half in batches that carry every event twice.
void RunStorm(const std::vector<std::string>& addresses, const storage::MysqlEndpoint& endpoint,
              const TrafficShape& shape, uint64_t seed, int index, int fresh, int old, int callers,
              EventLog& log, Tally& tally, const std::atomic<bool>& give_up);

// Readers of the walls: GetGiftWall of random users, all sorts, sometimes a second page. A
// wall seen to lose count of a gift, or to show a gift of a bad payload, is a problem.
class WallReaders {
 public:
  WallReaders(const std::vector<std::string>& addresses, int readers, const TrafficShape& shape,
              uint64_t seed, Tally& tally);
  ~WallReaders();
  void Stop();

 private:
  void Read(int reader, const std::shared_ptr<grpc::Channel>& channel);

  TrafficShape shape_;
  uint64_t seed_;
  Tally& tally_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace giftwall::soak

#endif  // GIFTWALL_BENCH_SOAK_TRAFFIC_H_
