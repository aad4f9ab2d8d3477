file(READ "${INPUT}" content)
set(delimiter "mpsim_embed")
file(WRITE "${OUTPUT}" "// Generated from ${INPUT}; do not edit.\n#include <string_view>\nnamespace ${NAMESPACE} {\nextern const std::string_view ${NAME};\nconst std::string_view ${NAME} = R\"${delimiter}(${content})${delimiter}\";\n}\n")
