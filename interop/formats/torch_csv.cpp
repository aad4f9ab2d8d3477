#include "interop/formats/torch_csv.h"

#include <charconv>
#include <optional>
#include <vector>

#include <fmt/format.h>

#include "sim/core/input_error.h"
#include "sim/schedule/ops.h"
#include "sim/schedule/validate.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kOverlap = "OVERLAP_F_B";
/// What PyTorch's lowering adds between compute actions; mpsim derives its own.
constexpr std::string_view kLoweredTypes[] = {"SEND_F", "RECV_F", "SEND_B", "RECV_B", "UNSHARD", "RESHARD",
                                              "REDUCE_GRAD"};

/// `{stage}F3`: the IR's own text of a pass ("F3", PyTorch's letters) after its global stage.
std::string action(const schedule::PipelineShape& shape, int rank, const schedule::Op& pass) {
  return fmt::format("{}{}", virtual_stage(shape, rank, pass.chunk), to_text(pass, false));
}

/// One cell's place in the file, for errors and for naming a program op.
struct Cell {
  int line = 0;
  int column = 0;
};

class CsvReader {
 public:
  CsvReader(const std::string& file, const schedule::PipelineShape& shape) : file_(file), shape_(shape) {}

  [[noreturn]] void fail(const Cell& at, const std::string& message) const {
    throw InputError({file_, at.line, at.column}, "", message);
  }

  /// `{stage}{F|B|I|W}{microbatch}` on `rank`, as a compute op; nothing for a lowered action.
  std::optional<schedule::Op> pass(std::string_view text, int rank, const Cell& at) const {
    std::size_t digits = 0;
    while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
    if (digits == 0) fail(at, fmt::format("'{}' is not an action (stage, type, microbatch: e.g. 2F0)", text));
    const std::string_view rest = text.substr(digits);
    for (const std::string_view lowered : kLoweredTypes) {
      if (rest.starts_with(lowered)) return std::nullopt;
    }
    if (rest.empty() || std::string_view("FBIW").find(rest.front()) == std::string_view::npos) {
      fail(at, fmt::format("'{}' is not an action: the type is F, B, I or W (or one PyTorch's lowering adds)", text));
    }
    const std::string_view microbatch_text = rest.substr(1);
    const int stage = number(text.substr(0, digits), text, at);
    if (microbatch_text.empty()) fail(at, fmt::format("'{}' names no microbatch", text));
    const int microbatch = number(microbatch_text, text, at);
    const int stages = virtual_stage_count(shape_);
    if (stage >= stages) {
      fail(at, fmt::format("'{}' names stage {}, but the plan has {} ({} ranks x {} chunks)", text, stage, stages,
                           shape_.stages, shape_.chunks));
    }
    if (rank_of(shape_, stage) != rank) {
      fail(at, fmt::format("'{}' is on rank {}, but {} places stage {} on rank {}", text, rank,
                           plan::to_string(shape_.kind), stage, rank_of(shape_, stage)));
    }
    if (microbatch >= shape_.microbatches) {
      fail(at, fmt::format("'{}' names microbatch {}, but the plan runs {}", text, microbatch, shape_.microbatches));
    }
    const schedule::OpKind kind = rest.front() == 'F'   ? schedule::OpKind::Forward
                                  : rest.front() == 'B' ? schedule::OpKind::Backward
                                  : rest.front() == 'I' ? schedule::OpKind::BackwardInput
                                                        : schedule::OpKind::BackwardWeight;
    return schedule::compute_op(kind, microbatch, chunk_of(shape_, stage));
  }

