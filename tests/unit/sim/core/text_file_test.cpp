#include "sim/core/text_file.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "sim/core/gzip.h"
#include "sim/core/input_error.h"

namespace mpsim {
namespace {

std::filesystem::path scratch(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("mpsim-text-file-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir / name;
}

TEST(TextFile, RejectsBinaryWithPosition) {
  const auto path = scratch("binary.yaml");
  {
    std::ofstream out(path, std::ios::binary);
    out << "a: 1\nb: \x01\x02";
  }
  try {
    (void)read_text_file(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().column, 4);
    EXPECT_NE(std::string(e.what()).find("not a text file"), std::string::npos);
  }
}

TEST(TextFile, RejectsOverlongSurrogateAndOutOfRangeSequences) {
  // Each is the form of a character UTF-8 forbids: "/" written in three bytes, the surrogate U+D800,
  // and U+110000; the same text with a real character reads.
  for (const std::string bad : {"\xE0\x80\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80"}) {
    const auto path = scratch("bad-utf8.yaml");
    {
      std::ofstream out(path, std::ios::binary);
      out << "name: a" << bad << "\n";
    }
    try {
      (void)read_text_file(path);
      ADD_FAILURE() << "no error for a sequence of " << bad.size() << " bytes";
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().line, 1);
      EXPECT_EQ(e.where().column, 8);
    }
  }
  const auto path = scratch("good-utf8.yaml");
  {
    std::ofstream out(path, std::ios::binary);
    out << "name: a\xF4\x8F\xBF\xBD\n";  // U+10FFFD
  }
  EXPECT_EQ(read_text_file(path), "name: a\xF4\x8F\xBF\xBD\n");
}

TEST(TextFile, RejectsHugeFilesBeforeReading) {
  const auto path = scratch("huge.yaml");
  {
    std::ofstream out(path, std::ios::binary);
    out.seekp(static_cast<std::streamoff>(kMaxInputFileBytes) + 10);
    out << 'x';
  }
  EXPECT_THROW((void)read_text_file(path), InputError);
}

TEST(TextFile, AtomicWriteReplacesWholeFile) {
  const auto path = scratch("out.yaml");
  write_file_atomically(path, "first\n");
  write_file_atomically(path, "second\n");
  EXPECT_EQ(read_text_file(path), "second\n");
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "temporary left behind";
  }
  EXPECT_THROW(write_file_atomically(scratch("no/such/dir/out.yaml"), "x"), InputError);
}

std::string raw_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Writes `pieces` through an AtomicFileWriter gzip-compressed when `path` ends in ".gz".
void write_in_pieces(const std::filesystem::path& path, const std::vector<std::string>& pieces) {
  AtomicFileWriter file(path, gzip_by_name(path));
  for (const std::string& piece : pieces) file.write(piece);
  file.commit();
}

TEST(TextFile, WriterCompressesOnlyDotGzAndJoinsThePieces) {
  const std::string text = "{\"traceEvents\":[]}\n";
  write_in_pieces(scratch("t.json"), {"{\"traceEvents\":", "[]}\n"});
  write_in_pieces(scratch("t.json.gz"), {"{\"trace", "", "Events\":[]}\n"});
  EXPECT_EQ(raw_bytes(scratch("t.json")), text);
  const std::string gz = raw_bytes(scratch("t.json.gz"));
  EXPECT_TRUE(is_gzip(gz));
  EXPECT_EQ(gunzip(gz), text);
  // However the bytes were split, the file is gzip_compress of them: the same bytes every time.
  EXPECT_EQ(gz, gzip_compress(text));
  EXPECT_THROW(write_in_pieces(scratch("no/such/dir/t.json.gz"), {text}), InputError);
}

TEST(TextFile, WriterAbandonedBeforeCommitLeavesTheOldFile) {
  const auto path = scratch("kept.json");
  write_file_atomically(path, "old\n");
  {
    AtomicFileWriter file(path, false);
    file.write("half of a new file");
  }  // no commit: an exception on the way out
  EXPECT_EQ(read_text_file(path), "old\n");
  for (const auto& entry : std::filesystem::directory_iterator(path.parent_path())) {
    EXPECT_EQ(entry.path().filename().string().find(".tmp."), std::string::npos) << "temporary left behind";
  }
}

}  // namespace
}  // namespace mpsim
