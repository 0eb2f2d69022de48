"""gradcomm.torch.recipe without a process group: ScaleComOptions refuses
bad values, the dense presets pick the parameters they name, and the plan
gives each parameter its ratio (presets, overrides, policy="auto" through
gradcomm-plan: $GRADCOMM_PLAN or the build's) and k. Warm-up, momentum
correction and clipping are the runtime's (test/Python/ddp_hook.py recipe,
runtime/test/ScaleComRecipeTest.cpp)."""

import os
import unittest
import warnings

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))

from gradcomm.plan import PlanError  # noqa: E402
from gradcomm.torch.recipe import (Plan, ScaleComOptions,  # noqa: E402
                                   beta_for_group, check_optimizer,
                                   dense_parameters, for_group)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)
        self.norm = nn.LayerNorm(32)
        self.hidden = nn.Linear(32, 64)
        self.out = nn.Linear(64, 10)


class OptionsTest(unittest.TestCase):
    def test_bad_values(self):
        for fields in (dict(beta=0), dict(beta=1.5), dict(beta="fast"),
                       dict(beta=None), dict(ratio=0.5),
                       dict(k=0), dict(warmup="linear"),
                       dict(warmup_steps=-1), dict(warmup_start_ratio=0.5),
                       dict(momentum=1.0), dict(momentum=-0.1),
                       dict(nesterov=True), dict(clip=0.0),
                       dict(keep_velocity=True),
                       dict(momentum=0.9, keep_velocity="yes"),
                       dict(dense="vectors"), dict(dense=("biases",)),
                       dict(overrides={"fc.*": 0.5}),
                       dict(overrides={"fc.*": "sparse"}),
                       dict(selection="random"),
                       dict(warmup="ramp", selection="chunk"),
                       dict(policy="best"), dict(policy="auto", k=5),
                       dict(policy="auto", chunk_size=64),
                       dict(policy="auto", auto_ratios=(1,)),
                       dict(policy="auto", cluster={"bandwith": "1Gbit"}),
                       dict(cluster={"bandwidth": "1Gbit"})):
            with self.assertRaises(ValueError, msg=str(fields)):
                ScaleComOptions(**fields)

    def test_auto_beta_falls_with_the_group(self):
        self.assertEqual([beta_for_group(n) for n in (1, 2, 4, 8, 10, 64)],
                         [1.0, 0.5, 0.25, 0.125, 0.1, 0.1])
        with self.assertRaises(ValueError):
            beta_for_group(0)
        auto = ScaleComOptions(beta="auto", ratio=400)
        self.assertEqual(for_group(auto, 4),
                         ScaleComOptions(beta=0.25, ratio=400))
        fixed = ScaleComOptions(beta=0.3)
        self.assertIs(for_group(fixed, 64), fixed)

    def test_overrides_keep_their_order(self):
        options = ScaleComOptions(overrides={"a*": 4, "ab": "dense"})
        self.assertEqual(options.overrides, (("a*", 4), ("ab", "dense")))


class PresetsTest(unittest.TestCase):
    def test_each_preset(self):
        model = Model()
        self.assertEqual(dense_parameters(model, ScaleComOptions()), {})
        picked = dense_parameters(model, ScaleComOptions(dense=("vectors",)))
        self.assertEqual(sorted(picked), ["hidden.bias", "norm.bias",
                                          "norm.weight", "out.bias"])
        picked = dense_parameters(model,
                                  ScaleComOptions(dense=("embeddings",)))
        self.assertEqual(sorted(picked), ["embed.weight"])
        picked = dense_parameters(model, ScaleComOptions(dense=("first",)))
        self.assertEqual(sorted(picked), ["embed.weight"])
        picked = dense_parameters(model, ScaleComOptions(dense=("last",)))
        self.assertEqual(sorted(picked), ["out.bias", "out.weight"])


