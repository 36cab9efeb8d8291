// The launch-latency kernel: one thread adds one to a counter.
extern "C" __global__ void tiny(unsigned int* counter) {
    counter[0] = counter[0] + 1u;
}
