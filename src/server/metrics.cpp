#include "server/metrics.h"

#include <cstdio>

#include "base/logging.h"

namespace vllm::server {
namespace {

// Buckets of docs/API.md §12.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1,     2.5,   5,    7.5,  10,   20,   40,   80,  160,  640, 2560};
const std::vector<double> kInterTokenBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                                0.75, 1,     2.5,  5,     7.5, 10,   20,  40,  80};
const std::vector<double> kRequestBuckets = {0.3, 0.5, 0.8, 1,  1.5, 2,   2.5, 5,   10,   15,  20,
                                             30,  40,  50,  60, 120, 240, 480, 960, 1920, 7680};

// 1, 2, 5, 10, 20, 50, ... up to max_model_len.
std::vector<double> token_buckets(int32_t max_model_len) {
  std::vector<double> b;
  for (double decade = 1; b.empty() || b.back() < max_model_len; decade *= 10) {
    for (double m : {1.0, 2.0, 5.0}) {
      if (m * decade <= max_model_len) b.push_back(m * decade);
    }
    if (decade * 10 > max_model_len) break;
  }
  return b;
}

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

void header(std::string& out, const std::string& name, const char* type, const char* help) {
  out += "# HELP " + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

// A label's value as the text format writes it: backslash, quote and newline escaped.
std::string label_value(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\' || c == '"') out += '\\';
    out += c == '\n' ? std::string("\\n") : std::string(1, c);
  }
  return out;
}

std::string joined_label_value(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) {
    if (!joined.empty()) joined += ',';
    joined += name;
  }
  return label_value(joined);
}

void sample(std::string& out, const std::string& name, const std::string& labels, double value) {
  out += name + "{" + labels + "} " + number(value) + "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& labels) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? number(bounds_[i]) : "+Inf";
    sample(out, name + "_bucket", labels + ",le=\"" + le + "\"", static_cast<double>(cumulative));
  }
  sample(out, name + "_sum", labels, sum_);
  sample(out, name + "_count", labels, static_cast<double>(count_));
}

ServerMetrics::ServerMetrics(std::string model_name, int32_t max_model_len)
    : labels_("engine=\"0\",model_name=\"" + label_value(model_name) + "\""),
      ttft_(kTtftBuckets),
      inter_token_(kInterTokenBuckets),
      e2e_(kRequestBuckets),
      queue_time_(kRequestBuckets),
      request_prompt_tokens_(token_buckets(max_model_len)),
      request_generation_tokens_(token_buckets(max_model_len)) {}

void ServerMetrics::observe_first_token(double seconds) {
  std::lock_guard lock(mutex_);
  ttft_.observe(seconds);
}

void ServerMetrics::observe_queue_time(double seconds) {
  std::lock_guard lock(mutex_);
  queue_time_.observe(seconds);
}

void ServerMetrics::observe_inter_token(double seconds) {
  std::lock_guard lock(mutex_);
  inter_token_.observe(seconds);
}

void ServerMetrics::observe_tokens(int64_t prompt_tokens, int64_t generated_tokens) {
  std::lock_guard lock(mutex_);
  prompt_tokens_ += prompt_tokens;
  generation_tokens_ += generated_tokens;
}

void ServerMetrics::observe_finished(FinishReason reason, double seconds, int64_t prompt_tokens,
                                     int64_t generated_tokens) {
  std::lock_guard lock(mutex_);
  VLLM_CHECK(reason != FinishReason::kQueueTimeout, "a request that timed out in the queue is a rejection");
  ++finished_[static_cast<int>(reason)];
  e2e_.observe(seconds);
  request_prompt_tokens_.observe(static_cast<double>(prompt_tokens));
  request_generation_tokens_.observe(static_cast<double>(generated_tokens));
}

void ServerMetrics::observe_rejected(Rejection reason) {
  std::lock_guard lock(mutex_);
  ++rejected_[static_cast<int>(reason)];
}

