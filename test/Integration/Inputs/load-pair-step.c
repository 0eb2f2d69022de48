/* Calls a step with two results (pair-step.mlir, --emit=shared) twice:
 * into a separate result, and with the result written over the descriptor
 * of its first argument, which the caller may do: every argument
 * descriptor is read before the result is written. */
#include "pair.h"

#include <dlfcn.h>
#include <stdio.h>

typedef gradcomm_memref_f32_1d memref_1d;
typedef void (*pair_fn)(pair_results *, memref_1d *, memref_1d *);

static int check(const char *what, const pair_results *result, const float *a,
                 const float *b) {
  for (int i = 0; i < 4; ++i) {
    float sum = result->r0.aligned[result->r0.offset + i];
    float product = result->r1.aligned[result->r1.offset + i];
    if (sum != a[i] + b[i] || product != a[i] * b[i] ||
        result->r0.sizes[0] != 4 || result->r1.sizes[0] != 4) {
      fprintf(stderr, "%s: element %d: sum %g product %g, expected %g %g\n",
              what, i, sum, product, a[i] + b[i], a[i] * b[i]);
      return 1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libpair.so\n", argv[0]);
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  pair_fn pair = (pair_fn)dlsym(library, "_mlir_ciface_pair");
  if (!pair) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  float a[4] = {1, 2, 3, 4}, b[4] = {0.5f, -2, 8, 0.25f};
  memref_1d ad = {a, a, 0, {4}, {1}}, bd = {b, b, 0, {4}, {1}};
  pair_results separate;
  pair(&separate, &ad, &bd);
  if (check("separate result", &separate, a, b))
    return 1;
  pair_results aliased;
  aliased.r0 = ad;
  pair(&aliased, &aliased.r0, &bd);
  if (check("result over the first argument", &aliased, a, b))
    return 1;
  printf("load-pair-step: ok\n");
  return 0;
}
