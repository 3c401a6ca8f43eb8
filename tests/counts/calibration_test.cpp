#include "rtrace/counts/calibration.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <unistd.h>

using namespace rtrace::counts;

TEST(CountsCalibration, PredictionScalesEachProcesssCpuTimeByTheMedianSlowdown) {
  Calibration c;
  c.slowdown = {{"int", 3}, {"stream", 28}, {"fp", 16}, {"vec", 46}};
  EXPECT_NEAR(c.typical(), std::sqrt(16.0 * 28.0), 1e-9);   // the median of four
  EXPECT_EQ(c.low(), 3);
  EXPECT_EQ(c.high(), 46);
  EXPECT_EQ(c.summary(), "integer 3x, streaming 28x, cache-resident FP 16x, vectorised FMA 46x");
  // One process, one thread: its wall time.
  CostPrediction p = predict_cost(c, 10, 0, 1, 1, 2);
  EXPECT_NEAR(p.seconds, 10 * c.typical(), 1e-6);
  EXPECT_NEAR(p.factor, c.typical(), 1e-9);
  EXPECT_NE(p.line.find("counting pass: expected about 21x the timed run's 10.0 s = 3.5 min (30 s-7.7 min; "),
            std::string::npos) << p.line;
  // Time off a CPU stretches alike; the tool's start-up comes on top.
  c.startup_s = 1;
  p = predict_cost(c, 10, 4, 1, 1, 2);
  EXPECT_NEAR(p.seconds, 1 + 10 * c.typical(), 1e-6);
  c.startup_s = 0;
  // Two threads busy for 10 s of wall: 20 CPU seconds, run one at a time.
  p = predict_cost(c, 10, 20, 1, 1, 2);
  EXPECT_NEAR(p.factor, 2 * c.typical(), 1e-9);
  // Two ranks of one thread on two cores: each its own 10 s.
  p = predict_cost(c, 10, 20, 2, 2, 2);
  EXPECT_NEAR(p.factor, c.typical(), 1e-9);
  // Four ranks on two cores: they share them.
  p = predict_cost(c, 10, 40, 4, 4, 2);
  EXPECT_NEAR(p.factor, 2 * c.typical(), 1e-9);
  EXPECT_EQ(predict_cost(Calibration{}, 10, 0, 1, 1, 2).seconds, 0);
  // The app's own slowdown from an earlier configuration replaces the median.
  p = predict_cost(c, 10, 20, 1, 1, 2, 8.0);
  EXPECT_NEAR(p.seconds, 8.0 * 20, 1e-6);
  EXPECT_NEAR(p.per_process_s, 20, 1e-9);
  EXPECT_NE(p.line.find("this app's own cost: 8x per process-second"), std::string::npos) << p.line;
  EXPECT_NEAR(predict_cost(Calibration{}, 10, 0, 1, 1, 2, 8.0).seconds, 80, 1e-6);
}

TEST(CountsCalibration, FileRoundTrip) {
  char path[] = "/tmp/counts-calibration-XXXXXX";
  const int fd = mkstemp(path);
  close(fd);
  Calibration c;
  c.slowdown = {{"int", 3.5}, {"stream", 28}};
  write_calibration(path, c);
  const Calibration back = read_calibration(path);
  EXPECT_TRUE(back.ok());
  EXPECT_DOUBLE_EQ(back.slowdown.at("int"), 3.5);
  std::remove(path);
  EXPECT_FALSE(read_calibration(path).ok());
}
