# One place for compiler flags shared by every mpsim target.
add_library(mpsim_warnings INTERFACE)
target_compile_options(mpsim_warnings INTERFACE -Wall -Wextra -Wpedantic -Werror -Werror=switch)

if(MPSIM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# libFuzzer harnesses (tests/fuzz) need clang. Every target is built with the fuzzer's coverage
# instrumentation, so the harnesses link the same libraries as the unit tests, and one sanitizer
# build serves both (tools/test.sh --sanitize).
option(MPSIM_FUZZ "Build the libFuzzer harnesses (tests/fuzz); needs clang" OFF)
if(MPSIM_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "MPSIM_FUZZ=ON needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
