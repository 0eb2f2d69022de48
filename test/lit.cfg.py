# -*- Python -*-
"""lit configuration for the GradComm tests."""

import os
import shutil

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GRADCOMM"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.gradcomm_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
llvm_config.with_system_environment(["HOME", "TMPDIR"])
llvm_config.use_default_substitutions()

tool_dirs = [config.gradcomm_tools_dir, config.llvm_tools_dir]
tools = [
    ToolSubst("gradcomm-opt", unresolved="fatal"),
    ToolSubst("gradcomm-translate", unresolved="fatal"),
    ToolSubst("gradcomm-compile", unresolved="fatal"),
    ToolSubst("gradcomm-plan", unresolved="fatal"),
    ToolSubst("not", unresolved="fatal"),
    ToolSubst("split-file", unresolved="fatal"),
    ToolSubst("gradcomm-export", unresolved="fatal"),
    ToolSubst("mlir-opt", unresolved="fatal"),
]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# Integration tests say what they need with REQUIRES, so a machine without
# it reports them UNSUPPORTED, never PASS.
if config.mpiexec and os.path.exists(config.mpiexec):
    config.available_features.add("mpi")
    config.substitutions.append(("%mpiexec", config.mpiexec))
if shutil.which("nvidia-smi") and os.system("nvidia-smi -L >/dev/null 2>&1") == 0:
    config.available_features.add("cuda-gpu")

# The PyTorch exporter's tests (test/Export/*.py) run the configured Python
# (GRADCOMM_PYTHON: the project's environment) with the source tree's
# package; without torch they are UNSUPPORTED.
python = config.python
config.environment["PYTHONPATH"] = os.path.join(config.gradcomm_src_root,
                                                "python")
config.substitutions.append(("%python", python))
config.substitutions.append(
    ("%models", os.path.join(config.gradcomm_src_root, "examples", "pytorch",
                             "models.py")))
if os.system(python + ' -c "import torch" >/dev/null 2>&1') == 0:
    config.available_features.add("torch")
