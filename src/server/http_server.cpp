#include "server/http_server.h"

#include <pthread.h>
#include <sys/resource.h>

#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <cerrno>
#include <deque>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/logging.h"
#include "server/api_error.h"
#include "server/connection_table.h"
#include "server/http_request_parser.h"
#include "server/http_wire.h"

namespace vllm::server {
namespace {

namespace net = boost::asio;
using tcp = net::ip::tcp;
using error_code = boost::system::error_code;

// How much of a client's next requests is read ahead while one is answered
// (enough to notice it leave; more waits in the socket).
constexpr size_t kMaxReadAhead = 64 << 10;
constexpr size_t kReadChunk = 16 << 10;
// Answer bytes queued behind the one being written: a stream whose client
// reads nothing is dropped here rather than held in memory.
constexpr size_t kMaxQueuedWriteBytes = 8 << 20;
// After an error answer, the client's unread bytes are drained this long
// before closing, so that its TCP stack does not discard the answer on a reset.
constexpr double kLingerSeconds = 2.0;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

struct Shared {  // what every connection of a server uses
  const HttpServerOptions& options;
  const HttpHandler& handler;
  ConnectionTable& table;
  std::atomic<int>& active_responses;
};

class Session : public ConnectionTable::Connection, public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared shared)
      : socket_(std::move(socket)),
        timer_(socket_.get_executor()),
        shared_(shared),
        parser_(HttpLimits{.max_body_bytes = shared.options.max_body_bytes}) {}

  // Serves the connection; `refuse` answers 503 at once (the server is full).
  void start(bool refuse) {
    net::dispatch(socket_.get_executor(), [self = shared_from_this(), refuse] {
      if (refuse) return self->reject(503, "the server has too many open connections; retry later");
      self->wait_for_request();
    });
  }

