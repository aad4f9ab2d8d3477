// Reading the `nvidia-smi topo -m` text: lines → whitespace tokens with columns → cells.
#include "sim/topology/import/nvidia_smi_matrix.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

namespace mpsim::topology::import {

std::string_view to_string(TopoEntry e) noexcept {
  switch (e) {
    case TopoEntry::Self: return "X";
    case TopoEntry::NvLink: return "NV";
    case TopoEntry::Pix: return "PIX";
    case TopoEntry::Pxb: return "PXB";
    case TopoEntry::Phb: return "PHB";
    case TopoEntry::Node: return "NODE";
    case TopoEntry::Sys: return "SYS";
  }
  return "?";
}

std::string TopoCell::text() const {
  return entry == TopoEntry::NvLink ? fmt::format("NV{}", nvlinks) : std::string(to_string(entry));
}

std::string TopoMatrix::field(std::size_t row, std::size_t column) const {
  return fmt::format("row {}, column {}", devices.at(row).label, devices.at(column).label);
}

namespace {

struct Line {
  std::string_view text;
  int number;  // 1-based
};

struct Token {
  std::string_view text;
  int column;  // 1-based
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  int number = 1;
  while (!text.empty()) {
    const auto end = text.find('\n');
    std::string_view line = text.substr(0, end);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back({line, number++});
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

/// Length of a terminal escape sequence at s[i] (ESC [ parameters final-byte), 0 when none.
/// nvidia-smi underlines its header this way when it writes to a terminal.
std::size_t escape_length(std::string_view s, std::size_t i) {
  if (s[i] != '\x1b') return 0;
  std::size_t j = i + 1;
  if (j < s.size() && s[j] == '[') {
    ++j;
    while (j < s.size() && !(s[j] >= 0x40 && s[j] <= 0x7e)) ++j;
    if (j < s.size()) ++j;
  }
  return j - i;
}

/// 1-based column of byte `offset`, counting characters rather than UTF-8 bytes (as read_text_file does).
int character_column(std::string_view line, std::size_t offset) {
  int column = 1;
  for (std::size_t k = 0; k < offset; ++k) {
    if ((static_cast<unsigned char>(line[k]) & 0xC0) != 0x80) ++column;
  }
  return column;
}

bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

std::vector<Token> tokenize(std::string_view line) {
  std::vector<Token> tokens;
  std::size_t i = 0;
  while (i < line.size()) {
    if (const std::size_t esc = escape_length(line, i); esc > 0) {
      i += esc;
      continue;
    }
    if (is_blank(line[i])) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < line.size() && !is_blank(line[i]) && escape_length(line, i) == 0) ++i;
    tokens.push_back({line.substr(start, i - start), character_column(line, start)});
  }
  return tokens;
}

/// An entry word, or nothing when `word` is not one.
std::optional<TopoCell> parse_entry(std::string_view word) {
  TopoCell cell;
  constexpr std::pair<std::string_view, TopoEntry> kWords[] = {
      {"X", TopoEntry::Self},   {"PIX", TopoEntry::Pix},   {"PXB", TopoEntry::Pxb}, {"PHB", TopoEntry::Phb},
      {"NODE", TopoEntry::Node}, {"SYS", TopoEntry::Sys}, {"SOC", TopoEntry::Sys}};
  for (const auto& [w, e] : kWords) {
    if (word == w) {
      cell.entry = e;
      return cell;
    }
  }
  if (word.size() > 2 && word.substr(0, 2) == "NV") {
    int n = 0;
    const auto digits = word.substr(2);
    const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec == std::errc() && ptr == digits.data() + digits.size() && n >= 1 && n <= 64) {
      cell.entry = TopoEntry::NvLink;
      cell.nvlinks = n;
      return cell;
    }
  }
  return std::nullopt;
}

bool is_gpu_label(std::string_view label, int& index) {
  if (label.size() < 4 || label.substr(0, 3) != "GPU") return false;
  const auto digits = label.substr(3);
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), index);
  return ec == std::errc() && ptr == digits.data() + digits.size();
}

enum class AffinityColumn : std::uint8_t { Cpu, Numa, GpuNuma, Other };

/// The words after the device columns: "CPU Affinity", "NUMA Affinity", "GPU NUMA ID".
std::vector<AffinityColumn> affinity_columns(const std::vector<Token>& words) {
  std::vector<AffinityColumn> out;
  const auto at = [&words](std::size_t i, std::string_view w) { return i < words.size() && words[i].text == w; };
  for (std::size_t i = 0; i < words.size();) {
    if (at(i, "CPU") && at(i + 1, "Affinity")) {
      out.push_back(AffinityColumn::Cpu);
      i += 2;
    } else if (at(i, "NUMA") && at(i + 1, "Affinity")) {
      out.push_back(AffinityColumn::Numa);
      i += 2;
    } else if (at(i, "GPU") && at(i + 1, "NUMA") && at(i + 2, "ID")) {
      out.push_back(AffinityColumn::GpuNuma);
      i += 3;
    } else {
      out.push_back(AffinityColumn::Other);
      ++i;
    }
  }
  return out;
}

