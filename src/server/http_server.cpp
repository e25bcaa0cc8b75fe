#include "server/http_server.h"

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstdio>
#include <deque>
#include <optional>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"
#include "server/api_error.h"

namespace vllm::server {
namespace {

// A client's bytes as they may appear in a log line: printable ASCII kept,
// anything else (control characters, bytes that are not ASCII) as \xHH.
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

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

// Responses are written as bytes: the status line and headers, then the
// body, or for events the chunks of a chunked transfer.
std::string status_line(int status) {
  const beast::string_view reason = http::obsolete_reason(http::int_to_status(static_cast<unsigned>(status)));
  return "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason) + "\r\n";
}

std::string whole_response(const HttpResponse& r, bool keep_alive) {
  return status_line(r.status) + "Content-Type: " + r.content_type +
         "\r\nContent-Length: " + std::to_string(r.body.size()) +
         "\r\nConnection: " + (keep_alive ? "keep-alive" : "close") + "\r\n\r\n" + r.body;
}

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

constexpr const char* kLastChunk = "0\r\n\r\n";

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, const HttpHandler& handler, const HttpServerOptions& options,
          std::atomic<int>& active_responses)
      : stream_(std::move(socket)), handler_(handler), options_(options), active_responses_(active_responses) {}

  void start() {
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
  }

 private:
  class Channel;

  void read_request() {
    parser_.emplace();
    parser_->body_limit(options_.max_body_bytes);
    stream_.expires_after(std::chrono::seconds(300));  // an idle keep-alive connection is closed in time
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_request(ec); });
  }

  void on_request(beast::error_code ec);

  void reject(int status, const std::string& message) {
    method_ = "?";
    target_ = "?";
    status_ = status;
    start_time_ = now_seconds();
    keep_alive_ = false;
    set_responding(true);
    ++response_id_;
    write(whole_response(error_response(status, message), false), /*last=*/true);
  }

  // While answering, a read notices the client closing the connection.
  // Data that arrives instead (a pipelined request) waits in the buffer.
  void watch_connection() {
    if (watching_) return;
    watching_ = true;
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->watching_ = false;
      if (ec) return self->client_gone();
      self->buffer_.commit(n);
      if (!self->responding_) self->read_request();
    });
  }

  void client_gone() {
    closed_ = true;
    if (responding_) {
      log_request(" (client disconnected)");
      set_responding(false);
      if (on_close_) std::exchange(on_close_, nullptr)();
    }
    close();
  }

  // Counts the server's answers in progress, for a graceful stop.
  void set_responding(bool responding) {
    if (responding != responding_) active_responses_ += responding ? 1 : -1;
    responding_ = responding;
  }

  void write(std::string bytes, bool last) {
    writes_.push_back(std::move(bytes));
    last_queued_ = last;
    if (!writing_) write_next();
  }

  void write_next() {
    if (writes_.empty() || closed_) {
      writing_ = false;
      return;
    }
    writing_ = true;
    net::async_write(stream_, net::buffer(writes_.front()),
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_written(ec); });
  }

  void on_written(beast::error_code ec) {
    if (ec) return client_gone();
    writes_.pop_front();
    if (!writes_.empty()) return write_next();
    writing_ = false;
    if (last_queued_) response_done();
  }

  void log_request(const char* outcome) const {
    if (!options_.log_requests) return;
    VLLM_LOG(Info) << printable(method_) << " " << printable(target_) << " " << status_
                   << (log_detail_.empty() ? "" : " ") << log_detail_ << " "
                   << static_cast<int64_t>((now_seconds() - start_time_) * 1000.0) << " ms" << outcome;
  }

  void response_done() {
    log_request("");
    last_queued_ = false;
    set_responding(false);
    on_close_ = nullptr;
    if (!keep_alive_) return close();
    if (!watching_) read_request();  // else the watch read starts it when data comes
  }

  void close() {
    closed_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.close();
  }

  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  const HttpHandler& handler_;
  const HttpServerOptions& options_;
  std::atomic<int>& active_responses_;

  // The answer in progress (all on this session's strand).
  uint64_t response_id_ = 0;  // a channel of an older request may no longer write
  bool keep_alive_ = false;
  bool responding_ = false;
  bool streaming_ = false;
  std::deque<std::string> writes_;
  bool writing_ = false;
  bool last_queued_ = false;  // the last write of the answer is queued
  bool watching_ = false;
  bool closed_ = false;
  std::function<void()> on_close_;
  // For the log line.
  std::string method_, target_, log_detail_;
  int status_ = 0;
  double start_time_ = 0.0;
};

class Session::Channel : public ResponseChannel {
 public:
  Channel(std::shared_ptr<Session> session, uint64_t id) : session_(std::move(session)), id_(id) {}

