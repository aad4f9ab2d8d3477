# A run of the suite fails when the environment would let it pass without testing: the golden-update
# variable rewrites every golden file and reports its tests skipped, and the validation's row filter
# drops the row-count checks. Both are for a developer's single test program, never for the suite.
foreach(variable MPSIM_UPDATE_GOLDEN MPSIM_VALIDATION_ROW)
  if(DEFINED ENV{${variable}})
    message(FATAL_ERROR "${variable} is set ('$ENV{${variable}}'): the suite would pass without testing; unset it")
  endif()
endforeach()
message(STATUS "no variable that turns tests off is set")