class MatrixReader {
 public:
  MatrixReader(std::string_view text, std::string_view source_name) : lines_(split_lines(text)) {
    m_.source_name = std::string(source_name);
  }

  TopoMatrix read() && {
    const std::size_t header = find_header();
    read_header(header);
    const std::size_t after_rows = read_rows(header + 1);
    check_matrix();
    read_nic_legend(after_rows);
    return std::move(m_);
  }

 private:
  [[noreturn]] void fail(int line, int column, const std::string& field, const std::string& message) const {
    throw InputError({m_.source_name, line, column}, field, message);
  }

  std::size_t find_header() const {
    for (std::size_t i = 0; i < lines_.size(); ++i) {
      const auto tokens = tokenize(lines_[i].text);
      if (tokens.empty() || tokens[0].text != "GPU0") continue;
      if (tokens.size() > 1 && parse_entry(tokens[1].text)) {
        fail(lines_[i].number, tokens[0].column, "",
             "this is a row of the matrix, but the header line above it (GPU0 GPU1 ... CPU Affinity) is missing");
      }
      return i;
    }
    fail(1, 1, "",
         "not an `nvidia-smi topo -m` matrix: no header line starting with GPU0 (expected `GPU0 GPU1 ... "
         "CPU Affinity NUMA Affinity`)");
  }

  void read_header(std::size_t index) {
    const Line& line = lines_[index];
    m_.header_line = line.number;
    const auto tokens = tokenize(line.text);
    std::size_t i = 0;
    for (; i < tokens.size(); ++i) {
      const Token& t = tokens[i];
      if (t.text == "CPU" && i + 1 < tokens.size() && tokens[i + 1].text == "Affinity") break;
      if (parse_entry(t.text)) fail(line.number, t.column, "header", fmt::format("'{}' is not a device name", t.text));
      for (const TopoDevice& d : m_.devices) {
        if (d.label == t.text) fail(line.number, t.column, "header", fmt::format("device '{}' appears twice", t.text));
      }
      TopoDevice device;
      device.label = std::string(t.text);
      device.os_name = device.label;
      int gpu_index = 0;
      if (is_gpu_label(t.text, gpu_index)) {
        if (gpu_index != m_.gpus) {
          fail(line.number, t.column, "header",
               fmt::format("GPU columns must be GPU0, GPU1, ... in order; found {} where GPU{} belongs", t.text,
                           m_.gpus));
        }
        device.kind = TopoDeviceKind::Gpu;
        device.index = m_.gpus++;
      } else {
        device.kind = TopoDeviceKind::Nic;
        device.index = m_.nics++;
      }
      m_.devices.push_back(std::move(device));
    }
    affinity_ = affinity_columns(std::vector<Token>(tokens.begin() + static_cast<std::ptrdiff_t>(i), tokens.end()));
    m_.cells.assign(m_.devices.size(), {});
  }

  [[nodiscard]] std::optional<std::size_t> device_of(std::string_view label) const {
    for (std::size_t d = 0; d < m_.devices.size(); ++d) {
      if (m_.devices[d].label == label) return d;
    }
    return std::nullopt;
  }

  /// Reads rows from line `first`; returns the index of the first line after them.
  std::size_t read_rows(std::size_t first) {
    std::size_t rows_read = 0;
    std::size_t i = first;
    for (; i < lines_.size(); ++i) {
      const auto tokens = tokenize(lines_[i].text);
      if (tokens.empty()) {
        if (rows_read == 0) continue;
        break;
      }
      const auto row = device_of(tokens[0].text);
      if (!row) {
        if (rows_read > 0) break;
        fail(lines_[i].number, tokens[0].column, "",
             fmt::format("expected a matrix row starting with a device name (such as {}), found '{}'",
                         m_.devices.front().label, tokens[0].text));
      }
      if (!m_.cells[*row].empty()) {
        fail(lines_[i].number, tokens[0].column, "", fmt::format("a second row for {}", tokens[0].text));
      }
      read_row(*row, lines_[i], tokens);
      ++rows_read;
    }
    for (std::size_t d = 0; d < m_.devices.size(); ++d) {
      if (!m_.cells[d].empty()) continue;
      const int line = i < lines_.size() ? lines_[i].number : (lines_.empty() ? 1 : lines_.back().number + 1);
      fail(line, 1, fmt::format("row {}", m_.devices[d].label),
           fmt::format("the matrix has no row for {} (the header names {} devices)", m_.devices[d].label,
                       m_.devices.size()));
    }
    return i;
  }

