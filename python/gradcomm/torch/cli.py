"""gradcomm-export MODULE:FACTORY --batch B --ranks N ... -o step.mlir

MODULE is a Python file (path ending in .py) or an importable module name;
FACTORY a function in it returning gradcomm.torch.export.StepSpec."""

import argparse
import importlib
import importlib.util
import os
import sys
import time

from gradcomm.mlir import ExportError


def load_factory(spec):
    if ":" not in spec:
        raise ExportError("expected MODULE:FACTORY, got %r" % spec)
    module_name, factory_name = spec.rsplit(":", 1)
    if module_name.endswith(".py"):
        if not os.path.isfile(module_name):
            raise ExportError("no such file: %s" % module_name)
        loader = importlib.util.spec_from_file_location(
            "gradcomm_export_models", module_name)
        module = importlib.util.module_from_spec(loader)
        try:
            loader.loader.exec_module(module)
        except ModuleNotFoundError as error:
            raise _neighbour_error(module_name, error) or error
    else:
        module = importlib.import_module(module_name)
    factory = getattr(module, factory_name, None)
    if not callable(factory):
        raise ExportError("%s has no function %r" % (module_name,
                                                     factory_name))
    return factory


def _neighbour_error(path, error):
    """An ExportError when the model file at `path` failed to import a
    module that sits beside it: the file is loaded on its own, not run as
    a script, so its folder is not on the import path (the exporter leaves
    the import path as the user set it). None for any other missing
    module."""
    folder = os.path.dirname(os.path.abspath(path))
    missing = (error.name or "").split(".")[0]
    if not missing or not (
            os.path.isfile(os.path.join(folder, missing + ".py"))
            or os.path.isdir(os.path.join(folder, missing))):
        return None
    return ExportError(
        "%s imports %r from its own folder, which is not on the import "
        "path: run gradcomm-export with PYTHONPATH=%s, or install the "
        "models and pass MODULE:FACTORY by module name" % (path, missing,
                                                           folder))


def convert_model(spec, dtype):
    """The spec's model in `dtype` ('bf16', 'f16'), and its input too when
    that is floating point (a 16-bit model takes 16-bit inputs)."""
    import torch

    torch_dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[dtype]
    spec.model.to(torch_dtype)
    if spec.input_dtype.is_floating_point:
        spec.input_dtype = torch_dtype


def parse(argv):
    parser = argparse.ArgumentParser(
        prog="gradcomm-export",
        description="Export one data-parallel training step of a PyTorch "
        "model to GradComm MLIR (and a JSON manifest beside it).")
    parser.add_argument("factory", help="MODULE:FACTORY returning a StepSpec")
    parser.add_argument("-o", "--output", required=True,
                        help="the .mlir file to write (manifest: .json)")
    parser.add_argument("--batch", type=int, required=True,
                        help="samples per rank per step")
    parser.add_argument("--ranks", type=int, default=1,
                        help="data-parallel ranks (shard.grid size)")
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    parser.add_argument("--lr", type=float, default=0.01,
                        help="learning rate, a constant in the step")
    parser.add_argument("--lr-input", action="store_true",
                        help="make the learning rate a tensor<f32> input "
                        "named 'lr' instead")
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--nesterov", action="store_true")
    parser.add_argument("--weight-decay", type=float, default=0.0)
    parser.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.999))
    parser.add_argument("--eps", type=float, default=1e-8)
    parser.add_argument("--reduction", choices=["average", "sum"],
                        default="average",
                        help="all-reduce kind for gradients and the loss")
    parser.add_argument("--function", default="step",
                        help="name of the exported function")
    parser.add_argument("--dtype", choices=["f32", "bf16", "f16"],
                        default="f32",
                        help="convert the model (and a floating-point "
                        "input) to this type first: its parameters, "
                        "gradients and optimizer state are then 16-bit")
    parser.add_argument("--autocast", choices=["bf16", "f16"],
                        help="run the forward pass under torch.autocast "
                        "('cpu') in this type: float32 master weights and "
                        "gradients, 16-bit matrix products")
    parser.add_argument("--local-loss", action="store_true",
                        help="return each rank's own loss instead of "
                        "all-reducing it (a step for the asynchronous "
                        "strategies then has no collective that waits)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    try:
        from gradcomm.torch import optim
        from gradcomm.torch.export import StepSpec, export_step

        start = time.perf_counter()
        spec = load_factory(args.factory)()
        if not isinstance(spec, StepSpec):
            raise ExportError("%s returned %s, not a gradcomm.torch.export."
                              "StepSpec" % (args.factory,
                                            type(spec).__name__))
        if args.dtype != "f32":
            if args.autocast:
                raise ExportError("--dtype %s and --autocast: choose one (a "
                                  "16-bit model has no float32 weights to "
                                  "autocast)" % args.dtype)
            convert_model(spec, args.dtype)
        optimizer = optim.make(args.optimizer, args.momentum,
                               args.weight_decay, args.nesterov,
                               tuple(args.betas), args.eps)
        exported = export_step(spec, args.batch, args.ranks, optimizer,
                               args.lr, args.lr_input, args.reduction,
                               args.function, args.local_loss,
                               args.autocast)
        exported.write(args.output)
        print("gradcomm-export: wrote %s (%d inputs, %d outputs) in %.2f s"
              % (args.output, len(exported.manifest["inputs"]),
                 len(exported.manifest["outputs"]),
                 time.perf_counter() - start), file=sys.stderr)
    except (ExportError, ValueError) as error:
        print("gradcomm-export: error: %s" % error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
