#include "server/http_request_parser.h"

#include <boost/beast/core.hpp>

namespace vllm::server {

namespace beast = boost::beast;
namespace http = beast::http;

HttpRequestParser::HttpRequestParser(const HttpLimits& limits) : limits_(limits) { reset(); }

void HttpRequestParser::reset() {
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(limits_.max_header_bytes));
  parser_->body_limit(limits_.max_body_bytes);
  // Not eager until the header is checked: an eager put() runs on through
  // the body and a chunked body's trailer fields, which Beast adds to the
  // header's, so the fields counted would depend on how the bytes arrived.
  parser_->eager(false);
  state_ = State::kIdle;
  request_line_parsed_ = false;
  expects_continue_ = false;
}

bool HttpRequestParser::fail(int status, std::string message) {
  state_ = State::kFailed;
  error_ = {status, std::move(message)};
  return false;
}

bool HttpRequestParser::within_field_limit() {
  const auto& header = parser_->get();
  size_t num_fields = 0;
  for (auto it = header.begin(); it != header.end(); ++it) ++num_fields;
  if (num_fields > limits_.max_header_fields) {
    return fail(431, "the request has " + std::to_string(num_fields) + " header fields, more than the limit of " +
                         std::to_string(limits_.max_header_fields));
  }
  return true;
}

bool HttpRequestParser::accept_header() {
  if (!within_field_limit()) return false;
  expects_continue_ = beast::iequals(parser_->get()[http::field::expect], "100-continue");
  parser_->eager(true);
  return true;
}

size_t HttpRequestParser::feed(std::string_view bytes) {
  if (state_ == State::kDone || state_ == State::kFailed) return 0;
  size_t skipped = 0;
  if (state_ == State::kIdle) {
    // Empty lines before a request line are ignored (RFC 9112 2.2).
    while (skipped < bytes.size() && (bytes[skipped] == '\r' || bytes[skipped] == '\n')) ++skipped;
    bytes.remove_prefix(skipped);
  }
  if (bytes.empty()) return skipped;
  if (state_ == State::kIdle) state_ = State::kHeader;
  if (!request_line_parsed_) {
    // Beast takes the request line only once it is whole (it refuses a bad
    // method as it comes): until then `bytes` start with it, and its length
    // is judged here, where a line that is too long is told from too many
    // header fields.
    const size_t line_end = bytes.find('\n');
    const size_t line_bytes = line_end == std::string_view::npos ? bytes.size() : line_end;
    if (line_bytes > limits_.max_request_line_bytes) {
      fail(414,
           "the request line is longer than the limit of " + std::to_string(limits_.max_request_line_bytes) + " bytes");
      return skipped;
    }
  }
  size_t used = 0;
  while (used < bytes.size() && state_ != State::kDone && state_ != State::kFailed) {
    beast::error_code ec;
    const size_t n = parser_->put(boost::asio::buffer(bytes.data() + used, bytes.size() - used), ec);
    used += n;
    if (n > 0) request_line_parsed_ = true;
    if (ec == http::error::need_more) break;
    if (ec == http::error::header_limit) {
      fail(431, "the request's header fields are larger than the limit of " + std::to_string(limits_.max_header_bytes) +
                    " bytes");
    } else if (ec == http::error::body_limit) {
      fail(413, "the request body is larger than the limit of " + std::to_string(limits_.max_body_bytes) + " bytes");
    } else if (ec) {
      fail(400, "malformed HTTP request (" + ec.message() + ")");
    } else if (state_ == State::kHeader && parser_->is_header_done()) {
      if (accept_header()) state_ = State::kBody;
    }
    // A chunked body's trailer fields count with the header's.
    if (state_ == State::kBody && parser_->is_done() && within_field_limit()) state_ = State::kDone;
    if (n == 0 && !ec) break;
  }
  return skipped + used;
}

HttpRequest HttpRequestParser::take() {
  http::request<http::string_body> message = parser_->release();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  request.authorization = std::string(message[http::field::authorization]);
  request.keep_alive = message.keep_alive();
  request.body = std::move(message.body());
  reset();
  return request;
}

}  // namespace vllm::server
