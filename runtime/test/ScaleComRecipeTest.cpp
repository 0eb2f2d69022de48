//===- ScaleComRecipeTest.cpp - The recipe against a C++ reference --------===//
//
// Part of the GradComm project.
//
// gradcomm_scalecom_recipe_f32 against the recipe written from
// ALGORITHMS.md ("Making sparsified training hold on real models") over
// the ScaleCom reference: local clipping, momentum correction (with
// Nesterov) with and without factor masking, dense and ramp warm-ups,
// dense layers.
// Each configuration is also checked to differ from plain ScaleCom, so a
// runtime that ignored the option fails.
//
//===----------------------------------------------------------------------===//

#include "ScaleComReference.h"
#include "TestUtil.h"

#include <cmath>

using namespace gradcomm::test;

namespace {

/// The recipe for n simulated workers.
struct RecipeReference {
  gradcomm_scalecom_options o;
  int64_t count;
  Reference scalecom;
  std::vector<std::vector<float>> velocity;
  uint64_t step = 0;

  RecipeReference(int n, int64_t count, const gradcomm_scalecom_options &o)
      : o(o), count(count), scalecom(n, count, o.k, o.selection, o.chunk_size,
                                     o.beta, GRADCOMM_REDUCE_AVERAGE),
        velocity(n, std::vector<float>(count, 0.0f)) {}