  void evict() override {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      if (self->phase_ != Phase::kAnswering) self->close();
    });
  }

 private:
  class Channel;
  enum class Phase { kReading, kAnswering, kLingering, kClosed };

  // ---- reading requests ----

  void wait_for_request() {
    phase_ = Phase::kReading;
    shared_.table.set_idle(shared_from_this());
    parse_buffered();
  }

  // Feeds the parser what has arrived; answers a finished request, or reads on.
  void parse_buffered() {
    const auto before = parser_.state();
    while (buffer_.size() > 0) {
      const auto data = buffer_.data();
      const size_t used = parser_.feed({static_cast<const char*>(data.data()), data.size()});
      buffer_.consume(used);
      if (used == 0) break;
      const auto state = parser_.state();
      if (state == HttpRequestParser::State::kDone || state == HttpRequestParser::State::kFailed) break;
    }
    switch (parser_.state()) {
      case HttpRequestParser::State::kFailed:
        return reject(parser_.error().status, parser_.error().message);
      case HttpRequestParser::State::kDone:
        return dispatch(parser_.take());
      case HttpRequestParser::State::kIdle:
        if (before != HttpRequestParser::State::kIdle || !deadline_set_) {
          set_deadline(shared_.options.keep_alive_timeout_seconds);
        }
        break;
      case HttpRequestParser::State::kHeader:
        if (before == HttpRequestParser::State::kIdle) set_deadline(shared_.options.header_timeout_seconds);
        break;
      case HttpRequestParser::State::kBody:
        if (before != HttpRequestParser::State::kBody) {
          set_deadline(shared_.options.body_timeout_seconds);
          if (parser_.expects_continue()) write(continue_response(), /*ends_answer=*/false);
        }
        break;
    }
    read_more();
  }

  void read_more() {
    if (reading_ || phase_ == Phase::kClosed) return;
    if (phase_ == Phase::kAnswering && buffer_.size() >= kMaxReadAhead) return;  // resumed when the answer ends
    reading_ = true;
    socket_.async_read_some(buffer_.prepare(kReadChunk), [self = shared_from_this()](error_code ec, size_t n) {
      self->reading_ = false;
      self->on_read(ec, n);
    });
  }

  void on_read(error_code ec, size_t n) {
    if (phase_ == Phase::kClosed) return;
    if (ec) return phase_ == Phase::kAnswering ? client_gone() : close();  // it left, or reset
    buffer_.commit(n);
    if (phase_ == Phase::kLingering) buffer_.consume(buffer_.size());
    if (phase_ == Phase::kReading) return parse_buffered();
    read_more();  // answering: watch for the client leaving; lingering: drain
  }

  // ---- answering ----

  // Hands a whole request to the handler, which answers through a Channel.
  void dispatch(HttpRequest request);

  // An error answer, then the connection closes: what the client sent is
  // not a request that can be answered, or the server cannot take it.
  void reject(int status, const std::string& message) {
    if (phase_ == Phase::kClosed) return;
    cancel_deadline();
    phase_ = Phase::kAnswering;
    shared_.table.set_busy(*this);
    set_responding(true);
    ++response_id_;
    keep_alive_ = false;
    method_ = "-";
    target_ = "-";
    start_time_ = now_seconds();
    status_ = status;
    HttpResponse response = error_response(status, message);
    if (status == 503) response.headers.emplace_back("Retry-After", "1");
    write(whole_response(response, /*keep_alive=*/false), /*ends_answer=*/true);
  }

  void write(std::string bytes, bool ends_answer) {
    if (!writes_.empty()) queued_bytes_ += bytes.size();  // behind the write in progress
    writes_.push_back(std::move(bytes));
    answer_queued_ = answer_queued_ || ends_answer;
    if (queued_bytes_ > kMaxQueuedWriteBytes) {
      VLLM_LOG(Warning) << "dropping a client that reads none of its answer: " << printable(target_);
      return client_gone();
    }
    if (!writing_) write_next();
  }

  void write_next() {
    if (writes_.empty() || phase_ == Phase::kClosed) {
      writing_ = false;
      return;
    }
    writing_ = true;
    // While a request is read (a 100 Continue) its own deadline stands.
    if (phase_ == Phase::kAnswering) set_deadline(shared_.options.write_timeout_seconds);
    net::async_write(socket_, net::buffer(writes_.front()),
                     [self = shared_from_this()](error_code ec, size_t) { self->on_written(ec); });
  }

  void on_written(error_code ec) {
    if (phase_ == Phase::kClosed) return;
    if (ec) return client_gone();
    writes_.pop_front();
    if (!writes_.empty()) queued_bytes_ -= std::min(queued_bytes_, writes_.front().size());
    if (!writes_.empty()) return write_next();
    writing_ = false;
    if (phase_ != Phase::kAnswering) return;
    cancel_deadline();
    if (answer_queued_) answer_done();
  }

  void answer_done() {
    log_request("");
    answer_queued_ = false;
    streaming_ = false;
    set_responding(false);
    on_close_ = nullptr;
    if (!keep_alive_) return linger();
    wait_for_request();  // a pipelined request may be waiting in the buffer
  }

  // The client went away (or must be dropped) before its answer was done.
  void client_gone() {
    if (phase_ == Phase::kAnswering && responding_) {
      log_request(" (client disconnected)");
      set_responding(false);
      if (on_close_) std::exchange(on_close_, nullptr)();
    }
    close();
  }

  // ---- closing ----

  void linger() {
    phase_ = Phase::kLingering;
    shared_.table.set_idle(shared_from_this());
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    set_deadline(kLingerSeconds);
    read_more();
  }

  void close() {
    if (phase_ == Phase::kClosed) return;
    if (responding_) set_responding(false);
    phase_ = Phase::kClosed;
    cancel_deadline();
    error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    shared_.table.closed(*this);
  }

  // ---- deadlines ----

  void set_deadline(double after_seconds) {
    deadline_set_ = true;
    timer_.expires_after(seconds(after_seconds));
    timer_.async_wait([self = shared_from_this(), generation = ++deadline_generation_](error_code ec) {
      if (!ec && generation == self->deadline_generation_) self->on_deadline();
    });
  }

  void cancel_deadline() {
    deadline_set_ = false;
    ++deadline_generation_;
    timer_.cancel();
  }

  void on_deadline() {
    deadline_set_ = false;
    switch (phase_) {
      case Phase::kReading:
        // Nothing of a request yet: an idle connection, closed quietly.
        if (parser_.state() == HttpRequestParser::State::kIdle) return close();
        return reject(408, "the request did not arrive in time");
      case Phase::kAnswering:
        VLLM_LOG(Warning) << "dropping a client that stopped reading its answer: " << printable(target_);
        return client_gone();
      case Phase::kLingering:
      case Phase::kClosed:
        return close();
    }
  }

  // Counts the server's answers in progress, for a graceful stop.
  void set_responding(bool responding) {
    if (responding != responding_) shared_.active_responses += responding ? 1 : -1;
    responding_ = responding;
  }

  void log_request(const char* outcome) const {
    if (!shared_.options.log_requests) return;
    VLLM_LOG(Info) << printable(method_) << " " << printable(target_) << " " << status_
                   << (log_detail_.empty() ? "" : " ") << log_detail_ << " "
                   << static_cast<int64_t>((now_seconds() - start_time_) * 1000.0) << " ms" << outcome;
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  Shared shared_;
  HttpRequestParser parser_;
  boost::beast::flat_buffer buffer_;  // bytes read, not yet parsed
  Phase phase_ = Phase::kReading;
  bool reading_ = false;
  uint64_t deadline_generation_ = 0;  // a timer that fired after being reset does nothing
  bool deadline_set_ = false;

  // The answer in progress (all on this session's strand).
  uint64_t response_id_ = 0;  // a channel of an older request may no longer write
  bool keep_alive_ = false;
  bool responding_ = false;
  bool streaming_ = false;
  std::deque<std::string> writes_;
  size_t queued_bytes_ = 0;  // of writes_ behind the front one
  bool writing_ = false;
  bool answer_queued_ = false;  // the last write of the answer is queued
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
      s.write(whole_response(response, s.keep_alive_), /*ends_answer=*/true);
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
      if (s.streaming_) s.write(kLastChunk, /*ends_answer=*/true);
    });
  }
  void on_close(std::function<void()> callback) override {
    auto session = session_;
    net::post(session->socket_.get_executor(), [session, id = id_, callback = std::move(callback)]() mutable {
      if (session->response_id_ != id) return;
      if (session->phase_ == Phase::kClosed) return callback();
      if (session->responding_) session->on_close_ = std::move(callback);
    });
  }
  void defer(std::function<void()> work) override { net::post(session_->socket_.get_executor(), std::move(work)); }
  void set_log_detail(std::string detail) override {
    run([detail = std::move(detail)](Session& s) { s.log_detail_ = detail; });
  }

 private:
  // Runs `f` on the session's strand if this request is still being answered.
  template <typename F>
  void run(F f) {
    auto session = session_;
    net::post(session->socket_.get_executor(), [session, id = id_, f = std::move(f)]() mutable {
      if (session->response_id_ != id || !session->responding_ || session->answer_queued_ ||
          session->phase_ != Phase::kAnswering) {
        return;
      }
      f(*session);
    });
  }

  std::shared_ptr<Session> session_;
  uint64_t id_;
};

