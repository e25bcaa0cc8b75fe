// Tensor parallelism (Megatron's split, as vLLM does it): a layer's matrices
// split across the ranks of a group, each rank computing its share.  A
// "column-parallel" Linear holds a share of its output features (q, k, v;
// gate and up) and needs no exchange; a "row-parallel" one holds a share of
// its input features (o, down) and sums its ranks' products with an
// all-reduce; attention heads and the vocabulary are split the same way.
#pragma once

#include <algorithm>
#include <cstdint>

#include "distributed/communicator.h"
#include "distributed/expert_exchange.h"

namespace vllm {

// Of a checkpoint tensor's rows (or columns), `count` from `first`; count -1: all.
struct IndexRange {
  int64_t first = 0;
  int64_t count = -1;

  bool whole() const { return first == 0 && count < 0; }
  int64_t size_of(int64_t n) const { return count < 0 ? n - first : count; }
};

struct TensorParallel {
  Communicator* group = nullptr;  // null: the layers run whole, in this process
  // Mixtures of experts: each expert whole on one rank of the group (expert
  // parallelism, vLLM's placement: the first num_experts % size ranks one
  // more) instead of every expert split like a dense MLP.
  bool expert_parallel = false;
  // Mixtures of experts across data-parallel replicas instead (each replica
  // one rank): experts placed on the exchange's ranks, tokens sent to them.
  ExpertExchange* expert_exchange = nullptr;
  // Rank 0 also loads the whole embedding table and LM head
  // (DecoderParts::whole_vocabulary), for a drafter that runs there alone.
  bool whole_vocabulary_on_rank0 = false;

  int rank() const { return group != nullptr ? group->rank() : 0; }
  int size() const { return group != nullptr ? group->size() : 1; }
  // This rank's contiguous share of n parts, which size() must divide.
  IndexRange share(int64_t n) const { return {rank() * (n / size()), n / size()}; }
};

// The vocabulary split across a group (the embedding's and the LM head's
// rows): rank r holds the token ids from r * rows_per_rank, rows_per_rank of
// them (the last rank what is left).  A rank looks up the ids it holds and
// the group sums the rows; each computes its ids' logits and the group
// gathers them.
struct VocabShard {
  Communicator* group = nullptr;  // null: the whole vocabulary here
  int64_t rows_per_rank = 0;

  static VocabShard of(const TensorParallel& tp, int64_t vocab_size) {
    if (tp.size() == 1) return {};
    return {tp.group, (vocab_size + tp.size() - 1) / tp.size()};
  }
  // This rank's rows of a vocabulary of vocab_size.
  IndexRange rows(int64_t vocab_size) const {
    if (group == nullptr) return {};
    const int64_t first = group->rank() * rows_per_rank;
    return {first, std::min(rows_per_rank, vocab_size - first)};
  }
};

}  // namespace vllm
