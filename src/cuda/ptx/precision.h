/* precision.h - the precisions the GPU stem computes in (pure: no device). fp32 and tf32
 * store float32, bf16 and fp16 their 16-bit types; tf32, bf16 and fp16 multiply on tensor
 * cores (kernels.h). Names and parsing are lower.c's. Included by the emitters (kernels.h)
 * and by the stem's runtime header (gpu.h). */
#ifndef WS_CUDA_PRECISION_H
#define WS_CUDA_PRECISION_H

typedef enum { WS_PREC_FP32 = 0, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 } ws_precision;

const char *ws_precision_name(ws_precision p);          /* "fp32", "tf32", "bf16", "fp16" */
int ws_precision_parse(const char *s, ws_precision *p); /* 0, or -1 if unknown */

#endif
