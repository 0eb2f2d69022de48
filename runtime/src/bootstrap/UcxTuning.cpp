//===- UcxTuning.cpp - UCX's protocol choice where only TCP joins nodes ---===//
//
// Part of the GradComm project.
//
//===----------------------------------------------------------------------===//

#include "UcxTuning.h"

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <string>

using namespace gradcomm;

namespace {

/// UCX transports that carry nothing between nodes but TCP.
bool isTcpOrSameNode(const std::string &transport) {
  static const char *const kNames[] = {"tcp",  "self", "sm",   "shm",  "posix",
                                       "sysv", "cma",  "knem", "xpmem"};
  for (const char *name : kNames)
    if (transport == name)
      return true;
  return false;
}

bool rdmaDeviceOnThisNode() {
  DIR *directory = opendir("/sys/class/infiniband");
  if (!directory)
    return false;
  bool found = false;
  while (const dirent *entry = readdir(directory))
    if (entry->d_name[0] != '.') {
      found = true;
      break;
    }
  closedir(directory);
  return found;
}

} // namespace

bool gradcomm::ucxJoinsNodesByTcpOnly(const char *tls, bool rdmaDevicePresent) {
  if (!tls || !*tls || std::strcmp(tls, "all") == 0 || tls[0] == '^')
    return !rdmaDevicePresent;
  std::string list(tls);
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos)
      end = list.size();
    const std::string transport = list.substr(begin, end - begin);
    if (!transport.empty() && !isTcpOrSameNode(transport))
      return false;
    begin = end + 1;
  }
  return true;
}

void gradcomm::preferEagerUcxOverTcp() {
  if (std::getenv("UCX_RNDV_THRESH"))
    return;
  if (ucxJoinsNodesByTcpOnly(std::getenv("UCX_TLS"), rdmaDeviceOnThisNode()))
    setenv("UCX_RNDV_THRESH", "inf", /*overwrite=*/0);
}
