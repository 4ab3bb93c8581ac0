// gbt_model_test.cc — the XGBoost wrapper on a synthetic smooth function: it learns it, predicts
// held-out points, and a saved and reloaded model predicts exactly the same; bad uses fail with a
// message.
#include "online/gbt_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include <unistd.h>

namespace emo {
namespace {

// y = 1 + 0.5·sin(3·x0) + x1² − 0.3·x0·x2 on [0, 1]³: smooth, nonlinear, with an interaction.
float Truth(const float* x) { return 1.0f + 0.5f * std::sin(3 * x[0]) + x[1] * x[1] - 0.3f * x[0] * x[2]; }

void Make(size_t rows, unsigned seed, std::vector<float>* x, std::vector<float>* y) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  x->clear();
  y->clear();
  for (size_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 3; ++c) x->push_back(u(rng));
    y->push_back(Truth(&(*x)[r * 3]));
  }
}

TEST(GbtModel, LearnsASmoothFunctionAndSurvivesSaveAndLoad) {
  std::vector<float> x, y, tx, ty;
  Make(2000, 1, &x, &y);
  Make(300, 2, &tx, &ty);  // held out
  GbtModel m;
  std::string err;
  ASSERT_TRUE(m.Train(x, 2000, 3, y, GbtParams{}, &err)) << err;
  EXPECT_EQ(m.cols(), 3u);
  std::vector<float> pred;
  ASSERT_TRUE(m.Predict(tx, 300, &pred, &err)) << err;
  ASSERT_EQ(pred.size(), 300u);
  double ape = 0;
  for (size_t i = 0; i < 300; ++i) ape += std::abs(pred[i] - ty[i]) / ty[i];
  const double mape = 100 * ape / 300;
  std::printf("gbt: held-out MAPE %.2f %% on y = 1 + 0.5·sin(3·x0) + x1² − 0.3·x0·x2\n", mape);
  EXPECT_LT(mape, 3.0);

  const std::string path =
      (std::filesystem::temp_directory_path() / ("emo_gbt_test_" + std::to_string(::getpid()) + ".json")).string();
  ASSERT_TRUE(m.Save(path, &err)) << err;
  GbtModel loaded;
  ASSERT_TRUE(loaded.Load(path, &err)) << err;
  std::filesystem::remove(path);
  EXPECT_EQ(loaded.cols(), 3u);
  std::vector<float> again;
  ASSERT_TRUE(loaded.Predict(tx, 300, &again, &err)) << err;
  EXPECT_EQ(again, pred);

  // Moving keeps the model; the moved-from one is empty.
  GbtModel moved = std::move(loaded);
  EXPECT_FALSE(moved.empty());
  EXPECT_TRUE(loaded.empty());  // NOLINT(bugprone-use-after-move): the documented state
}

TEST(GbtModel, TrainingIsDeterministic) {
  std::vector<float> x, y;
  Make(500, 3, &x, &y);
  GbtModel a, b;
  std::string err;
  GbtParams p;
  p.rounds = 30;
  p.subsample = 0.8;
  ASSERT_TRUE(a.Train(x, 500, 3, y, p, &err)) << err;
  ASSERT_TRUE(b.Train(x, 500, 3, y, p, &err)) << err;
  std::vector<float> pa, pb;
  ASSERT_TRUE(a.Predict(x, 500, &pa, &err));
  ASSERT_TRUE(b.Predict(x, 500, &pb, &err));
  EXPECT_EQ(pa, pb);
}

TEST(GbtModel, BadUsesFailWithAMessage) {
  GbtModel m;
  std::string err;
  std::vector<float> out;
  EXPECT_FALSE(m.Predict({1, 2, 3}, 1, &out, &err));
  EXPECT_EQ(err, "gbt: the model is empty (neither trained nor loaded)");
  EXPECT_FALSE(m.Train({1, 2, 3}, 2, 3, {1, 2}, GbtParams{}, &err));
  EXPECT_EQ(err, "gbt: training data of 3 values and 2 labels is not 2 rows × 3 features");
  ASSERT_TRUE(m.Train({1, 2, 3, 4, 5, 6}, 2, 3, {1, 2}, GbtParams{}, &err)) << err;
  EXPECT_FALSE(m.Predict({1, 2}, 1, &out, &err));
  EXPECT_EQ(err, "gbt: 2 values are not 1 rows of the model's 3 features");
  EXPECT_FALSE(m.Load("/nonexistent/emo/model.json", &err));
  EXPECT_NE(err.find("xgboost: loading /nonexistent/emo/model.json"), std::string::npos) << err;
  EXPECT_TRUE(m.empty());
  EXPECT_FALSE(m.Save("/tmp/x.json", &err));
}

}  // namespace
}  // namespace emo
