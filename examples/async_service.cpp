// examples/async_service.cpp
//
// An asynchronous HTTP service that offloads each request's computation to the GPU (or the
// host backend) and answers when the work has completed, on one I/O thread that never
// blocks: a Boost.Beast server on 127.0.0.1 whose handler hands an operation to the
// coordinator with cudactor::async_submit and a completion handler bound to the I/O
// executor. While the work runs, the thread serves other connections; the completion comes
// back as a posted handler, which reads the result and writes the response.
//
//   GET /saxpy?n=N&a=A   y = x + A x over N floats (x[i] = (i % 1000) / 8), answers
//                        {"n":N,"a":A,"sum":sum of y in index order,"latency_us":..,"stream":..}
//   GET /stats           {"served":..,"failed":..,"rejected":..,"in_flight":..}
//   GET /quit            answers, then stops once the requests in flight have been answered
//
// Each request in flight holds one of --slots pairs of device buffers, allocated at start
// (freeing device memory can synchronize the device; a request must not). With every slot
// taken the answer is 503.
//
//   build/examples/async_service --port=8080
//   curl 'http://127.0.0.1:8080/saxpy?n=4096&a=2'
#include <caf/all.hpp>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cudactor/actors/client.hpp"
#include "cudactor/actors/client_asio.hpp"
#include "cudactor/actors/runtime.hpp"
#include "kernels.hpp"

using namespace cudactor;
namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

class service_config : public runtime_config {
 public:
  service_config() {
    opt_group{custom_options_, "global"}
        .add(port, "port", "port on 127.0.0.1 (0: any free port, printed at start)")
        .add(slots, "slots", "requests computed at once (each holds two device buffers)")
        .add(max_n, "max-n", "largest n a request may ask for");
  }
  std::uint16_t port = 8080;
  std::size_t slots = 16;
  std::size_t max_n = std::size_t{1} << 20;
};

float x_value(std::size_t i) { return static_cast<float>(i % 1000) / 8.0f; }

using response = http::response<http::string_body>;
using respond_fn = std::function<void(response)>;

response make_response(http::status status, const std::string& body, unsigned version) {
  response res{status, version};
  res.set(http::field::content_type, "application/json");
  res.body() = body + "\n";
  res.prepare_payload();
  return res;
}

// The value of `key` in a query string "a=1&b=2", if present.
std::optional<std::string> query_value(const std::string& query, const std::string& key) {
  std::size_t at = 0;
  while (at <= query.size()) {
    const std::size_t end = std::min(query.find('&', at), query.size());
    const std::string pair = query.substr(at, end - at);
    if (pair.rfind(key + "=", 0) == 0) return pair.substr(key.size() + 1);
    at = end + 1;
  }
  return std::nullopt;
}

class service {
 public:
  service(asio::io_context& io, runtime& rt, const service_config& config)
      : io_(io), rt_(rt), control_(rt), max_n_(config.max_n) {}

  // Two buffers per slot, x filled once; false if the device has too little memory.
  bool allocate(std::size_t slots) {
    for (std::size_t k = 0; k < slots; ++k) {
      auto x = rt_.device().allocate_managed(max_n_ * sizeof(float));
      auto y = rt_.device().allocate_managed(max_n_ * sizeof(float));
      if (!x || !y) return false;
      float* xs = x.value().as<float>();
      for (std::size_t i = 0; i < max_n_; ++i) xs[i] = x_value(i);
      slots_.push_back({std::move(x.value()), std::move(y.value())});
      free_.push_back(k);
    }
    return true;
  }

  // Frees the device memory; the runtime must still be up.
  void release() {
    control_.stop();
    slots_.clear();
  }

  // Runs on the I/O thread; `respond` is called once, also on the I/O thread.
  void handle(const http::request<http::string_body>& req, respond_fn respond) {
    const std::string target{req.target()};
    const std::size_t q = target.find('?');
    const std::string path = target.substr(0, q);
    const std::string query = q == std::string::npos ? "" : target.substr(q + 1);
    const unsigned version = req.version();
    if (req.method() != http::verb::get) {
      respond(make_response(http::status::method_not_allowed, R"({"error":"GET only"})", version));
    } else if (path == "/saxpy") {
      saxpy(query, version, std::move(respond));
    } else if (path == "/stats") {
      respond(make_response(http::status::ok,
                            "{\"served\":" + std::to_string(served_) +
                                ",\"failed\":" + std::to_string(failed_) +
                                ",\"rejected\":" + std::to_string(rejected_) +
                                ",\"in_flight\":" + std::to_string(in_flight_) + "}",
                            version));
    } else if (path == "/quit") {
      respond(make_response(http::status::ok, R"({"bye":true})", version));
      quit();
    } else {
      respond(make_response(http::status::not_found, R"({"error":"no such path"})", version));
    }
  }

