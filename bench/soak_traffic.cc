#include "bench/soak_traffic.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "server/common/status_macros.h"

namespace giftwall::soak {
namespace {

constexpr char kGiftType[] = "WalletGiftDebited";
constexpr char kOtherType[] = "WalletCoinsRecharged";
// Samples kept per problem, for the report.
constexpr size_t kProblemSamples = 5;
constexpr absl::Duration kCallDeadline = absl::Seconds(15);

constexpr char kServiceConfig[] =
    R"({"loadBalancingConfig":[{"round_robin":{}}],"healthCheckConfig":{"serviceName":"readiness"}})";

// As the wallet commits its outbox rows. A retry of a commit whose answer was lost finds its
// rows there already and leaves them as they are (the same row: ids make the payload).
constexpr char kInsertOutboxRow[] =
    "INSERT INTO wallet_outbox (app_code, event_id, event_type, payload, created_at_ms) "
    "VALUES (?, ?, ?, ?, ?) "
    "ON DUPLICATE KEY UPDATE event_id = event_id";

absl::Duration Backoff(int attempt, std::mt19937_64& rng) {
  // A cap that doubles from 100 ms to 2 s, each wait drawn from its upper half: callers that
  // failed together do not come back together.
  const absl::Duration cap =
      std::min(absl::Seconds(2), absl::Milliseconds(50) * (int64_t{1} << std::min(attempt, 6)));
  return cap / 2 +
         absl::Microseconds(rng() % static_cast<uint64_t>(absl::ToInt64Microseconds(cap / 2) + 1));
}

bool Redelivered(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      return true;
    default:
      return false;
  }
}

bool Expected(EventKind kind, v1::ProjectionOutcome outcome) {
  switch (kind) {
    case EventKind::kGift:
      return outcome == v1::PROJECTION_OUTCOME_PROJECTED ||
             outcome == v1::PROJECTION_OUTCOME_ALREADY_PROJECTED ||
             outcome == v1::PROJECTION_OUTCOME_LEASED;
    case EventKind::kBadPayload:
      return outcome == v1::PROJECTION_OUTCOME_DEAD || outcome == v1::PROJECTION_OUTCOME_LEASED;
    case EventKind::kOtherType:
      return outcome == v1::PROJECTION_OUTCOME_IGNORED;
    case EventKind::kBadEnvelope:
      return false;
  }
  return false;
}

void Answered(Event& event, const v1::ProjectMessageResponse& response, Tally& tally) {
  ++event.answered;
  tally.Outcome(response.outcome());
  const std::string& id = event.message.event_id();
  if (response.outcome() == v1::PROJECTION_OUTCOME_PROJECTED && ++event.projected > 1) {
    tally.Problem(kProjectedOnce,
                  absl::StrCat(id, ": PROJECTED ", event.projected.load(), " times"));
  }
  if (!Expected(event.kind, response.outcome())) {
    tally.Problem(kOutcomeByKind, absl::StrCat(id, " (", KindName(event.kind), "): ",
                                               v1::ProjectionOutcome_Name(response.outcome()), " ",
                                               response.detail()));
  }
}

void DeadLetter(const std::vector<EventPtr>& events, const grpc::Status& status, Tally& tally) {
  for (const EventPtr& e : events) {
    if (e->kind == EventKind::kBadEnvelope) {
      tally.Add("dead-lettered by the relay");
    } else {
      tally.Problem(kOnlyEnvelopesInvalid,
                    absl::StrCat(e->message.event_id(), ": ", status.error_message()));
    }
  }
}

}  // namespace

const char* KindName(EventKind kind) {
  switch (kind) {
    case EventKind::kGift:
      return "gift";
    case EventKind::kBadPayload:
      return "bad payload";
    case EventKind::kOtherType:
      return "other type";
    case EventKind::kBadEnvelope:
      return "bad envelope";
  }
  return "?";
}

// --- events -------------------------------------------------------------------------------------

EventFactory::EventFactory(uint64_t seed, std::string id_prefix, const TrafficShape& shape)
    : rng_(seed), id_prefix_(std::move(id_prefix)), shape_(shape) {}

