#include "sim/core/gzip.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <zlib.h>

namespace mpsim {
namespace {

// windowBits of 15 plus 16 asks zlib for the gzip wrapper instead of the zlib one.
constexpr int kGzipWindowBits = 15 + 16;
// zlib counts in uInt (32 bits): larger buffers are fed in slices.
constexpr std::size_t kSliceBytes = std::size_t{1} << 30;
constexpr std::size_t kOutputStep = std::size_t{1} << 20;

std::string zlib_message(const z_stream& stream, int code) {
  if (stream.msg != nullptr) return stream.msg;
  return zError(code);
}

unsigned char* bytes_of(std::string_view s) {
  // zlib's next_in is not const-qualified but is only read.
  return reinterpret_cast<unsigned char*>(const_cast<char*>(s.data()));
}

/// Releases a deflate or inflate stream on every exit path.
class Deflater {
 public:
  Deflater() {
    if (deflateInit2(&stream_, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw GzipError("cannot start gzip compression (out of memory?)");
    }
  }
  ~Deflater() { deflateEnd(&stream_); }
  Deflater(const Deflater&) = delete;
  Deflater& operator=(const Deflater&) = delete;
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

class Inflater {
 public:
  Inflater() {
    if (inflateInit2(&stream_, kGzipWindowBits) != Z_OK) {
      throw GzipError("cannot start gzip decompression (out of memory?)");
    }
  }
  ~Inflater() { inflateEnd(&stream_); }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  z_stream& stream() { return stream_; }

 private:
  z_stream stream_{};
};

}  // namespace

bool is_gzip(std::string_view bytes) noexcept {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

std::string gzip_compress(std::string_view bytes) {
  Deflater deflater;
  z_stream& s = deflater.stream();
  // An explicit header: no name, no comment, mtime 0, OS "unknown", so the bytes do not depend on
  // when or where they were written.
  gz_header header{};
  header.os = 255;
  if (deflateSetHeader(&s, &header) != Z_OK) throw GzipError("cannot set the gzip header");

  // Traces shrink 20-40 times: start from an eighth of the input and grow when that is not enough.
  std::string out(std::min<std::size_t>(bytes.size() / 8, deflateBound(&s, static_cast<uLong>(bytes.size()))) + 1024,
                  '\0');
  std::size_t written = 0;
  std::size_t consumed = 0;
  int code = Z_OK;
  while (code != Z_STREAM_END) {
    const std::size_t in_slice = std::min(bytes.size() - consumed, kSliceBytes);
    const bool last = consumed + in_slice == bytes.size();
    s.next_in = bytes_of(bytes.substr(consumed));
    s.avail_in = static_cast<uInt>(in_slice);
    do {
      if (written == out.size()) out.resize(out.size() + std::max(out.size() / 2, kOutputStep));
      const std::size_t room = std::min(out.size() - written, kSliceBytes);
      s.next_out = reinterpret_cast<unsigned char*>(out.data() + written);
      s.avail_out = static_cast<uInt>(room);
      code = deflate(&s, last ? Z_FINISH : Z_NO_FLUSH);
      if (code == Z_STREAM_ERROR) throw GzipError("gzip compression failed: " + zlib_message(s, code));
      written += room - s.avail_out;
    } while (s.avail_out == 0 || (last && code != Z_STREAM_END));
    consumed += in_slice - s.avail_in;
  }
  out.resize(written);
  return out;
}

std::string gunzip(std::string_view gz, std::size_t max_output_bytes) {
  if (!is_gzip(gz)) throw GzipError("not gzip data (no 0x1f 0x8b magic bytes)");
  Inflater inflater;
  z_stream& s = inflater.stream();
  // One byte past the limit tells "exactly the limit" from "over it".
  const std::size_t capacity_limit =
      max_output_bytes == std::numeric_limits<std::size_t>::max() ? max_output_bytes : max_output_bytes + 1;
  std::string out;
  std::size_t written = 0;
  std::size_t consumed = 0;
  while (true) {
    if (written == out.size()) {
      const std::size_t grow = std::max({out.size(), gz.size() * 4, kOutputStep});
      out.resize(std::min(out.size() + grow, capacity_limit));
    }
    const std::size_t in_slice = std::min(gz.size() - consumed, kSliceBytes);
    const std::size_t room = std::min(out.size() - written, kSliceBytes);
    s.next_in = bytes_of(gz.substr(consumed));
    s.avail_in = static_cast<uInt>(in_slice);
    s.next_out = reinterpret_cast<unsigned char*>(out.data() + written);
    s.avail_out = static_cast<uInt>(room);
    const int code = inflate(&s, Z_NO_FLUSH);
    written += room - s.avail_out;
    consumed += in_slice - s.avail_in;
    if (written > max_output_bytes) {
      throw GzipError(max_output_bytes >= (std::size_t{1} << 20)
                          ? fmt::format("decompresses to more than {} MiB", max_output_bytes >> 20)
                          : fmt::format("decompresses to more than {} bytes", max_output_bytes));
    }
    if (code == Z_STREAM_END) {
      if (consumed == gz.size()) break;
      // Concatenated members decompress to the concatenation of their contents (RFC 1952).
      if (!is_gzip(gz.substr(consumed))) {
        throw GzipError(
            fmt::format("{} unexpected bytes after the gzip data at byte {}", gz.size() - consumed, consumed));
      }
      if (inflateReset(&s) != Z_OK) throw GzipError("cannot restart gzip decompression");
      continue;
    }
    // There is always output room, so no progress means the input ran out mid-stream.
    if (code == Z_BUF_ERROR) {
      throw GzipError(fmt::format("truncated gzip data: the stream ends early, at byte {}", gz.size()));
    }
    if (code != Z_OK) {
      throw GzipError(fmt::format("corrupt gzip data near byte {}: {}", consumed, zlib_message(s, code)));
    }
  }
  out.resize(written);
  return out;
}

std::string gunzip_if_gzip(std::string bytes) {
  if (!is_gzip(bytes)) return bytes;
  return gunzip(bytes);
}

}  // namespace mpsim
