#include "sim/core/units.h"

#include <gtest/gtest.h>

namespace mpsim {
namespace {

using namespace mpsim::literals;

TEST(Units, BandwidthBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("900 GB/s").value.in_bytes_per_sec(), 900e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").value.in_bytes_per_sec(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gbps").value.in_bytes_per_sec(), 50e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5 GBps").value.in_bytes_per_sec(), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25GiB/s").value.in_bytes_per_sec(), 25.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Gbit/s").value.in_bytes_per_sec(), 12.5e9);
}

TEST(Units, BytesDecimalAndBinary) {
  EXPECT_EQ(parse_bytes("80 GiB").value.count(), 80LL * 1024 * 1024 * 1024);
  EXPECT_EQ(parse_bytes("80 GB").value.count(), 80'000'000'000LL);
  EXPECT_EQ(parse_bytes("4096").value.count(), 4096);
  EXPECT_EQ(parse_bytes("1.5 KiB").value.count(), 1536);
  EXPECT_EQ(80_GiB, Bytes::gib(80));
  EXPECT_NE(80_GiB, 80_GB);
}

TEST(Units, TimeSpellings) {
  EXPECT_EQ(parse_time("2 us").value, TimeNs::ns(2000));
  EXPECT_EQ(parse_time("1.5 \xC2\xB5s").value, TimeNs::ns(1500));  // micro sign
  EXPECT_EQ(parse_time("1.5 \xCE\xBCs").value, TimeNs::ns(1500));  // greek mu
  EXPECT_EQ(parse_time("18.5 ms").value, TimeNs::ns(18'500'000));
  EXPECT_EQ(parse_time("1 s").value, TimeNs::ns(1'000'000'000));
  EXPECT_EQ(parse_time("800 ns").value, 800_ns);
}

TEST(Units, FlopsRates) {
  EXPECT_DOUBLE_EQ(parse_flops_rate("989 TFLOP/s").value.in_flop_per_sec(), 989e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("989 TFLOPS").value.in_flop_per_sec(), 989e12);
  EXPECT_DOUBLE_EQ(parse_flops_rate("19.5 TFLOP/s").value.in_flop_per_sec(), 19.5e12);
  EXPECT_DOUBLE_EQ(parse_flops("3.5e12 FLOP").value.count(), 3.5e12);
  EXPECT_DOUBLE_EQ(parse_flops("1.2 TFLOP").value.count(), 1.2e12);
}

TEST(Units, UnknownOrAmbiguousUnitsNameTheValue) {
  const auto gt = parse_bandwidth("25 GT/s");
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.error.find("25 GT/s"), std::string::npos) << gt.error;
  EXPECT_NE(gt.error.find("GT/s"), std::string::npos);
  const auto g = parse_bytes("10 G");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error.find("10 G"), std::string::npos) << g.error;
  EXPECT_FALSE(parse_bandwidth("900").ok());  // a bandwidth needs a unit
  EXPECT_FALSE(parse_time("5").ok());
  EXPECT_FALSE(parse_bandwidth("-5 GB/s").ok());
  EXPECT_FALSE(parse_bandwidth("0 GB/s").ok());
  EXPECT_FALSE(parse_time("fast").ok());
  EXPECT_FALSE(parse_flops_rate("989 TFLOPs/s").ok());
  EXPECT_FALSE(parse_bandwidth("inf GB/s").ok());
}

TEST(Units, TransferTimeRoundsUp) {
  // 1 GB at 25 GB/s = 40 ms exactly; 1 byte at 1 GB/s = 1 ns.
  EXPECT_EQ(transfer_time(Bytes::gb(1), 25_GBps), TimeNs::ms(40));
  EXPECT_EQ(transfer_time(Bytes::bytes(1), BytesPerSec::gigabytes_per_sec(1)), 1_ns);
  EXPECT_EQ(transfer_time(Bytes::bytes(3), BytesPerSec::gigabytes_per_sec(2)), 2_ns);  // 1.5 ns -> 2
  EXPECT_EQ(transfer_time(Bytes::bytes(0), 25_GBps), 0_ns);
  EXPECT_EQ(compute_time(Flops::flop(312e12), 312_TFLOPps), TimeNs::seconds(1));
}

TEST(Units, FarOutOfRangeSaturates) {
  // 1e14 s is 1e23 ns, past int64's 9.22e18: it stays the longest time, not a wrapped one.
  EXPECT_EQ(TimeNs::seconds(1e14), TimeNs::ns(9'200'000'000'000'000'000));
  EXPECT_EQ(TimeNs::seconds(-1e14), TimeNs::ns(-9'200'000'000'000'000'000));
  EXPECT_GT(TimeNs::seconds(1e14), TimeNs::seconds(9e9));
  EXPECT_EQ(Bytes::gb(1e12), Bytes::bytes(9'200'000'000'000'000'000));
  EXPECT_EQ(saturating_round(2.5), 3);
  EXPECT_EQ(saturating_round(-2.5), -3);
}

TEST(Units, ArithmeticStaysInOneKind) {
  EXPECT_EQ(80_GiB + 1_GiB, 81_GiB);
  EXPECT_EQ(1_ms - 1_us * 1000, 0_ns);
  EXPECT_DOUBLE_EQ(80_GiB / 40_GiB, 2.0);
  EXPECT_TRUE(1_us < 1_ms);
  // Bytes + TimeNs, or Bytes built from a bare number, do not compile (checked by the
  // static_asserts below rather than by a failing build).
  static_assert(!std::is_convertible_v<std::int64_t, Bytes>);
  static_assert(!std::is_convertible_v<double, BytesPerSec>);
  static_assert(!std::is_convertible_v<TimeNs, Bytes>);
  static_assert(!std::is_constructible_v<Bytes, TimeNs>);
}

TEST(Units, ReadableOutput) {
  EXPECT_EQ(to_string(Bytes::gib(38.5)), "38.5 GiB");
  EXPECT_EQ(to_string(BytesPerSec::gigabytes_per_sec(412)), "412 GB/s");
  EXPECT_EQ(to_string(TimeNs::ms(1820)), "1.82 s");
  EXPECT_EQ(to_string(2_us), "2 us");
  EXPECT_EQ(to_string(FlopsPerSec::tflop_per_sec(156)), "156 TFLOP/s");
  EXPECT_EQ(to_string(Bytes::bytes(512)), "512 B");
}

}  // namespace
}  // namespace mpsim