EventPtr EventFactory::NewEvent(EventKind kind, const std::string& type, std::string payload,
                                int64_t now_ms) {
  auto e = std::make_shared<Event>();
  e->kind = kind;
  const char* tag = kind == EventKind::kGift         ? "gift"
                    : kind == EventKind::kBadPayload ? "bad"
                    : kind == EventKind::kOtherType  ? "other"
                                                     : "envelope";
  e->message.set_app_code(kApp);
  e->message.set_event_id(absl::StrFormat("%s-%s-%07d", id_prefix_, tag, next_id_++));
  e->message.set_event_type(type);
  e->message.set_payload_json(std::move(payload));
  e->message.set_occurred_at_ms(now_ms);
  return e;
}

EventPtr EventFactory::Next(int64_t now_ms) {
  const double draw = std::uniform_real_distribution<double>(0, 1)(rng_);
  double bound = shape_.bad_payload_share;
  if (draw < bound) return BadPayload(now_ms);
  if (draw < (bound += shape_.other_type_share)) return OtherType(now_ms);
  if (draw < (bound += shape_.bad_envelope_share)) return BadEnvelope(now_ms);
  return Gift(now_ms);
}

EventPtr EventFactory::Gift(int64_t now_ms) {
  const auto user = static_cast<int64_t>(1 + rng_() % static_cast<uint64_t>(shape_.users));
  const auto gift_index = static_cast<int64_t>(rng_() % static_cast<uint64_t>(shape_.gifts));
  const auto count = static_cast<int64_t>(1 + rng_() % 5);
  const int64_t coins = count * 10 * (gift_index + 1);
  const std::string gift = absl::StrFormat("gift-%02d", gift_index);
  // Some events carry no sender, some a name: both are optional.
  std::string optional;
  if (rng_() % 10 != 0) {
    absl::StrAppend(&optional, R"(,"sender_user_id":)",
                    100'000 + rng_() % static_cast<uint64_t>(shape_.senders));
  }
  if (rng_() % 3 == 0) absl::StrAppend(&optional, R"(,"gift_name":"Gift )", gift_index, "\"");
  EventPtr e = NewEvent(
      EventKind::kGift, kGiftType,
      absl::StrFormat(
          R"({"target_user_id":%d,"gift_id":"%s","gift_count":%d,"coin_amount":%d,"room_id":%d%s})",
          user, gift, count, coins, 7000 + rng_() % 50, optional),
      now_ms);
  e->user = user;
  e->gift = gift;
  e->count = count;
  e->coins = coins;
  return e;
}

// Valid JSON (the outbox's payload column is JSON), each breaking one of the payload's rules.
EventPtr EventFactory::BadPayload(int64_t now_ms) {
  const auto user = static_cast<int64_t>(1 + rng_() % static_cast<uint64_t>(shape_.users));
  const std::string gift = absl::StrCat(kBadGiftPrefix, next_id_);
  const std::string head = absl::StrFormat(R"({"target_user_id":%d,"gift_id":"%s")", user, gift);
  std::string payload;
  switch (rng_() % 8) {
    case 0:
      payload = head + "}";  // no gift_count
      break;
    case 1:
      payload = head + R"(,"gift_count":0})";
      break;
    case 2:
      payload = head + R"(,"gift_count":"3"})";  // a quoted integer
      break;
    case 3:
      payload = head + R"(,"gift_count":2,"coin_amount":-5})";
      break;
    case 4:
      payload = head + R"(,"gift_count":1.5})";
      break;
    case 5:
      payload = absl::StrFormat(R"({"target_user_id":0,"gift_id":"%s","gift_count":1})", gift);
      break;
    case 6:  // a gift_id of 65 bytes
      payload = absl::StrFormat(R"({"target_user_id":%d,"gift_id":"%s","gift_count":1})", user,
                                gift + std::string(65 - gift.size(), 'x'));
      break;
    default:
      payload = head + R"(,"gift_count":9223372036854775808})";  // beyond int64
      break;
  }
  return NewEvent(EventKind::kBadPayload, kGiftType, std::move(payload), now_ms);
}

