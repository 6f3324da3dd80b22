// actors/node/node_requests.hpp
//
// The requests a node's core holds open: each a graph, one operation or a buffer's fetch,
// handed to the coordinator with the core as its operations' listener and answered once every
// one of them has ended. Here: the bounds on how many are open (max-pending, max-pending-ops),
// which request and which of its operations each id the coordinator registered is, the ends
// told before the ids came (an operation can end as it is registered), the answers, and the
// cancellation of the operations a departed control plane sent. The core owns one and sets
// how an operation is cancelled at the coordinator and what follows a request's end.
#pragma once

#include <caf/error.hpp>
#include <caf/node_id.hpp>
#include <caf/typed_response_promise.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/messaging/coordinator_types.hpp"
#include "cudactor/messaging/step_types.hpp"

namespace cudactor::detail {

// One request not yet answered: a graph (every end, in order), a single operation, a fetch
// (the bytes its operation read), or a step's replay (its outcome: one operation of the
// coordinator, answered by it directly, not through the ends the core listens to).
struct pending_request {
  enum class answer : std::uint8_t { graph, single, fetch, replay };
  caf::typed_response_promise<std::vector<op_notice>> graph;
  caf::typed_response_promise<op_notice> single;
  caf::typed_response_promise<std::vector<std::uint8_t>> fetched;
  caf::typed_response_promise<step_outcome> replayed;
  std::shared_ptr<std::vector<std::uint8_t>> into;  // a fetch's bytes, once its operation ended
  answer kind = answer::graph;
  std::size_t ops = 0;
  std::uint64_t bytes = 0;      // a store's data or a fetch's reply (max-transfer-bytes)
  step_handle step;             // a replay's
  caf::node_id from;            // the control plane (process) that sent it
  std::uint64_t admission = 0;  // the guest admission it counts against; 0: the owner's
  std::vector<op_id> ids;       // the coordinator's, once it registered them
  std::vector<op_notice> ends;  // by the graph's order, as the coordinator tells them
  std::size_t told = 0;
  bool cancelled = false;  // its control plane went: its operations are cancelled
};

class node_requests {
 public:
  node_requests(std::string node, std::size_t max_pending, std::size_t max_pending_ops,
                std::uint64_t max_transfer_bytes)
      : node_(std::move(node)),
        max_pending_(max_pending),
        max_pending_ops_(max_pending_ops),
        max_transfer_bytes_(max_transfer_bytes) {}

  // How the core cancels operations at the coordinator (one message for all).
  std::function<void(std::vector<op_id>)> cancel_ops;
  // After a request was answered or failed, before it is forgotten.
  std::function<void(std::uint64_t key, const pending_request&)> on_closed;
  // An operation of a request ended, as the coordinator told it.
  std::function<void(const pending_request&, const op_notice&)> on_ended;

  // Why a request of `ops` operations, moving `bytes` (a store's or a fetch's), may not be
  // opened now (resource_exhausted, naming the limit); none if it may.
  [[nodiscard]] caf::error refusal(std::size_t ops, std::uint64_t bytes = 0) const;

  // A new request of `kind` and `ops` operations from `from`, moving `bytes`: its key, in the
  // order taken.
  std::uint64_t open(pending_request::answer kind, std::size_t ops, const caf::node_id& from,
                     std::uint64_t admission, std::uint64_t bytes = 0);
  // The open request `key`, or null once it was answered.
  [[nodiscard]] pending_request* find(std::uint64_t key);

  // The coordinator registered request `key`'s operations as `ids`: each end is placed as it
  // is told (or was, early), and the request answered with the last.
  void registered(std::uint64_t key, const std::vector<op_id>& ids);
  // Ends the coordinator told, of operations handed to it; `keep_early`: whether an end of an
  // operation not registered yet is kept for when it is (not while shutting down).
  void told(std::vector<op_notice>& notices, bool keep_early);
  // Answers request `key` with `ends`, or fails it with `why`; either forgets it.
  void answer(std::uint64_t key, std::vector<op_notice>& ends);
  void fail(std::uint64_t key, const caf::error& why);
  // Answers the replay `key` with the coordinator's outcome, and forgets it.
  void answer(std::uint64_t key, step_outcome& outcome);

  // Marks `gone`'s requests cancelled and cancels their operations the coordinator has (one
  // registered later is cancelled as it is).
  void cancel_from(const caf::node_id& gone);
  // The steps of the open replays `from` sent (a step released since among them).
  [[nodiscard]] std::vector<step_handle> replays_from(const caf::node_id& from) const;

  // Fails every open request with `why`, and forgets every id.
  void close(const caf::error& why);

  [[nodiscard]] std::size_t size() const noexcept { return pending_.size(); }
  // Of those, the owner's (admission 0): what its barrier calls wait for.
  [[nodiscard]] std::size_t owners() const noexcept { return owners_; }
  // The key the next request will have: every request open now has a smaller one.
  [[nodiscard]] std::uint64_t next_key() const noexcept { return next_key_; }
  [[nodiscard]] std::size_t ops() const noexcept { return ops_; }

 private:
  caf::error named(errc code, const std::string& what) const;
  void finished(std::unordered_map<std::uint64_t, pending_request>::iterator it);

  std::string node_;
  std::size_t max_pending_;
  std::size_t max_pending_ops_;
  std::uint64_t max_transfer_bytes_;
  std::uint64_t next_key_ = 1;
  std::unordered_map<std::uint64_t, pending_request> pending_;
  std::size_t ops_ = 0;  // operations of the requests in `pending_`
  std::uint64_t bytes_ = 0;  // bytes the requests in `pending_` move
  std::size_t owners_ = 0;   // requests in `pending_` with admission 0
  // Which request, and which of its operations, each registered operation is, until its end
  // is told; ends told before the ids came.
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::uint32_t>> by_op_;
  std::unordered_map<std::uint64_t, op_notice> early_;
};

}  // namespace cudactor::detail
