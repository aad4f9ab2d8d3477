#include "sim/core/text_file.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mpsim