  /// A cell: an action, an overlapped pair, or nothing (idle, or a lowered action).
  std::optional<schedule::Op> cell(std::string_view text, int rank, const Cell& at) const {
    if (text.empty()) return std::nullopt;
    if (text.front() != '(') return pass(text, rank, at);
    const std::size_t close = text.find(')');
    if (close == std::string_view::npos || text.substr(close + 1) != kOverlap) {
      fail(at, fmt::format("'{}' is not an overlapped pair ((F;B){})", text, kOverlap));
    }
    const std::string_view inside = text.substr(1, close - 1);
    const std::size_t split = inside.find(';');
    const std::optional<schedule::Op> forward =
        split == std::string_view::npos ? std::nullopt : pass(inside.substr(0, split), rank, at);
    const std::optional<schedule::Op> backward =
        split == std::string_view::npos ? std::nullopt : pass(inside.substr(split + 1), rank, at);
    if (!forward || !backward || forward->kind != schedule::OpKind::Forward ||
        backward->kind != schedule::OpKind::Backward) {
      fail(at, fmt::format("'{}': an overlapped pair is a forward then a fused backward (F;B)", text));
    }
    return schedule::forward_backward_op(static_cast<int>(forward->microbatch), forward->chunk,
                                         static_cast<int>(backward->microbatch), backward->chunk);
  }

 private:
  int number(std::string_view digits, std::string_view text, const Cell& at) const {
    int value = 0;
    const auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size()) {
      fail(at, fmt::format("'{}': '{}' is not a number", text, digits));
    }
    return value;
  }

  const std::string& file_;
  const schedule::PipelineShape& shape_;
};

}  // namespace

std::string to_torch_csv(const schedule::Program& program) {
  std::string out;
  for (std::size_t r = 0; r < program.streams.size(); ++r) {
    const int rank = static_cast<int>(r);
    bool first = true;
    for (const schedule::Op& op : program.streams[r]) {
      if (!is_compute(op.kind) || op.kind == schedule::OpKind::OptimizerStep) continue;
      if (!first) out += ',';
      first = false;
      if (op.kind == schedule::OpKind::ForwardBackward) {
        const schedule::ComputeParts parts = compute_parts(op);
        out += fmt::format("({};{}){}", action(program.shape, rank, parts.ops[0]), action(program.shape, rank, parts.ops[1]),
                           kOverlap);
      } else {
        out += action(program.shape, rank, op);
      }
    }
    out += "\r\n";
  }
  return out;
}

schedule::Program from_torch_csv(std::string_view text, const std::string& file, const schedule::PipelineShape& shape) {
  const CsvReader reader(file, shape);
  schedule::Program program;
  program.shape = shape;
  program.streams.resize(static_cast<std::size_t>(shape.stages));
  std::vector<std::vector<Cell>> cells(program.streams.size());  // where each op came from
  int rank = 0;
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string_view::npos) end = text.size();
    std::string_view row = text.substr(begin, end - begin);
    if (row.ends_with('\r')) row.remove_suffix(1);
    const int line = rank + 1;
    if (rank >= shape.stages) {
      reader.fail({line, 1}, fmt::format("row {} is one too many: the plan has {} pipeline ranks", line, shape.stages));
    }
    std::size_t start = 0;
    while (start <= row.size()) {
      std::size_t stop = row.find(',', start);
      if (stop == std::string_view::npos) stop = row.size();
      const Cell at{line, static_cast<int>(start) + 1};
      if (const std::optional<schedule::Op> op = reader.cell(row.substr(start, stop - start), rank, at)) {
        program.streams[static_cast<std::size_t>(rank)].push_back(*op);
        cells[static_cast<std::size_t>(rank)].push_back(at);
      }
      start = stop + 1;
    }
    ++rank;
    begin = end + 1;
  }
  if (rank != shape.stages) {
    reader.fail({rank + 1, 1}, fmt::format("{} rows for a plan of {} pipeline ranks", rank, shape.stages));
  }
  if (const auto error = schedule::validate(program)) {
    const bool located = error->rank >= 0 && error->rank < shape.stages &&
                         error->op_index < cells[static_cast<std::size_t>(error->rank)].size();
    const Cell at = located ? cells[static_cast<std::size_t>(error->rank)][error->op_index] : Cell{1, 1};
    reader.fail(at, error->message);
  }
  return program;
}

}  // namespace mpsim::interop
