#include "cli/serve_compat_flags.h"

#include "base/logging.h"

namespace vllm::cli {

void add_compat_flags(CLI::App& app, CompatFlags& f) {
  app.add_option("--dtype", f.dtype,
                 "auto|float32|bfloat16|float16: weights keep their stored type, compute is float32")
      ->check(CLI::IsMember({"auto", "float32", "bfloat16", "float16", "half", "float", "bf16"}));
  app.add_option("--gpu-memory-utilization", f.gpu_memory_utilization, "Ignored on CPU (see --kv-cache-memory-bytes)")
      ->each([&f](const std::string&) { f.gpu_memory_utilization_given = true; });
  app.add_option("--generation-config", f.generation_config, "auto|vllm|PATH (accepted)");
  app.add_option("--uvicorn-log-level", f.uvicorn_log_level, "HTTP access-log level")
      ->check(CLI::IsMember({"critical", "error", "warning", "info", "debug", "trace"}));
  app.add_flag("--disable-uvicorn-access-log", f.disable_uvicorn_access_log, "No per-request log lines");
  app.add_flag("--disable-log-stats", f.disable_log_stats, "Accepted (there is no periodic stats line)");
  app.add_flag("--trust-remote-code,--enforce-eager,--disable-fastapi-docs", f.no_effect, "Accepted, no effect");
  app.add_option("--scheduling-policy", f.scheduling_policy, "Not yet: only fcfs");
  app.add_flag("--enable-prompt-tokens-details", f.enable_prompt_tokens_details, "Not yet");
  app.add_flag("--enable-force-include-usage", f.enable_force_include_usage, "Not yet");
  app.add_flag("--return-tokens-as-token-ids", f.return_tokens_as_token_ids, "Not yet");
  app.add_flag("--enable-request-id-headers", f.enable_request_id_headers, "Not yet");
}

void expand_vllm_short_flags(std::vector<std::string>& args) {
  for (std::string& a : args) {
    if (a == "-tp") a = "--tensor-parallel-size";
    if (a == "-pp") a = "--pipeline-parallel-size";
    if (a == "-dp") a = "--data-parallel-size";
    if (a == "-ep") a = "--enable-expert-parallel";
  }
}

Status check_compat_flags(const CompatFlags& f) {
  auto not_yet = [](const std::string& flag) {
    return invalid_argument(flag + " is not supported yet: only its default value is accepted");
  };
  if (f.scheduling_policy != "fcfs") return not_yet("--scheduling-policy");
  if (f.enable_prompt_tokens_details) return not_yet("--enable-prompt-tokens-details");
  if (f.enable_force_include_usage) return not_yet("--enable-force-include-usage");
  if (f.return_tokens_as_token_ids) return not_yet("--return-tokens-as-token-ids");
  if (f.enable_request_id_headers) return not_yet("--enable-request-id-headers");
  if (f.gpu_memory_utilization_given) {
    VLLM_LOG(Info) << "--gpu-memory-utilization has no effect on CPU; size the KV cache with "
                      "--kv-cache-memory-bytes or VLLM_CPU_KVCACHE_SPACE";
  }
  return Status::ok();
}

}  // namespace vllm::cli
