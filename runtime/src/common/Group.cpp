//===- Group.cpp - Groups of grid axes
//--------------------------------------===//
//
// Part of the GradComm project.
//
// A group is the set of ranks a collective runs among. By default it is
// every rank of the job; gradcomm_group_from_grid makes the group of the
// ranks that share this rank's coordinates on every grid axis outside a
// set of axes (the `shard` dialect's process groups: Transport::split with
// the coordinates outside the axes as the color). gradcomm_group_use makes
// one the active group: every collective communicates in it until the next
// use. The context keeps the active group's communicator, rank, size and
// agreement sequence in its `comm`, `rank`, `size` and `sequence`, so the
// operations need not know about groups at all.
//
//===----------------------------------------------------------------------===//

#include "Backend.h"
#include "gradcomm/runtime_memref.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

using namespace gradcomm;

void gradcomm::activateGroup(gradcomm_group_s *group) {
  Context &ctx = context();
  gradcomm_group_s &from = ctx.active ? *ctx.active : ctx.world;
  from.sequence = ctx.sequence;
  gradcomm_group_s &to = group ? *group : ctx.world;
  ctx.transport = to.transport.get();
  ctx.rank = to.rank;
  ctx.size = to.size;
  ctx.sequence = to.sequence;
  ctx.active = group;
  backend().useGroup(to.backendGroup);
}

gradcomm_status gradcomm::splitBackendGroup(const Call &call,
                                            gradcomm_group_s &group) {
  // Collective in every rank's communicator: a rank whose split failed
  // makes every rank fail with its message, and none keeps a half-made
  // group.
  gradcomm_status local =
      backend().splitGroup(call, group.color, group.key, &group.backendGroup);
  gradcomm_status agreed = agreeOnStatus(call, local);
  if (agreed != GRADCOMM_OK) {
    backend().freeGroup(group.backendGroup);
    group.backendGroup = nullptr;
  }
  return agreed;
}

gradcomm_status gradcomm::mapNodes(const Call &call) {
  Context &ctx = context();
  gradcomm_group_s &group = ctx.active ? *ctx.active : ctx.world;
  if (!group.sameNode.empty())
    return GRADCOMM_OK;
  // A node is named by its lowest rank in the group.
  std::unique_ptr<Transport> node;
  GRADCOMM_RETURN_IF_ERROR(call.transport(
      *group.transport, group.transport->splitByNode(&node), "node split"));
  // Started and waited for under the watchdog, as every collective.
  int32_t leader = group.rank;
  Transfer transfer;
  GRADCOMM_RETURN_IF_ERROR(
      call.transport(*node,
                     node->startAllReduce(&leader, 1, Element::Int32,
                                          Reduction::Min, transfer),
                     "all-reduce (node map)"));
  GRADCOMM_RETURN_IF_ERROR(
      waitYielding(call, *node, transfer, "all-reduce (node map)"));
  std::vector<int32_t> leaders(group.size);
  GRADCOMM_RETURN_IF_ERROR(allGather(call, &leader, 1, Element::Int32,
                                     leaders.data(), "all-gather (node map)"));
  group.sameNode.resize(group.size);
  for (int r = 0; r < group.size; ++r)
    group.sameNode[r] = leaders[r] == leader;
  return GRADCOMM_OK;
}

bool gradcomm::sharesNode(int rank) {
  const Context &ctx = context();
  const gradcomm_group_s &group = ctx.active ? *ctx.active : ctx.world;
  return rank >= 0 && rank < static_cast<int>(group.sameNode.size()) &&
         group.sameNode[rank] != 0;
}

std::string gradcomm::groupLabel(const gradcomm_group_s *group) {
  return group ? group->label : std::string("every rank");
}

void gradcomm::releaseGroups() {
  Context &ctx = context();
  // Every rank frees its groups in spec order; each free is collective in
  // its own group only, so the orders cannot cross. (Every rank's group is
  // the context's `world`, never kept here: each kept group owns its
  // communicator.)
  for (auto &[spec, group] : ctx.groups) {
    backend().freeGroup(group->backendGroup);
    group->transport.reset();
  }
  ctx.groups.clear();
}

namespace {

constexpr int32_t kMaxGridDims = 8;

template <typename Number>
std::string joined(const std::vector<Number> &numbers, const char *separator) {
  std::string text;
  for (size_t i = 0; i < numbers.size(); ++i)
    text += (i ? separator : "") + std::to_string(numbers[i]);
  return text;
}

/// A grid and the axes a group spans, validated: shape entries >= 1 whose
/// product is the job's size, axes distinct, in range, sorted.
struct GridAxes {
  std::vector<int64_t> shape;
  std::vector<int32_t> axes;

