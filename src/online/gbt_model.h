// gbt_model.h — a gradient-boosted regression tree ensemble (XGBoost's C API, Debian's
// libxgboost-dev), the model kind GPOEO uses to predict energy and time ratios per clock.
//
// A GbtModel is trained from a flat row-major feature matrix (rows × cols floats) and one label per
// row, predicts one value per row, and is saved to / loaded from a file in XGBoost's own JSON model
// format (the format is XGBoost's: a file ending ".json" is written as JSON, anything else as
// XGBoost's binary format). XGBoost's types stay in gbt_model.cc, so users of this header build
// without the XGBoost headers.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace emo {

struct GbtParams {
  int rounds = 200;        // boosting rounds (trees)
  int max_depth = 4;       // depth of each tree
  double eta = 0.1;        // learning rate
  double subsample = 1.0;  // share of rows each tree sees
  double min_child_weight = 1;
  int threads = 1;  // XGBoost's nthread; 1 keeps training deterministic and off the other cores
  int seed = 0;
};

class GbtModel {
 public:
  GbtModel() = default;
  ~GbtModel();
  GbtModel(const GbtModel&) = delete;
  GbtModel& operator=(const GbtModel&) = delete;
  GbtModel(GbtModel&& o) noexcept;
  GbtModel& operator=(GbtModel&& o) noexcept;

  // Trains a new model on x (rows × cols, row-major) and labels y (rows). False with *err (XGBoost's
  // message) when XGBoost refuses; the model is then empty.
  bool Train(const std::vector<float>& x, size_t rows, size_t cols, const std::vector<float>& y, const GbtParams& p,
             std::string* err);
  // One prediction per row of x (rows × cols(), row-major). False with *err when the model is empty,
  // the width differs from the training width, or XGBoost fails.
  bool Predict(const std::vector<float>& x, size_t rows, std::vector<float>* out, std::string* err) const;
  bool Save(const std::string& path, std::string* err) const;
  bool Load(const std::string& path, std::string* err);

  bool empty() const { return booster_ == nullptr; }
  size_t cols() const { return cols_; }  // features per row; 0 when empty

 private:
  void Reset();
  void* booster_ = nullptr;  // XGBoost's BoosterHandle
  size_t cols_ = 0;
};

}  // namespace emo
