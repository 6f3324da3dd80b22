// actors/detail/top_waits.hpp
//
// The device waits one operation needs, one per stream waited for. A stream runs in order, so
// a wait on its highest point covers its lower ones: a data wait covers every wait there, an
// order-only one only the order-only ones (a data wait carries a failure, an order does not).
// Kept per stream: the highest point, and the highest data wait when the highest is an order.
// The coordinator compacts the waits it knows the points of; a stream actor compacts again
// once the pending ones are known (messaging/point_cell.hpp).
#pragma once

#include <cstddef>
#include <vector>

#include "cudactor/actors/detail/small_sort.hpp"

namespace cudactor::detail {

// `stream(w)`: an ordered key of the stream waited for; `point(w)`; `order_only(w)`.
template <class T, class Stream, class Point, class Order>
void keep_top_waits(std::vector<T>& waits, Stream stream, Point point, Order order_only) {
  if (waits.size() < 2) return;
  // By stream, then highest point first, a data wait before an order at the same point.
  sort_small(waits, [&](const T& a, const T& b) {
    if (stream(a) != stream(b)) return stream(a) < stream(b);
    if (point(a) != point(b)) return point(a) > point(b);
    return !order_only(a) && order_only(b);
  });
  std::size_t kept = 0;
  for (std::size_t k = 0; k < waits.size();) {
    const auto s = stream(waits[k]);
    bool data_covered = !order_only(waits[k]);
    waits[kept++] = waits[k];
    for (++k; k < waits.size() && stream(waits[k]) == s; ++k) {
      if (!data_covered && !order_only(waits[k])) {
        waits[kept++] = waits[k];
        data_covered = true;
      }
    }
  }
  waits.resize(kept);
}

}  // namespace cudactor::detail
