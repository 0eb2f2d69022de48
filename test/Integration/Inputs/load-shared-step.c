/* Loads a step compiled with gradcomm-compile --emit=shared (named `step`)
 * with dlopen, calls _mlir_ciface_step once and checks w - mean(g). The
 * library must find the runtime by itself (DT_NEEDED + RUNPATH). */
#include "step.h"

#include <dlfcn.h>
#include <stdio.h>

typedef void (*step_fn)(gradcomm_memref_f32_1d *, gradcomm_memref_f32_1d *);

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libstep.so\n", argv[0]);
    return 2;
  }
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  step_fn step = (step_fn)dlsym(library, "_mlir_ciface_step");
  if (!step) {
    fprintf(stderr, "dlsym: %s\n", dlerror());
    return 1;
  }
  float w[4] = {1, 2, 3, 4}, g[4] = {0.5f, 0.25f, -1, 2};
  gradcomm_memref_f32_1d wd = {w, w, 0, {4}, {1}};
  gradcomm_memref_f32_1d gd = {g, g, 0, {4}, {1}};
  step(&wd, &gd);
  const float expected[4] = {0.5f, 1.75f, 4, 2};
  for (int i = 0; i < 4; ++i)
    if (w[i] != expected[i]) {
      fprintf(stderr, "w[%d] = %g, expected %g\n", i, w[i], expected[i]);
      return 1;
    }
  printf("load-shared-step: ok\n");
  return 0;
}
