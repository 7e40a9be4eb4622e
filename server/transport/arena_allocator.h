// The request and response of one unary callback call on one protobuf arena: their strings and
// repeated fields come from a few blocks of it and go at once when the call ends, rather than
// one allocation each (a page of a wall is hundreds of strings).
#ifndef GIFTWALL_SERVER_TRANSPORT_ARENA_ALLOCATOR_H_
#define GIFTWALL_SERVER_TRANSPORT_ARENA_ALLOCATOR_H_

#include "google/protobuf/arena.h"
#include "grpcpp/support/message_allocator.h"

namespace giftwall::transport {

template <typename Request, typename Response>
class ArenaMessageAllocator final : public grpc::MessageAllocator<Request, Response> {
 public:
  grpc::MessageHolder<Request, Response>* AllocateMessages() override { return new Holder(); }

 private:
  class Holder final : public grpc::MessageHolder<Request, Response> {
   public:
    Holder() : arena_(Options()) {
      this->set_request(google::protobuf::Arena::CreateMessage<Request>(&arena_));
      this->set_response(google::protobuf::Arena::CreateMessage<Response>(&arena_));
    }
    void Release() override { delete this; }

   private:
    static google::protobuf::ArenaOptions Options() {
      google::protobuf::ArenaOptions options;
      options.start_block_size = 4096;  // a small page in one block
      options.max_block_size = 64 * 1024;
      return options;
    }

    google::protobuf::Arena arena_;
  };
};

}  // namespace giftwall::transport

#endif  // GIFTWALL_SERVER_TRANSPORT_ARENA_ALLOCATOR_H_
