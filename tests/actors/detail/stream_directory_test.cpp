// The stream directory: what a stream actor publishes is what others read, out-of-range and
// unpublished ids read empty, and a reader racing a writer never sees half of a write (each
// write puts the same number in all three parts of the handle; a torn read would mix two).
#define BOOST_TEST_MODULE stream_directory
#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "cudactor/actors/detail/stream_directory.hpp"

using cudactor::stream_id;
using cudactor::detail::stream_directory;
using cudactor::gpu::handle_id;
using cudactor::gpu::stream_ref;

BOOST_AUTO_TEST_CASE(a_published_stream_is_read_back_and_replaced_by_the_next) {
  stream_directory d{3};
  BOOST_TEST(d.size() == 3u);
  BOOST_TEST(d.view(stream_id{1}).empty());  // not published yet
  d.publish(stream_id{1}, stream_ref{handle_id{7, 4, 2}});
  BOOST_TEST((d.view(stream_id{1}) == stream_ref{handle_id{7, 4, 2}}));
  BOOST_TEST(d.view(stream_id{0}).empty());
  d.publish(stream_id{1}, stream_ref{handle_id{7, 5, 1}});  // made anew after a reset
  BOOST_TEST((d.view(stream_id{1}) == stream_ref{handle_id{7, 5, 1}}));
  d.publish(stream_id{3}, stream_ref{handle_id{7, 1, 1}});  // out of range: ignored
  BOOST_TEST(d.view(stream_id{3}).empty());
}

BOOST_AUTO_TEST_CASE(a_reader_racing_a_writer_never_sees_half_a_write) {
  stream_directory d{1};
  d.publish(stream_id{0}, stream_ref{handle_id{1, 1, 1}});
  std::atomic<bool> done{false};
  std::atomic<std::uint64_t> torn{0}, reads{0};
  std::thread reader{[&] {
    while (!done.load()) {
      const handle_id h = d.view(stream_id{0}).id();
      if (h.instance != h.slot || h.slot != h.generation) torn.fetch_add(1);
      reads.fetch_add(1);
    }
  }};
  // Writes until the reader has read many times while they went on (it may start late).
  for (std::uint32_t k = 1; k < 200000 || reads.load() < 100000; ++k) {
    d.publish(stream_id{0}, stream_ref{handle_id{k, k, k}});
  }
  done = true;
  reader.join();
  BOOST_TEST(torn.load() == 0u);
  BOOST_TEST(reads.load() >= 100000u);
}
