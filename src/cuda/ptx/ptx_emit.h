/* ptx_emit.h - a small assembler-listing writer for PTX kernels.
 *
 * Every kernel in whisper-stem is written with this API: registers come from
 * per-class counters and are declared at the top of the kernel when it is
 * finished, labels are numbered, instructions are printf-formatted lines,
 * float constants are exact 0f bit patterns, and section comments keep the
 * listing readable. Emission is a pure function of its inputs: the same
 * calls give byte-identical text. The buffer's error flag is sticky: after
 * an allocation failure or a misuse every later call is a no-op and
 * ws_ptx_take() returns NULL with the first reason.
 *
 * Usage:
 *   ptx_buf k; ws_ptx_init(&k);
 *   preg x = ws_ptx_reg(&k, PTX_F32);
 *   ws_ptx_ins(&k, "mov.f32 %s, %s", x.n, ws_ptx_f32(1.5f).s);
 *   ws_ptx_module_begin(&mod, 9, 0);                 // .version/.target from the CC
 *   ws_ptx_kernel_end(&k, &mod, "name", "\t.param .u64 p0", 256, 0);
 *   char *text = ws_ptx_take(&mod, why, sizeof why);
 * Tested by tests/test_ptx.c (emitter_is_deterministic, emitter_error_is_sticky, ...).
 */
#ifndef WS_CUDA_PTX_EMIT_H
#define WS_CUDA_PTX_EMIT_H

#include <stddef.h>

/* PTX_F64 ("%fd", .f64) comes last: a kernel that uses none declares none, so the text of
 * kernels written before it is unchanged. */
typedef enum { PTX_PRED = 0, PTX_B16, PTX_B32, PTX_B64, PTX_F32, PTX_F64, PTX_NCLASS } ptx_rclass;

typedef struct { char n[16]; } preg;   /* register name, e.g. "%f12" */
typedef struct { char n[40]; } plabel; /* label name, e.g. "$Lktile_3" */
typedef struct { char s[16]; } pimm;   /* immediate text, e.g. "0f3F800000" */

typedef struct {
    char *text;
    size_t len, cap;
    int err;            /* sticky */
    char why[160];      /* first failure */
    int nreg[PTX_NCLASS];
    int nlabel;
} ptx_buf;

void ws_ptx_init(ptx_buf *b);
void ws_ptx_free(ptx_buf *b);

/* Marks the buffer failed (first reason kept). */
void ws_ptx_fail(ptx_buf *b, const char *why);

/* Appends formatted text as is. */
void ws_ptx_raw(ptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One instruction: tab, text, ";\n". */
void ws_ptx_ins(ptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "\t// text\n" */
void ws_ptx_comment(ptx_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A blank line and "\t// ---- title ----". */
void ws_ptx_section(ptx_buf *b, const char *title);

preg ws_ptx_reg(ptx_buf *b, ptx_rclass c);
plabel ws_ptx_label_new(ptx_buf *b, const char *stem);
void ws_ptx_label(ptx_buf *b, plabel l);

/* Exact bit patterns: ws_ptx_f32(1.0f).s == "0f3F800000". */
pimm ws_ptx_f32(float v);

/* .version / .target for a compute capability (8.0 and later; newer than the
 * newest known one get sm_90 PTX, which the driver JIT-compiles forward).
 * Returns 0, or -1 for capabilities below 8.0. */
int ws_ptx_target_for(int cc_major, int cc_minor, char version[8], char target[16]);

/* Starts a module: header comment, .version, .target, .address_size 64. */
void ws_ptx_module_begin(ptx_buf *mod, int cc_major, int cc_minor, const char *title);

/* Starts a module for sm_90a (the architecture-specific features of compute capability 9.0:
 * wgmma), PTX ISA 8.0. */
void ws_ptx_module_begin_sm90a(ptx_buf *mod, const char *title);

/* Wraps kernel body k into mod as ".visible .entry name(params) .maxntid n"
 * (and ".minnctapersm min_blocks" when min_blocks > 0, which caps registers
 * so that many blocks fit on a multiprocessor) with the register
 * declarations its counters call for; frees k's text. A failure of k
 * propagates to mod. */
void ws_ptx_kernel_end(ptx_buf *k, ptx_buf *mod, const char *name, const char *params, int maxntid,
                    int min_blocks);
/* The same with ".maxnreg max_regs" (max_regs > 0): ptxas otherwise caps registers to keep
 * more blocks resident, and spills a kernel that streams through a ring of registers. */
void ws_ptx_kernel_end_regs(ptx_buf *k, ptx_buf *mod, const char *name, const char *params,
                         int maxntid, int min_blocks, int max_regs);
/* The same with ".reqnctapercluster cluster, 1, 1" (cluster > 1): blocks launched in clusters
 * of that many, without a launch attribute */
void ws_ptx_kernel_end_cl(ptx_buf *k, ptx_buf *mod, const char *name, const char *params, int maxntid,
                          int min_blocks, int max_regs, int cluster);

/* Hands the text over (caller frees) and resets b; NULL with why on error. */
char *ws_ptx_take(ptx_buf *b, char *why, size_t why_len);

#endif
