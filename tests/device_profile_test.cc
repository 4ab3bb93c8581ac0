// device_profile_test.cc — device profiles: JSON round trip, and the checks and parse errors that
// name the file and the field.
#include "model/device_profile.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "model_fixtures.h"

namespace emo {
namespace {

TEST(DeviceProfile, SyntheticProfilePassesChecks) {
  DeviceProfile p = test::SyntheticProfile();
  std::string err;
  EXPECT_TRUE(CheckProfile(p, &err)) << err;
  EXPECT_EQ(p.ClockIndex(1410), 7);
  EXPECT_EQ(p.ClockIndex(1000), -1);
  EXPECT_STREQ(MicrobenchName(kBenchDramRead), "dram_read");
  EXPECT_STREQ(MicrobenchName(kBenchIdle), "idle");
}

TEST(DeviceProfile, JsonRoundTripIsExact) {
  DeviceProfile p = test::SyntheticProfile();
  p.bench[kBenchFp64].time_s[3] = 0.1 + 0.2;  // a double that needs all 17 digits
  p.bench[kBenchHmma].throttled_mhz.assign(p.clocks_mhz.size(), 0);
  p.bench[kBenchHmma].throttled_mhz.back() = 1350;  // held at 1350 MHz when locked at the top clock
  for (int f : p.clocks_mhz) p.kernel_floor_s.push_back(1e-6 + 420e-6 / f);
  for (int f : p.clocks_mhz) p.collective_time_ratio.push_back(std::max(1.0, 705.0 / f));
  std::string err;
  DeviceProfile q;
  ASSERT_TRUE(ParseProfile("mem", ProfileJson(p), &q, &err)) << err;
  EXPECT_EQ(p, q);

  const std::string path = (std::filesystem::temp_directory_path() / "emo_device_profile_test.json").string();
  ASSERT_TRUE(SaveProfile(path, p, &err)) << err;
  DeviceProfile r;
  ASSERT_TRUE(LoadProfile(path, &r, &err)) << err;
  EXPECT_EQ(p, r);
  std::remove(path.c_str());
}

// Parses the synthetic profile's JSON after `edit`, expecting failure with `needle` in the error.
void ExpectParseError(const std::function<void(nlohmann::json&)>& edit, const std::string& needle) {
  nlohmann::json j = nlohmann::json::parse(ProfileJson(test::SyntheticProfile()));
  edit(j);
  DeviceProfile out;
  std::string err;
  EXPECT_FALSE(ParseProfile("prof.json", j.dump(), &out, &err)) << needle;
  EXPECT_NE(err.find("prof.json: "), std::string::npos) << err;
  EXPECT_NE(err.find(needle), std::string::npos) << err;
}

TEST(DeviceProfile, ParseErrorsNameTheField) {
  ExpectParseError([](nlohmann::json& j) { j.erase("device"); }, "field device");
  ExpectParseError([](nlohmann::json& j) { j["clocks_mhz"] = "fast"; }, "field clocks_mhz");
  ExpectParseError([](nlohmann::json& j) { j["clocks_mhz"][2] = 1.5; }, "field clocks_mhz[2]");
  ExpectParseError([](nlohmann::json& j) { j["clocks_mhz"][2] = 100; }, "field clocks_mhz[2]: not ascending");
  ExpectParseError([](nlohmann::json& j) { j["default_mhz"] = 1000; }, "field default_mhz");
  ExpectParseError([](nlohmann::json& j) { j["provenance"]["date"] = 2025; }, "field provenance.date");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"].erase("hmma"); }, "field benchmarks.hmma: missing");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["tma"] = j["benchmarks"]["l2"]; },
                   "field benchmarks.tma: unknown");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["tm\na"] = j["benchmarks"]["l2"]; },
                   R"(field benchmarks."tm\na": unknown)");  // a key with a newline, named on one line
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["l1"]["metrics"].erase("l2_bytes"); },
                   "field benchmarks.l1.metrics.l2_bytes");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["l1"]["metrics"]["inst_alu"] = -1; },
                   "field benchmarks.l1.metrics.inst_alu");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["fp64"]["time_s"].erase(0); },
                   "field benchmarks.fp64.time_s: 7 values for 8 clocks");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["sfu"]["energy_j"][5] = 0; },
                   "field benchmarks.sfu.energy_j[5]");
  ExpectParseError([](nlohmann::json& j) { j["benchmarks"]["sfu"]["time_s"][1] = "x"; },
                   "field benchmarks.sfu.time_s[1]");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["benchmarks"]["hmma"]["throttled_mhz"] = {0, 0, 1200};
      },
      "field benchmarks.hmma.throttled_mhz: 3 values for 8 clocks");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["benchmarks"]["hmma"]["throttled_mhz"] = std::vector<double>(8, 0);
        j["benchmarks"]["hmma"]["throttled_mhz"][7] = 1410;
      },
      "field benchmarks.hmma.throttled_mhz[7]: expected 0 or a clock below 1410 MHz");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["kernel_floor_s"] = {3e-6, 2e-6};
      },
      "field kernel_floor_s: 2 values for 8 clocks");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["kernel_floor_s"] = std::vector<double>(8, 2e-6);
        j["kernel_floor_s"][4] = -1e-6;
      },
      "field kernel_floor_s[4]: not a finite non-negative number");
  ExpectParseError([](nlohmann::json& j) { j["kernel_floor_s"] = "2us"; }, "field kernel_floor_s: expected an array");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["collective_time_ratio"] = {2.0, 1.0};
      },
      "field collective_time_ratio: 2 values for 8 clocks");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["collective_time_ratio"] = std::vector<double>(8, 1.0);
        j["collective_time_ratio"][3] = 0;
      },
      "field collective_time_ratio[3]: not a finite positive number");
  ExpectParseError(
      [](nlohmann::json& j) {
        j["collective_time_ratio"] = std::vector<double>(8, 1.0);
        j["collective_time_ratio"][0] = "slow";
      },
      "field collective_time_ratio[0]: expected a number");

  // CheckProfile alone, on a profile built in code: a negative or non-finite ratio is refused too.
  DeviceProfile bad = test::SyntheticProfile();
  bad.collective_time_ratio.assign(bad.clocks_mhz.size(), 1.0);
  bad.collective_time_ratio[1] = -1.2;
  std::string why;
  EXPECT_FALSE(CheckProfile(bad, &why));
  EXPECT_NE(why.find("field collective_time_ratio[1]"), std::string::npos) << why;
  bad.collective_time_ratio[1] = std::nan("");
  EXPECT_FALSE(CheckProfile(bad, &why));
  bad.collective_time_ratio.clear();  // not measured: allowed
  EXPECT_TRUE(CheckProfile(bad, &why)) << why;

  DeviceProfile out;
  std::string err;
  EXPECT_FALSE(ParseProfile("prof.json", "{\"device\": ", &out, &err));
  EXPECT_EQ(err, "prof.json: not JSON");
  EXPECT_FALSE(LoadProfile("/nonexistent/prof.json", &out, &err));
  EXPECT_EQ(err, "/nonexistent/prof.json: cannot open");
}

}  // namespace
}  // namespace emo