  // New work is refused from now on; on_stop runs once nothing is in flight.
  void quit() {
    stopping_ = true;
    stop_when_idle();
  }
  [[nodiscard]] bool stopping() const noexcept { return stopping_; }
  void on_stop(std::function<void()> f) { on_stop_ = std::move(f); }

 private:
  struct slot {
    gpu::buffer x, y;
  };

  void saxpy(const std::string& query, unsigned version, respond_fn respond) {
    const auto n_text = query_value(query, "n");
    const auto a_text = query_value(query, "a");
    char* end = nullptr;
    const unsigned long long n = n_text ? std::strtoull(n_text->c_str(), &end, 10) : 0;
    const bool n_ok = n_text && end != nullptr && *end == '\0' && n >= 1 && n <= max_n_;
    end = nullptr;
    const float a = a_text ? std::strtof(a_text->c_str(), &end) : 0.0f;
    const bool a_ok = a_text && end != nullptr && *end == '\0';
    if (!n_ok || !a_ok) {
      respond(make_response(
          http::status::bad_request,
          "{\"error\":\"want n (1 to " + std::to_string(max_n_) + ") and a (a number)\"}",
          version));
      return;
    }
    if (stopping_ || free_.empty()) {
      ++rejected_;
      respond(make_response(http::status::service_unavailable,
                            stopping_ ? R"({"error":"stopping"})" : R"({"error":"busy"})",
                            version));
      return;
    }
    const std::size_t k = free_.back();
    free_.pop_back();
    ++in_flight_;
    const float* x = slots_[k].x.as<float>();
    float* y = slots_[k].y.as<float>();
    const std::size_t count = n;
    op_spec op;
    op.description = "saxpy";
    op.body = work::local([x, y, a, count](const gpu::launch_context& ctx) {
      auto s = demo::scale(ctx, y, x, 1.0f, count);    // y = x
      return s ? demo::axpy(ctx, y, a, x, count) : s;  // y = y + a x
    });
    const auto started = std::chrono::steady_clock::now();
    // The handler runs on the I/O thread (bound to its executor), after the work has ended.
    async_submit(
        control_, std::move(op),
        asio::bind_executor(io_.get_executor(), [this, k, y, count, a, version, started,
                                                 respond = std::move(respond)](op_notice notice) {
          --in_flight_;
          if (notice.state != op_state::completed) {
            ++failed_;
            free_.push_back(k);
            respond(make_response(http::status::internal_server_error,
                                  "{\"error\":\"" + rt_.system().render(notice.cause) + "\"}",
                                  version));
          } else {
            double sum = 0;
            for (std::size_t i = 0; i < count; ++i) sum += y[i];
            free_.push_back(k);
            ++served_;
            const double us = std::chrono::duration<double, std::micro>(
                                  std::chrono::steady_clock::now() - started)
                                  .count();
            char body[256];
            std::snprintf(body, sizeof body,
                          R"({"n":%zu,"a":%.9g,"sum":%.17g,"latency_us":%.1f,"stream":%u})", count,
                          static_cast<double>(a), sum, us, notice.stream.value);
            respond(make_response(http::status::ok, body, version));
          }
          stop_when_idle();
        }));
  }

  void stop_when_idle() {
    if (!stopping_ || in_flight_ != 0 || !on_stop_) return;
    auto f = std::move(on_stop_);
    on_stop_ = nullptr;
    f();
  }

  asio::io_context& io_;
  runtime& rt_;
  client control_;
  std::size_t max_n_;
  std::vector<slot> slots_;
  std::vector<std::size_t> free_;
  std::uint64_t served_ = 0, failed_ = 0, rejected_ = 0, in_flight_ = 0;
  bool stopping_ = false;
  std::function<void()> on_stop_;
};

