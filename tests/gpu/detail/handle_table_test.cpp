#define BOOST_TEST_MODULE handle_table
#include <boost/test/unit_test.hpp>

#include <string>

#include "cudactor/gpu/detail/handle_table.hpp"

using cudactor::gpu::detail::handle_table;

BOOST_AUTO_TEST_CASE(a_key_finds_its_value_until_erased) {
  handle_table<std::string> table;
  auto key = table.insert("a");
  BOOST_TEST(key.generation != 0u);
  BOOST_REQUIRE(table.find(key.slot, key.generation) != nullptr);
  BOOST_TEST(*table.find(key.slot, key.generation) == "a");
  BOOST_TEST(table.erase(key.slot, key.generation).value() == "a");
  BOOST_TEST(table.find(key.slot, key.generation) == nullptr);
  BOOST_TEST(!table.erase(key.slot, key.generation).has_value());
}

BOOST_AUTO_TEST_CASE(a_reused_slot_does_not_answer_for_the_old_key) {
  handle_table<int> table;
  auto old_key = table.insert(1);
  (void)table.erase(old_key.slot, old_key.generation);
  auto new_key = table.insert(2);
  BOOST_TEST(new_key.slot == old_key.slot);
  BOOST_TEST(new_key.generation != old_key.generation);
  BOOST_TEST(table.find(old_key.slot, old_key.generation) == nullptr);
  BOOST_TEST(*table.find(new_key.slot, new_key.generation) == 2);
  BOOST_TEST(table.find(99, 1) == nullptr);
}

BOOST_AUTO_TEST_CASE(clear_makes_every_key_stale) {
  handle_table<int> table;
  auto a = table.insert(1);
  auto b = table.insert(2);
  int seen = 0;
  table.clear([&](int& v) { seen += v; });
  BOOST_TEST(seen == 3);
  BOOST_TEST(table.size() == 0u);
  BOOST_TEST(table.find(a.slot, a.generation) == nullptr);
  BOOST_TEST(table.find(b.slot, b.generation) == nullptr);
}
