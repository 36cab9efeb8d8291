// CUDA C as plain C++20 on the host, for running generated CUDA kernels on a CPU in tests
// (crates/nacre-corpus/tests/cuda_run.rs). Every GPU thread is an OS thread; the threads of
// one block run together and meet at __syncthreads, blocks run one after another. The
// built-in indices are thread-local variables the runner sets; `__shared__` storage becomes
// a function static (one array for the threads of the block that runs).
//
// This emulates CUDA's execution model, not NVIDIA's compiler or GPU: it checks what the
// generated code computes (indices, barriers, shared arrays, control flow, lane groups),
// while tests/cuda_compile.rs checks that NVRTC and ptxas accept it. The generated source is
// included inside a namespace by the test, so that its own fixed-width typedefs do not
// collide with the C library's.

#pragma once

#include <barrier>
#include <cmath>
#include <cstring>
#include <deque>
#include <math.h>
#include <thread>
#include <vector>

#define __global__
#define __launch_bounds__(threads)
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) alignas(n)

struct nacre_dim3 {
    unsigned x, y, z;
};

// The indices of the calling thread and the launch's shape (set by the runner).
inline thread_local nacre_dim3 threadIdx, blockIdx, blockDim, gridDim;

// The barrier of the block the calling thread belongs to (set by the runner).
inline thread_local std::barrier<> *nacre_emulated_barrier = nullptr;

// The block's dynamic shared memory and its size in bytes (set by the runner; on the GPU an
// `extern __shared__` array and `%dynamic_smem_size`, declared by the kernel).
inline thread_local unsigned char *nacre_dynamic_smem = nullptr;
inline thread_local unsigned nacre_dynamic_smem_bytes = 0;

inline void __syncthreads() { nacre_emulated_barrier->arrive_and_wait(); }

// Warps: the threads of one warp meet at its barrier to exchange values through its slots
// (set by the runner: the calling thread's warp and lane, and the block's vote slots).
struct nacre_emulated_warp {
    std::barrier<> sync;
    unsigned lanes;
    unsigned long long slots[32];
    explicit nacre_emulated_warp(unsigned n) : sync(n), lanes(n), slots{} {}
};
inline thread_local nacre_emulated_warp *nacre_emulated_warp_of = nullptr;
inline thread_local unsigned nacre_emulated_lane = 0;
inline thread_local int *nacre_emulated_votes = nullptr;

// Every lane publishes `bits`, then reads all lanes' (the second meeting keeps the slots until
// every lane has read them).
template <class F> inline auto nacre_emulated_exchange(unsigned long long bits, F read) {
    nacre_emulated_warp *w = nacre_emulated_warp_of;
    w->slots[nacre_emulated_lane] = bits;
    w->sync.arrive_and_wait();
    auto r = read(w);
    w->sync.arrive_and_wait();
    return r;
}
template <class T> inline T __shfl_sync(unsigned, T v, int src, int = 32) {
    unsigned long long bits = 0;
    std::memcpy(&bits, &v, sizeof(T));
    unsigned long long got = nacre_emulated_exchange(
        bits, [&](nacre_emulated_warp *w) { return w->slots[src & 31]; });
    T r;
    std::memcpy(&r, &got, sizeof(T));
    return r;
}
inline unsigned __ballot_sync(unsigned, int p) {
    return nacre_emulated_exchange((unsigned long long)(p != 0), [](nacre_emulated_warp *w) {
        unsigned b = 0;
        for (unsigned l = 0; l < w->lanes; l++) b |= (unsigned)w->slots[l] << l;
        return b;
    });
}
inline int __any_sync(unsigned m, int p) { return __ballot_sync(m, p) != 0; }
inline int __all_sync(unsigned m, int p) {
    unsigned lanes = nacre_emulated_warp_of->lanes;
    unsigned all = lanes >= 32 ? 0xffffffffu : (1u << lanes) - 1u;
    return __ballot_sync(m, p) == all;
}

// Voting barriers: every thread publishes its predicate in the block's slots.
inline int nacre_emulated_block_count(int p) {
    unsigned n = blockDim.x * blockDim.y * blockDim.z;
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    nacre_emulated_votes[t] = p != 0;
    __syncthreads();
    int c = 0;
    for (unsigned k = 0; k < n; k++) c += nacre_emulated_votes[k];
    __syncthreads();
    return c;
}
inline int __syncthreads_count(int p) { return nacre_emulated_block_count(p); }
inline int __syncthreads_and(int p) {
    return nacre_emulated_block_count(p) == (int)(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int p) { return nacre_emulated_block_count(p) != 0; }

// The integer intrinsics of the bit operations, as CUDA defines them.
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __clzll(long long x) { return x == 0 ? 64 : __builtin_clzll((unsigned long long)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }
inline int __ffsll(long long x) { return __builtin_ffsll(x); }
inline unsigned __brev(unsigned x) {
    unsigned r = 0;
    for (int i = 0; i < 32; i++, x >>= 1) r = (r << 1) | (x & 1);
    return r;
}
inline unsigned long long __brevll(unsigned long long x) {
    unsigned long long r = 0;
    for (int i = 0; i < 64; i++, x >>= 1) r = (r << 1) | (x & 1);
    return r;
}
inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    unsigned long long both = ((unsigned long long)y << 32) | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) {
        unsigned sel = (s >> (4 * i)) & 7;
        r |= (unsigned)((both >> (8 * sel)) & 0xff) << (8 * i);
    }
    return r;
}

inline float __int_as_float(int x) {
    float f;
    std::memcpy(&f, &x, sizeof f);
    return f;
}

// Atomics, as CUDA defines them (relaxed), on std::atomic_ref; `_block` forms are the same on
// the host. Min and max loop on compare-exchange, as CUDA's own do on some types.
#include <atomic>

template <class T> inline T atomicAdd(T *p, T v) { return std::atomic_ref<T>(*p).fetch_add(v); }
template <class T> inline T atomicSub(T *p, T v) { return std::atomic_ref<T>(*p).fetch_sub(v); }
template <class T> inline T atomicAnd(T *p, T v) { return std::atomic_ref<T>(*p).fetch_and(v); }
template <class T> inline T atomicOr(T *p, T v) { return std::atomic_ref<T>(*p).fetch_or(v); }
template <class T> inline T atomicXor(T *p, T v) { return std::atomic_ref<T>(*p).fetch_xor(v); }
template <class T> inline T atomicExch(T *p, T v) { return std::atomic_ref<T>(*p).exchange(v); }
template <class T> inline T atomicCAS(T *p, T expected, T desired) {
    std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
    return expected;
}
template <class T> inline T atomicMin(T *p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (!a.compare_exchange_weak(old, old < v ? old : v)) {}
    return old;
}
template <class T> inline T atomicMax(T *p, T v) {
    std::atomic_ref<T> a(*p);
    T old = a.load();
    while (!a.compare_exchange_weak(old, old > v ? old : v)) {}
    return old;
}
#define atomicAdd_block atomicAdd
#define atomicSub_block atomicSub
#define atomicAnd_block atomicAnd
#define atomicOr_block atomicOr
#define atomicXor_block atomicXor
#define atomicExch_block atomicExch
#define atomicCAS_block atomicCAS
#define atomicMin_block atomicMin
#define atomicMax_block atomicMax

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

inline double __longlong_as_double(long long x) {
    double d;
    std::memcpy(&d, &x, sizeof d);
    return d;
}
inline long long __double_as_longlong(double d) {
    long long x;
    std::memcpy(&x, &d, sizeof x);
    return x;
}
