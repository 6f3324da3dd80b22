// tests/common/runtime_fixture.hpp
//
// A runtime on the backend CUDACTOR_TEST_BACKEND names (common/test_backend.hpp), configured
// through CAF's own option parsing, and a blocking `ask` that turns a request into a caf::expected
// with a timeout, so that a hang fails the test instead of stalling it. The scoped_actor goes
// before the runtime: CAF waits for it.
#pragma once

#include <boost/test/unit_test.hpp>

#include <caf/all.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "common/test_backend.hpp"
#include "common/time_scale.hpp"
#include "cudactor/actors/runtime.hpp"

// Boost.Test prints what it checks; an expected prints as "value" or its error.
namespace caf {
template <class T>
std::ostream& boost_test_print_type(std::ostream& out, const expected<T>& x) {
  return x ? out << "value" : out << to_string(x.error());
}
}  // namespace caf

namespace cudactor::test {

class runtime_fixture {
 public:
  using preparation = std::function<void(runtime_config&)>;

  // `prepare` runs before the runtime starts, e.g. to register named operations.
  explicit runtime_fixture(std::vector<std::string> args = {}, preparation prepare = {}) {
    start(std::move(args), std::move(prepare));
  }
  ~runtime_fixture() { stop(); }

  void start(std::vector<std::string> args, preparation prepare = {}) {
    config_ = std::make_unique<runtime_config>();
    // Ephemeral: tests run side by side, and 9464 may be taken on the machine.
    args.insert(args.begin(), {backend_option(), "--cudactor.metrics.port=0"});
    if (auto err = config_->parse(std::move(args))) {
      BOOST_FAIL("bad test options: " << caf::to_string(err));
    }
    if (prepare) prepare(*config_);
    auto started = runtime::start(*config_);
    BOOST_REQUIRE_MESSAGE(started.ok(), started.error().to_string());
    rt_ = std::move(started.value());
    self_.emplace(rt_->system());
  }

  void stop() {
    self_.reset();
    rt_.reset();
    config_.reset();
  }

  runtime& rt() { return *rt_; }
  caf::scoped_actor& self() { return *self_; }
  std::string render(const caf::error& err) { return rt_->system().render(err); }
  // For messages: the error of an expected, or "" when it holds a value.
  template <class T>
  std::string why(const caf::expected<T>& x) {
    return x ? std::string{} : render(x.error());
  }

  template <class T, class Handle, class... Ts>
  caf::expected<T> ask(const Handle& to, Ts&&... xs) {
    caf::expected<T> out{caf::sec::request_timeout};
    (*self_)
        ->request(to, scaled(std::chrono::seconds{10}), std::forward<Ts>(xs)...)
        .receive([&](T& value) { out = std::move(value); },
                 [&](caf::error& err) { out = std::move(err); });
    return out;
  }

  // For requests answered with nothing (reacts_to, or with<void>).
  template <class Handle, class... Ts>
  caf::error tell(const Handle& to, Ts&&... xs) {
    caf::error out;
    (*self_)
        ->request(to, scaled(std::chrono::seconds{10}), std::forward<Ts>(xs)...)
        .receive([] {}, [&](caf::error& err) { out = std::move(err); });
    return out;
  }

 private:
  std::unique_ptr<runtime_config> config_;
  std::unique_ptr<runtime> rt_;
  std::optional<caf::scoped_actor> self_;
};

}  // namespace cudactor::test