std::string ServerMetrics::render(const EngineCoreStats& engine) const {
  std::string out;
  const double usage =
      engine.num_blocks > 0 ? 1.0 - static_cast<double>(engine.num_free_blocks) / engine.num_blocks : 0.0;
  auto gauge = [&](const char* name, const char* help, double value) {
    header(out, name, "gauge", help);
    sample(out, name, labels_, value);
  };
  auto counter = [&](const char* name, const char* help, double value) {
    header(out, std::string(name), "counter", help);
    sample(out, std::string(name), labels_, value);
  };
  gauge("vllm:num_requests_running", "Requests in the running batch.", engine.num_running);
  gauge("vllm:num_requests_waiting", "Requests waiting to run, including preempted ones.", engine.num_waiting);
  gauge("vllm:kv_cache_usage_perc", "Fraction of KV cache blocks in use (0..1).", usage);
  gauge("vllm:gpu_cache_usage_perc", "Deprecated alias of vllm:kv_cache_usage_perc.", usage);
  counter("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
          static_cast<double>(engine.prefix_cache.queries_tokens));
  counter("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.",
          static_cast<double>(engine.prefix_cache.hits_tokens));
  counter("vllm:num_preemptions_total", "Sequences preempted for lack of KV cache space.",
          static_cast<double>(engine.num_preemptions));
  if (const auto& spec = engine.spec_decoding) {
    counter("vllm:spec_decode_num_drafts_total", "Speculative decoding drafts verified.",
            static_cast<double>(spec->num_drafts));
    counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens verified.",
            static_cast<double>(spec->num_draft_tokens));
    counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.",
            static_cast<double>(spec->num_accepted_tokens));
    header(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Draft tokens accepted, by their position in the draft.");
    for (size_t i = 0; i < spec->num_accepted_tokens_per_pos.size(); ++i) {
      sample(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
             labels_ + ",position=\"" + std::to_string(i) + "\"",
             static_cast<double>(spec->num_accepted_tokens_per_pos[i]));
    }
  }
  if (const auto& lora = engine.lora) {
    // As vLLM: the adapters by name in the labels, the time of the step that counted them as the value.
    header(out, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
    sample(out, "vllm:lora_requests_info",
           "max_lora=\"" + std::to_string(lora->max_loras) + "\",waiting_lora_adapters=\"" +
               joined_label_value(lora->waiting_adapters) + "\",running_lora_adapters=\"" +
               joined_label_value(lora->running_adapters) + "\"",
           lora->unix_time);
  }
  std::lock_guard lock(mutex_);
  counter("vllm:prompt_tokens_total", "Prompt tokens of admitted requests.", static_cast<double>(prompt_tokens_));
  counter("vllm:generation_tokens_total", "Generated tokens.", static_cast<double>(generation_tokens_));
  header(out, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort}) {
    sample(out, "vllm:request_success_total", labels_ + ",finished_reason=\"" + finish_reason_name(r) + "\"",
           static_cast<double>(finished_[static_cast<int>(r)]));
  }
  // Not a vLLM metric: vLLM queues without bound (--max-waiting-requests 0).
  header(out, "vllm:request_rejected_total", "counter",
         "Requests answered 503: the waiting queue was full, or they waited past --request-timeout.");
  sample(out, "vllm:request_rejected_total", labels_ + ",reason=\"queue_full\"",
         static_cast<double>(rejected_[static_cast<int>(Rejection::kQueueFull)]));
  sample(out, "vllm:request_rejected_total", labels_ + ",reason=\"queue_timeout\"",
         static_cast<double>(rejected_[static_cast<int>(Rejection::kQueueTimeout)]));
  auto histogram = [&](const char* name, const char* help, const Histogram& h) {
    header(out, name, "histogram", help);
    h.render(out, name, labels_);
  };
  histogram("vllm:time_to_first_token_seconds", "Arrival to first output token.", ttft_);
  histogram("vllm:inter_token_latency_seconds", "Time between consecutive output tokens.", inter_token_);
  histogram("vllm:time_per_output_token_seconds", "Deprecated name of vllm:inter_token_latency_seconds.", inter_token_);
  histogram("vllm:e2e_request_latency_seconds", "Arrival to finish.", e2e_);
  histogram("vllm:request_queue_time_seconds", "Time waiting before first being scheduled.", queue_time_);
  histogram("vllm:request_prompt_tokens", "Prompt tokens per request.", request_prompt_tokens_);
  histogram("vllm:request_generation_tokens", "Generated tokens per request.", request_generation_tokens_);
  return out;
}

}  // namespace vllm::server
