"""The model zoo (examples/pytorch/zoo.py): every stock architecture
exports and compiles, and the numerics criterion of docs/export.md (a
compiled dense step's error against float64 at most 2x eager float32's;
zoo_step.py numerics) holds at 2 ranks, so the gradients cross the
runtime's all-reduce.

Three steps of the models where float32 itself stays near float64 that
long (the conv + batch norm probe, small CNNs, the transformers), one step
of ResNet-18 and MobileNet v2, whose float32 drifts by order 1 within
three (zoo_step.py drift); in 16 bits and under autocast, a model of each
kind against eager PyTorch in the same precision. The numerics steps are
compiled at -O0; the OPTIMIZED models of each case a second time at the
default level, which must give the same bits. The models no numerics case
compiles are built with ScaleCom (ratio 100), and gpt too, so that
ScaleCom's rewrite meets both families; that list is derived from the
numerics cases, so every model of the zoo is compiled by one or the other.
ctest runs one case per entry (python.zoo.*)."""

import argparse
import os

import pytest

import zoo
import zoo_step

NUMERICS = {  # case: (steps, batch, precision, models, optimized)
    "1step": (1, 8, "f32", ["resnet18", "mobilenet_v2"], []),
    "3steps": (3, 8, "f32", ["conv_bn", "densenet", "squeezenet",
                             "mobilenet_v3_small", "convnext", "vit", "swin",
                             "gpt", "encoder_lm", "decoder_lm"],
               ["conv_bn", "gpt"]),
    "bf16": (3, 4, "bf16", ["conv_bn", "encoder_lm", "gpt"], ["conv_bn"]),
    # f16 and autocast: a model of each kind (the LMs share their ops in
    # bf16).
    "f16": (3, 4, "f16", ["conv_bn", "gpt"], ["conv_bn"]),
    "autocast-bf16": (3, 4, "autocast-bf16", ["conv_bn", "gpt"], []),
}
CHECKED_BY_NUMERICS = {model for case in NUMERICS.values()
                       for model in case[3]}
BUILT_WITH_SCALECOM = [model for model in zoo.ZOO
                       if model not in CHECKED_BY_NUMERICS] + ["gpt"]


def test_every_model_exports_and_compiles(tools, work):
    args = argparse.Namespace(
        bin=os.path.dirname(tools("gradcomm-compile")), work=work,
        strategy="scalecom", models=BUILT_WITH_SCALECOM)
    assert zoo_step.build(args) == 0


@pytest.mark.parametrize("case", sorted(NUMERICS))
def test_numerics_against_float64(tools, work, case):
    steps, batch, precision, models, optimized = NUMERICS[case]
    args = argparse.Namespace(
        bin=os.path.dirname(tools("gradcomm-compile")),
        mpiexec=os.environ.get("GRADCOMM_MPIEXEC", "mpiexec.mpich"),
        work=work, ranks=2, steps=steps, batch=batch, precision=precision,
        models=models, optimized=optimized)
    assert zoo_step.numerics(args) == 0
