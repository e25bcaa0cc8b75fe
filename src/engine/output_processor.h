// Turns the core's per-step token outputs into RequestOutputs (vLLM's
// OutputProcessor): detokenizes each sequence incrementally, applies stop
// strings, gathers the n sequences of a request, and reports cumulatively,
// as deltas or only at the end, as each request asked.  Deltas never take
// back text: what could still start a stop string, and half a UTF-8
// character, are held back, so the deltas of a sequence concatenate to
// exactly its final text.  Runs on the thread that drives the core.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "engine/output/stop_strings.h"
#include "engine/sched/scheduler_output.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

// The matched stop string, or the stop token id; nothing for EOS or length.
using StopReason = std::variant<std::monostate, std::string, int32_t>;

// One generated sequence (vLLM's CompletionOutput).
struct CompletionOutput {
  int32_t index = 0;  // among the request's n sequences
  std::string text;
  std::vector<int32_t> token_ids;
  double cumulative_logprob = 0.0;                        // of the whole sequence so far, also in a delta
  std::optional<std::vector<PositionLogprobs>> logprobs;  // one per token of token_ids, when asked
  std::optional<FinishReason> finish_reason;              // set once finished
  StopReason stop_reason;
};

// vLLM's RequestOutput.
struct RequestOutput {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;  // in cumulative and final outputs, and a delta stream's first
  // Prompt tokens 1.. (token 0 has none), when asked; sent like prompt_token_ids.
  std::optional<std::vector<PositionLogprobs>> prompt_logprobs;
  std::vector<CompletionOutput> outputs;  // final outputs: all n, by index; others: the sequence that moved
  bool finished = false;
  // Seconds from arrival to first being scheduled, of the sequences whose first token this output carries.
  std::vector<double> queue_times;

  // The one, final output of a request that ended before it ran (aborted
  // while queued, or refused where it was sent): finish_reason "abort".
  static RequestOutput aborted(std::string request_id) {
    RequestOutput out;
    out.request_id = std::move(request_id);
    out.finished = true;
    out.outputs.emplace_back().finish_reason = FinishReason::kAbort;
    return out;
  }
};

class OutputProcessor {
 public:
  explicit OutputProcessor(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // A request whose sequences run in the core under `sequence_ids` (sequence i has index i).
  void add_request(std::string request_id, std::vector<int32_t> prompt_token_ids, const SamplingParams& params,
                   std::vector<RequestId> sequence_ids);

  struct StepOutputs {
    std::vector<RequestOutput> outputs;  // FinalOnly requests appear only when they finish
    std::vector<RequestId> stopped;      // sequences a stop string ended: the core must drop them
  };
  StepOutputs process_outputs(const std::vector<EngineCoreOutput>& outputs);

  // Ends a request with finish_reason "abort": its final output, and in
  // `unfinished` the sequences the core still runs.
  std::optional<RequestOutput> abort_request(const std::string& request_id, std::vector<RequestId>& unfinished);

  bool has_request(const std::string& request_id) const { return requests_.count(request_id) != 0; }

 private:
  struct Sequence {
    Sequence(std::string request_id, int32_t index, IncrementalDetokenizer detokenizer, StopStrings stops,
             int64_t min_tokens, bool wants_logprobs)
        : request_id(std::move(request_id)),
          index(index),
          detokenizer(std::move(detokenizer)),
          stops(std::move(stops)),
          min_tokens(min_tokens),
          wants_logprobs(wants_logprobs) {}

    std::string request_id;
    int32_t index;
    IncrementalDetokenizer detokenizer;
    StopStrings stops;
    int64_t min_tokens;
    bool wants_logprobs;
    std::string text;  // stop strings applied
    std::vector<int32_t> token_ids;
    std::vector<PositionLogprobs> logprobs;
    double cumulative_logprob = 0.0;
    size_t sent_text = 0;  // bytes of text already in a delta
    size_t sent_tokens = 0;
    std::optional<FinishReason> finish_reason;
    StopReason stop_reason;
    std::optional<double> queue_time;  // until reported
  };
  struct Request {
    Request(std::vector<int32_t> prompt_token_ids, OutputKind output_kind, std::vector<RequestId> sequences)
        : prompt_token_ids(std::move(prompt_token_ids)),
          output_kind(output_kind),
          sequences(std::move(sequences)),
          num_unfinished(static_cast<int32_t>(this->sequences.size())) {}

    std::vector<int32_t> prompt_token_ids;
    std::optional<std::vector<PositionLogprobs>> prompt_logprobs;
    OutputKind output_kind;
    std::vector<RequestId> sequences;
    int32_t num_unfinished;
    bool sent_prompt = false;
  };

  // Adds a core output to its sequence; true if a stop string ended it.
  bool update_sequence(Sequence& seq, const EngineCoreOutput& o);
  // Also moves the sequence's queue time, if not yet reported, into `out`.
  CompletionOutput completion(Sequence& seq, OutputKind kind, RequestOutput& out);
  RequestOutput request_output(const std::string& request_id, Request& request, bool finished);
  void erase(const std::string& request_id);

  const Tokenizer& tokenizer_;
  std::unordered_map<std::string, Request> requests_;
  std::unordered_map<RequestId, Sequence> sequences_;
};

}  // namespace vllm
