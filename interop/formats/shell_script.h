#pragma once
/// The part of bash that launch scripts are written in: variable assignments (`TP=4`, `export
/// NNODES=${NNODES:-2}`, `WORLD=$((GPUS*NODES))`), bash arrays (`ARGS=( --a 1 \n --b 2 )`, `ARGS+=(...)`),
/// quoting, comments, line continuations, and their expansion into each command's words
/// (`"${ARGS[@]}"`, `$TP`, `${TP}`). Control flow is read straight through: every assignment applies in
/// the order written. Nothing is executed: a word that needs what only running the script would give
/// (`$(hostname)`, `$1`, a variable the script never sets) is kept with the name of what is missing.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"

namespace mpsim::interop {

/// One word of a command after expansion.
struct ShellWord {
  std::string text;
  SourceLocation where;                ///< where the word (or the array element it came from) is written
  std::optional<std::string> missing;  ///< what could not be expanded (a variable's name, `$(...)`), if anything
};

/// A simple command: its words after assignments and expansion (assignment-only lines are not commands).
struct ShellCommand {
  std::vector<ShellWord> words;
};

/// The commands of `text` in order, `file` naming it in locations. Throws InputError on what is not
/// shell (an unterminated quote or array).
[[nodiscard]] std::vector<ShellCommand> read_shell_commands(std::string_view text, const std::string& file);

}  // namespace mpsim::interop
