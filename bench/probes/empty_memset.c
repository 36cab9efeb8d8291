/* An empty memset through glibc's AVX-512 entry, at the dangling address of an empty Rust
 * Vec (0x8) and at a valid one: the masked store of an empty fill at an unmapped address
 * takes a microcode assist. The CPU executor cleared a collective exchange area this way once
 * per block, for kernels without collectives too (bench/README.md, "Kernels vectorised across
 * threads"). Build and run: cc -O2 bench/probes/empty_memset.c -o /tmp/empty_memset && /tmp/empty_memset */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void) {
    static char buf[64];
    void *volatile dangling = (void *)8;
    void *volatile valid = buf;
    size_t volatile n = 0;
    for (int k = 0; k < 2; k++) {
        void *p = k ? valid : dangling;
        double t0 = now();
        for (int i = 0; i < 1000000; i++) {
            memset(p, 0, n);
            __asm__ volatile("" ::: "memory");
        }
        printf("%s: %.1f ns per call\n", k ? "valid address" : "dangling 0x8", (now() - t0) * 1e3);
    }
    return 0;
}