EventPtr EventFactory::OtherType(int64_t now_ms) {
  return NewEvent(EventKind::kOtherType, kOtherType,
                  absl::StrFormat(R"({"user_id":%d,"coins":100})",
                                  1 + rng_() % static_cast<uint64_t>(shape_.users)),
                  now_ms);
}

// A sound gift payload in a message whose envelope is wrong.
EventPtr EventFactory::BadEnvelope(int64_t now_ms) {
  EventPtr e = Gift(now_ms);
  e->kind = EventKind::kBadEnvelope;
  switch (rng_() % 4) {
    case 0:
      e->message.set_occurred_at_ms(0);
      break;
    case 1:
      e->message.set_event_id("   ");
      break;
    case 2:
      e->message.set_app_code("Not An App!");
      break;
    default:
      e->message.set_event_id(std::string(129, 'e'));
      break;
  }
  return e;
}

// --- tally --------------------------------------------------------------------------------------

void Tally::Call(absl::string_view method, grpc::StatusCode code) {
  absl::MutexLock lock(&mu_);
  ++calls_[{std::string(method), code}];
}

void Tally::Outcome(v1::ProjectionOutcome outcome) {
  absl::MutexLock lock(&mu_);
  ++outcomes_[v1::ProjectionOutcome_Name(outcome)];
}

void Tally::Add(absl::string_view counter, int64_t n) {
  absl::MutexLock lock(&mu_);
  counters_[std::string(counter)] += n;
}

void Tally::Problem(absl::string_view check, const std::string& detail) {
  absl::MutexLock lock(&mu_);
  auto& [times, samples] = problems_[std::string(check)];
  ++times;
  if (samples.size() < kProblemSamples) samples.push_back(detail);
}

int64_t Tally::counter(absl::string_view name) const {
  absl::MutexLock lock(&mu_);
  auto it = counters_.find(name);
  return it == counters_.end() ? 0 : it->second;
}

std::map<std::pair<std::string, grpc::StatusCode>, int64_t> Tally::calls() const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

std::map<std::string, int64_t> Tally::outcomes() const {
  absl::MutexLock lock(&mu_);
  return outcomes_;
}

std::map<std::string, std::pair<int64_t, std::vector<std::string>>> Tally::problems() const {
  absl::MutexLock lock(&mu_);
  return problems_;
}

// --- the outbox ---------------------------------------------------------------------------------

void EventLog::Add(const std::vector<EventPtr>& events) {
  absl::MutexLock lock(&mu_);
  events_.insert(events_.end(), events.begin(), events.end());
}

std::vector<EventPtr> EventLog::Snapshot() const {
  absl::MutexLock lock(&mu_);
  return events_;
}

std::vector<EventPtr> EventLog::SampleAnswered(size_t n, std::mt19937_64& rng) const {
  absl::MutexLock lock(&mu_);
  std::vector<EventPtr> sample;
  for (size_t tries = 0; sample.size() < n && tries < 4 * n && !events_.empty(); ++tries) {
    const EventPtr& e = events_[rng() % events_.size()];
    if (e->answered > 0) sample.push_back(e);
  }
  return sample;
}

bool OutboxWriter::Write(const std::vector<EventPtr>& events, const std::atomic<bool>& abandon) {
  for (int attempt = 0; !abandon; ++attempt) {
    if (attempt > 0) absl::SleepFor(Backoff(attempt, rng_));
    if (session_ == nullptr || session_->broken()) {
      absl::StatusOr<std::unique_ptr<storage::SqlConnection>> session =
          storage::SqlConnection::Open(endpoint_, storage::SessionOptions());
      if (!session.ok()) continue;
      session_ = *std::move(session);
    }
    const absl::Status written = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(storage::Transaction tx, storage::Transaction::Begin(*session_));
      for (const EventPtr& e : events) {
        const v1::WalletOutboxMessage& m = e->message;
        RETURN_IF_ERROR(session_
                            ->Execute(kInsertOutboxRow, {m.app_code(), m.event_id(), m.event_type(),
                                                         m.payload_json(), m.occurred_at_ms()})
                            .status());
      }
      return tx.Commit();
    }();
    if (written.ok()) return true;
    session_.reset();  // whatever went wrong, the next attempt starts on a fresh session
  }
  return false;
}

