// actors/coordinator/notice_outbox.hpp
//
// The notices a coordinator pass owes its listeners, gathered per listener so that each gets
// one message per pass however many of its operations ended (a graph's thousands of ends are
// one message, not thousands). The coordinator adds as operations end and sends the whole
// outbox at the end of its pass (send_all), the one place notices go out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cudactor/messaging/coordinator_protocol.hpp"

namespace cudactor::detail {

class notice_outbox {
 public:
  // `notice` for `listener`. `room`: how many notices this pass may end (the room a new list
  // gets, so that a graph's notices are not moved over and over as the list grows).
  void add(const op_listener& listener, op_notice notice, std::size_t room) {
    // Found before inserting: emplace would allocate a node for every notice, only to drop it.
    auto at = index_.find(listener.address());
    if (at == index_.end()) {
      at = index_.emplace(listener.address(), lists_.size()).first;
      // A busy mailbox runs several handlers before the pass that sends the outbox: the last
      // outbox's longest list is the better guess then (bounded, so that one burst does not
      // make every later list large).
      std::vector<op_notice> notices;
      notices.reserve(std::max({room, std::size_t{1}, last_longest_}));
      lists_.emplace_back(listener, std::move(notices));
    }
    lists_[at->second].second.push_back(std::move(notice));
  }
  // send(listener, notices) once per listener with notices, in the order they were first
  // added; the outbox is empty after.
  template <class Send>
  void send_all(Send&& send) {
    last_longest_ = 0;
    for (auto& [listener, notices] : lists_) {
      last_longest_ = std::max(last_longest_, std::min(notices.size(), guess_limit));
      send(listener, std::move(notices));
    }
    lists_.clear();
    index_.clear();
  }
  [[nodiscard]] bool empty() const noexcept { return lists_.empty(); }

 private:
  static constexpr std::size_t guess_limit = 1024;
  std::vector<std::pair<op_listener, std::vector<op_notice>>> lists_;
  std::unordered_map<caf::actor_addr, std::size_t> index_;
  std::size_t last_longest_ = 0;  // the longest list of the last outbox sent (bounded)
};

}  // namespace cudactor::detail
