// Random ids for what the server names: requests, tool calls.
#pragma once

#include <string>

namespace vllm::server {

// 32 random hex digits (a uuid4().hex's length, as vLLM's ids).
std::string random_hex();

}  // namespace vllm::server