  /// "2x2:0" (axes sorted): one group per distinct text.
  std::string spec() const {
    return joined(shape, "x") + ":" + joined(axes, ",");
  }

  std::string label() const {
    return "the group over axes [" + joined(axes, ", ") + "] of grid " +
           joined(shape, "x");
  }

  bool spans(int32_t axis) const {
    return std::binary_search(axes.begin(), axes.end(), axis);
  }

  /// Every axis with more than one process is in the group.
  bool isEveryRank() const {
    for (size_t d = 0; d < shape.size(); ++d)
      if (shape[d] != 1 && !spans(static_cast<int32_t>(d)))
        return false;
    return true;
  }
};

gradcomm_status validateGrid(const Call &call, const int64_t *shape,
                             int32_t dims, const int32_t *axes,
                             int32_t axisCount, GridAxes &grid) {
  if (dims < 1 || dims > kMaxGridDims)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "a grid has 1 to " + std::to_string(kMaxGridDims) +
                         " axes, got " + std::to_string(dims));
  GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "shape", shape));
  if (axisCount < 0 || axisCount > dims)
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "axis_count must be in [0, " + std::to_string(dims) +
                         "], got " + std::to_string(axisCount));
  if (axisCount > 0)
    GRADCOMM_RETURN_IF_ERROR(requirePointer(call, "axes", axes));
  int64_t processes = 1;
  for (int32_t d = 0; d < dims; ++d) {
    if (shape[d] < 1 || shape[d] > (int64_t{1} << 31))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "grid axis " + std::to_string(d) + " has size " +
                           std::to_string(shape[d]) + " (1 to 2^31)");
    processes *= shape[d];
    if (processes > (int64_t{1} << 31))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "the grid has more than 2^31 processes");
    grid.shape.push_back(shape[d]);
  }
  for (int32_t i = 0; i < axisCount; ++i) {
    if (axes[i] < 0 || axes[i] >= dims)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "axis " + std::to_string(axes[i]) +
                           " is not an axis of a " + std::to_string(dims) +
                           "-axis grid");
    grid.axes.push_back(axes[i]);
  }
  std::sort(grid.axes.begin(), grid.axes.end());
  if (std::adjacent_find(grid.axes.begin(), grid.axes.end()) != grid.axes.end())
    return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                     "axis " +
                         std::to_string(*std::adjacent_find(grid.axes.begin(),
                                                            grid.axes.end())) +
                         " is named twice");
  const Context &ctx = context();
  if (processes != ctx.world.size)
    return call.fail(GRADCOMM_ERR_MISMATCH,
                     "grid " + joined(grid.shape, "x") + " has " +
                         std::to_string(processes) +
                         " processes but the job has " +
                         std::to_string(ctx.world.size) +
                         " ranks; launch that many or use another grid");
  return GRADCOMM_OK;
}

/// The agreement on a new group: the same grid and axes on every rank.
/// Group creation is rare and the split blocks, so the ranks always
/// agree first, whatever the consistency check's setting.
gradcomm_status agreeOnGrid(const Call &call, const GridAxes &grid,
                            gradcomm_status local) {
  // FNV-1a of the spec text: equal texts, equal grids.
  const std::string spec = grid.spec();
  const uint64_t hash = fnv1a(spec.data(), spec.size());
  // The check runs even when the trainer switched it off for its
  // collectives.
  Context &ctx = context();
  const bool checking = ctx.consistencyCheck;
  ctx.consistencyCheck = true;
  gradcomm_status agreed = checkConsistency(
      call, {{"the grid and axes", static_cast<int64_t>(hash >> 1)}}, false,
      local);
  ctx.consistencyCheck = checking;
  return agreed;
}

/// This rank's group of `grid`'s axes: split the job by the coordinates
/// outside the axes; order the members by their coordinates on the axes.
gradcomm_status splitGroup(const Call &call, const GridAxes &grid,
                           gradcomm_group_s &group) {
  const Context &ctx = context();
  std::vector<int64_t> coordinate(grid.shape.size());
  int64_t rest = ctx.world.rank;
  for (size_t d = grid.shape.size(); d-- > 0;) {
    coordinate[d] = rest % grid.shape[d];
    rest /= grid.shape[d];
  }
  int64_t color = 0, key = 0;
  for (size_t d = 0; d < grid.shape.size(); ++d) {
    int64_t &index = grid.spans(static_cast<int32_t>(d)) ? key : color;
    index = index * grid.shape[d] + coordinate[d];
  }
  GRADCOMM_RETURN_IF_ERROR(call.transport(
      *ctx.world.transport,
      ctx.world.transport->split(static_cast<int>(color), static_cast<int>(key),
                                 &group.transport),
      "split"));
  group.rank = group.transport->rank();
  group.size = group.transport->size();
  group.label = grid.label();
  group.color = static_cast<int>(color);
  group.key = static_cast<int>(key);
  return splitBackendGroup(call, group);
}

