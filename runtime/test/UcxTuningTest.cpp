//===- UcxTuningTest.cpp - UCX's eager protocol where only TCP joins nodes ===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "UcxTuning.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

using namespace gradcomm;

TEST(UcxTuning, TcpAndSameNodeTransportsJoinNodesByTcpOnly) {
  EXPECT_TRUE(ucxJoinsNodesByTcpOnly("tcp", true));
  EXPECT_TRUE(ucxJoinsNodesByTcpOnly("tcp,self", true));
  EXPECT_TRUE(ucxJoinsNodesByTcpOnly("sm,self,tcp,cma", true));
}

TEST(UcxTuning, RdmaOrGpuTransportsKeepUcxsChoice) {
  EXPECT_FALSE(ucxJoinsNodesByTcpOnly("rc,tcp", false));
  EXPECT_FALSE(ucxJoinsNodesByTcpOnly("tcp,self,cuda_copy", false));
  EXPECT_FALSE(ucxJoinsNodesByTcpOnly("dc_x", false));
}

TEST(UcxTuning, AutomaticSelectionDependsOnRdmaDevices) {
  for (const char *tls :
       {static_cast<const char *>(nullptr), "", "all", "^rc"}) {
    EXPECT_TRUE(ucxJoinsNodesByTcpOnly(tls, false)) << (tls ? tls : "unset");
    EXPECT_FALSE(ucxJoinsNodesByTcpOnly(tls, true)) << (tls ? tls : "unset");
  }
}

TEST(UcxTuning, SetsEagerMessagesOnlyWhenTheUserDidNot) {
  setenv("UCX_TLS", "tcp,self", 1);
  unsetenv("UCX_RNDV_THRESH");
  preferEagerUcxOverTcp();
  ASSERT_NE(std::getenv("UCX_RNDV_THRESH"), nullptr);
  EXPECT_EQ(std::string(std::getenv("UCX_RNDV_THRESH")), "inf");

  setenv("UCX_RNDV_THRESH", "auto", 1);
  preferEagerUcxOverTcp();
  EXPECT_EQ(std::string(std::getenv("UCX_RNDV_THRESH")), "auto");

  setenv("UCX_TLS", "rc,self", 1);
  unsetenv("UCX_RNDV_THRESH");
  preferEagerUcxOverTcp();
  EXPECT_EQ(std::getenv("UCX_RNDV_THRESH"), nullptr);
  unsetenv("UCX_TLS");
}
