"""Where GradComm's native parts are: libgradcomm_runtime.so and the tools
(gradcomm-plan, gradcomm-compile, ...).

In this order: the environment variable the caller names, the package's
own install (gradcomm/_install.py, which `pip install` writes: the wheel's
gradcomm/_libs, or the build tree of an editable install), a `cmake
--install` prefix (<prefix>/<libdir>/gradcomm/python/gradcomm), the source
tree's build/, then the loader's search path or PATH."""

import ctypes.util
import os
import shutil

_HERE = os.path.dirname(os.path.abspath(__file__))

try:
    from gradcomm import _install
except ImportError:  # the source tree on PYTHONPATH, or a cmake --install
    _install = None


def _bin_dirs():
    """bin/ of a cmake --install prefix (this file in <prefix>/<libdir>/
    gradcomm/python/gradcomm, libdir "lib" or a multiarch "lib/<triple>"),
    and the source tree's build/bin."""
    up = [os.pardir] * 4
    return [os.path.join(_HERE, *up, "bin"),
            os.path.join(_HERE, *up, os.pardir, "bin"),
            os.path.join(_HERE, os.pardir, os.pardir, "build", "bin")]


def runtime_library_candidates():
    """The paths to try for libgradcomm_runtime.so, best first."""
    explicit = os.environ.get("GRADCOMM_RUNTIME_LIBRARY")
    if explicit:
        return [explicit]
    name = "libgradcomm_runtime.so"
    candidates = []
    if _install is not None:
        candidates.append(os.path.join(_install.LIBRARY_DIR, name))
    # Installed by cmake: <prefix>/<libdir>/gradcomm/python/gradcomm.
    candidates.append(os.path.join(_HERE, "..", "..", "..", name))
    candidates.append(os.path.join(_HERE, "..", "..", "build", "lib", name))
    found = [os.path.normpath(path) for path in candidates
             if os.path.exists(path)]
    found.append(ctypes.util.find_library("gradcomm_runtime") or name)
    return list(dict.fromkeys(found))


def tool(name, variable):
    """The executable `name` (gradcomm-plan, ...): $`variable`, the
    package's install, a cmake --install prefix's bin, the source tree's
    build/bin, then PATH; None when none is found."""
    explicit = os.environ.get(variable)
    if explicit:
        return explicit
    candidates = []
    if _install is not None and _install.TOOLS_DIR:
        candidates.append(os.path.join(_install.TOOLS_DIR, name))
    candidates += [os.path.join(folder, name) for folder in _bin_dirs()]
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    return shutil.which(name)
