// method_options.h — the "name:key=value,..." form in which the command line names an online
// method and its parameters, e.g. "zeus-power-limit:eta=0.7" or "geepafs:p=0.85".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace emo {

struct MethodOptions {
  std::string name;
  std::vector<std::pair<std::string, std::string>> items;  // key, value, in the order given
};

// Splits a spec; false with *err when an item is not key=value.
bool SplitMethodSpec(const std::string& spec, MethodOptions* out, std::string* err);

// The item's value as a number in [lo, hi] (a whole number when `integer`); false with *err
// naming the method, the item and what was expected.
bool OptionNumber(const std::string& method, const std::pair<std::string, std::string>& item, double lo, double hi,
                  bool integer, double* out, std::string* err);

}  // namespace emo
