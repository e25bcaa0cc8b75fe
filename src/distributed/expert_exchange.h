// Expert parallelism across data-parallel replicas (vLLM's DP x EP): every
// rank holds its own requests' tokens and some experts of each mixture-of-
// experts layer.  A layer's forward pass sends each token's row to the
// ranks that hold the experts the router chose for it (an all-to-all: the
// dispatch), each rank runs its experts on what it received, and the
// outputs go back the same way (the combine).
//
// Every rank must take part in every exchange, including a replica with
// nothing to run, so the replicas step in lockstep: before each step they
// vote, and if any is busy each steps (an idle one runs nothing), then
// keeps answering the others' exchanges until every rank has ended its
// step.  Each exchange says which layer it is for, so ranks whose steps run
// different numbers of forward passes still meet.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/thread_pool.h"
#include "distributed/communicator.h"

namespace vllm {

// A mixture-of-experts layer's side of the exchange.
class ExpertHolder {
 public:
  virtual ~ExpertHolder() = default;
  // out[i] (hidden_size floats) is expert experts[i]'s output for row i,
  // the hidden_size floats at rows + i * row_stride (before the router's
  // weight); every expert is one this rank holds.
  virtual void run_held_experts(const float* rows, int64_t row_stride, const int32_t* experts, int64_t n, float* out,
                                ThreadPool& pool) const = 0;
};

class ExpertExchange {
 public:
  // `threads`: the pool that runs this rank's experts for the others' tokens.
  ExpertExchange(Communicator& group, int threads);

  Communicator& group() const { return group_; }

  // Each rank adds its layers in the same order (at load); returns the id
  // exchange() is called with.  All share one hidden size.
  int32_t add_layer(const ExpertHolder& layer, int64_t hidden_size);

  // One exchange of `layer`: rows[n * hidden] whose experts are `experts`,
  // grouped by rank (rows_to[r] of them for rank r, in rank order), go to
  // their ranks; out[n * hidden] gets each row's expert output.
  void exchange(int32_t layer, const float* rows, const int32_t* experts, const int64_t* rows_to, int64_t n,
                float* out);

  struct Vote {
    bool any_busy = false;      // some rank has requests to run: every one steps
    bool all_stopping = false;  // every rank is shutting down: the loops end together
  };
  // Before each step, on every rank (an idle rank waits in it asleep).
  Vote vote(bool busy, bool stopping);
  // After each step: answers exchanges until every rank has called it.
  void end_step();

 private:
  // One round of the protocol; false once every rank has ended its step.
  bool round(int32_t layer, bool ended, const float* rows, const int32_t* experts, const int64_t* rows_to, float* out);

  Communicator& group_;
  ThreadPool pool_;
  std::vector<const ExpertHolder*> layers_;
  int64_t hidden_size_ = 0;
  // Scratch of round(), kept between calls.
  std::vector<int64_t> headers_, received_headers_;
  std::vector<float> send_, received_, answers_;
  std::vector<int32_t> experts_;
};

}  // namespace vllm
