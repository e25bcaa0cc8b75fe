#include "server/http_request_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace vllm::server {
namespace {

struct Parsed {
  std::vector<HttpRequest> requests;
  std::optional<HttpParseError> error;
  HttpRequestParser::State state = HttpRequestParser::State::kIdle;
  std::string left;  // bytes not used
};

// Feeds `bytes` as a connection would, `chunk` bytes at a time, keeping what
// the parser did not use; takes every finished request.
Parsed parse(const std::string& bytes, size_t chunk = 1 << 20, const HttpLimits& limits = {}) {
  HttpRequestParser parser(limits);
  Parsed out;
  std::string buffer;
  for (size_t at = 0; at < bytes.size() && !out.error; at += chunk) {
    buffer += bytes.substr(at, chunk);
    while (!buffer.empty()) {
      const size_t used = parser.feed(buffer);
      buffer.erase(0, used);
      if (parser.state() == HttpRequestParser::State::kDone) {
        out.requests.push_back(parser.take());
        continue;
      }
      if (parser.state() == HttpRequestParser::State::kFailed) out.error = parser.error();
      break;
    }
  }
  out.state = parser.state();
  out.left = buffer;
  return out;
}

std::string post(const std::string& body, const std::string& extra = "") {
  return "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
         "\r\n" + body;
}

TEST(HttpRequestParserTest, PipelinedRequestsComeOutInOrderWhateverTheChunks) {
  const std::string bytes = post(R"({"a": 1})") + "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" +
                            post("{}", "Authorization: Bearer k\r\nConnection: close\r\n");
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{17}, bytes.size()}) {
    const Parsed p = parse(bytes, chunk);
    ASSERT_FALSE(p.error) << chunk;
    ASSERT_EQ(p.requests.size(), 3u) << chunk;
    EXPECT_EQ(p.requests[0].method, "POST");
    EXPECT_EQ(p.requests[0].body, R"({"a": 1})");
    EXPECT_TRUE(p.requests[0].keep_alive);
    EXPECT_EQ(p.requests[1].method, "GET");
    EXPECT_EQ(p.requests[1].target, "/health");
    EXPECT_EQ(p.requests[1].body, "");
    EXPECT_EQ(p.requests[2].authorization, "Bearer k");
    EXPECT_FALSE(p.requests[2].keep_alive);
    EXPECT_EQ(p.state, HttpRequestParser::State::kIdle);
    EXPECT_EQ(p.left, "");
  }
}

TEST(HttpRequestParserTest, ChunkedBodiesAreDecoded) {
  const std::string bytes =
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\n{\"pro\r\nb\r\nmpt\": \"hi\"}\r\n0\r\n\r\n"
      "GET /health HTTP/1.1\r\n\r\n";
  for (size_t chunk : {size_t{1}, size_t{7}, bytes.size()}) {
    const Parsed p = parse(bytes, chunk);
    ASSERT_FALSE(p.error) << chunk << ": " << p.error->message;
    ASSERT_EQ(p.requests.size(), 2u);
    EXPECT_EQ(p.requests[0].body, R"({"prompt": "hi"})");
    EXPECT_EQ(p.requests[1].target, "/health");
  }
}

TEST(HttpRequestParserTest, StatesFollowTheRequest) {
  HttpRequestParser parser({});
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kIdle);
  EXPECT_EQ(parser.feed("\r\n"), 2u);  // empty lines before a request are ignored
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kIdle);
  const std::string header = "POST / HTTP/1.1\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n";
  // Part of the request line is not used yet: it is given again with what follows.
  EXPECT_EQ(parser.feed(header.substr(0, 10)), 0u);
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kHeader);
  EXPECT_EQ(parser.feed(header), header.size());
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kBody);
  EXPECT_TRUE(parser.expects_continue());
  EXPECT_EQ(parser.feed("ab"), 2u);
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kBody);
  EXPECT_EQ(parser.feed("cdGET"), 2u);  // the rest belongs to the next request
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kDone);
  EXPECT_EQ(parser.take().body, "abcd");
  EXPECT_EQ(parser.state(), HttpRequestParser::State::kIdle);
}

TEST(HttpRequestParserTest, EachLimitHasItsStatus) {
  const HttpLimits limits{
      .max_request_line_bytes = 100, .max_header_bytes = 1000, .max_header_fields = 10, .max_body_bytes = 50};
  auto status_of = [&](const std::string& bytes, size_t chunk = 1 << 20) {
    const Parsed p = parse(bytes, chunk, limits);
    return p.error ? p.error->status : 0;
  };
  EXPECT_EQ(status_of("GET /" + std::string(200, 'a') + " HTTP/1.1\r\n\r\n"), 414);
  EXPECT_EQ(status_of("GET /" + std::string(200, 'a')), 414);  // before the line ends
  EXPECT_EQ(status_of("GET /" + std::string(200, 'a'), 16), 414);
  std::string many = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 11; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  EXPECT_EQ(status_of(many + "\r\n"), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nX: " + std::string(2000, 'y') + "\r\n\r\n"), 431);
  EXPECT_EQ(status_of("GET / HTTP/1.1\r\nX: " + std::string(2000, 'y'), 64), 431);  // before the header ends
  EXPECT_EQ(status_of(post(std::string(51, 'x'))), 413);  // by its Content-Length, before the body comes
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: 51\r\n\r\n"), 413);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n" + std::string(64, 'x')), 413);
  EXPECT_EQ(status_of(post(std::string(50, 'x'))), 0);
  EXPECT_EQ(status_of(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11)), 400);  // a TLS hello
  EXPECT_EQ(status_of("GARBAGE\r\n\r\n"), 400);
  EXPECT_EQ(status_of("GET / HTTP/2.0\r\n\r\n"), 400);
  EXPECT_EQ(status_of("POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), 400);
}

// A chunked body's trailer fields count with the header's, and the same
// way however the bytes arrive (all at once, an eager parse used to count
// them with the header's and refuse; byte by byte, not).
TEST(HttpRequestParserTest, TrailerFieldsCountWithTheHeaderWhateverTheChunks) {
  HttpLimits limits;
  limits.max_header_fields = 3;
  const std::string head =
      "POST /tokenize HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n0\r\n";
  const std::string within = head + "X-A: 1\r\n\r\n", beyond = head + "X-A: 1\r\nX-B: 2\r\n\r\n";
  for (size_t chunk : {size_t{1}, size_t{6}, beyond.size()}) {
    const Parsed ok = parse(within, chunk, limits);
    ASSERT_FALSE(ok.error) << chunk;
    ASSERT_EQ(ok.requests.size(), 1u) << chunk;
    EXPECT_EQ(ok.requests[0].body, R"({"a":)");
    const Parsed refused = parse(beyond, chunk, limits);
    ASSERT_TRUE(refused.error) << chunk;
    EXPECT_EQ(refused.error->status, 431) << chunk;
    EXPECT_TRUE(refused.requests.empty()) << chunk;
  }
}

TEST(HttpRequestParserTest, NothingIsTakenAfterAnError) {
  HttpRequestParser parser({});
  parser.feed("BAD\x01 / HTTP/1.1\r\n\r\n");
  ASSERT_EQ(parser.state(), HttpRequestParser::State::kFailed);
  EXPECT_EQ(parser.feed("GET / HTTP/1.1\r\n\r\n"), 0u);
  EXPECT_EQ(parser.error().status, 400);
}

}  // namespace
}  // namespace vllm::server