// One connection: read a request, have the service answer it, write, and again while the
// client keeps the connection alive.
class session : public std::enable_shared_from_this<session> {
 public:
  session(tcp::socket socket, service& svc) : socket_(std::move(socket)), service_(svc) {}

  void read() {
    request_ = {};
    waiting_ = true;
    http::async_read(socket_, buffer_, request_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       self->waiting_ = false;
                       if (ec) return self->close();
                       self->service_.handle(self->request_,
                                             [self](response res) { self->write(std::move(res)); });
                     });
  }

  // Stopping: a connection kept alive and waiting for its next request is closed; one being
  // answered closes after its response (write() turns keep-alive off).
  void close_if_waiting() {
    if (!waiting_) return;
    beast::error_code ignored;
    socket_.close(ignored);
  }

 private:
  void write(response res) {
    res.keep_alive(request_.keep_alive() && !service_.stopping());
    response_ = std::move(res);
    http::async_write(socket_, response_,
                      [self = shared_from_this()](beast::error_code ec, std::size_t) {
                        if (ec || self->response_.need_eof()) return self->close();
                        self->read();
                      });
  }

  void close() {
    beast::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
  }

  tcp::socket socket_;
  service& service_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> request_;
  response response_;
  bool waiting_ = false;
};

void accept(tcp::acceptor& acceptor, service& svc, std::vector<std::weak_ptr<session>>& live) {
  acceptor.async_accept([&](beast::error_code ec, tcp::socket socket) {
    if (ec) return;  // closed: the service is stopping
    auto s = std::make_shared<session>(std::move(socket), svc);
    live.erase(std::remove_if(live.begin(), live.end(), [](auto& w) { return w.expired(); }),
               live.end());
    live.push_back(s);
    s->read();
    accept(acceptor, svc, live);
  });
}

}  // namespace

int main(int argc, char** argv) {
  service_config config;
  if (auto err = config.parse(argc, argv)) {
    std::fprintf(stderr, "async_service: %s\n", cudactor::describe(err).c_str());
    return 2;
  }
  if (config.cli_helptext_printed) return 0;
  if (config.slots == 0 || config.max_n == 0) {
    std::fprintf(stderr, "async_service: --slots and --max-n must be at least 1\n");
    return 2;
  }
  auto started = runtime::start(config);
  if (!started) {
    std::fprintf(stderr, "async_service: %s\n", started.error().to_string().c_str());
    return 1;
  }
  runtime& rt = *started.value();

  int rc = 0;
  {
    asio::io_context io{1};
    service svc{io, rt, config};
    tcp::acceptor acceptor{io};
    beast::error_code ec;
    const tcp::endpoint where{asio::ip::make_address("127.0.0.1"), config.port};
    acceptor.open(where.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(where, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      std::fprintf(stderr, "async_service: cannot listen on 127.0.0.1:%u: %s\n",
                   static_cast<unsigned>(config.port), ec.message().c_str());
      rc = 1;
    } else if (!svc.allocate(config.slots)) {
      std::fprintf(stderr, "async_service: out of device memory for %zu slots\n", config.slots);
      rc = 1;
    } else {
      // Stopping (GET /quit, SIGINT, SIGTERM) waits until no request is in flight, then
      // closes the listener and the idle connections: io.run() returns once the last
      // response is written, with no completion of the client's still on its way.
      asio::signal_set signals{io, SIGINT, SIGTERM};
      std::vector<std::weak_ptr<session>> live;
      svc.on_stop([&] {
        beast::error_code ignored;
        acceptor.close(ignored);
        signals.cancel(ignored);
        for (auto& w : live) {
          if (auto s = w.lock()) s->close_if_waiting();
        }
      });
      signals.async_wait([&](beast::error_code e, int) {
        if (!e) svc.quit();
      });
      accept(acceptor, svc, live);
      std::printf("async_service: listening on http://127.0.0.1:%u (%s, %zu slots)\n",
                  static_cast<unsigned>(acceptor.local_endpoint().port()),
                  rt.backend_reason().c_str(), config.slots);
      std::fflush(stdout);
      io.run();
      std::printf("async_service: stopped\n");
    }
    svc.release();
  }
  runtime::release_calling_thread();
  rt.shutdown();
  return rc;
}
