/* peak_mma_f64.cu - the f64 tensor cores' rate (mma.sync m16n8k4 / m16n8k8 .f64) beside an
 * FFMA loop, on one block per multiprocessor of 4 or 8 warps, operands in registers: the
 * ceiling a float32 GEMM on the f64 tensor cores could reach (products of float32 values are
 * exact in f64). Not part of the build (the project emits its PTX from C); built by hand with
 * the CUDA toolkit and run on the GPU machine:
 *
 *     nvcc -O3 -arch=sm_90a -o build-gpu/peak_mma_f64 bench/peak_mma_f64.cu
 *     build-gpu/peak_mma_f64
 *
 * Each warp runs 8 independent accumulator sets through `iters` rounds; the FFMA loop is
 * 64 FMAs and 8 adds a round (89 % FMA instructions), so it sits below the FFMA peak.
 * Results: bench/RESULTS-gpu.md, section "the float32 GEMM on the f64 tensor cores".
 */
#include <cstdio>
#include <cuda_runtime.h>

template <int KS>
__global__ void dmma_loop(double *out, int iters)
{
    double a[4], b[2], c[8][4];
    for (int i = 0; i < 4; i++)
        a[i] = threadIdx.x * 1e-3 + i;
    for (int i = 0; i < 2; i++)
        b[i] = threadIdx.x * 2e-3 + i;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 4; i++)
            c[j][i] = 0;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < 8; j++) {
            if (KS == 8)
                asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
                             "{%8,%9}, {%0,%1,%2,%3};"
                             : "+d"(c[j][0]), "+d"(c[j][1]), "+d"(c[j][2]), "+d"(c[j][3])
                             : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]));
            else
                asm volatile("mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
                             "{%0,%1,%2,%3};"
                             : "+d"(c[j][0]), "+d"(c[j][1]), "+d"(c[j][2]), "+d"(c[j][3])
                             : "d"(a[0]), "d"(a[1]), "d"(b[0]));
        }
    }
    double s = 0;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 4; i++)
            s += c[j][i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void ffma_loop(float *out, int iters)
{
    float a[8], b[8], c[8][8];
    for (int i = 0; i < 8; i++) {
        a[i] = threadIdx.x * 1e-3f + i;
        b[i] = threadIdx.x * 2e-3f - i;
    }
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++)
            c[j][i] = 0;
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int j = 0; j < 8; j++)
#pragma unroll
            for (int i = 0; i < 8; i++)
                c[j][i] = fmaf(a[j], b[i], c[j][i]);
#pragma unroll
        for (int i = 0; i < 8; i++)
            a[i] += 1e-7f;
    }
    float s = 0;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 8; i++)
            s += c[j][i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

/* the second of two timed launches, ms; -1 where the launch failed */
template <typename F>
static float timed(F launch)
{
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float ms = -1;
    for (int r = 0; r < 2; r++) {
        cudaEventRecord(e0);
        launch();
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        if (cudaGetLastError() != cudaSuccess)
            return -1;
        cudaEventElapsedTime(&ms, e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms;
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    double *d = nullptr;
    float *f = nullptr;
    if (cudaMalloc(&d, (size_t)sms * 512 * sizeof *d) != cudaSuccess ||
        cudaMalloc(&f, (size_t)sms * 512 * sizeof *f) != cudaSuccess) {
        fprintf(stderr, "peak_mma_f64: no device memory\n");
        return 1;
    }
    const int iters = 2000;
    for (int w = 4; w <= 8; w *= 2) {
        for (int ks = 4; ks <= 8; ks += 4) {
            const float ms = timed([&] {
                if (ks == 8)
                    dmma_loop<8><<<sms, 32 * w>>>(d, iters);
                else
                    dmma_loop<4><<<sms, 32 * w>>>(d, iters);
            });
            const double macs = (double)sms * w * iters * 8 * 16 * 8 * ks;
            if (ms > 0)
                printf("mma.sync m16n8k%d f64, %d warps a multiprocessor: %.3f ms, %.1f TFLOP/s\n", ks, w, ms,
                       2 * macs / ms / 1e9);
        }
        const float ms = timed([&] { ffma_loop<<<sms, 32 * w>>>(f, iters * 4); });
        const double macs = (double)sms * w * 32 * iters * 4 * 64;
        if (ms > 0)
            printf("FFMA loop, %d warps a multiprocessor: %.3f ms, %.1f TFLOP/s\n", w, ms, 2 * macs / ms / 1e9);
    }
    cudaFree(d);
    cudaFree(f);
    return 0;
}