void Session::dispatch(HttpRequest request) {
  cancel_deadline();
  phase_ = Phase::kAnswering;
  shared_.table.set_busy(*this);
  set_responding(true);
  ++response_id_;
  keep_alive_ = request.keep_alive;
  method_ = request.method;
  target_ = request.target;
  log_detail_.clear();
  start_time_ = now_seconds();
  read_more();  // a read stays pending: it tells when the client leaves
  auto channel = std::make_shared<Channel>(shared_from_this(), response_id_);
  try {
    shared_.handler(std::move(request), channel);
  } catch (const std::exception& e) {
    // A bug, not bad input (that is a 4xx from the handler): this request
    // fails, the I/O thread and every other connection go on.
    VLLM_LOG(Error) << "internal error answering " << printable(method_) << " " << printable(target_) << ": "
                    << e.what();
    channel->respond(error_response(500, "internal server error"));
  }
}

bool out_of_descriptors(const error_code& ec) {
  return ec.value() == EMFILE || ec.value() == ENFILE || ec.value() == ENOBUFS || ec.value() == ENOMEM;
}

size_t fd_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 1 << 20;
  return static_cast<size_t>(limit.rlim_cur);
}

}  // namespace

size_t default_max_connections(uint64_t fd_limit) {
  constexpr uint64_t kReservedDescriptors = 64;  // model shards, logs, the listening socket, pipes
  constexpr uint64_t kMinConnections = 8;
  return static_cast<size_t>(
      std::max(kMinConnections, fd_limit > kReservedDescriptors * 2 ? fd_limit - kReservedDescriptors : fd_limit / 2));
}

struct HttpServer::Impl {
  Impl(const HttpServerOptions& opts, HttpHandler h)
      : options(opts),
        handler(std::move(h)),
        table(options.max_connections > 0 ? options.max_connections : default_max_connections(fd_limit())),
        ioc(options.io_threads),
        acceptor(net::make_strand(ioc)),
        accept_pause(acceptor.get_executor()) {}

  void accept() {
    acceptor.async_accept(net::make_strand(ioc), [this](error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor.is_open()) return;
      if (out_of_descriptors(ec)) return pause_accepting();
      if (!ec) {
        const bool room = table.opened();
        std::make_shared<Session>(std::move(socket), Shared{options, handler, table, active_responses})
            ->start(/*refuse=*/!room);
      }
      accept();
    });
  }

  // Out of file descriptors: an idle connection gives way, and accepting
  // waits a moment, instead of failing on the same pending connection in a loop.
  void pause_accepting() {
    if (!table.evict_longest_idle()) {
      VLLM_LOG(Warning) << "out of file descriptors; accepting paused";
    }
    accept_pause.expires_after(std::chrono::milliseconds(50));
    accept_pause.async_wait([this](error_code ec) {
      if (!ec && acceptor.is_open()) accept();
    });
  }

  HttpServerOptions options;
  HttpHandler handler;
  ConnectionTable table;  // before ioc: sessions destroyed with it still reach the table
  std::atomic<int> active_responses{0};
  net::io_context ioc;
  tcp::acceptor acceptor;
  net::steady_timer accept_pause;
  std::vector<std::thread> threads;
};

Result<std::unique_ptr<HttpServer>> HttpServer::start(const HttpServerOptions& options, HttpHandler handler) {
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  const std::string where = options.host + ":" + std::to_string(options.port);
  error_code ec;
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
    impl->threads.emplace_back([ioc = &impl->ioc, name = "vllm-http-" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), name.c_str());
      ioc->run();
    });
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
  error_code ec;
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
    error_code ignored;
    impl->acceptor.close(ignored);
    impl->accept_pause.cancel();
  });
}

}  // namespace vllm::server
