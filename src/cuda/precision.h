/* precision.h - the precisions the GPU stem computes in (pure: no device). Each is one math
 * of the conv engine (include/ws_conv.h) for both of the stem's convs: fp32 WS_MATH_F32,
 * tf32 WS_MATH_TF32, bf16 WS_MATH_BF16, fp16 WS_MATH_F16; fp32 and tf32 store the
 * intermediate (conv1's y) as float32, bf16 and fp16 as their 16-bit types (ws_stem_descs,
 * whisper/stem.h, writes the descriptors). Names and parsing: precision.c. Included by the
 * stem's runtime header (gpu.h). */
#ifndef WS_CUDA_PRECISION_H
#define WS_CUDA_PRECISION_H

typedef enum { WS_PREC_FP32 = 0, WS_PREC_TF32, WS_PREC_BF16, WS_PREC_FP16 } ws_precision;

const char *ws_precision_name(ws_precision p);          /* "fp32", "tf32", "bf16", "fp16" */
int ws_precision_parse(const char *s, ws_precision *p); /* 0, or -1 if unknown */

#endif
