// HTTP/1.1 requests out of a connection's bytes, one after another
// (pipelined requests included), within limits that each have the status a
// production server answers when they are passed: 414 for a request line too
// long, 431 for header fields too large or too many, 413 for a body too
// large, 400 for anything that is not HTTP.  No I/O: the caller keeps the
// bytes, feeds them and drops what was used, so the parser can be driven
// by a socket or a fuzzer alike.
#pragma once

#include <boost/beast/http.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "server/http_server.h"

namespace vllm::server {

struct HttpLimits {
  size_t max_request_line_bytes = 8 << 10;
  size_t max_header_bytes = 64 << 10;  // the request line and every header field together
  size_t max_header_fields = 100;
  uint64_t max_body_bytes = 16 << 20;
};

struct HttpParseError {
  int status = 400;
  std::string message;
};

class HttpRequestParser {
 public:
  enum class State {
    kIdle,    // nothing of a request yet
    kHeader,  // part of the request line or header fields
    kBody,    // the header is complete, the body is coming
    kDone,    // a whole request: take() it
    kFailed,  // error() says why; the connection cannot go on
  };

  explicit HttpRequestParser(const HttpLimits& limits);

  // Parses from the start of `bytes`, which begin where the last call's
  // used bytes ended; returns how many it used.  Bytes it did not use must
  // be given again with what follows them (a header is parsed only once it
  // is complete).  Stops at the end of a request: what follows belongs to
  // the next one.
  size_t feed(std::string_view bytes);

  State state() const { return state_; }
  // The header asked for "Expect: 100-continue" (the client waits for a
  // 100 Continue before it sends the body).
  bool expects_continue() const { return expects_continue_; }
  const HttpParseError& error() const { return error_; }

  // The finished request; the parser starts on the next one.
  HttpRequest take();

 private:
  void reset();
  bool fail(int status, std::string message);
  // Checks the header once parsed; false when it passes a limit.
  bool accept_header();
  // False (failed) when the header's fields, with a chunked body's trailer
  // fields once the request is whole, are more than the limit.
  bool within_field_limit();

  HttpLimits limits_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  State state_ = State::kIdle;
  bool request_line_parsed_ = false;
  bool expects_continue_ = false;
  HttpParseError error_;
};

}  // namespace vllm::server
