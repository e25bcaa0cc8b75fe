#include "distributed/expert_exchange.h"

#include <algorithm>

#include "base/logging.h"

namespace vllm {
namespace {

// A round's header, from each rank to each: how many rows it sends that
// rank, the layer they are for, and whether it has ended its step.
constexpr int64_t kHeader = 3;

// Scratch grows and stays: a prefill's rows are megabytes, and filling a
// fresh buffer's pages at every layer would cost more than the exchange.
template <typename T>
void grow(std::vector<T>& buffer, size_t size) {
  if (buffer.size() < size) buffer.resize(size);
}

}  // namespace

ExpertExchange::ExpertExchange(Communicator& group, int threads) : group_(group), pool_(threads) {}

int32_t ExpertExchange::add_layer(const ExpertHolder& layer, int64_t hidden_size) {
  VLLM_CHECK(hidden_size_ == 0 || hidden_size_ == hidden_size, "expert layers of one hidden size");
  hidden_size_ = hidden_size;
  layers_.push_back(&layer);
  return static_cast<int32_t>(layers_.size() - 1);
}

void ExpertExchange::exchange(int32_t layer, const float* rows, const int32_t* experts, const int64_t* rows_to,
                              int64_t n, float* out) {
  int64_t total = 0;
  for (int r = 0; r < group_.size(); ++r) total += rows_to[r];
  VLLM_CHECK(total == n, "every row goes to one rank");
  round(layer, false, rows, experts, rows_to, out);
}

ExpertExchange::Vote ExpertExchange::vote(bool busy, bool stopping) {
  int64_t counts[2] = {busy ? 1 : 0, stopping ? 1 : 0};
  group_.all_reduce_sum_idle(counts, 2);
  return {counts[0] > 0, counts[1] == group_.size()};
}

void ExpertExchange::end_step() {
  const std::vector<int64_t> none(static_cast<size_t>(group_.size()), 0);
  while (round(-1, true, nullptr, nullptr, none.data(), nullptr)) {
  }
}

bool ExpertExchange::round(int32_t layer, bool ended, const float* rows, const int32_t* experts, const int64_t* rows_to,
                           float* out) {
  const int size = group_.size();
  const auto ranks = static_cast<size_t>(size);
  headers_.resize(ranks * kHeader);
  received_headers_.resize(ranks * kHeader);
  for (size_t r = 0; r < ranks; ++r) {
    headers_[r * kHeader] = rows_to[r];
    headers_[r * kHeader + 1] = layer;
    headers_[r * kHeader + 2] = ended ? 1 : 0;
  }
  group_.all_to_all(headers_.data(), kHeader, received_headers_.data());
  bool all_ended = true;
  for (size_t r = 0; r < ranks; ++r) all_ended = all_ended && received_headers_[r * kHeader + 2] != 0;
  if (all_ended) return false;

  // The dispatch: each row with its expert's id after it (exact in a float).
  const auto h = static_cast<size_t>(hidden_size_);
  const size_t stride = h + 1;
  std::vector<int64_t> send_counts(ranks), receive_counts(ranks);
  int64_t sent = 0, received = 0;
  for (size_t r = 0; r < ranks; ++r) {
    send_counts[r] = rows_to[r] * static_cast<int64_t>(stride);
    receive_counts[r] = received_headers_[r * kHeader] * static_cast<int64_t>(stride);
    sent += rows_to[r];
    received += received_headers_[r * kHeader];
  }
  grow(send_, static_cast<size_t>(sent) * stride);
  for (size_t i = 0; i < static_cast<size_t>(sent); ++i) {
    std::copy_n(rows + i * h, h, send_.data() + i * stride);
    send_[i * stride + h] = static_cast<float>(experts[i]);
  }
  grow(received_, static_cast<size_t>(received) * stride);
  group_.all_to_all(send_.data(), send_counts.data(), received_.data(), receive_counts.data());

  // This rank's experts over what came (the rows read where they landed),
  // a run of ranks at one layer at a time.
  grow(experts_, static_cast<size_t>(received));
  for (size_t i = 0; i < static_cast<size_t>(received); ++i) {
    experts_[i] = static_cast<int32_t>(received_[i * stride + h]);
  }
  grow(answers_, static_cast<size_t>(received) * h);
  size_t at = 0;
  for (size_t r = 0; r < ranks;) {
    const int64_t from_layer = received_headers_[r * kHeader + 1];
    size_t n = 0, end = r;
    for (; end < ranks && (received_headers_[end * kHeader] == 0 || received_headers_[end * kHeader + 1] == from_layer);
         ++end) {
      n += static_cast<size_t>(received_headers_[end * kHeader]);
    }
    if (n > 0) {
      VLLM_CHECK(from_layer >= 0 && from_layer < static_cast<int64_t>(layers_.size()),
                 "rows for a layer this rank has");
      layers_[static_cast<size_t>(from_layer)]->run_held_experts(
          received_.data() + at * stride, static_cast<int64_t>(stride), experts_.data() + at, static_cast<int64_t>(n),
          answers_.data() + at * h, pool_);
    }
    at += n;
    r = end;
  }

  // The combine: the outputs go back where their rows came from.
  for (size_t r = 0; r < ranks; ++r) {
    send_counts[r] = received_headers_[r * kHeader] * static_cast<int64_t>(h);
    receive_counts[r] = rows_to[r] * static_cast<int64_t>(h);
  }
  group_.all_to_all(answers_.data(), send_counts.data(), out, receive_counts.data());
  return true;
}

}  // namespace vllm
