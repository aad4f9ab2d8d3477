#include "sim/core/gzip.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

namespace mpsim {
namespace {

/// Text shaped like a trace (repetitive, so it compresses) with a varying number in every line.
std::string trace_like_text(std::size_t lines) {
  std::string text;
  for (std::size_t i = 0; i < lines; ++i) {
    text += "{\"ph\":\"X\",\"cat\":\"forward\",\"pid\":" + std::to_string(i % 64) +
            ",\"ts\":" + std::to_string(i * 37) + "}\n";
  }
  return text;
}

/// Bytes that do not compress: a linear congruential sequence.
std::string noise(std::size_t size) {
  std::string bytes(size, '\0');
  std::uint32_t x = 12345;
  for (char& c : bytes) {
    x = x * 1664525u + 1013904223u;
    c = static_cast<char>(x >> 24);
  }
  return bytes;
}

TEST(Gzip, RoundTripsEmptySmallBinaryAndLargeInputs) {
  for (const std::string& original :
       {std::string(), std::string("a"), std::string("hello, gzip\n"), std::string("\0\x1f\x8b\xff", 4), noise(100000),
        trace_like_text(400000)}) {
    const std::string gz = gzip_compress(original);
    EXPECT_TRUE(is_gzip(gz));
    EXPECT_EQ(gunzip(gz), original) << "size " << original.size();
  }
}

TEST(Gzip, WriterGivesTheSameBytesHoweverTheInputIsSplit) {
  const std::string text = trace_like_text(600000) + noise(50000);
  const std::string whole = gzip_compress(text);
  for (const std::size_t piece : {std::size_t{7}, std::size_t{4096}, std::size_t{1} << 20}) {
    std::string out;
    std::size_t sink_calls = 0;
    GzipWriter writer([&](std::string_view bytes) {
      out.append(bytes);
      ++sink_calls;
    });
    for (std::size_t at = 0; at < text.size(); at += piece) writer.write(std::string_view(text).substr(at, piece));
    writer.finish();
    EXPECT_EQ(out, whole) << "pieces of " << piece;
    EXPECT_GT(sink_calls, 1u) << "the output comes as it is made, not at the end";
  }
}

TEST(Gzip, CompressesRepetitiveText) {
  const std::string text = trace_like_text(100000);
  EXPECT_LT(gzip_compress(text).size() * 5, text.size());
}

TEST(Gzip, OutputIsDeterministicWithNoNameAndZeroMtime) {
  const std::string text = trace_like_text(1000);
  const std::string gz = gzip_compress(text);
  EXPECT_EQ(gz, gzip_compress(text));
  ASSERT_GE(gz.size(), 10u);
  EXPECT_EQ(static_cast<unsigned char>(gz[2]), 8u);  // deflate
  EXPECT_EQ(static_cast<unsigned char>(gz[3]), 0u);  // flags: no name, comment or extra field
  EXPECT_EQ(gz.substr(4, 4), std::string(4, '\0'));  // mtime
}

TEST(Gzip, DetectsTheMagicBytesOnly) {
  EXPECT_FALSE(is_gzip(""));
  EXPECT_FALSE(is_gzip("\x1f"));
  EXPECT_FALSE(is_gzip("{\"traceEvents\":[]}"));
  EXPECT_TRUE(is_gzip("\x1f\x8b"));
}

TEST(Gzip, ConcatenatedMembersDecompressToTheConcatenation) {
  EXPECT_EQ(gunzip(gzip_compress("first ") + gzip_compress("second")), "first second");
}

TEST(Gzip, IfGzipPassesPlainBytesThrough) {
  EXPECT_EQ(gunzip_if_gzip("{\"a\":1}"), "{\"a\":1}");
  EXPECT_EQ(gunzip_if_gzip(gzip_compress("{\"a\":1}")), "{\"a\":1}");
}

/// `bad` is refused with a GzipError whose message contains `words`.
void expect_refused(const std::string& bad, const std::string& words, std::size_t limit = kMaxGunzipBytes) {
  try {
    (void)gunzip(bad, limit);
    FAIL() << "no error for " << bad.size() << " bytes";
  } catch (const GzipError& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Gzip, CorruptInputIsAnErrorNotACrash) {
  const std::string gz = gzip_compress(trace_like_text(2000));
  expect_refused("{\"traceEvents\":[]}", "not gzip");
  expect_refused("\x1f\x8b", "truncated");
  expect_refused(gz.substr(0, gz.size() / 2), "truncated");
  expect_refused(gz.substr(0, gz.size() - 1), "truncated");
  std::string flipped = gz;
  flipped[gz.size() - 6] = static_cast<char>(flipped[gz.size() - 6] ^ 0x40);  // in the CRC-32
  expect_refused(flipped, "corrupt");
  std::string garbled = gz;
  for (std::size_t i = 12; i < 40; ++i) garbled[i] = '\xff';
  expect_refused(garbled, "corrupt");
  expect_refused(gz + "junk", "unexpected bytes");
}

TEST(Gzip, RefusesOutputPastTheLimit) {
  const std::string zeros(1 << 20, '\0');
  const std::string gz = gzip_compress(zeros);
  expect_refused(gz, "more than", zeros.size() - 1);
  EXPECT_EQ(gunzip(gz, zeros.size()), zeros);
}

}  // namespace
}  // namespace mpsim
