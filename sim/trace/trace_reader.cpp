#include "sim/trace/trace_reader.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/core/gzip.h"
#include "sim/core/utf8.h"

namespace mpsim::trace {

namespace {

// The event array is parsed by hand rather than through nlohmann's DOM: a million-span trace is
// about 145 MB of text, and a tree of it costs nlohmann::json 19 s and 11 GB. The parser accepts
// any valid JSON (keys in any order, any whitespace, unknown keys skipped), not just the layout
// chrome_trace() writes, and reports syntax errors with the byte offset.

constexpr int kMaxDepth = 256;

struct LaneRecord {
  std::int64_t pid = 0;
  std::int64_t tid = 0;
  std::optional<std::int64_t> sort_index;
  std::optional<std::string> thread;
};

struct Event {
  std::size_t offset = 0;
  std::string_view ph;
  std::string_view name;
  std::string_view cat;
  std::optional<std::int64_t> pid, tid, ts_ns, dur_ns;
  std::int64_t mb = -1, chunk = -1, stage = -1, bytes = 0, op = -1;
  std::optional<std::string> arg_name;
  std::optional<std::int64_t> arg_sort_index;
};

std::optional<SpanKind> kind_from_cat(std::string_view cat) {
  for (const SpanTraits& t : kSpanTraits) {
    if (t.word == cat) return t.kind;
  }
  return std::nullopt;
}

class Parser {
 public:
  Parser(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  TraceFile parse() {
    // A UTF-8 byte order mark is tolerated.
    if (text_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;
    skip_ws();
    if (pos_ >= text_.size()) fail("empty file");
    bool saw_events = false;
    std::optional<std::pair<std::size_t, std::size_t>> report_range;
    if (text_[pos_] == '[') {
      // The bare-array form of the Chrome trace format.
      parse_events();
      saw_events = true;
    } else if (text_[pos_] == '{') {
      ++pos_;
      if (!consume_if('}')) {
        do {
          const std::string_view key = parse_key();
          if (key == "traceEvents") {
            if (peek() != '[') fail(fmt::format("\"traceEvents\" at byte {} is not an array", pos_));
            parse_events();
            saw_events = true;
          } else if (key == "mpsim") {
            skip_ws();
            const std::size_t begin = pos_;
            skip_value(0);
            report_range = std::make_pair(begin, pos_);
          } else {
            skip_value(0);
          }
        } while (consume_separator('}'));
      }
    } else {
      fail("not a trace: expected a JSON object with a \"traceEvents\" array");
    }
    skip_ws();
    if (pos_ != text_.size()) syntax_error("unexpected characters after the end of the document");
    if (!saw_events) fail("not a trace: no \"traceEvents\" array");

    TraceFile out;
    out.timeline = build_timeline();
    if (report_range) {
      const auto [begin, end] = *report_range;
      try {
        out.report = parse_report(nlohmann::json::parse(text_.substr(begin, end - begin)));
      } catch (const TraceReadError& e) {
        fail(e.what());
      } catch (const nlohmann::json::exception& e) {
        fail(fmt::format("report at byte {}: {}", begin, e.what()));
      }
    }
    return out;
  }

 private:
  [[noreturn]] void fail(std::string_view message) const {
    throw TraceReadError(fmt::format("{}: {}", source_, message));
  }

  [[noreturn]] void syntax_error(std::string_view what) const {
    if (pos_ >= text_.size()) {
      fail(fmt::format("invalid JSON at byte {}: unexpected end of input (truncated file?)", text_.size()));
    }
    fail(fmt::format("invalid JSON at byte {}: {}", pos_, what));
  }

  void skip_ws() noexcept {
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++pos_;
    }
  }

  char peek() {
    skip_ws();
    if (pos_ >= text_.size()) syntax_error("");
    return text_[pos_];
  }

  bool consume_if(char c) {
    if (peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (peek() != c) syntax_error(fmt::format("expected '{}'", c));
    ++pos_;
  }

  /// After a member or element: true on ',', false on `close`, an error otherwise.
  bool consume_separator(char close) {
    const char c = peek();
    if (c == ',') {
      ++pos_;
      return true;
    }
    if (c == close) {
      ++pos_;
      return false;
    }
    syntax_error(fmt::format("expected ',' or '{}'", close));
  }

  /// The raw bytes between the quotes; `escaped` tells whether a backslash occurs.
  std::string_view raw_string(bool& escaped) {
    if (peek() != '"') syntax_error("expected a string");
    const std::size_t begin = ++pos_;
    escaped = false;
    const std::size_t n = text_.size();
    while (pos_ < n) {
      const char c = text_[pos_];
      if (c == '"') {
        const std::string_view raw = text_.substr(begin, pos_ - begin);
        ++pos_;
        return raw;
      }
      if (c == '\\') {
        escaped = true;
        pos_ += 2;
        continue;
      }
      if (static_cast<unsigned char>(c) < 0x20) syntax_error("control character in a string");
      ++pos_;
    }
    pos_ = n;
    syntax_error("");
  }

  std::string_view parse_key() {
    bool escaped = false;
    const std::string_view key = raw_string(escaped);
    expect(':');
    return key;
  }

  std::string decode(std::string_view raw, std::size_t at) const {
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
      const char c = raw[i];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (++i >= raw.size()) break;
      switch (raw[i]) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          const auto hex4 = [&](std::size_t p) -> std::uint32_t {
            std::uint32_t v = 0;
            if (p + 4 > raw.size()) fail(fmt::format("invalid JSON at byte {}: bad \\u escape", at));
            const auto [ptr, ec] = std::from_chars(raw.data() + p, raw.data() + p + 4, v, 16);
            if (ec != std::errc() || ptr != raw.data() + p + 4) {
              fail(fmt::format("invalid JSON at byte {}: bad \\u escape", at));
            }
            return v;
          };
          std::uint32_t cp = hex4(i + 1);
          i += 4;
          if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < raw.size() && raw[i + 1] == '\\' && raw[i + 2] == 'u') {
            const std::uint32_t low = hex4(i + 3);
            if (low >= 0xDC00 && low < 0xE000) {
              cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
              i += 6;
            }
          }
          append_utf8(out, cp);
          break;
        }
        default: fail(fmt::format("invalid JSON at byte {}: bad escape in a string", at));
      }
    }
    return out;
  }

