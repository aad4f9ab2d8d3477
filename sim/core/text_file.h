#pragma once
/// Reading and writing the text files users hand us.
#include <cstdint>
#include <filesystem>
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

/// write_file_atomically, gzip-compressed (gzip_compress) when `path` ends in ".gz" and plain
/// otherwise: how every `--trace FILE` is written.
void write_file_atomically_gzip_by_name(const std::filesystem::path& path, std::string_view contents);

}  // namespace mpsim
