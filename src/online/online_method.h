// online_method.h — a running online method (Zeus's power-limit optimizer, GEEPAFS, GPOEO): a
// controller that can also say what it found, for the terminal and for the measurement JSON.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "apply/controller.h"

namespace emo {

class OnlineMethod : public Controller {
 public:
  // Appends lines for the terminal and sets the findings (an object) for the measurement JSON,
  // which stores them under the method's name.
  virtual void Report(std::vector<std::string>* lines, nlohmann::ordered_json* findings) const = 0;
};

}  // namespace emo