  std::string parse_string() {
    skip_ws();
    const std::size_t at = pos_;
    bool escaped = false;
    const std::string_view raw = raw_string(escaped);
    return escaped ? decode(raw, at) : std::string(raw);
  }

  /// A JSON number, validated against the grammar, as its text.
  std::string_view number_token() {
    skip_ws();
    const std::size_t begin = pos_;
    const std::size_t n = text_.size();
    const auto digits = [&]() {
      const std::size_t start = pos_;
      while (pos_ < n && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == start) syntax_error("expected a digit");
    };
    if (pos_ < n && text_[pos_] == '-') ++pos_;
    if (pos_ < n && text_[pos_] == '0') {
      ++pos_;
    } else {
      digits();
    }
    if (pos_ < n && text_[pos_] == '.') {
      ++pos_;
      digits();
    }
    if (pos_ < n && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < n && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    return text_.substr(begin, pos_ - begin);
  }

  void literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) {
      if (text_.size() - pos_ < word.size() && word.substr(0, text_.size() - pos_) == text_.substr(pos_)) {
        pos_ = text_.size();
      }
      syntax_error("unexpected character");
    }
    pos_ += word.size();
  }

  void skip_value(int depth) {
    if (depth > kMaxDepth) syntax_error("nesting too deep");
    const char c = peek();
    switch (c) {
      case '{':
        ++pos_;
        if (consume_if('}')) return;
        do {
          (void)parse_key();
          skip_value(depth + 1);
        } while (consume_separator('}'));
        return;
      case '[':
        ++pos_;
        if (consume_if(']')) return;
        do {
          skip_value(depth + 1);
        } while (consume_separator(']'));
        return;
      case '"': {
        bool escaped = false;
        (void)raw_string(escaped);
        return;
      }
      case 't': literal("true"); return;
      case 'f': literal("false"); return;
      case 'n': literal("null"); return;
      default:
        if (c == '-' || (c >= '0' && c <= '9')) {
          (void)number_token();
          return;
        }
        syntax_error("unexpected character");
    }
  }

  std::size_t peek_pos() {
    skip_ws();
    return pos_;
  }

  /// The text of a number field, nothing for null, an error for anything else.
  std::optional<std::string_view> number_or_null(std::string_view field) {
    const char c = peek();
    if (c == 'n') {
      literal("null");
      return std::nullopt;
    }
    if (c != '-' && (c < '0' || c > '9')) {
      fail(fmt::format("\"{}\" at byte {} is not a number", field, pos_));
    }
    return number_token();
  }

  /// An integer field; null keeps the default. Integral floats ("3.0") are accepted.
  std::optional<std::int64_t> parse_integer(std::string_view field) {
    const std::size_t at = peek_pos();
    const auto token = number_or_null(field);
    if (!token) return std::nullopt;
    const std::string_view tok = *token;
    std::int64_t v = 0;
    const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (ec == std::errc() && ptr == tok.data() + tok.size()) return v;
    double d = 0;
    const auto [dptr, dec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    if (dec != std::errc() || dptr != tok.data() + tok.size() || d != std::floor(d) || std::abs(d) > 9.0e18) {
      fail(fmt::format("\"{}\" at byte {} is not an integer", field, at));
    }
    return static_cast<std::int64_t>(d);
  }

  /// Microseconds to nanoseconds: exact for up to three decimals (what chrome_trace() writes),
  /// rounded to the nearest nanosecond otherwise.
  std::optional<std::int64_t> parse_micros(std::string_view field) {
    const std::size_t at = peek_pos();
    const auto token = number_or_null(field);
    if (!token) return std::nullopt;
    const std::string_view tok = *token;
    std::size_t i = 0;
    const bool negative = tok[0] == '-';
    if (negative) ++i;
    std::size_t int_digits = 0;
    std::int64_t value = 0;
    while (i < tok.size() && tok[i] >= '0' && tok[i] <= '9') {
      value = value * 10 + (tok[i] - '0');
      ++int_digits;
      ++i;
      if (int_digits > 15) break;
    }
    bool exact = int_digits <= 15;
    int frac_digits = 0;
    if (exact && i < tok.size() && tok[i] == '.') {
      ++i;
      while (i < tok.size() && tok[i] >= '0' && tok[i] <= '9' && frac_digits < 3) {
        value = value * 10 + (tok[i] - '0');
        ++frac_digits;
        ++i;
      }
      if (i < tok.size() && tok[i] >= '0' && tok[i] <= '9') exact = false;
    }
    if (exact && i == tok.size()) {
      for (int k = frac_digits; k < 3; ++k) value *= 10;
      return negative ? -value : value;
    }
    double d = 0;
    const auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), d);
    const double ns = std::round(d * 1000.0);
    if (ec != std::errc() || ptr != tok.data() + tok.size() || !(std::abs(ns) < 9.0e18)) {
      fail(fmt::format("\"{}\" at byte {} is out of range", field, at));
    }
    return static_cast<std::int64_t>(ns);
  }

  std::string_view parse_plain_string(std::string_view field) {
    if (peek() != '"') {
      fail(fmt::format("\"{}\" at byte {} is not a string", field, pos_));
    }
    bool escaped = false;
    // Names and categories of mpsim traces never need escapes; an escaped one compares raw.
    return raw_string(escaped);
  }

  void parse_args(Event& e) {
    if (peek() != '{') {
      skip_value(1);
      return;
    }
    ++pos_;
    if (consume_if('}')) return;
    do {
      const std::string_view key = parse_key();
      if (key == "mb") {
        e.mb = parse_integer("args.mb").value_or(-1);
      } else if (key == "chunk") {
        e.chunk = parse_integer("args.chunk").value_or(-1);
      } else if (key == "stage") {
        e.stage = parse_integer("args.stage").value_or(-1);
      } else if (key == "bytes") {
        e.bytes = parse_integer("args.bytes").value_or(0);
      } else if (key == "op") {
        e.op = parse_integer("args.op").value_or(-1);
      } else if (key == "name" && peek() == '"') {
        e.arg_name = parse_string();
      } else if (key == "sort_index" && peek() != '"') {
        e.arg_sort_index = parse_integer("args.sort_index");
      } else {
        skip_value(2);
      }
    } while (consume_separator('}'));
  }

  void parse_events() {
    expect('[');
    if (consume_if(']')) return;
    do {
      Event e;
      if (peek() != '{') syntax_error("expected an event object");
      e.offset = pos_;
      ++pos_;
      if (!consume_if('}')) {
        do {
          const std::string_view key = parse_key();
          if (key == "ph") {
            e.ph = parse_plain_string("ph");
          } else if (key == "name") {
            if (peek() == '"') {
              e.name = parse_plain_string("name");
            } else {
              skip_value(1);
            }
          } else if (key == "cat") {
            e.cat = parse_plain_string("cat");
          } else if (key == "pid") {
            e.pid = parse_integer("pid");
          } else if (key == "tid") {
            e.tid = parse_integer("tid");
          } else if (key == "ts") {
            e.ts_ns = parse_micros("ts");
          } else if (key == "dur") {
            e.dur_ns = parse_micros("dur");
          } else if (key == "args") {
            parse_args(e);
          } else {
            skip_value(1);
          }
        } while (consume_separator('}'));
      }
      handle(std::move(e));
    } while (consume_separator(']'));
  }

  [[noreturn]] void event_error(const Event& e, std::string_view message) const {
    fail(fmt::format("event at byte {}: {}", e.offset, message));
  }

  std::uint32_t lane_of(std::int64_t pid, std::int64_t tid) {
    if (last_lane_ && last_pid_ == pid && last_tid_ == tid) return *last_lane_;
    const auto [it, added] =
        lane_index_.try_emplace(std::make_pair(pid, tid), static_cast<std::uint32_t>(lanes_.size()));
    if (added) lanes_.push_back(LaneRecord{pid, tid, std::nullopt, std::nullopt});
    last_pid_ = pid;
    last_tid_ = tid;
    last_lane_ = it->second;
    return it->second;
  }

  void handle(Event&& e) {
    if (e.ph == "X") {
      if (e.cat == "idle") return;
      const auto kind = kind_from_cat(e.cat);
      if (!kind) {
        event_error(e, fmt::format("unknown category \"{}\" (not an mpsim trace?)", e.cat));
      }
      if (!e.ts_ns || !e.dur_ns) event_error(e, "\"X\" event without \"ts\" and \"dur\"");
      if (*e.dur_ns < 0) event_error(e, "negative duration");
      const auto narrow = [&](std::int64_t v, std::string_view field) {
        if (v < std::numeric_limits<std::int32_t>::min() || v > std::numeric_limits<std::int32_t>::max()) {
          event_error(e, fmt::format("args.{} out of range", field));
        }
        return static_cast<std::int32_t>(v);
      };
      Span s;
      s.lane = lane_of(e.pid.value_or(0), e.tid.value_or(0));
      s.kind = *kind;
      s.start_ns = *e.ts_ns;
      s.end_ns = *e.ts_ns + *e.dur_ns;
      s.microbatch = narrow(e.mb, "mb");
      s.chunk = narrow(e.chunk, "chunk");
      s.stage = narrow(e.stage, "stage");
      s.bytes = e.bytes;
      s.op = narrow(e.op, "op");
      spans_.push_back(s);
    } else if (e.ph == "M") {
      const std::int64_t pid = e.pid.value_or(0);
      if (e.name == "process_name") {
        if (e.arg_name) process_names_[pid] = std::move(*e.arg_name);
      } else if (e.name == "thread_name") {
        if (e.arg_name) lanes_[lane_of(pid, e.tid.value_or(0))].thread = std::move(*e.arg_name);
      } else if (e.name == "thread_sort_index") {
        if (e.arg_sort_index) lanes_[lane_of(pid, e.tid.value_or(0))].sort_index = e.arg_sort_index;
      }
    }
  }

  Timeline build_timeline() {
    std::vector<std::uint32_t> order(lanes_.size());
    for (std::uint32_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto key = [&](std::uint32_t i) {
      const LaneRecord& l = lanes_[i];
      return std::make_tuple(l.sort_index.value_or(l.tid), l.tid, l.pid);
    };
    std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) { return key(a) < key(b); });
    std::vector<std::uint32_t> final_index(lanes_.size());
    Timeline t;
    t.lanes.reserve(lanes_.size());
    for (std::uint32_t k = 0; k < order.size(); ++k) {
      LaneRecord& l = lanes_[order[k]];
      final_index[order[k]] = k;
      const auto p = process_names_.find(l.pid);
      Lane lane;
      lane.process = p != process_names_.end() ? p->second : fmt::format("pid {}", l.pid);
      lane.thread = l.thread ? std::move(*l.thread) : fmt::format("tid {}", l.tid);
      t.lanes.push_back(std::move(lane));
    }
    for (Span& s : spans_) s.lane = final_index[s.lane];
    t.spans = std::move(spans_);
    return t;
  }

  std::string_view text_;
  std::string source_;
  std::size_t pos_ = 0;
  std::vector<LaneRecord> lanes_;
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> lane_index_;
  std::unordered_map<std::int64_t, std::string> process_names_;
  std::vector<Span> spans_;
  std::int64_t last_pid_ = 0, last_tid_ = 0;
  std::optional<std::uint32_t> last_lane_;
};

