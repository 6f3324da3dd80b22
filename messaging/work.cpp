#include "cudactor/messaging/work.hpp"

namespace cudactor {

namespace detail {

caf::error local_only_error(const char* what) {
  return make_error(errc::local_only,
                    std::string{what} +
                        " is local-only and cannot leave its process; send a named operation "
                        "(work::named) to a remote stream");
}

}  // namespace detail

caf::error check_sendable(const work& w, const caf::node_id& from, const caf::node_id& to) {
  if (!w.is_local() || from == to) return {};
  return detail::local_only_error("work (a local closure)");
}

}  // namespace cudactor
