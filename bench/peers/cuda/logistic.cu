// Grid-stride logistic map, `iters` steps of v = 3.9 v (1 - v) per element: the corpus's
// `logistic` written by hand.
extern "C" __global__ void logistic(float* __restrict__ v, unsigned int n, unsigned int iters) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float x = v[i];
        for (unsigned int k = 0; k < iters; ++k) {
            x = 3.9f * x * (1.0f - x);
        }
        v[i] = x;
    }
}
