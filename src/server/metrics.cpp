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

ServerMetrics::EngineMetrics::EngineMetrics(int32_t max_model_len)
    : ttft(kTtftBuckets),
      inter_token(kInterTokenBuckets),
      e2e(kRequestBuckets),
      queue_time(kRequestBuckets),
      request_prompt_tokens(token_buckets(max_model_len)),
      request_generation_tokens(token_buckets(max_model_len)) {}

ServerMetrics::ServerMetrics(std::string model_name, int32_t max_model_len, int num_engines)
    : engines_(static_cast<size_t>(num_engines), EngineMetrics(max_model_len)) {
  for (int e = 0; e < num_engines; ++e) {
    labels_.push_back("engine=\"" + std::to_string(e) + "\",model_name=\"" + label_value(model_name) + "\"");
  }
}

ServerMetrics::EngineMetrics& ServerMetrics::engine(int index) {
  VLLM_CHECK(index >= 0 && static_cast<size_t>(index) < engines_.size(), "an engine the metrics do not know");
  return engines_[static_cast<size_t>(index)];
}

void ServerMetrics::observe_first_token(int e, double seconds) {
  std::lock_guard lock(mutex_);
  engine(e).ttft.observe(seconds);
}

void ServerMetrics::observe_queue_time(int e, double seconds) {
  std::lock_guard lock(mutex_);
  engine(e).queue_time.observe(seconds);
}

void ServerMetrics::observe_inter_token(int e, double seconds) {
  std::lock_guard lock(mutex_);
  engine(e).inter_token.observe(seconds);
}

void ServerMetrics::observe_tokens(int e, int64_t prompt_tokens, int64_t generated_tokens) {
  std::lock_guard lock(mutex_);
  engine(e).prompt_tokens += prompt_tokens;
  engine(e).generation_tokens += generated_tokens;
}

void ServerMetrics::observe_finished(int e, FinishReason reason, double seconds, int64_t prompt_tokens,
                                     int64_t generated_tokens) {
  std::lock_guard lock(mutex_);
  VLLM_CHECK(reason != FinishReason::kQueueTimeout, "a request that timed out in the queue is a rejection");
  EngineMetrics& m = engine(e);
  ++m.finished[static_cast<int>(reason)];
  m.e2e.observe(seconds);
  m.request_prompt_tokens.observe(static_cast<double>(prompt_tokens));
  m.request_generation_tokens.observe(static_cast<double>(generated_tokens));
}

void ServerMetrics::observe_rejected(Rejection reason) {
  std::lock_guard lock(mutex_);
  ++rejected_[static_cast<int>(reason)];
}

