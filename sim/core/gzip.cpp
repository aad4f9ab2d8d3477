#include "sim/core/gzip.h"

#include <algorithm>
#include <limits>
#include <utility>

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

/// Releases an inflate stream on every exit path.
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

/// The deflate stream, released on every exit path, and the buffer its output goes through.
class GzipWriter::Stream {
 public:
  Stream() {
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, kGzipWindowBits, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
      throw GzipError("cannot start gzip compression (out of memory?)");
    }
  }
  ~Stream() { deflateEnd(&z); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  z_stream z{};
  gz_header header{};  // zlib keeps a pointer to it until the header is written
  std::string out = std::string(kOutputStep, '\0');
};

GzipWriter::GzipWriter(std::function<void(std::string_view)> sink)
    : stream_(std::make_unique<Stream>()), sink_(std::move(sink)) {
  // An explicit header: no name, no comment, mtime 0, OS "unknown", so the bytes do not depend on
  // when or where they were written.
  stream_->header.os = 255;
  if (deflateSetHeader(&stream_->z, &stream_->header) != Z_OK) throw GzipError("cannot set the gzip header");
}

GzipWriter::~GzipWriter() = default;

void GzipWriter::write(std::string_view bytes) {
  for (std::size_t consumed = 0; consumed < bytes.size(); consumed += kSliceBytes) {
    deflate_pending(bytes.substr(consumed, kSliceBytes), false);
  }
}

void GzipWriter::finish() { deflate_pending({}, true); }

void GzipWriter::deflate_pending(std::string_view bytes, bool last) {
  z_stream& s = stream_->z;
  std::string& out = stream_->out;
  s.next_in = bytes_of(bytes);
  s.avail_in = static_cast<uInt>(bytes.size());
  int code = Z_OK;
  do {
    s.next_out = reinterpret_cast<unsigned char*>(out.data());
    s.avail_out = static_cast<uInt>(out.size());
    code = deflate(&s, last ? Z_FINISH : Z_NO_FLUSH);
    if (code == Z_STREAM_ERROR) throw GzipError("gzip compression failed: " + zlib_message(s, code));
    const std::size_t made = out.size() - s.avail_out;
    if (made > 0) sink_(std::string_view(out.data(), made));
  } while (s.avail_in > 0 || s.avail_out == 0 || (last && code != Z_STREAM_END));
}

std::string gzip_compress(std::string_view bytes) {
  std::string out;
  GzipWriter writer([&out](std::string_view piece) { out.append(piece); });
  writer.write(bytes);
  writer.finish();
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
