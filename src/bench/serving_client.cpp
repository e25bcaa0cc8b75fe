#include "bench/serving_client.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/clock.h"
#include "base/json.h"

namespace vllm::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Handles the complete "data: ..." events of an SSE body as they arrive.
class EventReader {
 public:
  explicit EventReader(RequestResult& result, double start) : result_(result), start_(start) {}

  void feed(const char* data, size_t n) {
    pending_.append(data, n);
    size_t end;
    while ((end = pending_.find("\n\n")) != std::string::npos) {
      on_event(pending_.substr(0, end));
      pending_.erase(0, end + 2);
    }
  }

  int64_t content_chunks() const { return content_chunks_; }

 private:
  void on_event(const std::string& event) {
    if (event.rfind("data: ", 0) != 0) return;
    const std::string data = event.substr(6);
    if (data == "[DONE]") return;
    const Json j = Json::parse(data, nullptr, false);
    if (j.is_discarded()) return;
    if (j.contains("error")) {
      result_.error = j["error"].dump();
      return;
    }
    if (j.contains("usage") && j["usage"].is_object()) {
      result_.output_tokens = j["usage"].value("completion_tokens", int64_t{0});
    }
    if (!j.contains("choices") || j["choices"].empty()) return;
    const Json& choice = j["choices"][0];
    std::string text;
    if (choice.contains("text") && choice["text"].is_string()) text = choice["text"].get<std::string>();
    if (choice.contains("delta") && choice["delta"].contains("content") && choice["delta"]["content"].is_string()) {
      text = choice["delta"]["content"].get<std::string>();
    }
    if (text.empty()) return;
    const double now = now_seconds() - start_;
    if (content_chunks_ == 0) {
      result_.ttft = now;
    } else {
      result_.itl.push_back(now - last_);
    }
    last_ = now;
    result_.e2el = now;
    ++content_chunks_;
  }

  RequestResult& result_;
  double start_;
  double last_ = 0.0;
  int64_t content_chunks_ = 0;
  std::string pending_;
};

}  // namespace

bool parse_base_url(const std::string& url, ServerAddress& out) {
  const std::string scheme = "http://";
  if (url.rfind(scheme, 0) != 0) return false;
  const std::string rest = url.substr(scheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  out.base_path = slash == std::string::npos ? "" : rest.substr(slash);
  while (!out.base_path.empty() && out.base_path.back() == '/') out.base_path.pop_back();
  const size_t colon = authority.rfind(':');
  out.host = colon == std::string::npos ? authority : authority.substr(0, colon);
  out.port = colon == std::string::npos ? "80" : authority.substr(colon + 1);
  return !out.host.empty() && !out.port.empty();
}

RequestResult send_streaming_request(const ServerAddress& server, const std::string& endpoint, const std::string& body,
                                     const std::string& api_key, int64_t prompt_tokens) {
  RequestResult result;
  result.prompt_tokens = prompt_tokens;
  try {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::tcp_stream stream(ioc);
    stream.connect(resolver.resolve(server.host, server.port));
    http::request<http::string_body> req{http::verb::post, server.base_path + endpoint, 11};
    req.set(http::field::host, server.host);
    req.set(http::field::content_type, "application/json");
    if (!api_key.empty()) req.set(http::field::authorization, "Bearer " + api_key);
    req.body() = body;
    req.prepare_payload();
    const double start = now_seconds();
    http::write(stream, req);

    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    parser.body_limit(boost::none);
    http::read_header(stream, buffer, parser);
    const unsigned status = parser.get().result_int();
    EventReader events(result, start);
    std::string error_body;
    char chunk[8192];
    while (!parser.is_done()) {
      parser.get().body().data = chunk;
      parser.get().body().size = sizeof chunk;
      beast::error_code ec;
      http::read_some(stream, buffer, parser, ec);
      if (ec && ec != http::error::need_buffer) throw beast::system_error(ec);
      const size_t n = sizeof chunk - parser.get().body().size;
      if (status == 200) {
        events.feed(chunk, n);
      } else {
        error_body.append(chunk, n);
      }
    }
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (status != 200) {
      result.error = "HTTP " + std::to_string(status) + ": " + error_body;
    } else if (result.error.empty() && events.content_chunks() > 0) {
      if (result.output_tokens == 0) result.output_tokens = events.content_chunks();
      result.success = true;
    } else if (result.error.empty()) {
      result.error = "no content in the response";
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace vllm::bench
