// The CPU suite's kernels in OpenCL C, for PoCL (bench/peers/cpu_peers.py): the same
// algorithms as the corpus's kernels (crates/nacre-corpus/src/kernels.rs, kernels/tiled.rs),
// launched with the same work-group and global sizes as Nacre's CPU launches.

#pragma OPENCL FP_CONTRACT OFF

// saxpy and vecadd: grid-stride loops.
__kernel void saxpy(float a, __global const float *x, __global float *y, uint n) {
    uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n; i += stride) y[i] = a * x[i] + y[i];
}

__kernel void vecadd(__global const float *a, __global const float *b, __global float *c, uint n) {
    uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n; i += stride) c[i] = a[i] + b[i];
}

// One element per work-item, guarded.
__kernel void saxpy1(float a, __global const float *x, __global float *y, uint n) {
    uint i = get_global_id(0);
    if (i < n) y[i] = a * x[i] + y[i];
}

// One sum per 256 elements: a tree in local memory.
__kernel void blocksum(__global const float *x, __global float *out, uint n) {
    __local float s[256];
    uint t = get_local_id(0), i = get_global_id(0);
    s[t] = i < n ? x[i] : 0.0f;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = get_local_size(0) / 2; k > 0; k /= 2) {
        if (t < k) s[t] = s[t] + s[t + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) out[get_group_id(0)] = s[0];
}

// The single-pass sum of x[..n] added to out[0] (the corpus's block_sum_warp): a grid-stride
// sum per work-item in 8 independent accumulators, a tree over the work-group in local memory
// (OpenCL 1.2 has no sub-group reductions), then one atomic add per work-group (a
// compare-and-swap loop on the float's bits: OpenCL 1.2 has no float atomics).
__kernel void blocksum_atomic(__global const float *x, __global float *out, uint n) {
    __local float s[256];
    uint t = get_local_id(0), stride = get_global_size(0), i = get_global_id(0);
    float acc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    if (n >= 7 * stride) {
        for (; i < n - 7 * stride; i += 8 * stride)
            for (uint k = 0; k < 8; k++) acc[k] += x[i + k * stride];
    }
    float r = 0.0f;
    for (; i < n; i += stride) r += x[i];
    for (uint k = 0; k < 8; k++) r += acc[k];
    s[t] = r;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = get_local_size(0) / 2; k > 0; k /= 2) {
        if (t < k) s[t] = s[t] + s[t + k];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0) {
        volatile __global uint *bits = (volatile __global uint *)out;
        uint seen = *bits, was;
        do {
            was = seen;
            seen = atomic_cmpxchg(bits, was, as_uint(as_float(was) + s[0]));
        } while (seen != was);
    }
}

// `iters` steps of the logistic map on each element (grid-stride).
__kernel void logistic(__global float *v, uint n, uint iters) {
    uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n; i += stride) {
        float x = v[i];
        for (uint k = 0; k < iters; k++) x = 3.9f * x * (1.0f - x);
        v[i] = x;
    }
}

// GELU, tanh form (grid-stride).
__kernel void gelu(__global const float *x, __global float *out, uint n) {
    uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n; i += stride) {
        float v = x[i];
        float inner = (v + v * v * v * 0.044715f) * 0.7978845608028654f;
        out[i] = v * 0.5f * (tanh(inner) + 1.0f);
    }
}

// saxpy over halves in half storage: widen, compute in float, round once.
__kernel void saxpy_f16(float a, __global const half *x, __global half *y, uint n) {
    uint stride = get_global_size(0);
    for (uint i = get_global_id(0); i < n; i += stride)
        vstore_half(a * vload_half(i, x) + vload_half(i, y), i, y);
}