  void respond(HttpResponse response) override {
    run([response = std::move(response)](Session& s) {
      if (s.streaming_) return;
      s.status_ = response.status;
      s.write(whole_response(response, s.keep_alive_), true);
    });
  }
  void start_events() override {
    run([](Session& s) {
      if (s.streaming_) return;
      s.streaming_ = true;
      s.status_ = 200;
      s.write(event_stream_header(), false);
    });
  }
  void send_event(std::string data) override {
    run([data = std::move(data)](Session& s) {
      if (s.streaming_) s.write(event_chunk(data), false);
    });
  }
  void end_events() override {
    run([](Session& s) {
      if (!s.streaming_) return;
      s.streaming_ = false;
      s.write(kLastChunk, true);
    });
  }
  void on_close(std::function<void()> callback) override {
    auto session = session_;
    net::post(session->stream_.get_executor(), [session, id = id_, callback = std::move(callback)]() mutable {
      if (session->closed_ && session->response_id_ == id) return callback();
      if (session->response_id_ == id && session->responding_) session->on_close_ = std::move(callback);
    });
  }
  void defer(std::function<void()> work) override { net::post(session_->stream_.get_executor(), std::move(work)); }
  void set_log_detail(std::string detail) override {
    run([detail = std::move(detail)](Session& s) { s.log_detail_ = detail; });
  }

 private:
  // Runs `f` on the session's strand if this request is still being answered.
  template <typename F>
  void run(F f) {
    auto session = session_;
    net::post(session->stream_.get_executor(), [session, id = id_, f = std::move(f)]() mutable {
      if (session->response_id_ != id || !session->responding_ || session->last_queued_ || session->closed_) return;
      f(*session);
    });
  }

  std::shared_ptr<Session> session_;
  uint64_t id_;
};

void Session::on_request(beast::error_code ec) {
  if (ec == http::error::body_limit) return reject(413, "the request body is too large");
  if (ec) return close();  // the client left, timed out, or sent something that is not HTTP
  http::request<http::string_body> message = parser_->release();
  HttpRequest request;
  request.method = std::string(message.method_string());
  request.target = std::string(message.target());
  method_ = request.method;
  target_ = request.target;
  log_detail_.clear();
  start_time_ = now_seconds();
  request.authorization = std::string(message[http::field::authorization]);
  request.body = std::move(message.body());
  keep_alive_ = message.keep_alive();
  set_responding(true);
  ++response_id_;
  stream_.expires_never();  // answers may take as long as generation does
  watch_connection();
  auto channel = std::make_shared<Channel>(shared_from_this(), response_id_);
  try {
    handler_(std::move(request), channel);
  } catch (const std::exception& e) {
    // A bug, not bad input (that is a 4xx from the handler): this request
    // fails, the I/O thread and every other connection go on.
    VLLM_LOG(Error) << "internal error answering " << method_ << " " << target_ << ": " << e.what();
    channel->respond(error_response(500, "internal server error"));
  }
}

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpServerOptions& options, HttpHandler handler)
      : options(options), handler(std::move(handler)), ioc(options.io_threads), acceptor(net::make_strand(ioc)) {}

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (!ec) std::make_shared<Session>(std::move(socket), handler, options, active_responses)->start();
      accept();
    });
  }

  HttpServerOptions options;
  HttpHandler handler;
  net::io_context ioc;
  tcp::acceptor acceptor;
  std::atomic<int> active_responses{0};
  std::vector<std::thread> threads;
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler handler) {
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  const std::string where = options.host + ":" + std::to_string(options.port);
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(options.host, ec);
  if (ec) return invalid_argument("--host " + options.host + " is not an IP address");
  const tcp::endpoint endpoint(address, options.port);
  if (impl->acceptor.open(endpoint.protocol(), ec); ec)
    return unavailable("cannot open " + where + ": " + ec.message());
  impl->acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (impl->acceptor.bind(endpoint, ec); ec) return unavailable("cannot bind " + where + ": " + ec.message());
  if (impl->acceptor.listen(net::socket_base::max_listen_connections, ec); ec) {
    return unavailable("cannot listen on " + where + ": " + ec.message());
  }
  impl->accept();
  for (int i = 0; i < std::max(1, options.io_threads); ++i) {
    impl->threads.emplace_back([ioc = &impl->ioc] { ioc->run(); });
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  stop_accepting();
  impl_->ioc.stop();
  for (std::thread& t : impl_->threads) t.join();
}

uint16_t HttpServer::port() const {
  beast::error_code ec;
  return impl_->acceptor.local_endpoint(ec).port();
}

bool HttpServer::wait_until_idle(double timeout_seconds) {
  const double deadline = now_seconds() + timeout_seconds;
  while (impl_->active_responses.load() > 0) {
    if (now_seconds() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

void HttpServer::stop_accepting() {
  net::post(impl_->acceptor.get_executor(), [impl = impl_.get()] {
    beast::error_code ignored;
    impl->acceptor.close(ignored);
  });
}

}  // namespace vllm::server