// --- report ---------------------------------------------------------------------------------

[[noreturn]] void report_error(std::string_view where, std::string_view key, std::string_view what) {
  throw TraceReadError(fmt::format("report: {}{} is not {}", where, key, what));
}

void read_field(const nlohmann::json& o, const char* key, double& out, std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  if (!it->is_number()) report_error(where, key, "a number");
  out = it->get<double>();
}

void read_field(const nlohmann::json& o, const char* key, std::int64_t& out, std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  if (!it->is_number_integer()) report_error(where, key, "an integer");
  out = it->get<std::int64_t>();
}

void read_field(const nlohmann::json& o, const char* key, int& out, std::string_view where) {
  std::int64_t v = out;
  read_field(o, key, v, where);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    report_error(where, key, "an int");
  }
  out = static_cast<int>(v);
}

void read_field(const nlohmann::json& o, const char* key, bool& out, std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  if (!it->is_boolean()) report_error(where, key, "a boolean");
  out = it->get<bool>();
}

void read_field(const nlohmann::json& o, const char* key, std::string& out, std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return;
  if (!it->is_string()) report_error(where, key, "a string");
  out = it->get<std::string>();
}

/// An object field, or nothing when absent.
const nlohmann::json* object_field(const nlohmann::json& o, const char* key, std::string_view where) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  if (!it->is_object()) report_error(where, key, "an object");
  return &*it;
}