class PlanTest(unittest.TestCase):
    def test_k_after_warmup(self):
        plan = Plan(Model(), ScaleComOptions(ratio=100, warmup_steps=10,
                                             min_elements=1))
        self.assertEqual(plan.ratio("hidden.weight"), 100)
        self.assertEqual(plan.k_and_chunk("hidden.weight", 2048), (21, 0))

    def test_overrides_win_over_presets(self):
        plan = Plan(Model(), ScaleComOptions(
            dense=("vectors",), overrides={"out.bias": 2, "hidden.*":
                                           "dense"}, min_elements=1))
        self.assertEqual(plan.ratio("out.bias"), 2)
        self.assertIsNone(plan.ratio("hidden.weight"))
        self.assertIsNone(plan.ratio("norm.weight"))
        self.assertEqual(plan.ratio("out.weight"), 100)

    def test_small_and_chunk(self):
        plan = Plan(Model(), ScaleComOptions(selection="chunk",
                                             chunk_size=64))
        self.assertIsNone(plan.k_and_chunk("hidden.weight", 1000))
        self.assertEqual(plan.k_and_chunk("hidden.weight", 2048), (32, 64))


class Wide(nn.Module):
    """A wide layer where compression pays on a slow link, a narrow one,
    and biases under min_elements."""

    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(1000, 1000)
        self.narrow = nn.Linear(1000, 2)


class AutoPolicyTest(unittest.TestCase):
    SLOW = {"bandwidth": "1Gbit", "latency": "50us"}
    FAST = {"bandwidth": "400Gbit", "latency": "1us"}

    def plan(self, ranks=4, **fields):
        return Plan(Wide(), ScaleComOptions(policy="auto", **fields),
                    ranks=ranks)

    def test_slow_link_compresses_the_wide_layer(self):
        plan = self.plan(cluster=self.SLOW)
        self.assertIn(plan.ratio("wide.weight"), (10.0, 100.0, 400.0))
        self.assertEqual(plan.k_and_chunk("wide.weight", 10 ** 6)[0],
                         -(-10 ** 6 // int(plan.ratio("wide.weight"))))
        # The biases are under min_elements: dense, not asked about.
        self.assertIsNone(plan.k_and_chunk("wide.bias", 1000))
        self.assertNotIn("wide.bias", plan.auto)

    def test_fast_link_keeps_everything_dense(self):
        plan = self.plan(cluster=self.FAST)
        for name, parameter in Wide().named_parameters():
            self.assertIsNone(plan.k_and_chunk(name, parameter.numel()),
                              name)

    def test_the_candidates_bound_the_choice(self):
        plan = self.plan(cluster=self.SLOW, auto_ratios=(10,))
        self.assertEqual(plan.ratio("wide.weight"), 10.0)

    def test_overrides_and_presets_still_win(self):
        plan = self.plan(cluster=self.FAST,
                         overrides={"wide.weight": 50})
        self.assertEqual(plan.ratio("wide.weight"), 50.0)
        plan = self.plan(cluster=self.SLOW, dense=("first",))
        self.assertIsNone(plan.ratio("wide.weight"))

    def test_a_bad_cluster_is_an_error(self):
        with self.assertRaisesRegex(PlanError, "bad bandwidth"):
            self.plan(cluster={"bandwidth": "fast"})

    def test_a_missing_tool_is_an_error(self):
        saved = os.environ.get("GRADCOMM_PLAN")
        os.environ["GRADCOMM_PLAN"] = "/nonexistent/gradcomm-plan"
        try:
            with self.assertRaises((PlanError, OSError)):
                self.plan(cluster=self.SLOW)
        finally:
            if saved is None:
                del os.environ["GRADCOMM_PLAN"]
            else:
                os.environ["GRADCOMM_PLAN"] = saved


class OptimizerTest(unittest.TestCase):
    def sgd(self, momentum):
        return torch.optim.SGD(Model().parameters(), lr=0.1,
                               momentum=momentum)

    def test_momentum_twice_is_an_error(self):
        with self.assertRaisesRegex(ValueError, "momentum=0, got SGD with "
                                    "momentum 0.9"):
            check_optimizer(ScaleComOptions(momentum=0.9), self.sgd(0.9))

    def test_momentum_without_correction_warns(self):
        with self.assertWarnsRegex(RuntimeWarning, "give the hook "
                                   "momentum=0.9 and the optimizer "
                                   "momentum=0"):
            check_optimizer(ScaleComOptions(), self.sgd(0.9))

    def test_the_recipe_and_plain_sgd_are_quiet(self):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            check_optimizer(ScaleComOptions(momentum=0.9), self.sgd(0))
            check_optimizer(ScaleComOptions(), self.sgd(0))


if __name__ == "__main__":
    unittest.main()