std::string ServerMetrics::render(const std::vector<EngineCoreStats>& stats) const {
  VLLM_CHECK(stats.size() == engines_.size(), "the counters of every engine the metrics know");
  std::string out;
  // One family: its header, then each engine's sample.
  auto family = [&](const char* name, const char* type, const char* help, auto value_of) {
    header(out, name, type, help);
    for (size_t e = 0; e < stats.size(); ++e) sample(out, name, labels_[e], value_of(stats[e]));
  };
  auto usage = [](const EngineCoreStats& s) { return s.kv_cache_usage(); };
  family("vllm:num_requests_running", "gauge", "Requests in the running batch.",
         [](const EngineCoreStats& s) { return static_cast<double>(s.num_running); });
  family("vllm:num_requests_waiting", "gauge", "Requests waiting to run, including preempted ones.",
         [](const EngineCoreStats& s) { return static_cast<double>(s.num_waiting); });
  family("vllm:kv_cache_usage_perc", "gauge", "Fraction of KV cache blocks in use (0..1).", usage);
  family("vllm:gpu_cache_usage_perc", "gauge", "Deprecated alias of vllm:kv_cache_usage_perc.", usage);
  family("vllm:prefix_cache_queries_total", "counter", "Prompt tokens looked up in the prefix cache.",
         [](const EngineCoreStats& s) { return static_cast<double>(s.prefix_cache.queries_tokens); });
  family("vllm:prefix_cache_hits_total", "counter", "Prompt tokens found in the prefix cache.",
         [](const EngineCoreStats& s) { return static_cast<double>(s.prefix_cache.hits_tokens); });
  family("vllm:num_preemptions_total", "counter", "Sequences preempted for lack of KV cache space.",
         [](const EngineCoreStats& s) { return static_cast<double>(s.num_preemptions); });
  if (stats[0].spec_decoding) {
    // Every replica runs the same speculative config.
    auto spec = [](const EngineCoreStats& s) { return s.spec_decoding.value_or(SpecDecodingStats{}); };
    family("vllm:spec_decode_num_drafts_total", "counter", "Speculative decoding drafts verified.",
           [&](const EngineCoreStats& s) { return static_cast<double>(spec(s).num_drafts); });
    family("vllm:spec_decode_num_draft_tokens_total", "counter", "Draft tokens verified.",
           [&](const EngineCoreStats& s) { return static_cast<double>(spec(s).num_draft_tokens); });
    family("vllm:spec_decode_num_accepted_tokens_total", "counter", "Draft tokens accepted.",
           [&](const EngineCoreStats& s) { return static_cast<double>(spec(s).num_accepted_tokens); });
    header(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total", "counter",
           "Draft tokens accepted, by their position in the draft.");
    for (size_t e = 0; e < stats.size(); ++e) {
      const std::vector<int64_t> per_pos = spec(stats[e]).num_accepted_tokens_per_pos;
      for (size_t i = 0; i < per_pos.size(); ++i) {
        sample(out, "vllm:spec_decode_num_accepted_tokens_per_pos_total",
               labels_[e] + ",position=\"" + std::to_string(i) + "\"", static_cast<double>(per_pos[i]));
      }
    }
  }
  if (const auto& lora = stats[0].lora) {
    // As vLLM: the adapters by name in the labels, the time of the step that counted them as the value
    // (the first engine's: every replica serves the same adapters).
    header(out, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
    sample(out, "vllm:lora_requests_info",
           "max_lora=\"" + std::to_string(lora->max_loras) + "\",waiting_lora_adapters=\"" +
               joined_label_value(lora->waiting_adapters) + "\",running_lora_adapters=\"" +
               joined_label_value(lora->running_adapters) + "\"",
           lora->unix_time);
  }
  std::lock_guard lock(mutex_);
  auto request_family = [&](const char* name, const char* type, const char* help, auto value_of) {
    header(out, name, type, help);
    for (size_t e = 0; e < engines_.size(); ++e) sample(out, name, labels_[e], value_of(engines_[e]));
  };
  request_family("vllm:prompt_tokens_total", "counter", "Prompt tokens of admitted requests.",
                 [](const EngineMetrics& m) { return static_cast<double>(m.prompt_tokens); });
  request_family("vllm:generation_tokens_total", "counter", "Generated tokens.",
                 [](const EngineMetrics& m) { return static_cast<double>(m.generation_tokens); });
  header(out, "vllm:request_success_total", "counter", "Finished requests by finish reason.");
  for (size_t e = 0; e < engines_.size(); ++e) {
    for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kAbort}) {
      sample(out, "vllm:request_success_total", labels_[e] + ",finished_reason=\"" + finish_reason_name(r) + "\"",
             static_cast<double>(engines_[e].finished[static_cast<int>(r)]));
    }
  }
  // Not a vLLM metric: vLLM queues without bound (--max-waiting-requests 0).
  header(out, "vllm:request_rejected_total", "counter",
         "Requests answered 503: the waiting queue was full, or they waited past --request-timeout.");
  sample(out, "vllm:request_rejected_total", labels_[0] + ",reason=\"queue_full\"",
         static_cast<double>(rejected_[static_cast<int>(Rejection::kQueueFull)]));
  sample(out, "vllm:request_rejected_total", labels_[0] + ",reason=\"queue_timeout\"",
         static_cast<double>(rejected_[static_cast<int>(Rejection::kQueueTimeout)]));
  auto histogram = [&](const char* name, const char* help, Histogram EngineMetrics::*h) {
    header(out, name, "histogram", help);
    for (size_t e = 0; e < engines_.size(); ++e) (engines_[e].*h).render(out, name, labels_[e]);
  };
  histogram("vllm:time_to_first_token_seconds", "Arrival to first output token.", &EngineMetrics::ttft);
  histogram("vllm:inter_token_latency_seconds", "Time between consecutive output tokens.", &EngineMetrics::inter_token);
  histogram("vllm:time_per_output_token_seconds", "Deprecated name of vllm:inter_token_latency_seconds.",
            &EngineMetrics::inter_token);
  histogram("vllm:e2e_request_latency_seconds", "Arrival to finish.", &EngineMetrics::e2e);
  histogram("vllm:request_queue_time_seconds", "Time waiting before first being scheduled.",
            &EngineMetrics::queue_time);
  histogram("vllm:request_prompt_tokens", "Prompt tokens per request.", &EngineMetrics::request_prompt_tokens);
  histogram("vllm:request_generation_tokens", "Generated tokens per request.",
            &EngineMetrics::request_generation_tokens);
  return out;
}

}  // namespace vllm::server
