// actors/client_asio.hpp
//
// Boost.Asio completion tokens for cudactor::client, for asynchronous services built on Asio
// or Beast: async_submit(client, op, token) with a handler (run on its associated executor:
// bind one with boost::asio::bind_executor, or it runs on Asio's system executor),
// boost::asio::use_future, or any other token Asio accepts. The handler's signature is
// void(op_notice) for an operation and void(std::vector<op_notice>) for a graph; the
// associated executor is kept busy (a work guard) until the handler has run.
#pragma once

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/post.hpp>

#include <memory>
#include <utility>
#include <vector>

#include "cudactor/actors/client.hpp"

namespace cudactor {

namespace detail {

// Hands the client's function call over to the handler's executor. The handler is move-only
// and std::function wants a copyable callable, hence the shared_ptr.
template <class Handler, class Result>
auto post_to_handler(Handler&& handler) {
  using handler_type = std::decay_t<Handler>;
  struct held {
    explicit held(handler_type&& h)
        : handler(std::move(h)),
          guard(boost::asio::make_work_guard(boost::asio::get_associated_executor(handler))) {}
    handler_type handler;
    boost::asio::executor_work_guard<boost::asio::associated_executor_t<handler_type>> guard;
  };
  auto h = std::make_shared<held>(std::forward<Handler>(handler));
  // The handler (and whatever it owns: a socket, a session) must go on its executor's thread,
  // never on the client's: moved into the posted function, not copied, so the last reference
  // goes when the executor has run it. A copy dropped later on the client's thread would
  // destroy a socket there, possibly after its io_context (seen by ASan in async_service).
  return [h = std::move(h)](Result r) mutable {
    if (!h) return;  // called once: a second call has nothing to hand over
    auto ex = h->guard.get_executor();
    boost::asio::post(ex, [h = std::move(h), r = std::move(r)]() mutable {
      h->handler(std::move(r));
      h->guard.reset();
      h.reset();
    });
  };
}

}  // namespace detail

template <class CompletionToken>
auto async_submit(client& c, op_spec op, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(op_notice)>(
      [&c](auto handler, op_spec op) {
        c.submit(std::move(op),
                 detail::post_to_handler<decltype(handler), op_notice>(std::move(handler)));
      },
      token, std::move(op));
}

template <class CompletionToken>
auto async_submit(client& c, graph_spec graph, CompletionToken&& token) {
  return boost::asio::async_initiate<CompletionToken, void(std::vector<op_notice>)>(
      [&c](auto handler, graph_spec graph) {
        c.submit(
            std::move(graph),
            detail::post_to_handler<decltype(handler), std::vector<op_notice>>(std::move(handler)));
      },
      token, std::move(graph));
}

}  // namespace cudactor