// Row softmax: one work-group of 256 per row, each work-item's 16 columns kept in registers
// (rows of 4096 columns), maximum and sum by trees in local memory.
static void reduce(__local float *red, uint t, int max_op) {
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint s = 128; s > 0; s /= 2) {
        if (t < s) red[t] = max_op ? fmax(red[t], red[t + s]) : red[t] + red[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel void softmax(__global const float *x, __global float *out, uint cols) {
    __local float red[256];
    uint t = get_local_id(0);
    uint row = get_group_id(0) * cols;
    float vals[16];
    float m = -INFINITY;
    for (uint k = 0; k < 16; k++) {
        uint j = t + k * 256;
        float v = j < cols ? x[row + j] : -INFINITY;
        vals[k] = v;
        m = fmax(m, v);
    }
    red[t] = m;
    reduce(red, t, 1);
    m = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    float sum = 0.0f;
    for (uint k = 0; k < 16; k++) {
        vals[k] = exp(vals[k] - m);
        sum += vals[k];
    }
    red[t] = sum;
    reduce(red, t, 0);
    float inv = 1.0f / red[0];
    for (uint k = 0; k < 16; k++) {
        uint j = t + k * 256;
        if (j < cols) out[row + j] = vals[k] * inv;
    }
}

// The 5-point stencil through an 18 x 18 local tile with halo (16 x 16 work-groups).
__kernel void stencil2d(__global const float *input, __global float *out, uint w, uint h) {
    __local float tile[18][18];
    uint tx = get_local_id(0), ty = get_local_id(1);
    uint bx = get_group_id(0) * 16, by = get_group_id(1) * 16;
    for (uint p = ty * 16 + tx; p < 324; p += 256) {
        uint ly = p / 18, lx = p % 18;
        uint gx = min(max(bx + lx, 1u) - 1u, w - 1u);
        uint gy = min(max(by + ly, 1u) - 1u, h - 1u);
        tile[ly][lx] = input[gy * w + gx];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = bx + tx, y = by + ty;
    if (x < w && y < h) {
        float c = tile[ty + 1][tx + 1];
        float around = tile[ty][tx + 1] + tile[ty + 2][tx + 1] + tile[ty + 1][tx] + tile[ty + 1][tx + 2];
        out[y * w + x] = c * 0.5f + around * 0.125f;
    }
}

// The 3 x 3 box blur through the same tile.
__kernel void blur3(__global const float *input, __global float *out, uint w, uint h) {
    __local float tile[18][18];
    uint tx = get_local_id(0), ty = get_local_id(1);
    uint bx = get_group_id(0) * 16, by = get_group_id(1) * 16;
    for (uint p = ty * 16 + tx; p < 324; p += 256) {
        uint ly = p / 18, lx = p % 18;
        uint gx = min(max(bx + lx, 1u) - 1u, w - 1u);
        uint gy = min(max(by + ly, 1u) - 1u, h - 1u);
        tile[ly][lx] = input[gy * w + gx];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = bx + tx, y = by + ty;
    if (x < w && y < h) {
        float sum = 0.0f;
        for (uint dy = 0; dy < 3; dy++)
            for (uint dx = 0; dx < 3; dx++) sum += tile[ty + dy][tx + dx];
        out[y * w + x] = sum * (1.0f / 9.0f);
    }
}

// c = a x b through 16 x 16 local tiles.
__kernel void matmul(__global const float *a, __global const float *b, __global float *c, uint n) {
    __local float ta[16][16], tb[16][16];
    uint tx = get_local_id(0), ty = get_local_id(1);
    uint row = get_group_id(1) * 16 + ty, col = get_group_id(0) * 16 + tx;
    float acc = 0.0f;
    for (uint k0 = 0; k0 < n; k0 += 16) {
        ta[ty][tx] = (row < n && k0 + tx < n) ? a[row * n + k0 + tx] : 0.0f;
        tb[ty][tx] = (k0 + ty < n && col < n) ? b[(k0 + ty) * n + col] : 0.0f;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = 0; k < 16; k++) acc += ta[ty][k] * tb[k][tx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (row < n && col < n) c[row * n + col] = acc;
}

// 256-bin histogram of the low byte: local bins with atomics, then one atomic per bin.
__kernel void histogram256(__global const uint *data, __global uint *bins, uint n) {
    __local uint local_bins[256];
    uint t = get_local_id(0);
    for (uint b = t; b < 256; b += get_local_size(0)) local_bins[b] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_global_id(0); i < n; i += get_global_size(0))
        atomic_inc(&local_bins[data[i] & 255u]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = t; k < 256; k += get_local_size(0)) {
        uint c = local_bins[k];
        if (c > 0) atomic_add(&bins[k], c);
    }
}
