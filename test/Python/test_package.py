"""The pip package end to end (pyproject.toml, docs/pytorch.md "Install"):
a wheel of the repository built as a machine without MLIR and CUDA builds
it (the runtime alone), installed into a fresh virtual environment whose
only torch is the distribution's (Debian's python3-torch 1.13 through
--system-site-packages; nothing is downloaded); then, from outside the
repository and with no PYTHONPATH, a 2-rank DDP step with the ScaleCom
hook (test/Package/hook_step.py: the package and its runtime come from
that environment, the hook compresses, the ranks agree; under mpiexec, as
torch 1.13's torchrun fails on Python 3.11) and the console script
gradcomm-export. Then the same wheel in a fresh environment whose torch
is PyPI's (the project's environment's torch, reached without its
gradcomm): under torchrun, ResNet-18 under DDP with the ScaleCom hook and
under FSDP2 with GradComm's reduce-scatter.

The wheel is built by the Python running pytest (it has scikit-build-core:
python/requirements.txt); the fresh environment's base is
$GRADCOMM_SECOND_PYTHON (default /usr/bin/python3)."""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
BASE_PYTHON = os.environ.get("GRADCOMM_SECOND_PYTHON", "/usr/bin/python3")
# What a program outside the repository must not be handed.
WITHOUT = ("PYTHONPATH", "GRADCOMM_RUNTIME_LIBRARY", "GRADCOMM_PLAN",
           "GRADCOMM_BIN")
CLEAN = {name: None for name in WITHOUT}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("wheel"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q",
         "--disable-pip-version-check", "--no-input", "--no-build-isolation",
         "--no-deps", "-w", os.path.join(work, "dist"), ROOT,
         "--config-settings=build-dir=" + os.path.join(work, "build"),
         "--config-settings=cmake.define.GRADCOMM_BUILD_COMPILER=OFF",
         "--config-settings=cmake.define.GRADCOMM_ENABLE_CUDA=OFF"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        timeout=600)
    assert done.returncode == 0, done.stdout[-4000:]
    (name,) = os.listdir(os.path.join(work, "dist"))
    return os.path.join(work, "dist", name)


def test_wheel_holds_the_runtime(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("gradcomm/_libs/libgradcomm_runtime.so",
                 "gradcomm/_install.py", "gradcomm/torch/ddp.py",
                 "gradcomm/include/gradcomm/runtime.h"):
        assert name in names


def fresh_environment(ranks, outside, wheel, base, venv_flags=(),
                      pip_flags=()):
    """A virtual environment in `outside` made from `base`, with the wheel
    installed (nothing downloaded) and hook_step.py beside it; returns its
    python."""
    venv = os.path.join(outside, "venv")
    ranks.command(base, "-m", "venv", *venv_flags, venv)
    python = os.path.join(venv, "bin", "python")
    ranks.command(python, "-m", "pip", "install", "-q",
                  "--disable-pip-version-check", "--no-input", "--no-index",
                  *pip_flags, wheel)
    shutil.copy(os.path.join(ROOT, "test", "Package", "hook_step.py"),
                outside)
    return python


def test_step_from_a_fresh_environment(wheel, ranks):
    probe = subprocess.run([BASE_PYTHON, "-c", "import torch"],
                           capture_output=True)
    if probe.returncode != 0:
        pytest.skip("%s has no torch" % BASE_PYTHON)
    # Everything in a folder outside the repository (the build tree is
    # inside it).
    with tempfile.TemporaryDirectory(prefix="gradcomm-wheel-") as outside:
        python = fresh_environment(ranks, outside, wheel, BASE_PYTHON,
                                   venv_flags=("--system-site-packages",))
        output = ranks.command(ranks.mpiexec_path, "-n", 2, python,
                               "hook_step.py", env=CLEAN, cwd=outside)
        assert "ok: cnn under DDP" in output
        help_text = ranks.command(os.path.join(os.path.dirname(python),
                                               "gradcomm-export"),
                                  "--help", env=CLEAN, cwd=outside)
        assert "MODULE:FACTORY" in help_text


def torch_without_gradcomm(folder):
    """A folder of links to everything in this Python's site-packages but
    GradComm (its package, metadata and editable hook): PyPI's torch and
    what it needs, for a fresh environment to reach through a .pth line
    without downloading anything. None when this Python has no torch with
    FSDP2."""
    probe = subprocess.run(
        [sys.executable, "-c", "from torch.distributed.fsdp import "
         "fully_shard"], capture_output=True)
    if probe.returncode != 0:
        return None
    site = sysconfig.get_paths()["purelib"]
    os.makedirs(folder)
    for name in os.listdir(site):
        if "gradcomm" in name.lower():
            continue
        os.symlink(os.path.join(site, name), os.path.join(folder, name))
    return folder


def test_resnet18_and_fsdp2_with_pypi_torch(wheel, ranks):
    with tempfile.TemporaryDirectory(prefix="gradcomm-wheel-") as outside:
        torch_site = torch_without_gradcomm(os.path.join(outside, "torch"))
        if torch_site is None:
            pytest.skip("%s has no torch with fully_shard" % sys.executable)
        # Without requirements: torch's own would be checked against
        # this environment's older setuptools.
        python = fresh_environment(ranks, outside, wheel, sys.executable,
                                   pip_flags=("--no-deps",))
        own_site = ranks.command(
            python, "-c", "import sysconfig; "
            "print(sysconfig.get_paths()['purelib'])").strip().splitlines()[-1]
        with open(os.path.join(own_site, "pypi_torch.pth"), "w") as pth:
            pth.write(torch_site + "\n")
        for mode, expected in (((), "ok: resnet18 under DDP"),
                               (("--fsdp2",), "ok: resnet18 under FSDP2")):
            output = ranks.command(
                python, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node=2", "hook_step.py", "--model", "resnet18",
                *mode, env=dict(CLEAN, OMP_NUM_THREADS="1"), cwd=outside)
            assert expected in output
