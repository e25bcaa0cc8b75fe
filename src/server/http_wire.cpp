#include "server/http_wire.h"

#include <boost/beast/http/status.hpp>
#include <cstdio>

namespace vllm::server {
namespace {

namespace http = boost::beast::http;

std::string status_line(int status) {
  const auto reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
}

}  // namespace

std::string whole_response(const HttpResponse& r, bool keep_alive) {
  std::string out = status_line(r.status) + "Content-Type: " + r.content_type +
                    "\r\nContent-Length: " + std::to_string(r.body.size()) +
                    "\r\nConnection: " + (keep_alive ? "keep-alive" : "close") + "\r\n";
  for (const auto& [name, value] : r.headers) out += name + ": " + value + "\r\n";
  return out + "\r\n" + r.body;
}

std::string continue_response() { return status_line(100) + "\r\n"; }

std::string event_stream_header() {
  return status_line(200) +
         "Content-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"
         "Connection: keep-alive\r\n\r\n";
}

std::string event_chunk(const std::string& data) {
  const std::string payload = "data: " + data + "\n\n";
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", payload.size());
  return size + payload + "\r\n";
}

std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char escaped[5];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
      out += escaped;
    }
  }
  return out;
}

}  // namespace vllm::server