/// The summary of a report's plan: the plan file's schema (plan::plan_json), or the flat object that
/// reports wrote before it (every field at the top, expert_load among them).
void read_plan_summary(const nlohmann::json& plan, PlanSummary& out) {
  const nlohmann::json* parallelism = object_field(plan, "parallelism", "plan.");
  const nlohmann::json* batch = object_field(plan, "batch", "plan.");
  const nlohmann::json& degrees = parallelism ? *parallelism : plan;
  const std::string_view degrees_where = parallelism ? "plan.parallelism." : "plan.";
  read_field(degrees, "tensor", out.tensor, degrees_where);
  read_field(degrees, "pipeline", out.pipeline, degrees_where);
  read_field(degrees, "data", out.data, degrees_where);
  read_field(degrees, "context", out.context, degrees_where);
  read_field(degrees, "expert", out.expert, degrees_where);
  read_field(degrees, "expert_tensor", out.expert_tensor, degrees_where);
  read_field(degrees, "virtual_stages", out.virtual_stages, degrees_where);
  if (batch) {
    read_field(*batch, "microbatches", out.microbatches, "plan.batch.");
    read_field(*batch, "micro", out.micro_batch_size, "plan.batch.");
    read_field(*batch, "global", out.global_batch, "plan.batch.");
  } else {
    read_field(plan, "microbatches", out.microbatches, "plan.");
    read_field(plan, "micro_batch_size", out.micro_batch_size, "plan.");
    read_field(plan, "global_batch", out.global_batch, "plan.");
    read_field(plan, "expert_load", out.expert_load, "plan.");
  }
  read_field(plan, "schedule", out.schedule, "plan.");
  read_field(plan, "recompute", out.recompute, "plan.");
  read_field(plan, "zero", out.zero, "plan.");
  read_field(plan, "precision", out.precision, "plan.");
  read_field(plan, "attention", out.attention, "plan.");
  read_field(plan, "attention_kernel", out.attention_kernel, "plan.");
}