// --- delivering ---------------------------------------------------------------------------------

std::shared_ptr<grpc::Channel> ServersChannel(const std::vector<std::string>& addresses,
                                              int channel_id) {
  grpc::ChannelArguments args;
  args.SetServiceConfigJSON(kServiceConfig);
  // A distinct argument: channels share no connection, as separate relay instances would not.
  args.SetInt("grpc.channel_id", channel_id);
  // A restarted server gets calls again within seconds (gRPC's default backoff grows to 2 min).
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 5000);
  return grpc::CreateCustomChannel(absl::StrCat("ipv4:", absl::StrJoin(addresses, ",")),
                                   grpc::InsecureChannelCredentials(), args);
}

void Deliver(v1::GiftWallService::Stub& stub, const std::vector<EventPtr>& events, Tally& tally,
             std::mt19937_64& rng, const std::atomic<bool>& give_up) {
  const bool batch = events.size() > 1;
  for (int attempt = 0; !give_up; ++attempt) {
    if (attempt > 0) {
      tally.Add("redeliveries after an error", static_cast<int64_t>(events.size()));
      absl::SleepFor(Backoff(attempt, rng));
    }
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + kCallDeadline));
    grpc::Status status;
    std::vector<v1::ProjectMessageResponse> results;
    if (batch) {
      v1::ProjectMessagesRequest request;
      for (const EventPtr& e : events) *request.add_messages() = e->message;
      v1::ProjectMessagesResponse response;
      status = stub.ProjectMessages(&context, request, &response);
      results.assign(response.results().begin(), response.results().end());
    } else {
      v1::ProjectMessageRequest request;
      *request.mutable_message() = events.front()->message;
      v1::ProjectMessageResponse response;
      status = stub.ProjectMessage(&context, request, &response);
      results.push_back(response);
    }
    tally.Call(batch ? "ProjectMessages" : "ProjectMessage", status.error_code());
    if (status.ok()) {
      if (results.size() != events.size()) {
        tally.Problem(kResultPerMessage,
                      absl::StrCat(results.size(), " results for ", events.size(), " messages"));
        return;
      }
      for (size_t i = 0; i < events.size(); ++i) Answered(*events[i], results[i], tally);
      return;
    }
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT) {
      DeadLetter(events, status, tally);
      return;
    }
    // Any other code: a bug or a configuration error. The relay pages someone and redelivers.
    if (!Redelivered(status.error_code())) {
      tally.Problem(kExpectedCodes,
                    absl::StrCat(CodeName(status.error_code()), ": ", status.error_message()));
    }
  }
}

Relay::Relay(const std::vector<std::string>& addresses, int workers, uint64_t seed, Tally& tally)
    : tally_(tally), seed_(seed) {
  for (int w = 0; w < workers; ++w) channels_.push_back(ServersChannel(addresses, 100 + w));
  for (int w = 0; w < workers; ++w) workers_.emplace_back([this, w] { Work(w); });
}

Relay::~Relay() {
  GiveUp();
  for (std::thread& t : workers_) t.join();
}

void Relay::Enqueue(EventPtr event) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(event));
}

bool Relay::Drain(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(
                                   +[](Relay* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu_) {
                                     return r->queue_.empty() && r->in_flight_ == 0;
                                   },
                                   this),
                               deadline);
}

void Relay::GiveUp() {
  give_up_ = true;
  absl::MutexLock lock(&mu_);
  stopped_ = true;
}

