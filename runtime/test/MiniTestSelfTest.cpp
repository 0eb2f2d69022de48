//===- MiniTestSelfTest.cpp - MiniTest counts and stops as it should ------===//
//
// Part of the GradComm project.
//
// The GPU tests run only where a GPU is lent, so the harness they report
// through is checked here: three tests pass, three fail on purpose, an
// ASSERT ends its test and an EXPECT does not, every check evaluates its
// arguments once. Exit 0 only when all of that held.
//
//===----------------------------------------------------------------------===//

#include "MiniTest.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

int evaluations = 0;
bool afterAssert = false;
bool afterExpect = false;

int counted(int value) {
  ++evaluations;
  return value;
}

TEST(Passing, Equalities) {
  EXPECT_EQ(counted(2), 2);
  EXPECT_NE(1, 2);
  EXPECT_TRUE(counted(1) == 1);
  EXPECT_FALSE(false);
  ASSERT_EQ(std::vector<int>({1, 2}), std::vector<int>({1, 2}));
}

TEST(Passing, DanglingElseBindsToTheCaller) {
  bool tookElse = false;
  if (false)
    EXPECT_TRUE(true);
  else
    tookElse = true;
  EXPECT_TRUE(tookElse);
}

TEST(Passing, AssertThatHoldsContinues) {
  ASSERT_TRUE(true);
  EXPECT_EQ(1, 1);
}

TEST(Failing, VectorsDiffer) {
  EXPECT_EQ(std::vector<float>({1, 2, 3}), std::vector<float>({1, 5, 3}))
      << "expected to fail";
}

TEST(Failing, AssertStopsTheTest) {
  ASSERT_EQ(1, 2) << "expected to fail";
  afterAssert = true;
}

TEST(Failing, ExpectDoesNotStop) {
  EXPECT_TRUE(false) << "expected to fail";
  afterExpect = true;
}

} // namespace

/// Under MINITEST_FILTER=Failing.ExpectDoesNotStop:Passing.Equalities (the
/// ctest runtime.minitest.filter) only those two run.
static int filteredRun() {
  int rc = RUN_ALL_TESTS();
  const minitest::Counts counts = minitest::lastRun();
  bool ok = rc == 1 && counts.passed == 1 && counts.failed == 1 &&
            !afterAssert && afterExpect;
  std::printf("filter self-test: %s (rc %d, %d passed, %d failed)\n",
              ok ? "ok" : "FAILED", rc, counts.passed, counts.failed);
  return ok ? 0 : 1;
}

int main() {
  if (const char *filter = std::getenv("MINITEST_FILTER"); filter && *filter)
    return filteredRun();
  std::printf("(three failures below are expected)\n");
  int rc = RUN_ALL_TESTS();
  const minitest::Counts counts = minitest::lastRun();
  bool ok = rc == 1 && counts.passed == 3 && counts.failed == 3 &&
            !afterAssert && afterExpect && evaluations == 2;
  std::printf("self-test: %s (rc %d, %d passed, %d failed, assert stopped: "
              "%d, expect continued: %d, evaluations %d)\n",
              ok ? "ok" : "FAILED", rc, counts.passed, counts.failed,
              !afterAssert, afterExpect, evaluations);
  return ok ? 0 : 1;
}