const nlohmann::json* array_field(const nlohmann::json& o, const char* key) {
  const auto it = o.find(key);
  if (it == o.end() || it->is_null()) return nullptr;
  if (!it->is_array()) report_error("", key, "an array");
  return &*it;
}

/// A device of the report's `devices` (or a stage of a replica class), `name` its place ("devices[3]").
DeviceReport parse_device(const nlohmann::json& d, const std::string& name) {
  if (!d.is_object()) throw TraceReadError(fmt::format("report: {} is not an object", name));
  const std::string where = name + ".";
  DeviceReport dr;
  read_field(d, "id", dr.id, where);
  read_field(d, "stage", dr.stage, where);
  read_field(d, "busy_s", dr.busy_s, where);
  read_field(d, "communication_wait_s", dr.communication_wait_s, where);
  read_field(d, "idle_s", dr.idle_s, where);
  read_field(d, "bubble_fraction", dr.bubble_fraction, where);
  read_field(d, "peak_memory_bytes", dr.peak_memory_bytes, where);
  read_field(d, "memory_capacity_bytes", dr.memory_capacity_bytes, where);
  read_field(d, "oom", dr.oom, where);
  if (d.contains("memory")) {
    const auto& m = d.at("memory");
    if (!m.is_object()) report_error(where, "memory", "an object");
    const std::string in = where + "memory.";
    read_field(m, "weights", dr.memory.weights, in);
    read_field(m, "gradients", dr.memory.gradients, in);
    read_field(m, "optimizer", dr.memory.optimizer, in);
    read_field(m, "activations", dr.memory.activations, in);
    read_field(m, "reserved", dr.memory.reserved, in);
    if (m.contains("optimizer_step")) read_field(m, "optimizer_step", dr.memory.optimizer_step, in);
  }
  if (const auto* timeline = array_field(d, "memory_timeline")) {
    for (std::size_t k = 0; k < timeline->size(); ++k) {
      const auto& point = (*timeline)[k];
      if (!point.is_array() || point.size() != 2 || !point[0].is_number() || !point[1].is_number_integer()) {
        report_error(where, fmt::format("memory_timeline[{}]", k), "a pair [time_s, bytes]");
      }
      dr.memory_timeline.push_back({point[0].get<double>(), point[1].get<std::int64_t>()});
    }
  }
  return dr;
}