std::vector<EventPtr> Relay::Take(size_t max) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](Relay* r)
           ABSL_EXCLUSIVE_LOCKS_REQUIRED(r->mu_) { return r->stopped_ || !r->queue_.empty(); },
      this));
  std::vector<EventPtr> taken;
  if (stopped_) return taken;
  do {
    taken.push_back(std::move(queue_.front()));
    queue_.pop_front();
  } while (taken.front()->kind != EventKind::kBadEnvelope && taken.size() < max &&
           !queue_.empty() && queue_.front()->kind != EventKind::kBadEnvelope);
  in_flight_ += static_cast<int>(taken.size());
  return taken;
}

void Relay::Work(int worker) {
  auto stub = v1::GiftWallService::NewStub(channels_[static_cast<size_t>(worker)]);
  std::mt19937_64 rng(seed_ * 1000 + static_cast<uint64_t>(worker));
  for (;;) {
    // Half the time one message a call, else a batch of what is queued, up to 20.
    const size_t max = rng() % 2 == 0 ? 1 : 20;
    std::vector<EventPtr> events = Take(max);
    if (events.empty()) return;
    Deliver(*stub, events, tally_, rng, give_up_);
    absl::MutexLock lock(&mu_);
    in_flight_ -= static_cast<int>(events.size());
  }
}

// --- the wallet ---------------------------------------------------------------------------------

Wallet::Wallet(storage::MysqlEndpoint endpoint, const TrafficShape& shape, double events_per_second,
               uint64_t seed, EventLog& log, Relay& relay, Tally& tally)
    : outbox_(std::move(endpoint)),
      factory_(seed, "w", shape),
      rng_(seed + 1),
      shape_(shape),
      log_(log),
      relay_(relay),
      tally_(tally),
      thread_([this, events_per_second] { Run(events_per_second); }) {}

Wallet::~Wallet() { Stop(); }

void Wallet::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void Wallet::Run(double events_per_second) {
  constexpr absl::Duration kTick = absl::Milliseconds(100);
  std::uniform_real_distribution<double> draw(0, 1);
  double owed = 0;
  absl::Time next = absl::Now();
  while (!stop_) {
    next += kTick;
    // After an outage the wallet goes on at its pace; it does not make up the missed events.
    if (absl::Now() - next > absl::Seconds(1)) next = absl::Now();
    absl::SleepFor(next - absl::Now());
    owed += events_per_second * absl::ToDoubleSeconds(kTick);
    const auto n = static_cast<int>(owed);
    owed -= n;
    const int64_t now_ms = absl::ToUnixMillis(absl::Now());
    std::vector<EventPtr> rows, envelopes;
    for (int i = 0; i < n; ++i) {
      EventPtr e = factory_.Next(now_ms);
      if (e->kind == EventKind::kBadEnvelope) {
        envelopes.push_back(std::move(e));
      } else {
        e->lost = draw(rng_) < shape_.relay_loss;
        rows.push_back(std::move(e));
      }
    }
    if (!outbox_.Write(rows, abandon_)) return;  // never committed: never sent
    log_.Add(rows);
    for (const EventPtr& e : rows) {
      tally_.Add(absl::StrCat("outbox: ", KindName(e->kind)));
      if (e->lost) {
        tally_.Add(absl::StrCat("lost by the relay: ", KindName(e->kind)));
        continue;
      }
      relay_.Enqueue(e);
      if (draw(rng_) < shape_.relay_duplicate_share) {
        tally_.Add("copies the relay sent twice");
        relay_.Enqueue(e);
      }
    }
    for (const EventPtr& e : envelopes) {
      tally_.Add("bad envelopes sent");
      relay_.Enqueue(e);
    }
  }
}

// --- storms and readers -------------------------------------------------------------------------

