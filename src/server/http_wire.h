// HTTP/1.1 responses as the bytes that go on the wire: a whole response, or
// the header and chunks of a server-sent-event stream.
#pragma once

#include <string>

#include "server/http_server.h"

namespace vllm::server {

std::string whole_response(const HttpResponse& response, bool keep_alive);

// "HTTP/1.1 100 Continue": the go-ahead a client that sent "Expect: 100-continue" waits for.
std::string continue_response();

// A 200 text/event-stream header with chunked transfer, then one chunk per
// event ("data: <data>\n\n"), then the last chunk.
std::string event_stream_header();
std::string event_chunk(const std::string& data);
inline constexpr const char* kLastChunk = "0\r\n\r\n";

// A client's bytes as they may appear in a log line: printable ASCII kept,
// anything else (control characters, bytes that are not ASCII) as \xHH.
std::string printable(const std::string& text);

}  // namespace vllm::server
