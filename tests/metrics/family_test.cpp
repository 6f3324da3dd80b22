// Metric families: one cell per label set, callback series that go with their handle.
#define BOOST_TEST_MODULE family
#include <boost/test/unit_test.hpp>

#include <prometheus/text_serializer.h>

#include "cudactor/metrics/family.hpp"

using namespace cudactor::metrics;

namespace {

std::string text_of(const family_base& f) {
  return prometheus::TextSerializer{}.Serialize({f.collect()});
}

}  // namespace

BOOST_AUTO_TEST_CASE(the_same_label_values_answer_the_same_cell) {
  family<counter> f{"cudactor_x_total", "x", {"gpu", "stream"}};
  counter& a = f.add({"0", "s0"});
  counter& b = f.add({"0", "s0"});
  counter& c = f.add({"0", "s1"});
  BOOST_TEST(&a == &b);
  BOOST_TEST(&a != &c);
  BOOST_TEST(f.size() == 2u);
  a.add(3);
  c.add();
  const std::string text = text_of(f);
  BOOST_TEST(text.find("# TYPE cudactor_x_total counter") != std::string::npos);
  BOOST_TEST(text.find("cudactor_x_total{gpu=\"0\",stream=\"s0\"} 3") != std::string::npos);
  BOOST_TEST(text.find("cudactor_x_total{gpu=\"0\",stream=\"s1\"} 1") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(the_wrong_number_of_label_values_is_refused_naming_the_family) {
  family<gauge> f{"cudactor_y", "y", {"gpu"}};
  try {
    (void)f.add({"0", "extra"});
    BOOST_FAIL("two values for one label must be refused");
  } catch (const std::invalid_argument& e) {
    BOOST_TEST(std::string{e.what()}.find("cudactor_y") != std::string::npos);
  }
}

BOOST_AUTO_TEST_CASE(a_histogram_is_exposed_with_cumulative_buckets_count_and_sum) {
  family<duration_histogram> f{"cudactor_z_seconds", "z", {}, buckets_in_seconds({1e-6, 1e-3})};
  auto& h = f.add({});
  h.observe(std::chrono::microseconds{1});
  h.observe(std::chrono::microseconds{500});
  h.observe(std::chrono::seconds{1});
  const std::string text = text_of(f);
  BOOST_TEST(text.find("cudactor_z_seconds_bucket{le=\"1e-06\"} 1") != std::string::npos, text);
  BOOST_TEST(text.find("cudactor_z_seconds_bucket{le=\"0.001\"} 2") != std::string::npos, text);
  BOOST_TEST(text.find("cudactor_z_seconds_bucket{le=\"+Inf\"} 3") != std::string::npos, text);
  BOOST_TEST(text.find("cudactor_z_seconds_count 3") != std::string::npos, text);
  BOOST_TEST(text.find("cudactor_z_seconds_sum 1.000501") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_callback_series_is_read_at_scrape_and_gone_with_its_handle) {
  callback_family f{"cudactor_w", "w", {"gpu"}, metric_kind::gauge};
  double value = 7;
  {
    callback_series series = f.add({"0"}, [&] { return value; });
    BOOST_TEST(text_of(f).find("cudactor_w{gpu=\"0\"} 7") != std::string::npos);
    value = 9;
    BOOST_TEST(text_of(f).find("cudactor_w{gpu=\"0\"} 9") != std::string::npos);
    BOOST_CHECK_THROW((void)f.add({"0"}, [] { return 1.0; }), std::invalid_argument);
    callback_series moved = std::move(series);
    series.reset();  // a moved-from handle owns nothing
    BOOST_TEST(f.size() == 1u);
  }
  BOOST_TEST(f.size() == 0u);
  BOOST_TEST(text_of(f).find("cudactor_w{") == std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_callback_family_holds_no_histograms) {
  BOOST_CHECK_THROW((callback_family{"h", "h", {}, metric_kind::histogram}), std::invalid_argument);
}