void RunStorm(const std::vector<std::string>& addresses, const storage::MysqlEndpoint& endpoint,
              const TrafficShape& shape, uint64_t seed, int index, int fresh, int old, int callers,
              EventLog& log, Tally& tally, const std::atomic<bool>& give_up) {
  EventFactory factory(seed, absl::StrCat("storm", index), shape);
  std::vector<EventPtr> events;
  const int64_t now_ms = absl::ToUnixMillis(absl::Now());
  for (int i = 0; i < fresh; ++i) events.push_back(factory.Gift(now_ms));
  OutboxWriter outbox(endpoint);
  if (!outbox.Write(events, give_up)) return;
  log.Add(events);
  tally.Add("outbox: gift", fresh);
  std::mt19937_64 rng(seed);
  for (EventPtr& e : log.SampleAnswered(static_cast<size_t>(old), rng)) events.push_back(e);
  tally.Add("storm events", static_cast<int64_t>(events.size()));

  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      auto stub = v1::GiftWallService::NewStub(ServersChannel(addresses, 10'000 + index * 100 + c));
      std::mt19937_64 own(seed * 100 + static_cast<uint64_t>(c));
      std::vector<EventPtr> order = events;
      std::shuffle(order.begin(), order.end(), own);
      constexpr size_t kBatch = 25;
      for (size_t first = 0; first < order.size(); first += c % 2 == 0 ? 1 : kBatch) {
        if (c % 2 == 0) {
          Deliver(*stub, {order[first]}, tally, own, give_up);
          continue;
        }
        std::vector<EventPtr> batch(
            order.begin() + static_cast<std::ptrdiff_t>(first),
            order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), first + kBatch)));
        const std::vector<EventPtr> once = batch;
        batch.insert(batch.end(), once.begin(), once.end());  // every event twice
        Deliver(*stub, batch, tally, own, give_up);
      }
    });
  }
  for (std::thread& t : threads) t.join();
}

WallReaders::WallReaders(const std::vector<std::string>& addresses, int readers,
                         const TrafficShape& shape, uint64_t seed, Tally& tally)
    : shape_(shape), seed_(seed), tally_(tally) {
  for (int r = 0; r < readers; ++r) {
    threads_.emplace_back(
        [this, r, channel = ServersChannel(addresses, 200 + r)] { Read(r, channel); });
  }
}

WallReaders::~WallReaders() { Stop(); }

void WallReaders::Stop() {
  stop_ = true;
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
}

void WallReaders::Read(int reader, const std::shared_ptr<grpc::Channel>& channel) {
  auto stub = v1::GiftWallService::NewStub(channel);
  std::mt19937_64 rng(seed_ * 2000 + static_cast<uint64_t>(reader));
  // What this reader saw last of each (user, gift): a later read may never show less.
  std::map<std::pair<int64_t, std::string>, int64_t> seen;
  constexpr int32_t kPageSizes[] = {0, 5, 20, 200};
  while (!stop_) {
    v1::GetGiftWallRequest request;
    request.set_app_code(kApp);
    request.set_user_id(1 + static_cast<int64_t>(rng() % static_cast<uint64_t>(shape_.users)));
    request.set_sort(static_cast<v1::GiftWallSort>(rng() % 5));
    request.set_page_size(kPageSizes[rng() % 4]);
    // The first page, and half the time the next one.
    for (int page = 0; page < 2 && !stop_; ++page) {
      grpc::ClientContext context;
      context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(5)));
      v1::GetGiftWallResponse response;
      const grpc::Status status = stub->GetGiftWall(&context, request, &response);
      tally_.Call("GetGiftWall", status.error_code());
      if (!status.ok()) {
        absl::SleepFor(absl::Milliseconds(500));  // as an app backs off
        break;
      }
      for (const v1::GiftWallItem& item : response.items()) {
        if (absl::StartsWith(item.gift_id(), kBadGiftPrefix)) {
          tally_.Problem(kNoBadGiftSeen,
                         absl::StrCat("user ", request.user_id(), " shows ", item.gift_id()));
        }
        int64_t& last = seen[{request.user_id(), item.gift_id()}];
        if (item.gift_count() < last) {
          tally_.Problem(kWallNeverShrinks,
                         absl::StrCat("user ", request.user_id(), " ", item.gift_id(), ": ", last,
                                      " then ", item.gift_count()));
        }
        last = std::max(last, item.gift_count());
      }
      if (response.next_page_token().empty() || rng() % 2 == 0) break;
      request.set_page_token(response.next_page_token());
    }
    absl::SleepFor(absl::Milliseconds(25));
  }
}

}  // namespace giftwall::soak
