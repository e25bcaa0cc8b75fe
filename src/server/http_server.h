// An asynchronous HTTP/1.1 server (Boost.Beast over Asio): a few I/O
// threads serve every connection, and responses are either whole or a stream
// of server-sent events.  No thread per connection: a handler answers
// through a ResponseChannel from any thread, whenever its answer is ready,
// and learns through on_close() when the client goes away first.
//
// Built to stay up under any client: pipelined requests are answered in
// order; a request past a limit gets its status (400, 413, 414, 431) before
// the connection closes; headers, bodies and idle keep-alive connections
// have deadlines (408 for a request cut short); a client that stops reading
// its answer is dropped; the number of connections is capped, the ones that
// are not being answered giving way, longest idle first, to new ones (503
// when none can); running out of file descriptors pauses accepting instead
// of spinning on it.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"

namespace vllm::server {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string target;  // path and query
  std::string authorization;
  std::string body;
  bool keep_alive = true;  // the connection stays open after the answer
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers = {};  // more header fields, e.g. Retry-After
};

// How a handler answers one request.  Thread-safe; calls after the answer
// has ended, or after the client has gone, do nothing.
class ResponseChannel {
 public:
  virtual ~ResponseChannel() = default;
  virtual void respond(HttpResponse response) = 0;
  // A 200 text/event-stream response, then each event as "data: <data>\n\n".
  virtual void start_events() = 0;
  virtual void send_event(std::string data) = 0;
  virtual void end_events() = 0;
  // `callback` runs once (on an I/O thread) if the client disconnects before
  // the answer has ended; at once if it already has.
  virtual void on_close(std::function<void()> callback) = 0;
  // Runs `work` on this connection's I/O strand: work for one request never
  // runs concurrently with itself, so it needs no lock.
  virtual void defer(std::function<void()> work) = 0;
  // Extra words for the request's log line (e.g. token counts); call before the answer ends.
  virtual void set_log_detail(std::string detail) = 0;
};

using HttpHandler = std::function<void(HttpRequest, std::shared_ptr<ResponseChannel>)>;

struct HttpServerOptions {
  std::string host = "0.0.0.0";
  uint16_t port = 8000;  // 0: any free port (see HttpServer::port)
  int io_threads = 2;
  uint64_t max_body_bytes = 16 << 20;  // larger bodies get 413
  bool log_requests = true;            // one line per request: method, path, status, detail, latency
  // Open connections at most; 0: from the file-descriptor limit (see default_max_connections).
  size_t max_connections = 0;
  double header_timeout_seconds = 30;     // from a request's first byte to the end of its header (else 408)
  double body_timeout_seconds = 60;       // from the end of the header to the end of the body (else 408)
  double keep_alive_timeout_seconds = 5;  // a connection with no request in progress is closed after this
  double write_timeout_seconds = 60;      // a client that reads none of its answer for this long is dropped
};

// The connection cap for a process that may open `fd_limit` descriptors:
// room is kept for the model's files, the log and the listening socket.
size_t default_max_connections(uint64_t fd_limit);

class HttpServer {
 public:
  // Binds and listens; the error names the address when that fails.
  static Result<std::unique_ptr<HttpServer>> start(const HttpServerOptions& options, HttpHandler handler);
  // Stops accepting, closes every connection and joins the I/O threads.
  ~HttpServer();

  uint16_t port() const;
  // Stops accepting new connections; open ones are served on.
  void stop_accepting();
  // Waits until no answer is in progress (every response written, every
  // stream ended); false if `timeout_seconds` passed first.
  bool wait_until_idle(double timeout_seconds);

 private:
  struct Impl;
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vllm::server
