// The rest of `vllm serve`'s command line (docs/API.md §13), so that its
// deployment scripts carry over: flags with no meaning on this CPU build are
// accepted (a warning where the user might expect an effect), and flags of
// features we do not have yet are accepted only with their default value.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "base/status.h"

namespace vllm::cli {

struct CompatFlags {
  std::string dtype = "auto";
  double gpu_memory_utilization = 0.9;
  bool gpu_memory_utilization_given = false;
  std::string generation_config = "auto";
  std::string uvicorn_log_level = "info";
  bool disable_uvicorn_access_log = false;
  bool disable_log_stats = false;
  bool no_effect = false;  // --trust-remote-code, --enforce-eager, --disable-fastapi-docs
  // Features still to come: their defaults only.
  std::string scheduling_policy = "fcfs";
  bool enable_prompt_tokens_details = false;
  bool enable_force_include_usage = false;
  bool return_tokens_as_token_ids = false;
  bool enable_request_id_headers = false;
};

void add_compat_flags(CLI::App& app, CompatFlags& flags);

// vLLM's two-letter short flags (-tp, -pp, -dp, -ep), which CLI11 cannot declare,
// spelled out in `args` (argv without the program name).
void expand_vllm_short_flags(std::vector<std::string>& args);

// An error naming the first flag given a value we cannot honour; warnings on stderr.
Status check_compat_flags(const CompatFlags& flags);

}  // namespace vllm::cli
