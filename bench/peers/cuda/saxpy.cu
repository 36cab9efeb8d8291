// Grid-stride saxpy, y = alpha * x + y: the corpus's `saxpy_grid_stride` written by hand.
extern "C" __global__ void saxpy(float alpha, const float* __restrict__ x,
                                 float* __restrict__ y, unsigned int n) {
    unsigned int stride = gridDim.x * blockDim.x;
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = alpha * x[i] + y[i];
    }
}
