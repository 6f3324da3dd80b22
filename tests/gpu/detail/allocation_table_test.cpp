#define BOOST_TEST_MODULE allocation_table
#include <boost/test/unit_test.hpp>

#include <cstdint>
#include <memory>
#include <vector>

#include "common/printing.hpp"
#include "cudactor/gpu/detail/allocation_table.hpp"

using namespace cudactor::gpu;
using namespace cudactor::gpu::detail;

namespace {
alignas(64) std::uint8_t device_block[256];
alignas(64) std::uint8_t pinned_block[128];
alignas(64) std::uint8_t managed_block[64];
alignas(64) std::uint8_t plain_host[64];

std::unique_ptr<allocation_table> make(bool strict) {
  auto table = std::make_unique<allocation_table>(strict);
  table->add(device_block, {256, memory_kind::device, {}, false});
  table->add(pinned_block, {128, memory_kind::pinned_host, {}, false});
  table->add(managed_block, {64, memory_kind::managed, {}, false});
  return table;
}
}  // namespace

BOOST_AUTO_TEST_CASE(ranges_inside_an_allocation_pass) {
  auto owner = make(true);
  auto& table = *owner;
  BOOST_TEST(table.check(device_block, 256, memory_side::device, "d").ok());
  BOOST_TEST(table.check(device_block + 255, 1, memory_side::device, "d").ok());
  BOOST_TEST(table.check(managed_block, 64, memory_side::host, "m").ok());
  BOOST_TEST(table.check(managed_block, 64, memory_side::device, "m").ok());
  BOOST_TEST(table.check(pinned_block, 128, memory_side::host, "p").ok());
  BOOST_TEST(table.check(plain_host, 64, memory_side::host, "h").ok());
}

BOOST_AUTO_TEST_CASE(overruns_null_zero_and_wrong_sides_are_refused) {
  auto owner = make(true);
  auto& table = *owner;
  BOOST_TEST(table.check(device_block + 250, 10, memory_side::device, "d").code() ==
             status_code::out_of_range);
  BOOST_TEST(table.check(nullptr, 10, memory_side::device, "d").code() == status_code::invalid_argument);
  BOOST_TEST(table.check(device_block, 0, memory_side::device, "d").code() ==
             status_code::invalid_argument);
  BOOST_TEST(table.check(device_block, 16, memory_side::host, "d").code() ==
             status_code::invalid_argument);
  BOOST_TEST(table.check(pinned_block, 16, memory_side::device, "p").code() ==
             status_code::invalid_argument);
  BOOST_TEST(
      table.check(reinterpret_cast<void*>(~std::uintptr_t{0} - 4), 16, memory_side::host, "w")
          .code() == status_code::out_of_range);
}

BOOST_AUTO_TEST_CASE(strictness_decides_about_unknown_device_pointers) {
  BOOST_TEST(make(true)->check(plain_host, 8, memory_side::device, "x").code() ==
             status_code::invalid_argument);
  BOOST_TEST(make(false)->check(plain_host, 8, memory_side::device, "x").ok());
  // Known allocations are checked either way.
  BOOST_TEST(make(false)->check(device_block, 512, memory_side::device, "x").code() ==
             status_code::out_of_range);
}

BOOST_AUTO_TEST_CASE(copies_check_both_ends_and_overlap) {
  auto owner = make(true);
  auto& table = *owner;
  BOOST_TEST(table.check_copy(device_block, plain_host, 64, copy_kind::host_to_device).ok());
  BOOST_TEST(table.check_copy(plain_host, device_block, 64, copy_kind::device_to_host).ok());
  BOOST_TEST(
      table.check_copy(device_block, device_block + 32, 64, copy_kind::device_to_device).code() ==
      status_code::invalid_argument);
  BOOST_TEST(table.check_copy(device_block, managed_block, 64, copy_kind::device_to_device).ok());
  BOOST_TEST(table.check_copy(device_block, plain_host, 64, static_cast<copy_kind>(9)).code() ==
             status_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(a_free_is_accepted_once_and_blocks_later_use) {
  auto owner = make(true);
  auto& table = *owner;
  BOOST_TEST(table.begin_free(device_block).ok());
  BOOST_TEST(table.begin_free(device_block).code() == status_code::invalid_handle);
  BOOST_TEST(table.check(device_block, 8, memory_side::device, "d").code() ==
             status_code::invalid_argument);
  table.remove(device_block);
  BOOST_TEST(table.begin_free(device_block).code() == status_code::invalid_handle);
  BOOST_TEST(table.begin_free(device_block + 8).code() == status_code::invalid_handle);
  BOOST_TEST(table.begin_free(nullptr).code() == status_code::invalid_argument);
}

BOOST_AUTO_TEST_CASE(the_budget_is_accounted) {
  allocation_table table{true};
  BOOST_TEST(table.try_reserve(600, 1000));
  BOOST_TEST(!table.try_reserve(600, 1000));
  BOOST_TEST(!table.try_reserve(std::size_t(-1), 1000));
  table.add(device_block, {600, memory_kind::device, {}, false});
  BOOST_TEST(table.bytes_in_use() == 600u);
  table.remove(device_block);
  BOOST_TEST(table.bytes_in_use() == 0u);
  BOOST_TEST(table.try_reserve(1000, 1000));
}

// A reset takes the allocations and their bytes; bytes reserved for something else (a
// graph's scratch on the host backend) stay until given back.
BOOST_AUTO_TEST_CASE(take_all_gives_back_only_the_allocations_bytes) {
  allocation_table table{true};
  BOOST_TEST(table.try_reserve(256, 1000));
  table.add(device_block, {256, memory_kind::device, {}, false});
  BOOST_TEST(table.try_reserve(300, 1000));  // not an allocation's
  BOOST_TEST(table.bytes_in_use() == 556u);
  BOOST_TEST(table.take_all().size() == 1u);
  BOOST_TEST(table.bytes_in_use() == 300u);
  table.unreserve(300);
  BOOST_TEST(table.bytes_in_use() == 0u);
}
