// gbt_model.cc — GbtModel over XGBoost's C API (version 1.7, Debian 12's libxgboost-dev).
#include "online/gbt_model.h"

#include <xgboost/c_api.h>

#include <limits>
#include <memory>
#include <utility>

namespace emo {

namespace {

// XGBoost's last error, prefixed with what was being done.
bool XgbFail(const std::string& what, std::string* err) {
  *err = what + ": " + XGBGetLastError();
  return false;
}

struct DMatrixDeleter {
  void operator()(void* m) const { XGDMatrixFree(m); }
};
using DMatrix = std::unique_ptr<void, DMatrixDeleter>;

bool MakeMatrix(const std::vector<float>& x, size_t rows, size_t cols, DMatrix* out, std::string* err) {
  DMatrixHandle m = nullptr;
  if (XGDMatrixCreateFromMat(x.data(), rows, cols, std::numeric_limits<float>::quiet_NaN(), &m) != 0)
    return XgbFail("xgboost: building the feature matrix", err);
  out->reset(m);
  return true;
}

}  // namespace

GbtModel::~GbtModel() { Reset(); }

GbtModel::GbtModel(GbtModel&& o) noexcept
    : booster_(std::exchange(o.booster_, nullptr)), cols_(std::exchange(o.cols_, 0)) {}

GbtModel& GbtModel::operator=(GbtModel&& o) noexcept {
  if (this != &o) {
    Reset();
    booster_ = std::exchange(o.booster_, nullptr);
    cols_ = std::exchange(o.cols_, 0);
  }
  return *this;
}

void GbtModel::Reset() {
  if (booster_) XGBoosterFree(booster_);
  booster_ = nullptr;
  cols_ = 0;
}

bool GbtModel::Train(const std::vector<float>& x, size_t rows, size_t cols, const std::vector<float>& y,
                     const GbtParams& p, std::string* err) {
  Reset();
  if (rows == 0 || cols == 0 || x.size() != rows * cols || y.size() != rows) {
    *err = "gbt: training data of " + std::to_string(x.size()) + " values and " + std::to_string(y.size()) +
           " labels is not " + std::to_string(rows) + " rows × " + std::to_string(cols) + " features";
    return false;
  }
  DMatrix train;
  if (!MakeMatrix(x, rows, cols, &train, err)) return false;
  if (XGDMatrixSetFloatInfo(train.get(), "label", y.data(), rows) != 0) return XgbFail("xgboost: labels", err);
  DMatrixHandle handles[] = {train.get()};
  BoosterHandle b = nullptr;
  if (XGBoosterCreate(handles, 1, &b) != 0) return XgbFail("xgboost: creating the booster", err);
  booster_ = b;
  const std::pair<const char*, std::string> params[] = {
      {"objective", "reg:squarederror"},
      {"tree_method", "hist"},
      {"max_depth", std::to_string(p.max_depth)},
      {"eta", std::to_string(p.eta)},
      {"subsample", std::to_string(p.subsample)},
      {"min_child_weight", std::to_string(p.min_child_weight)},
      {"nthread", std::to_string(p.threads)},
      {"seed", std::to_string(p.seed)},
      {"verbosity", "0"},
  };
  for (const auto& [name, value] : params)
    if (XGBoosterSetParam(b, name, value.c_str()) != 0) {
      Reset();
      return XgbFail(std::string("xgboost: parameter ") + name, err);
    }
  for (int i = 0; i < p.rounds; ++i)
    if (XGBoosterUpdateOneIter(b, i, train.get()) != 0) {
      Reset();
      return XgbFail("xgboost: boosting round " + std::to_string(i), err);
    }
  cols_ = cols;
  return true;
}

bool GbtModel::Predict(const std::vector<float>& x, size_t rows, std::vector<float>* out, std::string* err) const {
  if (!booster_) {
    *err = "gbt: the model is empty (neither trained nor loaded)";
    return false;
  }
  if (x.size() != rows * cols_) {
    *err = "gbt: " + std::to_string(x.size()) + " values are not " + std::to_string(rows) + " rows of the model's " +
           std::to_string(cols_) + " features";
    return false;
  }
  out->clear();
  if (rows == 0) return true;
  DMatrix m;
  if (!MakeMatrix(x, rows, cols_, &m, err)) return false;
  const char* config =
      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, "strict_shape": false})";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* result = nullptr;
  if (XGBoosterPredictFromDMatrix(booster_, m.get(), config, &shape, &dim, &result) != 0)
    return XgbFail("xgboost: predicting", err);
  out->assign(result, result + rows);
  return true;
}

bool GbtModel::Save(const std::string& path, std::string* err) const {
  if (!booster_) {
    *err = "gbt: " + path + ": the model is empty";
    return false;
  }
  if (XGBoosterSaveModel(booster_, path.c_str()) != 0) return XgbFail("xgboost: saving " + path, err);
  return true;
}

bool GbtModel::Load(const std::string& path, std::string* err) {
  Reset();
  BoosterHandle b = nullptr;
  if (XGBoosterCreate(nullptr, 0, &b) != 0) return XgbFail("xgboost: creating the booster", err);
  booster_ = b;
  if (XGBoosterLoadModel(b, path.c_str()) != 0) {
    Reset();
    return XgbFail("xgboost: loading " + path, err);
  }
  bst_ulong features = 0;
  if (XGBoosterGetNumFeature(b, &features) != 0) {
    Reset();
    return XgbFail("xgboost: " + path, err);
  }
  XGBoosterSetParam(b, "nthread", "1");
  cols_ = features;
  return true;
}

}  // namespace emo
