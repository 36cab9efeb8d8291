// Runs the C tier's step function of the corpus's `stencil2d` alone, over every 16 x 16 block
// of a W x W image, on one thread, and prints the best of 60 runs (the per-block executor and
// the other threads out of the picture). The step function's C comes from the C tier: put a
// `cc` first in PATH that copies each `*.c` argument somewhere, run
// `nacre bench gpu --backend cpu --filter gpu_cpu_stencil`, then build the copy with the C
// tier's flags (`-O2 -march=native -fvect-cost-model=dynamic
// --param=vect-max-version-for-alias-checks=32 -std=gnu99 -fno-strict-aliasing
// -fno-strict-overflow -ffp-contract=off -fno-optimize-sibling-calls -shared -fPIC`) into
// step.so, and:
//   cc -O2 -o harness bench/probes/stencil_step_harness.c -ldl && ./harness ./step.so 512
// The argument and context layouts are those of the step module (`nacre_kernel::step::ctx`;
// the arguments: input, output, w, h, then each pointer's base and size, then the check-free
// flag).
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef uint32_t (*entry_t)(uint64_t *, uint64_t *, uint32_t *);

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: harness STEP.so [W]\n"); return 2; }
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    entry_t step = (entry_t)dlsym(h, "nacre_entry");
    uint32_t w = argc > 2 ? (uint32_t)atoi(argv[2]) : 4096;
    size_t n = (size_t)w * w;
    float *in = malloc(n * sizeof(float)), *out = calloc(n, sizeof(float));
    for (size_t i = 0; i < n; i++) in[i] = (float)(i % 1000) * 0.001f;
    float tile[324];
    uint64_t args[9] = {(uint64_t)in, (uint64_t)out, w, w, (uint64_t)in, n * 4, (uint64_t)out, n * 4, 1};
    uint64_t ctx[19] = {0};
    ctx[3] = 16; ctx[4] = 16; ctx[5] = 1;          // blockDim
    ctx[6] = w / 16; ctx[7] = w / 16; ctx[8] = 1;  // gridDim
    ctx[9] = 256;                                  // threads per block
    ctx[10] = (uint64_t)tile;                      // shared memory
    double best = 1e30;
    for (int rep = 0; rep < 60; rep++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (uint32_t by = 0; by < w / 16; by++)
            for (uint32_t bx = 0; bx < w / 16; bx++) {
                uint32_t status = 0;
                ctx[0] = bx; ctx[1] = by;
                step(args, ctx, &status);
                if (status) { printf("status %u\n", status); return 1; }
            }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (ms < best) best = ms;
    }
    size_t x = 100, y = 200;
    float want = in[y * w + x] * 0.5f +
                 (in[(y - 1) * w + x] + in[(y + 1) * w + x] + in[y * w + x - 1] + in[y * w + x + 1]) * 0.125f;
    printf("W=%u best %.3f ms; out[200][100] %g (expected %g)\n", w, best, out[y * w + x], want);
    return 0;
}
