"""Loads a step compiled with gradcomm-compile --emit=shared (named `step`)
with ctypes, calls _mlir_ciface_step once and checks w - mean(g)."""

import ctypes
import sys


class MemRef1D(ctypes.Structure):
    _fields_ = [
        ("allocated", ctypes.POINTER(ctypes.c_float)),
        ("aligned", ctypes.POINTER(ctypes.c_float)),
        ("offset", ctypes.c_int64),
        ("sizes", ctypes.c_int64 * 1),
        ("strides", ctypes.c_int64 * 1),
    ]


def descriptor(array):
    pointer = ctypes.cast(array, ctypes.POINTER(ctypes.c_float))
    return MemRef1D(pointer, pointer, 0, (ctypes.c_int64 * 1)(len(array)),
                    (ctypes.c_int64 * 1)(1))


def main():
    library = ctypes.CDLL(sys.argv[1])
    step = library._mlir_ciface_step
    step.restype = None
    step.argtypes = [ctypes.POINTER(MemRef1D), ctypes.POINTER(MemRef1D)]
    w = (ctypes.c_float * 4)(1, 2, 3, 4)
    g = (ctypes.c_float * 4)(0.5, 0.25, -1, 2)
    wd, gd = descriptor(w), descriptor(g)
    step(ctypes.byref(wd), ctypes.byref(gd))
    if list(w) != [0.5, 1.75, 4.0, 2.0]:
        print("w =", list(w), file=sys.stderr)
        return 1
    print("load_shared_step.py: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
