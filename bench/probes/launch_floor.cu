// The floor of a host call that launches one tiny kernel and waits for it, measured without
// Nacre, and which way of waiting is fastest on the machine. Built and run on the GPU machine
// (bench/h200.sh does both):
//
//   nvcc -O2 -o launch_floor bench/probes/launch_floor.cu -L/usr/local/cuda/lib64/stubs -lcuda
//   ./launch_floor
//   ./launch_floor spin        # the same with the context's scheduling set to spin
//
// Every mode launches `tiny<<<1, 32>>>` on the per-thread default stream and then waits by:
//   sync   cudaStreamSynchronize
//   event  an event recorded after the kernel, polled with cudaEventQuery
//   write  cuStreamWriteValue32 of a sequence number into pinned mapped host memory after the
//          kernel, polled with a volatile read
//   flag   the kernel itself stores the sequence number there, from its last thread to leave,
//          polled with a volatile read (and one stream sync every 64 calls)
//   nacre  Nacre's sequence through the driver API: cuCtxSetCurrent, cuLaunchKernel of a
//          one-thread kernel taking a counter and a mapped status word, cuCtxSetCurrent,
//          cuStreamSynchronize, a read of the status word
//   ticket Nacre's sequence as it is now: cuCtxSetCurrent, cuLaunchKernel, cuCtxSetCurrent,
//          then cuStreamWriteValue32 of a ticket polled in pinned memory, as `write` does
//   bare   cuLaunchKernel of the same kernel and the same ticket wait, no cuCtxSetCurrent
//   one    tiny<<<1, 1>>> (one thread) and cudaStreamSynchronize
//   graph  the one-thread kernel of `nacre` as a one-node CUDA graph instantiated once:
//          cuGraphLaunch and the ticket wait
//   graphp the same, its node's parameters set again before each launch
//          (cuGraphExecKernelNodeSetParams), as a replay that updates them does
//   l100   100 dependent launches of the one-thread kernel and one ticket wait
//   g100   the same 100 launches as a graph of 100 dependent nodes, launched and waited for
// It prints the median and 10th percentile of 5000 calls after 500 warm-up calls.
#include <cuda.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

__global__ void tiny(float *out, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] * 2.0f + 1.0f;
}

__global__ void tiny_status(unsigned *counter, unsigned *status) {
    counter[0] += 1u;
    if (counter[0] == 0xffffffffu) *status = 1u;
}

__global__ void tiny_flag(float *out, unsigned n, volatile unsigned *flag, unsigned *left,
                          unsigned seq) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = out[i] * 2.0f + 1.0f;
    __threadfence_system();
    if (atomicSub(left, 1u) == 1u) {
        *left = blockDim.x * gridDim.x;
        __threadfence_system();
        *flag = seq;
    }
}

