// The loss account's verdicts on the report's steps (analysis/src/loss_account.cpp).
// Its split of a step's seconds is tested end to end on run files in counts_test.cpp.
#include "rtrace/analysis/loss_account.hpp"

#include <gtest/gtest.h>

using namespace rtrace::analysis;

namespace {

StepAccount account_with_headline(const std::string& cause, double seconds, double lost) {
  StepAccount acc;
  acc.t1 = 2 * lost;
  acc.t2 = 2 * lost;
  acc.lost_s = lost;
  acc.gross_lost_s = lost;
  CauseSeconds c;
  c.cause = cause;
  c.seconds = seconds;
  c.share = seconds / lost;
  c.functions = {"work_loop"};
  acc.causes.push_back(c);
  acc.headline_index = 0;
  acc.headline = c.label();
  return acc;
}

AppStep loss_step(std::vector<std::string> causes) {
  AppStep st;
  st.diagnosis = "loss";
  for (const auto& c : causes) st.causes.push_back(StepCause{c, 1.5, "evidence of " + c});
  st.cause = st.causes.front().cause;
  st.explanation = "POP factors";
  return st;
}

}  // namespace

TEST(LossAccount, TheHeadlineLeadsThePopStepWithItsSeconds) {
  AppStep st = loss_step({"mpi", "imbalance"});
  apply_account(st, account_with_headline("computation-scaling", 0.7, 1.2));
  ASSERT_FALSE(st.causes.empty());
  EXPECT_EQ(st.cause, "computation-scaling");
  EXPECT_EQ(st.causes.front().cause, "computation-scaling");
  EXPECT_NE(st.causes.front().evidence.find("explains 0.7 s of the 1.2 s lost"), std::string::npos);
  EXPECT_EQ(st.causes.size(), 3u);  // the POP causes stay, after it
}

// A POP cause that names the same seconds more precisely leads: threads
// blocked on a lock are the off-CPU time the samples cannot see, wherever
// the POP list had it (the lock known answer read computation-scaling first).
TEST(LossAccount, APreciserPopCauseLeadsInsteadOfTheHeadline) {
  AppStep st = loss_step({"computation-scaling", "lock-wait"});
  apply_account(st, account_with_headline("off-cpu", 0.25, 0.28));
  EXPECT_EQ(st.cause, "lock-wait");
  ASSERT_EQ(st.causes.size(), 2u);
  EXPECT_EQ(st.causes[0].cause, "lock-wait");
  EXPECT_EQ(st.causes[1].cause, "computation-scaling");
  AppStep unused = loss_step({"threads-unused"});
  apply_account(unused, account_with_headline("serial-fraction", 0.2, 0.26));
  EXPECT_EQ(unused.cause, "threads-unused");
}

TEST(LossAccount, NoHeadlineLeavesThePopStepAndTakesTheCountedVerdict) {
  StepAccount acc = account_with_headline("cache-capacity", 0.05, 1.0);
  acc.headline_index = -1;
  acc.headline.clear();
  acc.why_no_headline = "no cause explains 25% of the loss";
  AppStep st = loss_step({"imbalance"});
  apply_account(st, acc);
  EXPECT_EQ(st.cause, "imbalance");
  StepDiagnosis d;
  d.diagnosis = "cache-capacity";
  d.cache = "L3";
  apply_account(d, acc);
  EXPECT_EQ(d.diagnosis, "other");
  EXPECT_TRUE(d.cache.empty());
  EXPECT_NE(d.explanation.find("names no headline"), std::string::npos);
}
