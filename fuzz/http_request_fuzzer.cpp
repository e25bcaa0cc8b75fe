// libFuzzer target: arbitrary bytes as what a client sends on one
// connection, into the HTTP request parser.  The first byte picks how the
// bytes arrive (one at a time, in chunks, all at once); the requests that
// come out must be the ones that come when everything arrives at once, no
// call uses more bytes than it was given, a failed parser takes no more,
// and no request passes a limit.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "server/http_request_parser.h"

namespace {

using vllm::server::HttpLimits;
using vllm::server::HttpRequest;
using vllm::server::HttpRequestParser;

// Small limits, so that inputs of a few kilobytes reach all of them.
constexpr HttpLimits kLimits{
    .max_request_line_bytes = 256, .max_header_bytes = 1024, .max_header_fields = 8, .max_body_bytes = 2048};

struct Outcome {
  std::vector<HttpRequest> requests;
  int error_status = 0;  // 0: none
};

bool same(const HttpRequest& a, const HttpRequest& b) {
  return a.method == b.method && a.target == b.target && a.body == b.body && a.keep_alive == b.keep_alive &&
         a.authorization == b.authorization;
}

// Feeds `bytes` `chunk` at a time, as a connection that keeps what the parser did not use.
Outcome parse(std::string_view bytes, size_t chunk) {
  HttpRequestParser parser(kLimits);
  Outcome out;
  std::string buffer;
  for (size_t at = 0; at < bytes.size() && out.error_status == 0; at += chunk) {
    buffer.append(bytes.substr(at, chunk));
    while (!buffer.empty()) {
      const size_t used = parser.feed(buffer);
      if (used > buffer.size()) std::abort();
      buffer.erase(0, used);
      if (parser.state() == HttpRequestParser::State::kDone) {
        out.requests.push_back(parser.take());
        if (out.requests.back().body.size() > kLimits.max_body_bytes) std::abort();
        continue;
      }
      if (parser.state() == HttpRequestParser::State::kFailed) {
        out.error_status = parser.error().status;
        if (parser.feed(buffer) != 0) std::abort();  // a failed parser takes nothing more
      }
      break;
    }
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t chunk = data[0] % 4 == 0 ? 1 : data[0] % 4 == 1 ? 1 + data[0] % 61 : size;
  const std::string_view bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  const Outcome whole = parse(bytes, bytes.size() + 1);
  const Outcome pieces = parse(bytes, chunk);
  // However the bytes arrive, the requests that come out are the same ones,
  // in the same order.  Bad bytes may be refused sooner when more of them
  // arrive at once (Beast judges a header again only once it is complete),
  // so one way may fail where the other still waits for the rest of the
  // same request, but never past it, and never serve a different one.
  const size_t common = std::min(pieces.requests.size(), whole.requests.size());
  for (size_t i = 0; i < common; ++i) {
    if (!same(pieces.requests[i], whole.requests[i])) std::abort();
  }
  const bool pieces_failed = pieces.error_status != 0, whole_failed = whole.error_status != 0;
  if (pieces_failed == whole_failed && pieces.requests.size() != whole.requests.size()) std::abort();
  if (pieces_failed && !whole_failed && whole.requests.size() > pieces.requests.size()) std::abort();
  if (whole_failed && !pieces_failed && pieces.requests.size() > whole.requests.size()) std::abort();
  return 0;
}