/// Parses "2x2:0,1" (shape, then the axes; "2x2:" spans no axis).
bool parseSpec(const std::string &text, std::vector<int64_t> &shape,
               std::vector<int32_t> &axes) {
  size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0)
    return false;
  auto numbers = [](const std::string &part, char separator, auto &out) {
    if (part.empty())
      return true;
    size_t begin = 0;
    while (true) {
      size_t end = part.find(separator, begin);
      std::string number = part.substr(begin, end - begin);
      if (number.empty() || number.size() > 12 ||
          number.find_first_not_of("0123456789") != std::string::npos)
        return false;
      out.push_back(std::strtoll(number.c_str(), nullptr, 10));
      if (end == std::string::npos)
        return true;
      begin = end + 1;
    }
  };
  return numbers(text.substr(0, colon), 'x', shape) &&
         numbers(text.substr(colon + 1), ',', axes);
}

bool isKnownGroup(const gradcomm_group_s *group) {
  for (const auto &entry : context().groups)
    if (entry.second.get() == group)
      return true;
  return false;
}

} // namespace

gradcomm_status gradcomm_group_from_grid(const int64_t *shape, int32_t dims,
                                         const int32_t *axes, int32_t axisCount,
                                         gradcomm_group *group) {
  return guarded("group_from_grid", nullptr, [&](const Call &call) {
    if (!group)
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT, "group pointer is null");
    *group = nullptr;
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    Context &ctx = context();
    WorldScope world;
    GridAxes grid;
    gradcomm_status local =
        validateGrid(call, shape, dims, axes, axisCount, grid);
    if (local == GRADCOMM_OK && grid.isEveryRank()) {
      *group = &ctx.world;
      return GRADCOMM_OK;
    }
    // Made before: every rank agreed then and holds it now, so no
    // communication (compiled steps ask for their groups on every call).
    auto known =
        local == GRADCOMM_OK ? ctx.groups.find(grid.spec()) : ctx.groups.end();
    if (known != ctx.groups.end()) {
      *group = known->second.get();
      return GRADCOMM_OK;
    }
    GRADCOMM_RETURN_IF_ERROR(agreeOnGrid(call, grid, local));
    auto made = std::make_unique<gradcomm_group_s>();
    // On failure `made` goes, and its transport with it.
    GRADCOMM_RETURN_IF_ERROR(splitGroup(call, grid, *made));
    *group = made.get();
    ctx.groups.emplace(grid.spec(), std::move(made));
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_group_use(gradcomm_group group) {
  return guarded("group_use", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    Context &ctx = context();
    if (group == &ctx.world)
      group = nullptr;
    if (group && !isKnownGroup(group))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "unknown group handle (made before gradcomm_finalize, "
                       "or not made by gradcomm_group_from_grid)");
    activateGroup(group);
    return GRADCOMM_OK;
  });
}

gradcomm_status gradcomm_group_rank(gradcomm_group group, int *rank,
                                    int *size) {
  return guarded("group_rank", nullptr, [&](const Call &call) {
    GRADCOMM_RETURN_IF_ERROR(call.ensureInitialized());
    const Context &ctx = context();
    const gradcomm_group_s *known = group ? group : &ctx.world;
    if (known != &ctx.world && !isKnownGroup(known))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "unknown group handle (made before gradcomm_finalize, "
                       "or not made by gradcomm_group_from_grid)");
    if (rank)
      *rank = known->rank;
    if (size)
      *size = known->size;
    return GRADCOMM_OK;
  });
}

int32_t gradcomm_rt_use_group(const char *spec) {
  return guarded("use_group", spec, [&](const Call &call) {
    // Every rank of a failed step skips the same calls; the way back to
    // every rank always runs, so the next step starts there.
    const gradcomm_status failed = context().pendingStepStatus;
    if (!spec || !*spec)
      return gradcomm_group_use(nullptr) == GRADCOMM_OK ? failed
                                                        : GRADCOMM_ERR_INTERNAL;
    if (failed != GRADCOMM_OK)
      return failed;
    std::vector<int64_t> shape;
    std::vector<int32_t> axes;
    if (!parseSpec(spec, shape, axes))
      return call.fail(GRADCOMM_ERR_INVALID_ARGUMENT,
                       "a group is SHAPE:AXES, e.g. '2x2:0' (axis 0 of a 2x2 "
                       "grid)");
    gradcomm_group group = nullptr;
    GRADCOMM_RETURN_IF_ERROR(gradcomm_group_from_grid(
        shape.data(), static_cast<int32_t>(shape.size()), axes.data(),
        static_cast<int32_t>(axes.size()), &group));
    return gradcomm_group_use(group);
  });
}
