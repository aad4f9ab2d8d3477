#include "sim/core/text_file.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>
#include <utility>

#include <fmt/format.h>
#include <unistd.h>

#include "sim/core/gzip.h"
#include "sim/core/input_error.h"
#include "sim/core/utf8.h"

namespace mpsim {

std::string read_text_file(const std::filesystem::path& path, std::string_view display_name) {
  const std::string name = display_name.empty() ? path.string() : std::string(display_name);
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw InputError({name, 0, 0}, "", "is a directory, not a file");
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) throw InputError({name, 0, 0}, "", fmt::format("cannot read: {}", ec.message()));
  if (size > kMaxInputFileBytes) {
    throw InputError({name, 1, 1}, "",
                     fmt::format("file is {:.1f} MiB; input files are limited to {} MiB",
                                 static_cast<double>(size) / (1024.0 * 1024.0), kMaxInputFileBytes >> 20));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({name, 0, 0}, "", "cannot open for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  std::string text = std::move(buffer).str();

  int line = 1;
  int column = 1;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const std::size_t len = utf8_character_at(text, i).length;
    const bool control = static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t';
    if (len == 0 || control) {
      throw InputError({name, line, column}, "",
                       fmt::format("not a text file (byte 0x{:02x} at offset {})", static_cast<unsigned char>(c), i));
    }
    if (c == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
    i += len;
  }
  return text;
}

AtomicFileWriter::AtomicFileWriter(std::filesystem::path path, bool gzip) : path_(std::move(path)) {
  const std::filesystem::path folder = path_.has_parent_path() ? path_.parent_path() : std::filesystem::path(".");
  temporary_ = folder / fmt::format(".{}.tmp.{}", path_.filename().string(), static_cast<long>(::getpid()));
  out_.open(temporary_, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError({path_.string(), 0, 0}, "", "cannot write: folder missing or not writable");
  if (gzip) gzip_ = std::make_unique<GzipWriter>([this](std::string_view piece) { write_raw(piece); });
}

AtomicFileWriter::~AtomicFileWriter() {
  if (committed_) return;
  out_.close();
  std::error_code ignored;
  std::filesystem::remove(temporary_, ignored);
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (gzip_) {
    gzip_->write(bytes);
  } else {
    write_raw(bytes);
  }
}

void AtomicFileWriter::write_raw(std::string_view bytes) {
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out_) throw InputError({path_.string(), 0, 0}, "", "write failed (disk full?)");
}

void AtomicFileWriter::commit() {
  if (gzip_) gzip_->finish();
  out_.flush();
  if (!out_) throw InputError({path_.string(), 0, 0}, "", "write failed (disk full?)");
  out_.close();
  std::error_code ec;
  std::filesystem::rename(temporary_, path_, ec);
  if (ec) throw InputError({path_.string(), 0, 0}, "", fmt::format("cannot replace: {}", ec.message()));
  committed_ = true;
}

bool gzip_by_name(const std::filesystem::path& path) { return path.extension() == ".gz"; }

void write_file_atomically(const std::filesystem::path& path, std::string_view contents) {
  AtomicFileWriter file(path, false);
  file.write(contents);
  file.commit();
}

}  // namespace mpsim
