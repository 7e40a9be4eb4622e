// Parsing cost of a gift payload: it runs once per delivered event, on a worker thread.
#include <benchmark/benchmark.h>

#include "server/domain/gift_payload.h"

namespace {

void BM_ParseGiftPayload(benchmark::State& state) {
  const std::string payload =
      R"({"target_user_id":10001,"sender_user_id":20002,"gift_id":"rose","gift_count":3,)"
      R"("coin_amount":300,"gift_name":"Rose","gift_icon":"https://cdn.example/rose.png",)"
      R"("room_id":777,"extra":{"combo":[1,2,3],"note":"hi"}})";
  for (auto _ : state) {
    auto parsed = giftwall::domain::ParseGiftPayload(payload);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(payload.size()));
}
BENCHMARK(BM_ParseGiftPayload);

}  // namespace
