#include "server/random_id.h"

#include <cstdio>
#include <random>

namespace vllm::server {

std::string random_hex() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  char out[33];
  std::snprintf(out, sizeof out, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return out;
}

}  // namespace vllm::server
