#pragma once
/// gzip (RFC 1952) compression of whole in-memory files, over zlib. Traces are written gzipped when
/// their name ends in ".gz" (Perfetto and chrome://tracing open them as they are), and every trace
/// reader accepts both forms, telling them apart by the magic bytes rather than the name.
#include <cstddef>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

namespace mpsim {

/// Bytes that are not valid gzip (corrupt, truncated, or too large once decompressed). what() is a
/// one-line message without a file name; readers prefix the file they read.
class GzipError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Decompressed sizes past this are refused: a few kilobytes of gzip can expand to terabytes.
inline constexpr std::size_t kMaxGunzipBytes = std::size_t{4} << 30;

/// Whether `bytes` starts with the gzip magic number 0x1f 0x8b.
[[nodiscard]] bool is_gzip(std::string_view bytes) noexcept;

/// One gzip member holding `bytes`. Deterministic: the header records no file name and mtime 0, so
/// the same input gives the same output.
[[nodiscard]] std::string gzip_compress(std::string_view bytes);

/// gzip_compress a piece at a time: the compressed bytes go to `sink` as zlib makes them, so a large
/// file is never held whole (traces are written so). The bytes equal gzip_compress of everything
/// written, however it was split.
class GzipWriter {
 public:
  explicit GzipWriter(std::function<void(std::string_view)> sink);
  ~GzipWriter();
  GzipWriter(const GzipWriter&) = delete;
  GzipWriter& operator=(const GzipWriter&) = delete;
  void write(std::string_view bytes);
  /// Ends the gzip member; nothing may be written after.
  void finish();

 private:
  class Stream;
  std::unique_ptr<Stream> stream_;
  std::function<void(std::string_view)> sink_;
  void deflate_pending(std::string_view bytes, bool last);
};

/// The decompressed contents of `gz` (one or more concatenated gzip members). Throws GzipError when
/// `gz` is not gzip, is corrupt or truncated, has bytes after the last member, or decompresses to
/// more than `max_output_bytes`.
[[nodiscard]] std::string gunzip(std::string_view gz, std::size_t max_output_bytes = kMaxGunzipBytes);

/// gunzip(bytes) when is_gzip(bytes); `bytes` unchanged otherwise. Throws GzipError.
[[nodiscard]] std::string gunzip_if_gzip(std::string bytes);

}  // namespace mpsim
