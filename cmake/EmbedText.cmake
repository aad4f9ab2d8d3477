# mpsim_embed_text(OUT_CPP NAMESPACE NAME FILE): generates a .cpp defining
# `extern const std::string_view NAME` in NAMESPACE holding FILE's text, so that
# data kept as YAML in the repository (hardware catalogs) ships inside the binary.
function(mpsim_embed_text out_cpp namespace name file)
  set(generated "${CMAKE_CURRENT_BINARY_DIR}/${name}.cpp")
  add_custom_command(
    OUTPUT "${generated}"
    COMMAND ${CMAKE_COMMAND} -DINPUT=${file} -DOUTPUT=${generated} -DNAMESPACE=${namespace} -DNAME=${name}
            -P "${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake"
    DEPENDS "${file}" "${PROJECT_SOURCE_DIR}/cmake/EmbedTextScript.cmake"
    COMMENT "Embedding ${file}")
  set(${out_cpp} "${generated}" PARENT_SCOPE)
endfunction()
