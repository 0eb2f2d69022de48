"""Writes a tiny Fashion-MNIST look-alike (IDX files, gzip) into a folder:
N_TRAIN training and N_TEST test images of 28x28 bytes whose class is
visible in the pixels, so a few SGD steps learn something. Deterministic."""

import gzip
import random
import struct
import sys


def write(path, magic, dims, payload):
    with gzip.open(path, "wb") as f:
        f.write(struct.pack(">I", magic))
        for d in dims:
            f.write(struct.pack(">I", d))
        f.write(bytes(payload))


def make(prefix, count, rng, out):
    images, labels = [], []
    for _ in range(count):
        label = rng.randrange(10)
        pixels = [rng.randrange(40) for _ in range(784)]
        # A bright bar whose row depends on the class.
        for col in range(4, 24):
            pixels[(2 + 2 * label) * 28 + col] = 200 + rng.randrange(55)
        images.extend(pixels)
        labels.append(label)
    write("%s/%s-images-idx3-ubyte.gz" % (out, prefix), 2051,
          [count, 28, 28], images)
    write("%s/%s-labels-idx1-ubyte.gz" % (out, prefix), 2049, [count], labels)


def main():
    out = sys.argv[1]
    rng = random.Random(5)
    make("train", 256, rng, out)
    make("t10k", 64, rng, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
