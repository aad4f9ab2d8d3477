#pragma once
/// Reading and writing the text files users hand us.
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

namespace mpsim {

/// Files larger than this are refused before parsing: every input mpsim reads is hand-sized.
inline constexpr std::uintmax_t kMaxInputFileBytes = 16u * 1024u * 1024u;

/// Reads a whole text file. Throws InputError (naming the file, and the line and column of the
/// first offending byte) when it is missing, unreadable, over kMaxInputFileBytes, or not UTF-8 text.
[[nodiscard]] std::string read_text_file(const std::filesystem::path& path, std::string_view display_name = {});

/// Writes `contents` atomically: to a temporary file in the same folder, then renamed over `path`,
/// so a reader never sees a half-written file. Throws InputError when the folder is not writable.
void write_file_atomically(const std::filesystem::path& path, std::string_view contents);

class GzipWriter;

/// A file written a piece at a time and replaced atomically, as write_file_atomically does: the pieces
/// go to a temporary file in the same folder (gzip-compressed as they come, with `gzip`), which
/// commit() renames over `path`. Destroyed without commit() (an exception on the way), it removes the
/// temporary and leaves `path` as it was. Throws InputError naming `path` when it cannot write.
class AtomicFileWriter {
 public:
  AtomicFileWriter(std::filesystem::path path, bool gzip);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void write(std::string_view bytes);
  void commit();

 private:
  void write_raw(std::string_view bytes);
  std::filesystem::path path_, temporary_;
  std::ofstream out_;
  std::unique_ptr<GzipWriter> gzip_;
  bool committed_ = false;
};

/// Whether `--trace FILE` and the like write `path` gzip-compressed: when its name ends in ".gz".
[[nodiscard]] bool gzip_by_name(const std::filesystem::path& path);

}  // namespace mpsim
