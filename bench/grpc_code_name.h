// The name of a gRPC status code, as the benchmarks and the soak print it ("UNAVAILABLE").
#ifndef GIFTWALL_BENCH_GRPC_CODE_NAME_H_
#define GIFTWALL_BENCH_GRPC_CODE_NAME_H_

#include "grpcpp/support/status.h"

namespace giftwall::bench {

const char* CodeName(grpc::StatusCode code);

}  // namespace giftwall::bench

#endif  // GIFTWALL_BENCH_GRPC_CODE_NAME_H_
