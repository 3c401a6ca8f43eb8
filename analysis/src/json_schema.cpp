// A small JSON Schema validator for the subset schemas/analysis-v1.json uses.
#include "rtrace/analysis/report.hpp"

namespace rtrace::analysis {
namespace {

using nlohmann::json;

bool has_type(const json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  return false;
}

void check(const json& v, const json& schema, const json& root, const std::string& path,
           std::vector<std::string>& errors) {
  if (schema.is_boolean()) {
    if (!schema.get<bool>()) errors.push_back(path + ": not allowed");
    return;
  }
  if (schema.contains("$ref")) {
    const std::string ref = schema["$ref"].get<std::string>();
    const std::string prefix = "#/$defs/";
    if (ref.compare(0, prefix.size(), prefix) != 0 || !root.contains("$defs") ||
        !root["$defs"].contains(ref.substr(prefix.size()))) {
      errors.push_back(path + ": unresolvable $ref " + ref);
      return;
    }
    check(v, root["$defs"][ref.substr(prefix.size())], root, path, errors);
  }
  if (schema.contains("type")) {
    const json& t = schema["type"];
    bool ok = false;
    if (t.is_string()) ok = has_type(v, t.get<std::string>());
    else
      for (const auto& x : t) ok |= has_type(v, x.get<std::string>());
    if (!ok) {
      errors.push_back(path + ": expected type " + t.dump() + ", got " + v.type_name());
      return;
    }
  }
  if (schema.contains("enum")) {
    bool ok = false;
    for (const auto& e : schema["enum"]) ok |= (e == v);
    if (!ok) errors.push_back(path + ": value " + v.dump() + " not in " + schema["enum"].dump());
  }
  if (v.is_number()) {
    double d = v.get<double>();
    if (schema.contains("minimum") && d < schema["minimum"].get<double>())
      errors.push_back(path + ": " + v.dump() + " < minimum " + schema["minimum"].dump());
    if (schema.contains("maximum") && d > schema["maximum"].get<double>())
      errors.push_back(path + ": " + v.dump() + " > maximum " + schema["maximum"].dump());
  }
  if (v.is_object()) {
    if (schema.contains("required"))
      for (const auto& r : schema["required"])
        if (!v.contains(r.get<std::string>())) errors.push_back(path + ": missing required property " + r.dump());
    const json* props = schema.contains("properties") ? &schema["properties"] : nullptr;
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string sub = path + "/" + it.key();
      if (props && props->contains(it.key())) check(it.value(), (*props)[it.key()], root, sub, errors);
      else if (schema.contains("additionalProperties")) check(it.value(), schema["additionalProperties"], root, sub, errors);
    }
  }
  if (v.is_array()) {
    if (schema.contains("minItems") && v.size() < schema["minItems"].get<std::size_t>())
      errors.push_back(path + ": fewer than " + schema["minItems"].dump() + " items");
    if (schema.contains("items"))
      for (std::size_t i = 0; i < v.size(); ++i)
        check(v[i], schema["items"], root, path + "/" + std::to_string(i), errors);
  }
}

}  // namespace

std::vector<std::string> validate_json(const json& doc, const json& schema) {
  std::vector<std::string> errors;
  check(doc, schema, schema, "", errors);
  return errors;
}

}  // namespace rtrace::analysis
