// method_options.cc — parsing of "name:key=value,..." method specs.
#include "online/method_options.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace emo {

bool SplitMethodSpec(const std::string& spec, MethodOptions* out, std::string* err) {
  const size_t colon = spec.find(':');
  out->name = spec.substr(0, colon);
  out->items.clear();
  if (colon == std::string::npos) return true;
  std::stringstream rest(spec.substr(colon + 1));
  std::string item;
  while (std::getline(rest, item, ',')) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      *err = out->name + ": '" + item + "' is not key=value";
      return false;
    }
    out->items.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return true;
}

bool OptionNumber(const std::string& method, const std::pair<std::string, std::string>& item, double lo, double hi,
                  bool integer, double* out, std::string* err) {
  const std::string& value = item.second;
  char* end = nullptr;
  const double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(v) || v < lo || v > hi || (integer && v != std::floor(v))) {
    std::ostringstream why;
    why << method << ": " << item.first << "=" << value << ": expected " << (integer ? "a whole number" : "a number")
        << " in [" << lo << ", " << hi << "]";
    *err = why.str();
    return false;
  }
  *out = v;
  return true;
}

}  // namespace emo
