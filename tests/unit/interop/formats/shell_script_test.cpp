// The bash that launch scripts are written in, read without running it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "interop/formats/shell_script.h"
#include "sim/core/input_error.h"

namespace mpsim::interop {
namespace {

std::vector<std::string> words_of(const std::string& script, std::size_t command = 0) {
  const auto commands = read_shell_commands(script, "run.sh");
  std::vector<std::string> out;
  for (const ShellWord& w : commands.at(command).words) out.push_back(w.missing ? "<" + *w.missing + ">" : w.text);
  return out;
}

using Words = std::vector<std::string>;

TEST(ShellScript, ExpandsVariablesArraysAndArithmetic) {
  EXPECT_EQ(words_of("TP=4\nPP=$((TP * 2))\nrun --tp $TP --pp ${PP}\n"), (Words{"run", "--tp", "4", "--pp", "8"}));
  EXPECT_EQ(words_of("A=(\n  --a 1   # the first\n  --b \"x y\"\n)\nrun \"${A[@]}\" end\n"),
            (Words{"run", "--a", "1", "--b", "x y", "end"}));
  EXPECT_EQ(words_of("A=(--a 1)\nA+=(--b 2)\nrun ${A[@]}\n"), (Words{"run", "--a", "1", "--b", "2"}));
  EXPECT_EQ(words_of("M=\"core_attn mlp\"\nrun --m $M \"$M\"\n"), (Words{"run", "--m", "core_attn", "mlp", "core_attn mlp"}));
}

TEST(ShellScript, DefaultsApplyOnlyToUnsetVariables) {
  EXPECT_EQ(words_of("N=${N:-2}\nrun $N\n"), (Words{"run", "2"}));
  EXPECT_EQ(words_of("N=3\nN=${N:-2}\nrun $N ${M:=5} $M\n"), (Words{"run", "3", "5", "5"}));
}

TEST(ShellScript, QuotingContinuationsAndCommentsAreBashs) {
  EXPECT_EQ(words_of("run 'a $b' \\\n   \"c\\\"d\" e\\ f # not a word\n"), (Words{"run", "a $b", "c\"d", "e f"}));
  EXPECT_EQ(words_of("export GPUS=8; run --n $GPUS && other\n"), (Words{"run", "--n", "8"}));
  EXPECT_EQ(words_of("export GPUS=8; run --n $GPUS && other\n", 1), (Words{"other"}));
}

TEST(ShellScript, WhatOnlyRunningGivesIsNamedNotGuessed) {
  EXPECT_EQ(words_of("run $TP $(hostname) $1 `date` \"$@\"\n"), (Words{"run", "<TP>", "<$(hostname)>", "<$1>", "<`date`>"}));
  EXPECT_EQ(words_of("run $((TP*2))\n"), (Words{"run", "<TP>"}));
}

TEST(ShellScript, ArrayElementsKeepTheLineTheyAreWrittenOn) {
  const auto commands = read_shell_commands("A=(\n  --a 1\n  --b 2\n)\nrun \"${A[@]}\"\n", "run.sh");
  ASSERT_EQ(commands.size(), 1u);
  EXPECT_EQ(commands[0].words.at(0).where.line, 5);
  EXPECT_EQ(commands[0].words.at(3).text, "--b");
  EXPECT_EQ(commands[0].words.at(3).where.line, 3);
  EXPECT_EQ(commands[0].words.at(3).where.column, 3);
}

TEST(ShellScript, AnUnclosedQuoteOrArrayIsAnErrorWhereItOpens) {
  try {
    (void)read_shell_commands("X=1\nrun \"abc\n", "run.sh");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2);
    EXPECT_EQ(e.where().column, 5);
  }
  EXPECT_THROW((void)read_shell_commands("A=(\n --a 1\n", "run.sh"), InputError);
}

}  // namespace
}  // namespace mpsim::interop
