// The token budget of a step (--max-num-batched-tokens) for serving, when
// none is given: as many tokens as this machine prefills in about 150 ms,
// so that a burst of prompts is spread over short steps in which every
// running stream still gets its token, instead of one long step that stalls
// them all (2048 tokens of a 135M model take 1.5-2 s on two cores).
//
// Why 150 ms and not less: a prompt that does not fit in one step beside the
// running streams' tokens takes a second step, and under load each new
// prompt then queues behind the last one's two.  smollm-135m on 2 cores
// (1,000 prefill tokens/s), 64 requests of 128 in / 128 out at concurrency
// 16: budgets of 128 / 144 / 160 / 192 / 256 tokens gave TTFT p50 410 / 305 /
// 320 / 510 / 580 ms at the same output tokens/s; 150 ms is about 150
// tokens there, the smallest budget that takes such a prompt whole.
#pragma once

#include "base/status.h"
#include "engine/engine_config.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace vllm::cli {

inline constexpr double kTargetStepSeconds = 0.15;

// Times prefill on `model` under `config` (its threads and ISA) and returns
// the budget, at least config.scheduler.max_num_seqs (a step has room for a
// token of every running sequence) and at most 2048 (vLLM's CPU default).
Result<int32_t> measure_step_token_budget(Model& model, const Tokenizer& tokenizer, const EngineConfig& config,
                                          double target_step_seconds = kTargetStepSeconds);

}  // namespace vllm::cli