/// A class of replicas that run alike (`replica_classes`, trace_json.cpp): its replicas, their count, and
/// by pipeline rank the stage's device with its GPU kind and the class's GPUs there.
ReplicaClassReport parse_replica_class(const nlohmann::json& c, const std::string& name) {
  if (!c.is_object()) throw TraceReadError(fmt::format("report: {} is not an object", name));
  const std::string where = name + ".";
  ReplicaClassReport rc;
  if (const auto* replicas = array_field(c, "replicas")) {
    for (std::size_t k = 0; k < replicas->size(); ++k) {
      const auto& replica = (*replicas)[k];
      if (!replica.is_number_integer()) report_error(where, fmt::format("replicas[{}]", k), "an integer");
      rc.replicas.push_back(replica.get<int>());
    }
  }
  read_field(c, "microbatches", rc.microbatches, where);
  if (const auto* stages = array_field(c, "stages")) {
    for (std::size_t s = 0; s < stages->size(); ++s) {
      const std::string stage_name = fmt::format("{}stages[{}]", where, s);
      rc.stages.push_back(parse_device((*stages)[s], stage_name));
      std::string kind;
      read_field((*stages)[s], "gpu_kind", kind, stage_name + ".");
      rc.gpu_kinds.push_back(std::move(kind));
      read_field((*stages)[s], "gpus", rc.gpus_per_stage, stage_name + ".");
    }
  }
  return rc;
}

}  // namespace

