// The token budget of a step (--max-num-batched-tokens) for serving, when
// none is given: as many tokens as this machine prefills in about 100 ms,
// so that a burst of prompts is spread over short steps in which every
// running stream still gets its token, instead of one long step that stalls
// them all (2048 tokens of a 135M model take 1.5 s on two cores).
#pragma once

#include "base/status.h"
#include "engine/engine_config.h"
#include "model/decoder_model.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {

inline constexpr double kTargetStepSeconds = 0.1;

// Times prefill on `model` under `config` (its threads and ISA) and returns
// the budget, at least config.scheduler.max_num_seqs (a step has room for a
// token of every running sequence) and at most 2048 (vLLM's CPU default).
Result<int32_t> measure_step_token_budget(DecoderModel& model, const Tokenizer& tokenizer, const EngineConfig& config,
                                          double target_step_seconds = kTargetStepSeconds);

}  // namespace vllm::cli