  void read_row(std::size_t row, const Line& line, const std::vector<Token>& tokens) {
    const std::size_t n = m_.devices.size();
    std::vector<TopoCell>& cells = m_.cells[row];
    for (std::size_t c = 0; c < n; ++c) {
      if (c + 1 >= tokens.size()) {
        const Token& last = tokens.back();  // point just past the last entry
        const auto end = static_cast<std::size_t>(last.text.data() + last.text.size() - line.text.data());
        fail(line.number, character_column(line.text, end), m_.field(row, c),
             fmt::format("row {} has {} entries, but the header names {} devices (ragged row)",
                         m_.devices[row].label, tokens.size() - 1, n));
      }
      const Token& t = tokens[c + 1];
      auto cell = parse_entry(t.text);
      if (!cell) {
        fail(line.number, t.column, m_.field(row, c),
             fmt::format("unknown entry '{}' (one of X, NV<n>, PIX, PXB, PHB, NODE, SYS)", t.text));
      }
      cell->line = line.number;
      cell->column = t.column;
      cells.push_back(*cell);
    }
    const std::vector<Token> rest(tokens.begin() + static_cast<std::ptrdiff_t>(n) + 1, tokens.end());
    if (!rest.empty() && parse_entry(rest.front().text)) {
      fail(line.number, rest.front().column, fmt::format("row {}", m_.devices[row].label),
           fmt::format("row {} has more entries than the header has device columns ({})", m_.devices[row].label, n));
    }
    TopoDevice& device = m_.devices[row];
    device.line = line.number;
    if (device.kind == TopoDeviceKind::Gpu) device.numa_key = numa_key(rest);
  }

  /// The NUMA Affinity value when there is one, else the CPU Affinity value.
  [[nodiscard]] std::string numa_key(const std::vector<Token>& values) const {
    std::string cpu;
    for (std::size_t k = 0; k < affinity_.size() && k < values.size(); ++k) {
      const std::string_view v = values[k].text;
      if (v == "N/A") continue;
      if (affinity_[k] == AffinityColumn::Numa) return fmt::format("numa {}", v);
      if (affinity_[k] == AffinityColumn::Cpu) cpu = fmt::format("cpus {}", v);
    }
    return cpu;
  }

  void check_matrix() const {
    const std::size_t n = m_.devices.size();
    for (std::size_t r = 0; r < n; ++r) {
      for (std::size_t c = 0; c < n; ++c) {
        const TopoCell& cell = m_.cells[r][c];
        if (r == c && cell.entry != TopoEntry::Self) {
          fail(cell.line, cell.column, m_.field(r, c), fmt::format("expected X where {} meets itself", m_.devices[r].label));
        }
        if (r != c && cell.entry == TopoEntry::Self) {
          fail(cell.line, cell.column, m_.field(r, c), "X marks a device's own column only");
        }
        if (cell.entry == TopoEntry::NvLink &&
            (m_.devices[r].kind != TopoDeviceKind::Gpu || m_.devices[c].kind != TopoDeviceKind::Gpu)) {
          fail(cell.line, cell.column, m_.field(r, c), "only GPUs have NVLinks");
        }
        const TopoCell& mirror = m_.cells[c][r];
        if (r > c && (cell.entry != mirror.entry || cell.nvlinks != mirror.nvlinks)) {
          fail(cell.line, cell.column, m_.field(r, c),
               fmt::format("{} to {} is {}, but {} to {} is {}: the matrix must be symmetric", m_.devices[r].label,
                           m_.devices[c].label, cell.text(), m_.devices[c].label, m_.devices[r].label, mirror.text()));
        }
      }
    }
  }

  /// `NIC Legend:` then lines `NIC0: mlx5_0`.
  void read_nic_legend(std::size_t from) {
    std::size_t i = from;
    while (i < lines_.size()) {
      const auto tokens = tokenize(lines_[i++].text);
      if (tokens.size() == 2 && tokens[0].text == "NIC" && tokens[1].text == "Legend:") break;
    }
    for (; i < lines_.size(); ++i) {
      const auto tokens = tokenize(lines_[i].text);
      if (tokens.empty()) continue;
      if (tokens.size() != 2 || tokens[0].text.empty() || tokens[0].text.back() != ':') break;
      const auto label = tokens[0].text.substr(0, tokens[0].text.size() - 1);
      if (const auto d = device_of(label)) m_.devices[*d].os_name = std::string(tokens[1].text);
    }
  }

  std::vector<Line> lines_;
  std::vector<AffinityColumn> affinity_;
  TopoMatrix m_;
};

}  // namespace

TopoMatrix parse_topo_matrix(std::string_view text, std::string_view source_name) {
  return MatrixReader(text, source_name).read();
}

}  // namespace mpsim::topology::import