  std::vector<float> run(std::vector<std::vector<float>> grads) {
    const int n = scalecom.n;
    std::vector<std::vector<float>> next = velocity, sent = grads;
    for (int r = 0; r < n; ++r) {
      if (o.clip > 0.0f) {
        double squares = 0.0;
        for (float g : grads[r])
          squares += static_cast<double>(g) * g;
        if (std::sqrt(squares) > o.clip)
          for (float &g : grads[r])
            g *= static_cast<float>(o.clip / std::sqrt(squares));
        sent[r] = grads[r];
      }
      if (o.momentum > 0.0f)
        for (int64_t i = 0; i < count; ++i) {
          next[r][i] = o.momentum * velocity[r][i] + grads[r][i];
          sent[r][i] =
              o.nesterov ? grads[r][i] + o.momentum * next[r][i] : next[r][i];
        }
    }
    const bool warming = step < static_cast<uint64_t>(o.warmup_steps);
    std::vector<float> out(count, 0.0f);
    if (o.dense || (warming && o.warmup == GRADCOMM_WARMUP_DENSE)) {
      for (int64_t i = 0; i < count; ++i) {
        float sum = 0.0f;
        for (int r = 0; r < n; ++r)
          sum += sent[r][i];
        out[i] = sum / static_cast<float>(n);
      }
      velocity = next;
    } else {
      scalecom.k = o.k;
      if (warming) { // r_t = s (R / s)^(t / W), R = count / k
        const double target = static_cast<double>(count) / o.k;
        const double start = std::min<double>(o.warmup_start_ratio, target);
        const double ratio =
            start * std::pow(target / start,
                             static_cast<double>(step) / o.warmup_steps);
        scalecom.k = std::clamp<int64_t>(
            static_cast<int64_t>(std::ceil(count / ratio)), o.k, count);
      }
      scalecom.step = step;
      out = scalecom.run(sent);
      velocity = next;
      if (o.momentum > 0.0f && !o.keep_velocity)
        for (int r = 0; r < n; ++r)
          for (int64_t i = 0; i < count; ++i)
            if (out[i] != 0.0f) // sent (the gradients here are never 0)
              velocity[r][i] = 0.0f;
    }
    ++step;
    return out;
  }
};

/// Plain ScaleCom (beta 1, no warm-up): the cases add one part each.
gradcomm_scalecom_options options(int64_t k) {
  gradcomm_scalecom_options o;
  gradcomm_scalecom_options_init(&o, k);
  o.beta = 1.0f;
  o.warmup_steps = 0;
  return o;
}

struct Case {
  const char *what;
  gradcomm_scalecom_options o;
};

std::vector<Case> cases() {
  std::vector<Case> all;
  auto add = [&](const char *what, auto change) {
    gradcomm_scalecom_options o = options(20);
    change(o);
    all.push_back({what, o});
  };
  add("momentum", [](auto &o) { o.momentum = 0.9f; });
  add("nesterov", [](auto &o) {
    o.momentum = 0.9f;
    o.nesterov = 1;
  });
  add("momentum, velocity kept", [](auto &o) {
    o.momentum = 0.9f;
    o.keep_velocity = 1;
  });
  add("nesterov, velocity kept, ramp warm-up", [](auto &o) {
    o.momentum = 0.9f;
    o.nesterov = 1;
    o.keep_velocity = 1;
    o.warmup_steps = 6;
    o.warmup = GRADCOMM_WARMUP_RAMP;
    o.warmup_start_ratio = 2.0f;
  });
  add("momentum, beta 0.5", [](auto &o) {
    o.momentum = 0.5f;
    o.beta = 0.5f;
  });
  add("dense warm-up", [](auto &o) { o.warmup_steps = 4; });
  add("dense warm-up with momentum", [](auto &o) {
    o.warmup_steps = 3;
    o.momentum = 0.9f;
  });
  add("ramp warm-up", [](auto &o) {
    o.warmup_steps = 6;
    o.warmup = GRADCOMM_WARMUP_RAMP;
    o.warmup_start_ratio = 2.0f;
  });
  add("clip", [](auto &o) { o.clip = 0.5f; });
  add("dense layer with momentum", [](auto &o) {
    o.dense = 1;
    o.momentum = 0.9f;
  });
  return all;
}

TEST(ScaleComRecipe, EveryPartMatchesTheReference) {
  World world;
  const int64_t count = 600;
  int number = 0;
  for (const Case &c : cases()) {
    const std::string name = uniqueName("w" + std::to_string(number));
    const std::string plain = uniqueName("plain" + std::to_string(number++));
    RecipeReference reference(world.size, count, c.o);
    bool differs = false;
    for (uint64_t step = 0; step < 10; ++step) {
      std::vector<std::vector<float>> grads;
      for (int r = 0; r < world.size; ++r)
        grads.push_back(gradient(77, r, step, count));
      std::vector<float> out(count), plainOut(count);
      ASSERT_OK(gradcomm_scalecom_recipe_f32(
          name.c_str(), grads[world.rank].data(), out.data(), count, &c.o,
          GRADCOMM_REDUCE_AVERAGE))
          << c.what;
      ASSERT_OK(gradcomm_scalecom_f32(
          plain.c_str(), grads[world.rank].data(), plainOut.data(), count,
          c.o.k, GRADCOMM_SELECT_EXACT, 0, c.o.beta, GRADCOMM_REDUCE_AVERAGE));
      std::vector<float> expected = reference.run(grads);
      for (int64_t i = 0; i < count; ++i)
        ASSERT_NEAR(out[i], expected[i],
                    1e-5f * (1.0f + std::fabs(expected[i])))
            << c.what << ", step " << step << ", element " << i;
      ASSERT_TRUE(sameOnAllRanks(out)) << c.what;
      differs = differs || out != plainOut;
      if (c.o.momentum > 0.0f)
        ASSERT_EQ(readState(name + ".velocity", count),
                  reference.velocity[world.rank])
            << c.what << ", step " << step;
      if (!c.o.dense && !(step < 4 && c.o.warmup_steps &&
                          c.o.warmup == GRADCOMM_WARMUP_DENSE))
        ASSERT_EQ(readState(name, count), reference.scalecom.memory[world.rank])
            << c.what << ", step " << step;
    }
    EXPECT_TRUE(differs) << c.what << " gave plain ScaleCom's outputs";
    uint64_t step = 0;
    EXPECT_OK(gradcomm_state_step(name.c_str(), &step));
    EXPECT_EQ(step, 10u) << c.what << ": every call counts";
  }
}

TEST(ScaleComRecipe, DefaultsAreTheStudysRecipe) {
  gradcomm_scalecom_options o;
  gradcomm_scalecom_options_init(&o, 7);
  EXPECT_EQ(o.k, 7);
  EXPECT_EQ(o.beta, 0.5f);
  EXPECT_EQ(o.warmup_steps, 100);
  EXPECT_EQ(o.warmup, GRADCOMM_WARMUP_DENSE);
  EXPECT_EQ(o.momentum, 0.0f);
  EXPECT_EQ(o.clip, 0.0f);
  EXPECT_EQ(o.dense, 0);
  EXPECT_EQ(o.keep_velocity, 0);
}

// Sending everything with the velocity kept is momentum SGD on the mean
// gradient: out_t = mu out_{t-1} + mean(g_t). With factor masking the
// velocity restarts at every step and out_t is the mean gradient alone.
TEST(ScaleComRecipe, KeptVelocityAtFullKIsMomentumSgd) {
  World world;
  const int64_t count = 300;
  const float mu = 0.9f;
  for (int32_t keep : {1, 0}) {
    const std::string name = uniqueName("full" + std::to_string(keep));
    gradcomm_scalecom_options o = options(count);
    o.momentum = mu;
    o.keep_velocity = keep;
    std::vector<float> expected(count, 0.0f);
    for (uint64_t step = 0; step < 6; ++step) {
      std::vector<float> out(count);
      const std::vector<float> own = gradient(91, world.rank, step, count);
      ASSERT_OK(gradcomm_scalecom_recipe_f32(name.c_str(), own.data(),
                                             out.data(), count, &o,
                                             GRADCOMM_REDUCE_AVERAGE));
      for (int64_t i = 0; i < count; ++i) {
        float sum = 0.0f;
        for (int r = 0; r < world.size; ++r)
          sum += gradient(91, r, step, count)[i];
        const float mean = sum / static_cast<float>(world.size);
        expected[i] = keep ? mu * expected[i] + mean : mean;
        ASSERT_NEAR(out[i], expected[i], 1e-4f * (1.0f + std::fabs(mean)))
            << "keep_velocity " << keep << ", step " << step << ", element "
            << i;
      }
    }
  }
}

TEST(ScaleComRecipe, WithoutTheRecipeIsPlainScaleCom) {
  World world;
  const int64_t count = 500, k = 25;
  const std::string recipe = uniqueName("recipe"), plain = uniqueName("plain");
  const gradcomm_scalecom_options o = options(k);
  for (uint64_t step = 0; step < 5; ++step) {
    std::vector<float> grad = gradient(5, world.rank, step, count);
    std::vector<float> a(count), b(count);
    ASSERT_OK(gradcomm_scalecom_recipe_f32(recipe.c_str(), grad.data(),
                                           a.data(), count, &o,
                                           GRADCOMM_REDUCE_AVERAGE));
    ASSERT_OK(gradcomm_scalecom_f32(plain.c_str(), grad.data(), b.data(), count,
                                    k, GRADCOMM_SELECT_EXACT, 0, 1.0f,
                                    GRADCOMM_REDUCE_AVERAGE));
    EXPECT_EQ(a, b);
    EXPECT_EQ(readState(recipe, count), readState(plain, count));
  }
}

TEST(ScaleComRecipe, StartedEqualsBlocking) {
  World world;
  const int64_t count = 400;
  int number = 0;
  for (const Case &c : cases()) {
    const std::string blocking = uniqueName("b" + std::to_string(number));
    const std::string started = uniqueName("s" + std::to_string(number++));
    for (uint64_t step = 0; step < 6; ++step) {
      std::vector<float> grad = gradient(8, world.rank, step, count);
      std::vector<float> a(count), b(count);
      ASSERT_OK(gradcomm_scalecom_recipe_f32(blocking.c_str(), grad.data(),
                                             a.data(), count, &c.o,
                                             GRADCOMM_REDUCE_AVERAGE));
      gradcomm_request request = nullptr;
      ASSERT_OK(gradcomm_scalecom_recipe_start_f32(
          started.c_str(), grad.data(), b.data(), count, &c.o,
          GRADCOMM_REDUCE_AVERAGE, &request));
      ASSERT_OK(gradcomm_wait(&request));
      EXPECT_EQ(a, b) << c.what << ", step " << step;
    }
  }
}

TEST(ScaleComRecipe, BadOptionsFailOnEveryRank) {
  World world;
  const int64_t count = 100;
  std::vector<float> grad(count, 1.0f), out(count);
  std::vector<std::pair<const char *, gradcomm_scalecom_options>> bad;
  auto add = [&](const char *what, auto change) {
    gradcomm_scalecom_options o = options(10);
    change(o);
    bad.emplace_back(what, o);
  };
  add("momentum 1", [](auto &o) { o.momentum = 1.0f; });
  add("nesterov without momentum", [](auto &o) { o.nesterov = 1; });
  add("keep_velocity 2", [](auto &o) {
    o.momentum = 0.9f;
    o.keep_velocity = 2;
  });
  add("keep_velocity without momentum", [](auto &o) { o.keep_velocity = 1; });
  add("negative clip", [](auto &o) { o.clip = -1.0f; });
  add("negative warm-up", [](auto &o) { o.warmup_steps = -1; });
  add("ramp with chunks", [](auto &o) {
    o.warmup_steps = 2;
    o.warmup = GRADCOMM_WARMUP_RAMP;
    o.selection = GRADCOMM_SELECT_CHUNK;
    o.chunk_size = 10;
  });
  add("k above count", [](auto &o) { o.k = 101; });
  for (const auto &[what, o] : bad) {
    const std::string name = uniqueName("bad");
    EXPECT_EQ(gradcomm_scalecom_recipe_f32(name.c_str(), grad.data(),
                                           out.data(), count, &o,
                                           GRADCOMM_REDUCE_AVERAGE),
              GRADCOMM_ERR_INVALID_ARGUMENT)
        << what;
    EXPECT_TRUE(contains(gradcomm_last_error(), "scalecom_recipe_f32"))
        << gradcomm_last_error();
  }
  EXPECT_EQ(gradcomm_scalecom_recipe_f32(uniqueName("null").c_str(),
                                         grad.data(), out.data(), count,
                                         nullptr, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_INVALID_ARGUMENT);
}

TEST(ScaleComRecipe, OptionsThatDifferAcrossRanksAreAMismatch) {
  World world;
  if (world.size < 2)
    GTEST_SKIP() << "needs 2 ranks";
  const int64_t count = 100;
  std::vector<float> grad(count, 1.0f), out(count);
  gradcomm_scalecom_options o = options(10);
  o.momentum = world.rank == 1 ? 0.5f : 0.9f;
  const std::string name = uniqueName("mismatch");
  EXPECT_EQ(gradcomm_scalecom_recipe_f32(name.c_str(), grad.data(), out.data(),
                                         count, &o, GRADCOMM_REDUCE_AVERAGE),
            GRADCOMM_ERR_MISMATCH);
  EXPECT_TRUE(contains(gradcomm_last_error(), "recipe"))
      << gradcomm_last_error();
  // Nothing was left behind: the state can be made with other options.
  o.momentum = 0.9f;
  EXPECT_OK(gradcomm_scalecom_recipe_f32(name.c_str(), grad.data(), out.data(),
                                         count, &o, GRADCOMM_REDUCE_AVERAGE));
}

TEST(ScaleComRecipe, SkippedStepLeavesVelocityAndMemory) {
  // A NaN on any one rank, the step's leader or not, with exact and chunk
  // selection: every rank skips (and leaves out, the memory and the
  // velocity as they were), or under the error policy fails. Off an
  // exact selection's leader the velocity's pass takes the scan.
  World world;
  const int64_t count = 200;
  for (gradcomm_selection selection :
       {GRADCOMM_SELECT_EXACT, GRADCOMM_SELECT_CHUNK}) {
    for (int bad_rank = 0; bad_rank < world.size; ++bad_rank) {
      const std::string name = uniqueName("skip");
      gradcomm_scalecom_options o = options(10);
      o.momentum = 0.9f;
      o.selection = selection;
      o.chunk_size = selection == GRADCOMM_SELECT_CHUNK ? 20 : 0;
      std::vector<float> grad = gradient(3, world.rank, 0, count), out(count);
      ASSERT_OK(gradcomm_scalecom_recipe_f32(name.c_str(), grad.data(),
                                             out.data(), count, &o,
                                             GRADCOMM_REDUCE_AVERAGE));
      const std::vector<float> velocity = readState(name + ".velocity", count);
      const std::vector<float> memory = readState(name, count);
      std::vector<float> bad = grad;
      if (world.rank == bad_rank)
        bad[7] = NAN;
      SCOPED_TRACE(
          std::string(selection == GRADCOMM_SELECT_EXACT ? "exact" : "chunk") +
          ", NaN on rank " + std::to_string(bad_rank));
      EXPECT_EQ(gradcomm_scalecom_recipe_f32(name.c_str(), bad.data(),
                                             out.data(), count, &o,
                                             GRADCOMM_REDUCE_AVERAGE),
                GRADCOMM_ERR_NON_FINITE);
      ASSERT_OK(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_SKIP));
      EXPECT_OK(gradcomm_scalecom_recipe_f32(name.c_str(), bad.data(),
                                             out.data(), count, &o,
                                             GRADCOMM_REDUCE_AVERAGE));
      ASSERT_OK(gradcomm_set_nonfinite_policy(GRADCOMM_NONFINITE_ERROR));
      EXPECT_EQ(out, std::vector<float>(count, 0.0f));
      EXPECT_EQ(readState(name + ".velocity", count), velocity);
      EXPECT_EQ(readState(name, count), memory);
    }
  }
}

} // namespace
