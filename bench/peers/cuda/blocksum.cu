// One sum per block of 256 threads, a shared-memory tree reduction: the corpus's `block_sum`
// written by hand (launched with 256 threads per block).
extern "C" __global__ void blocksum(const float* __restrict__ input, float* __restrict__ out,
                                    unsigned int n) {
    __shared__ float sdata[256];
    unsigned int t = threadIdx.x;
    unsigned int i = blockIdx.x * blockDim.x + t;
    sdata[t] = i < n ? input[i] : 0.0f;
    __syncthreads();
    for (unsigned int s = blockDim.x / 2; s > 0; s /= 2) {
        if (t < s) {
            sdata[t] += sdata[t + s];
        }
        __syncthreads();
    }
    if (t == 0) {
        out[blockIdx.x] = sdata[0];
    }
}