static void check(cudaError_t e, const char *what) {
    if (e != cudaSuccess) {
        fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static void check_driver(CUresult e, const char *what) {
    if (e != CUDA_SUCCESS) {
        fprintf(stderr, "%s: error %d\n", what, (int)e);
        exit(1);
    }
}

int main(int argc, char **argv) {
    bool spin = argc > 1 && strcmp(argv[1], "spin") == 0;
    if (spin) check(cudaSetDeviceFlags(cudaDeviceScheduleSpin), "cudaSetDeviceFlags");
    check(cudaFree(0), "init");
    cudaStream_t s = cudaStreamPerThread;
    float *out;
    check(cudaMallocManaged(&out, 32 * sizeof(float)), "cudaMallocManaged");
    check(cudaMemset(out, 0, 32 * sizeof(float)), "cudaMemset");
    unsigned *host_flag, *dev_flag, *left;
    check(cudaHostAlloc((void **)&host_flag, 4, cudaHostAllocMapped | cudaHostAllocPortable),
          "cudaHostAlloc");
    check(cudaHostGetDevicePointer((void **)&dev_flag, host_flag, 0), "device pointer");
    check(cudaMalloc(&left, 4), "cudaMalloc");
    unsigned threads = 32;
    check(cudaMemcpy(left, &threads, 4, cudaMemcpyHostToDevice), "cudaMemcpy");
    *host_flag = 0;
    cudaEvent_t ev;
    check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreate");

    CUcontext ctx;
    check_driver(cuCtxGetCurrent(&ctx), "cuCtxGetCurrent");
    CUfunction status_fn;
    check(cudaGetFuncBySymbol(&status_fn, (const void *)tiny_status), "cudaGetFuncBySymbol");
    unsigned *counter;
    check(cudaMallocManaged(&counter, 4), "cudaMallocManaged");
    check(cudaMemset(counter, 0, 4), "cudaMemset");
    // One-node and 100-node graphs of the one-thread kernel.
    CUDA_KERNEL_NODE_PARAMS node = {};
    void *node_args[] = {&counter, &dev_flag};
    node.func = status_fn;
    node.gridDimX = node.gridDimY = node.gridDimZ = 1;
    node.blockDimX = node.blockDimY = node.blockDimZ = 1;
    node.kernelParams = node_args;
    CUgraphExec graph1, graph100;
    CUgraphNode node1;
    {
        CUgraph g;
        check_driver(cuGraphCreate(&g, 0), "cuGraphCreate");
        check_driver(cuGraphAddKernelNode(&node1, g, nullptr, 0, &node), "cuGraphAddKernelNode");
        check_driver(cuGraphInstantiate(&graph1, g, 0), "cuGraphInstantiate");
        CUgraph h;
        check_driver(cuGraphCreate(&h, 0), "cuGraphCreate");
        CUgraphNode prev;
        for (int i = 0; i < 100; i++) {
            CUgraphNode n;
            check_driver(cuGraphAddKernelNode(&n, h, i ? &prev : nullptr, i ? 1 : 0, &node),
                         "cuGraphAddKernelNode");
            prev = n;
        }
        check_driver(cuGraphInstantiate(&graph100, h, 0), "cuGraphInstantiate");
        check_driver(cuGraphUpload(graph1, CU_STREAM_PER_THREAD), "cuGraphUpload");
        check_driver(cuGraphUpload(graph100, CU_STREAM_PER_THREAD), "cuGraphUpload");
    }
    const char *modes[] = {"sync", "event", "write", "flag", "nacre", "ticket",
                           "bare", "one", "graph", "graphp", "l100", "g100"};
    unsigned seq = 0;
    for (const char *mode : modes) {
        std::vector<double> us;
        for (int k = 0; k < 5500; k++) {
            auto t0 = std::chrono::steady_clock::now();
            seq++;
            if (!strcmp(mode, "nacre")) {
                check_driver(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
                void *params[] = {&counter, &dev_flag};
                check_driver(cuLaunchKernel(status_fn, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD,
                                            params, nullptr),
                             "cuLaunchKernel");
                check_driver(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
                check_driver(cuStreamSynchronize(CU_STREAM_PER_THREAD), "cuStreamSynchronize");
                volatile unsigned status = *(volatile unsigned *)host_flag;
                (void)status;
            } else if (!strcmp(mode, "ticket") || !strcmp(mode, "bare")) {
                bool bind = !strcmp(mode, "ticket");
                if (bind) check_driver(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
                void *params[] = {&counter, &dev_flag};
                check_driver(cuLaunchKernel(status_fn, 1, 1, 1, 1, 1, 1, 0, CU_STREAM_PER_THREAD,
                                            params, nullptr),
                             "cuLaunchKernel");
                if (bind) check_driver(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
                check_driver(cuStreamWriteValue32(CU_STREAM_PER_THREAD, (CUdeviceptr)dev_flag, seq,
                                                  0),
                             "cuStreamWriteValue32");
                while (*(volatile unsigned *)host_flag != seq) {
                }
            } else if (!strncmp(mode, "graph", 5) || !strcmp(mode, "g100") ||
                       !strcmp(mode, "l100")) {
                if (!strcmp(mode, "graphp"))
                    check_driver(cuGraphExecKernelNodeSetParams(graph1, node1, &node),
                                 "cuGraphExecKernelNodeSetParams");
                if (!strcmp(mode, "l100")) {
                    void *params[] = {&counter, &dev_flag};
                    for (int i = 0; i < 100; i++)
                        check_driver(cuLaunchKernel(status_fn, 1, 1, 1, 1, 1, 1, 0,
                                                    CU_STREAM_PER_THREAD, params, nullptr),
                                     "cuLaunchKernel");
                } else {
                    check_driver(cuGraphLaunch(!strcmp(mode, "g100") ? graph100 : graph1,
                                               CU_STREAM_PER_THREAD),
                                 "cuGraphLaunch");
                }
                check_driver(cuStreamWriteValue32(CU_STREAM_PER_THREAD, (CUdeviceptr)dev_flag, seq,
                                                  0),
                             "cuStreamWriteValue32");
                while (*(volatile unsigned *)host_flag != seq) {
                }
            } else if (!strcmp(mode, "one")) {
                tiny<<<1, 1, 0, s>>>(out, 1);
                check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
            } else if (!strcmp(mode, "flag")) {
                tiny_flag<<<1, 32, 0, s>>>(out, 32, dev_flag, left, seq);
                while (*(volatile unsigned *)host_flag != seq) {
                }
            } else {
                tiny<<<1, 32, 0, s>>>(out, 32);
                if (!strcmp(mode, "sync")) {
                    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
                } else if (!strcmp(mode, "event")) {
                    check(cudaEventRecord(ev, s), "cudaEventRecord");
                    cudaError_t e;
                    while ((e = cudaEventQuery(ev)) == cudaErrorNotReady) {
                    }
                    check(e, "cudaEventQuery");
                } else {
                    check_driver(cuStreamWriteValue32((CUstream)s, (CUdeviceptr)dev_flag, seq, 0),
                                 "cuStreamWriteValue32");
                    while (*(volatile unsigned *)host_flag != seq) {
                    }
                }
            }
            auto t1 = std::chrono::steady_clock::now();
            if (!strcmp(mode, "flag") && k % 64 == 63) {
                check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
            }
            if (k >= 500) us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
        }
        check(cudaGetLastError(), mode);
        std::sort(us.begin(), us.end());
        printf("%-5s %-6s median %6.2f us  p10 %6.2f us\n", spin ? "spin" : "auto", mode,
               us[us.size() / 2], us[us.size() / 10]);
    }
    check(cudaStreamSynchronize(s), "final cudaStreamSynchronize");
    return 0;
}
