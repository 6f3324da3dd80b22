// actors/node/node_guests.hpp
//
// The control planes a node's owner admitted as guests (node_actor's admit, guest_call), and
// what each admission has used of its quotas. A guest token names an admission; every
// process that claimed the node with it is one of its guests, and they share its quotas:
// operations of their open requests at once, and stream time in all (each operation charged
// from its dispatch to its end, which counts waiting behind other work on the same stream: a
// quota that errs on the owner's side). The node's core owns one: it asks before taking a
// guest's work, and tells what opened, ended and closed by the admission's id, which a
// request keeps (so that a request outliving its guest, or its admission, counts nowhere).
#pragma once

#include <caf/node_id.hpp>

#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace cudactor::detail {

class node_guests {
 public:
  struct quota {
    std::uint64_t max_open_ops = 0;
    std::chrono::nanoseconds stream_time{0};
  };

  // Admits `token` with `q` (anew: the time used starts from 0), or revokes it when
  // q.max_open_ops is 0. The processes that held it, for the core to cancel their work: all of
  // them on a revocation, none otherwise.
  std::vector<caf::node_id> admit(const std::string& token, quota q);

  // Whether `token` is admitted; if so, `guest` is one of its guests from now on (a process
  // holds one admission).
  [[nodiscard]] bool claim(const std::string& token, const caf::node_id& guest);

  // The admission `node` holds as a guest; 0 if none.
  [[nodiscard]] std::uint64_t admission_of(const caf::node_id& node) const;

  // Why admission `id` may not open `ops` more operations now (words naming the quota); empty
  // if it may.
  [[nodiscard]] std::string refusal(std::uint64_t id, std::uint64_t ops) const;

  // A request of `ops` operations under admission `id` was taken, or ended (answered or
  // failed); one of its operations took `used` from its dispatch to its end.
  void opened(std::uint64_t id, std::uint64_t ops);
  void closed(std::uint64_t id, std::uint64_t ops);
  void charge(std::uint64_t id, std::chrono::nanoseconds used);

  // `guest`'s last caller is gone: it holds its admission no more.
  void forget(const caf::node_id& guest);
  // The owner is gone: every admission ends. Every guest, for the core to cancel their work.
  std::vector<caf::node_id> clear();

  // What admission `token` has open and has used (0 for none), for tests and figures.
  [[nodiscard]] std::uint64_t open_ops(const std::string& token) const;
  [[nodiscard]] std::chrono::nanoseconds used(const std::string& token) const;

 private:
  struct admission {
    std::uint64_t id = 0;
    quota limits;
    std::uint64_t open_ops = 0;
    std::chrono::nanoseconds used{0};
    std::vector<caf::node_id> guests;
  };

  admission* find(std::uint64_t id);
  const admission* find(std::uint64_t id) const;

  std::uint64_t next_id_ = 1;
  std::unordered_map<std::string, admission> by_token_;
  std::unordered_map<std::uint64_t, std::string> token_of_;  // by admission id
  std::unordered_map<caf::node_id, std::uint64_t> by_node_;  // each guest's admission
};

}  // namespace cudactor::detail
