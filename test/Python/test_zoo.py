"""The model zoo (examples/pytorch/zoo.py): every stock architecture
exports and compiles (ScaleCom, ratio 100; zoo_step.py build), and the
numerics criterion of docs/export.md (a compiled dense step's error
against float64 at most 2x eager float32's; zoo_step.py numerics) at 2
ranks, so the gradients cross the runtime's all-reduce.

Three steps of the models where float32 itself stays near float64 that
long (the conv + batch norm probe, small CNNs, the transformers), one step
of ResNet-18 and MobileNet v2, whose float32 drifts by order 1 within
three (zoo_step.py drift); in 16 bits and under autocast, a model of each
kind against eager PyTorch in the same precision. ctest runs one case per
entry (python.zoo.*)."""

import argparse
import os

import pytest

import zoo
import zoo_step

NUMERICS = {  # case: (steps, batch, precision, models)
    "1step": (1, 8, "f32", ["resnet18", "mobilenet_v2"]),
    "3steps": (3, 8, "f32", ["conv_bn", "densenet", "squeezenet",
                             "mobilenet_v3_small", "convnext", "vit", "swin",
                             "gpt", "encoder_lm", "decoder_lm"]),
    "bf16": (3, 4, "bf16", ["conv_bn", "encoder_lm", "gpt"]),
    "f16": (3, 4, "f16", ["conv_bn", "encoder_lm", "gpt"]),
    "autocast-bf16": (3, 4, "autocast-bf16", ["conv_bn", "encoder_lm",
                                              "gpt"]),
}


def test_every_model_exports_and_compiles(tools, work):
    args = argparse.Namespace(
        bin=os.path.dirname(tools("gradcomm-compile")), work=work,
        strategy="scalecom", models=zoo.ZOO)
    assert zoo_step.build(args) == 0


@pytest.mark.parametrize("case", sorted(NUMERICS))
def test_numerics_against_float64(tools, work, case):
    steps, batch, precision, models = NUMERICS[case]
    args = argparse.Namespace(
        bin=os.path.dirname(tools("gradcomm-compile")),
        mpiexec=os.environ.get("GRADCOMM_MPIEXEC", "mpiexec.mpich"),
        work=work, ranks=2, steps=steps, batch=batch, precision=precision,
        models=models)
    assert zoo_step.numerics(args) == 0
