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
 * Then a GEMM's inner loop without its global loads: 8 warps of 64 x 32 (16 accumulator
 * sets a warp), each k step's fragments loaded from shared memory as 16-byte pairs (mode 1),
 * with a barrier every two k steps (mode 2), or with the next step's fragments loaded into a
 * second set of registers before this step's mma (mode 3).
 * Results: bench/RESULTS-gpu.md, section "float32 on the f64 tensor cores".
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
        if (cudaGetLastError() != cudaSuccess) {
            ms = -1;
            break;
        }
        cudaEventElapsedTime(&ms, e0, e1);
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    return ms;
}

#define MMA_F64(c, a, b)                                                                                    \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "       \
                 "{%0,%1,%2,%3};"                                                                                  \
                 : "+d"(c[0]), "+d"(c[1]), "+d"(c[2]), "+d"(c[3])                                                  \
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(b[0]), "d"(b[1]))

template <int MODE>
__global__ void gemm_loop(double *out, int iters)
{
    __shared__ double sm[2][256][16];
    const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5;
    for (int i = tid; i < 2 * 256 * 16; i += blockDim.x)
        (&sm[0][0][0])[i] = i * 1e-6;
    __syncthreads();
    double acc[4][4][4];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0;
    double a[2][4][4], b[2][4][2];
    const int g = lane >> 2, t = lane & 3, wm = w >> 2, wn = w & 3;
    const double *pa = &sm[0][wm * 64 + g][2 * t], *pb = &sm[0][128 + wn * 32 + g][2 * t];
    for (int mi = 0; mi < 4; mi++)
        for (int e = 0; e < 4; e++)
            a[0][mi][e] = a[1][mi][e] = pa[e];
    for (int ni = 0; ni < 4; ni++)
        for (int e = 0; e < 2; e++)
            b[0][ni][e] = b[1][ni][e] = pb[e];
    for (int it = 0; it < iters; it++) {
#pragma unroll
        for (int ks = 0; ks < 2; ks++) {
            const int cs = MODE == 3 ? ks : 0, ls = MODE == 3 ? ks ^ 1 : 0, lk = MODE == 3 ? ks ^ 1 : ks;
            if (MODE != 0) {
#pragma unroll
                for (int mi = 0; mi < 4; mi++) {
                    const double2 x = *(const double2 *)(pa + (it & 1) * 4096 + mi * 16 * 16 + lk * 8);
                    const double2 y = *(const double2 *)(pa + (it & 1) * 4096 + (mi * 16 + 8) * 16 + lk * 8);
                    a[ls][mi][0] = x.x, a[ls][mi][2] = x.y, a[ls][mi][1] = y.x, a[ls][mi][3] = y.y;
                }
#pragma unroll
                for (int ni = 0; ni < 4; ni++) {
                    const double2 x = *(const double2 *)(pb + (it & 1) * 4096 + ni * 8 * 16 + lk * 8);
                    b[ls][ni][0] = x.x, b[ls][ni][1] = x.y;
                }
            }
#pragma unroll
            for (int mi = 0; mi < 4; mi++)
#pragma unroll
                for (int ni = 0; ni < 4; ni++)
                    MMA_F64(acc[mi][ni], a[cs][mi], b[cs][ni]);
        }
        if (MODE == 2)
            __syncthreads();
    }
    double s = 0;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            for (int e = 0; e < 4; e++)
                s += acc[i][j][e];
    out[blockIdx.x * blockDim.x + tid] = s;
}

template <int MODE>
static void gemm_row(double *d, int sms, int iters)
{
    const float ms = timed([&] { gemm_loop<MODE><<<sms, 256>>>(d, iters); });
    const double macs = (double)sms * 8 * iters * 2 * 16 * 1024;
    if (ms > 0)
        printf("GEMM inner loop, mode %d, 8 warps a multiprocessor: %.3f ms, %.1f TFLOP/s\n", MODE, ms,
               2 * macs / ms / 1e9);
}

int main()
{
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    double *d = nullptr;
    float *f = nullptr;
    if (cudaMalloc(&d, (size_t)sms * 512 * sizeof *d) != cudaSuccess || /* 256 threads a block at most */
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
    gemm_row<0>(d, sms, iters);
    gemm_row<1>(d, sms, iters);
    gemm_row<2>(d, sms, iters);
    gemm_row<3>(d, sms, iters);
    cudaFree(d);
    cudaFree(f);
    return 0;
}