Report parse_report(const nlohmann::json& o) {
  if (!o.is_object()) throw TraceReadError("report: not a JSON object");
  Report r;
  read_field(o, "step_time_s", r.step_time_s, "");
  read_field(o, "bubble_fraction", r.bubble_fraction, "");
  read_field(o, "bubble_rate", r.bubble_rate, "");
  read_field(o, "communication_wait_fraction", r.communication_wait_fraction, "");
  read_field(o, "tflops_per_gpu", r.tflops_per_gpu, "");
  read_field(o, "hardware_tflops_per_gpu", r.hardware_tflops_per_gpu, "");
  read_field(o, "mfu", r.mfu, "");
  read_field(o, "peak_memory_bytes", r.peak_memory_bytes, "");
  read_field(o, "oom", r.oom, "");
  if (const auto* devices = array_field(o, "devices")) {
    for (std::size_t i = 0; i < devices->size(); ++i) {
      r.devices.push_back(parse_device((*devices)[i], fmt::format("devices[{}]", i)));
    }
  }
  if (const auto* classes = array_field(o, "replica_classes")) {
    for (std::size_t i = 0; i < classes->size(); ++i) {
      r.replica_classes.push_back(parse_replica_class((*classes)[i], fmt::format("replica_classes[{}]", i)));
    }
  }
  if (const auto* links = array_field(o, "links")) {
    for (std::size_t i = 0; i < links->size(); ++i) {
      const auto& l = (*links)[i];
      const std::string where = fmt::format("links[{}].", i);
      if (!l.is_object()) throw TraceReadError(fmt::format("report: links[{}] is not an object", i));
      LinkReport lr;
      read_field(l, "id", lr.id, where);
      read_field(l, "bytes", lr.bytes, where);
      read_field(l, "busy_s", lr.busy_s, where);
      r.links.push_back(std::move(lr));
    }
  }
  read_field(o, "expert_load", r.plan.expert_load, "");
  const auto plan = o.find("plan");
  if (plan != o.end() && !plan->is_null()) {
    if (!plan->is_object()) throw TraceReadError("report: plan is not an object");
    r.plan.document = plan->dump();
    read_plan_summary(*plan, r.plan);
  }
  return r;
}

TraceFile parse_trace(std::string_view json_text, std::string_view source_name) {
  Parser parser(json_text, source_name);
  return parser.parse();
}

TraceFile read_trace_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceReadError(fmt::format("{}: cannot open the file: {}", path, std::strerror(errno)));
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  if (size < 0) throw TraceReadError(fmt::format("{}: cannot read the file", path));
  in.seekg(0, std::ios::beg);
  std::string text(static_cast<std::size_t>(size), '\0');
  if (size > 0 && !in.read(text.data(), size)) throw TraceReadError(fmt::format("{}: cannot read the file", path));
  // Told apart by content, not name: a renamed .json.gz still opens.
  try {
    text = gunzip_if_gzip(std::move(text));
  } catch (const GzipError& e) {
    throw TraceReadError(fmt::format("{}: {}", path, e.what()));
  }
  return parse_trace(text, path);
}

}  // namespace mpsim::trace
