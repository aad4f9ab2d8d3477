# One place for compiler flags shared by every mpsim target.
add_library(mpsim_warnings INTERFACE)
target_compile_options(mpsim_warnings INTERFACE -Wall -Wextra -Wpedantic -Werror -Werror=switch)

if(MPSIM_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
