// One streamed completion request against an OpenAI-compatible server, timed
// at the client the way vLLM's benchmark_serving does (docs/API.md §14).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vllm::bench {

struct ServerAddress {
  std::string host;
  std::string port;
  std::string base_path;  // e.g. "" or "/v1" prefix already in the endpoint
};

// Parses "http://host:port[/path]".
bool parse_base_url(const std::string& url, ServerAddress& out);

struct RequestResult {
  bool success = false;
  std::string error;
  double ttft = 0.0;          // seconds: sent -> first chunk with text
  std::vector<double> itl;    // gaps between content chunks
  double e2el = 0.0;          // sent -> last content chunk
  int64_t prompt_tokens = 0;  // as sent
  int64_t output_tokens = 0;  // from the usage chunk, else content chunks
};

// POSTs `body` (a JSON completion request with "stream": true) to `endpoint`.
RequestResult send_streaming_request(const ServerAddress& server, const std::string& endpoint, const std::string& body,
                                     const std::string& api_key, int64_t prompt_tokens);

}  // namespace vllm::bench
