#pragma once
/// Declarations of sim/core/yaml_field.h's types, for headers that only name them (yaml-cpp stays
/// out of the files that include those headers).

namespace mpsim {

class Field;
class YamlDocument;

}  // namespace mpsim
