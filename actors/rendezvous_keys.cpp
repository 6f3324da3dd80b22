#include "cudactor/actors/rendezvous_keys.hpp"

#include <string>

namespace cudactor {

bool is_own_rendezvous_key(const rendezvous_entry& entry, std::size_t rank) {
  const std::string prefix = entry.name + "/" + std::to_string(entry.generation) + "/";
  if (entry.key.size() <= prefix.size() || entry.key.compare(0, prefix.size(), prefix) != 0) {
    return false;
  }
  const std::string rest = entry.key.substr(prefix.size());
  const std::string number = std::to_string(rank);
  return rest == number || rest == "rank_" + number || (rank == 0 && rest == "nccl-id");
}

}  // namespace cudactor
