// actors/detail/small_sort.hpp
//
// Sorting the few items one operation brings (its inferred dependencies, its device waits):
// by insertion in place up to 16 of them, std::sort beyond. For a handful, std::sort's
// dispatch cost about as much as the sorting (a tenth of inferring an operation's uses).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace cudactor::detail {

template <class T, class Before>
void sort_small(std::vector<T>& items, Before before) {
  if (items.size() > 16) {
    std::sort(items.begin(), items.end(), before);
    return;
  }
  for (std::size_t k = 1; k < items.size(); ++k) {
    const T x = items[k];
    std::size_t j = k;
    for (; j > 0 && before(x, items[j - 1]); --j) items[j] = items[j - 1];
    items[j] = x;
  }
}

}  // namespace cudactor::detail
