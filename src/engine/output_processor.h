// Turns the core's per-step token outputs into RequestOutputs: detokenizes
// incrementally (never half a UTF-8 character; deltas concatenate to the
// whole text) and reports cumulatively, as deltas or only at the end, as each
// request asked.  Runs beside the core, on the thread that drives it.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/sched/scheduler_output.h"
#include "tokenizer/incremental_detokenizer.h"
#include "tokenizer/tokenizer.h"

namespace vllm {

// One generated sequence (vLLM's CompletionOutput).
struct CompletionOutput {
  int32_t index = 0;
  std::string text;
  std::vector<int32_t> token_ids;
  std::optional<FinishReason> finish_reason;  // set once finished
};

// vLLM's RequestOutput.
struct RequestOutput {
  std::string request_id;
  std::vector<int32_t> prompt_token_ids;  // filled in cumulative and final outputs, and a delta stream's first
  std::vector<CompletionOutput> outputs;
  bool finished = false;
};

class OutputProcessor {
 public:
  explicit OutputProcessor(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  void add_request(RequestId id, std::string request_id, std::vector<int32_t> prompt_token_ids, OutputKind output_kind);

  // The outputs this step produces (FinalOnly requests appear only when they finish).
  std::vector<RequestOutput> process_outputs(const std::vector<EngineCoreOutput>& outputs);

  // Ends a request with finish_reason "abort"; its final output.
  std::optional<RequestOutput> abort_request(RequestId id);

  bool has_request(RequestId id) const { return states_.count(id) != 0; }

 private:
  struct State {
    std::string request_id;
    std::vector<int32_t> prompt_token_ids;
    OutputKind output_kind;
    IncrementalDetokenizer detokenizer;
    std::string text;                // all text so far (kept unless streaming deltas)
    std::vector<int32_t> token_ids;  // all tokens so far (kept unless streaming deltas)
    bool sent_prompt = false;
  };
  // This step's output of `state`: `new_text`/`new_ids` are what the step added.
  RequestOutput make_output(State& state, std::string new_text, std::vector<int32_t> new_ids,
                            std::optional<FinishReason> finish_reason);

  const Tokenizer& tokenizer_;
  std::unordered_map<RequestId, State> states_;
};

}  // namespace vllm
