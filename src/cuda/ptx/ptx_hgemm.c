/* ptx_hgemm.c - the Hopper implicit GEMM's emitter; tiles, threads and parameters in
 * ptx_hgemm.h. Emission is a pure function of the descriptor. Tested by tests/test_ptx.c and
 * tests/test_gpu_conv.c.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_act.h"
#include "ptx_emit.h"
#include "ptx_epi.h"
#include "ptx_gemm.h"
#include "ptx_hbwd.h"
#include "ptx_hgemm.h"
#include "ptx_params.h"

#define I(...) ws_ptx_ins(b, __VA_ARGS__)
#define ST (q->st)
#define SB (q->sb)
#define BMQ (q->bm)            /* the tile's rows: 128, or 64 (the narrow tile) */
#define NCT (128 * q->nc)      /* the consumers' threads */
#define A_BYTES (BMQ * 128)
#define BN (q->bn)
#define NACC_MAX (WS_HGEMM_BN / 2) /* accumulators a consumer thread: 64 rows x BN / 128 threads */
#define YS_ROW (BN + 4) /* NCL y: the epilogue's Ys row in floats, 16-byte aligned (the vector reads) */
/* NLC y: Ys[BN][YS_NLC], a position's BM rows (+ 4: the accumulators' stores hit 32 banks, a
 * row's 16-byte groups stay aligned) */
#define YS_NLC (BMQ + 4)
#define PREP_TILE 32
/* the tile queue after the ring's mbarriers (from bars): tfull[TQ], tempty[TQ], the tiles */
#define TQ_FULL (8 * (2 * ST + 1))
#define TQ_EMPTY (TQ_FULL + 8 * WS_HGEMM_TQ)
#define TQ_TILE (TQ_EMPTY + 8 * WS_HGEMM_TQ)
/* the _prep8 entry: blocks of 16 KiB, 16 chunks of 16 bytes a row, 4 a thread (blocks of 256
 * 16-bit times, 32 KiB: 6 % slower, H200) */
#define PREP8_CPR 16
#define PREP8_NL 4

_Static_assert(WS_HGEMM_BM * 128 + WS_HGEMM_BN * 128 == WS_HGEMM_STAGE_BYTES && (1 << WS_HGEMM_LGBN) == WS_HGEMM_BN &&
               WS_HGEMM_BM * 128 + WS_HGEMM_BN_S * 128 == WS_HGEMM_STAGE_BYTES_S && (1 << WS_HGEMM_LGBN_S) == WS_HGEMM_BN_S,
               "a stage is A then B, 128-byte rows");
_Static_assert(2 * WS_HGEMM_THREADS_S * WS_HGEMM_MAXNREG_S <= 65536 && 2 * (WS_HGEMM_SMEM_S + 1024) <= 228 * 1024,
               "two blocks of the small tile fit an SM: the register file, shared memory");
_Static_assert(3 * WS_HGEMM_THREADS_N * WS_HGEMM_MAXNREG_N <= 65536 && 3 * (WS_HGEMM_SMEM_N + 1024) <= 228 * 1024,
               "three blocks of the narrow tile fit an SM");
_Static_assert(WS_HGEMM_SMEM + 1024 <= 228 * 1024, "a block of the large tile fits an SM");
_Static_assert(WS_HGEMM_TQ == 4, "the tile queue: slot j & 3, parity (j >> 2) & 1");
_Static_assert((WS_HGEMM_YEND(WS_HGEMM_STAGES_S, WS_HGEMM_STAGE_BYTES_N, WS_HGEMM_BM_N, WS_HGEMM_BN_S) -
                WS_HGEMM_YS(WS_HGEMM_BM_N, WS_HGEMM_BN_S)) % 16 == 0 &&
                   WS_HGEMM_YEND(WS_HGEMM_STAGES_S, WS_HGEMM_STAGE_BYTES_N, WS_HGEMM_BM_N, WS_HGEMM_BN_S) % 16 == 0,
               "the tile loop's Ys (the narrow tile) 16-byte aligned: the vector epilogues");

/* the epilogue's place: in the tile loop, Ys and Bs end at yend, past stage 0 (WS_HGEMM_YEND);
 * a block of one tile puts them at the ring's base. The dynamic shared memory to match (at most
 * WS_HGEMM_SMEM_OF) */
static void hg_layout(ws_hgemm_cfg *q)
{
    const int ys = WS_HGEMM_YS(q->bm, q->bn);
    q->yend = q->loop ? WS_HGEMM_YEND(q->st, q->sb, q->bm, q->bn) : WS_HGEMM_YS_MAX(q->st * q->sb, ys);
    q->yoff = q->loop ? q->yend - ys : 0;
    q->smem = 1024 + q->yend + 8 * (2 * q->st + 1) + 16 * WS_HGEMM_TQ + 4 * WS_HGEMM_TQ;
}

void ws_hgemm_cfg_large(ws_hgemm_cfg *q)
{
    *q = (ws_hgemm_cfg){ .bn = WS_HGEMM_BN, .lgbn = WS_HGEMM_LGBN, .st = WS_HGEMM_STAGES,
                         .sb = WS_HGEMM_STAGE_BYTES, .smem = WS_HGEMM_SMEM, .minb = 1, .maxnreg = 168,
                         .preg = 40, .creg = 232, .threads = WS_HGEMM_THREADS, .pwg = 0,
                         .bm = WS_HGEMM_BM, .nc = 2 };
    hg_layout(q);
}

int ws_hgemm_small(const ws_conv_desc *d)
{
    const int bk = ws_hgemm_bkc(d);
    return (long long)d->k * ((d->c_in + bk - 1) / bk) <= WS_HGEMM_SMALL_KT;
}

void ws_hgemm_cfg_of(const ws_conv_desc *d, ws_hgemm_cfg *q)
{
    if (!ws_hgemm_small(d)) {
        ws_hgemm_cfg_large(q);
        return;
    }
    if (d->c_out <= WS_HGEMM_BM_N) { /* the narrow tile: warpgroup 0 consumes, warp 4 produces */
        *q = (ws_hgemm_cfg){ .bn = WS_HGEMM_BN_S, .lgbn = WS_HGEMM_LGBN_S, .st = WS_HGEMM_STAGES_S,
                             .sb = WS_HGEMM_STAGE_BYTES_N, .smem = WS_HGEMM_SMEM_N, .minb = 3,
                             .maxnreg = WS_HGEMM_MAXNREG_N, .preg = 0, .creg = 0,
                             .threads = WS_HGEMM_THREADS_N, .pwg = 1, .bm = WS_HGEMM_BM_N, .nc = 1,
                             .loop = 1 };
        hg_layout(q);
        return;
    }
    *q = (ws_hgemm_cfg){ .bn = WS_HGEMM_BN_S, .lgbn = WS_HGEMM_LGBN_S, .st = WS_HGEMM_STAGES_S,
                         .sb = WS_HGEMM_STAGE_BYTES_S, .smem = WS_HGEMM_SMEM_S, .minb = 2,
                         .maxnreg = WS_HGEMM_MAXNREG_S, .preg = 0, .creg = 0,
                         .threads = WS_HGEMM_THREADS_S, .pwg = 2, .bm = WS_HGEMM_BM, .nc = 2 };
    hg_layout(q);
}

int ws_hgemm_fits(const ws_conv_desc *d, int cc_major, int cc_minor)
{
    /* the shortest sums and narrowest outputs stay on the gemm kernel of ptx_gemm.h. Jukebox's
     * C64 K3 (3 stages of a half-empty tile) on the small tile: H100 before the vector
     * epilogues, bf16, 188 us against that kernel's 165; H200 with them, 79.6-81.0 NLC and
     * 124.9-126.3 NCL against 163-167 (tf32 NLC 221 against 280); on the narrow tile since,
     * 55.4-57.2 NLC and 94.8-96.0 NCL. TF32 with channel-first x
     * keeps the earlier bounds (6 stages, C_out over 64): staging its 4-byte x costs more than
     * the kernel saves there (Jukebox tf32 NCL 226.6-229.8 against 202.4-202.6) */
    const long long kt = (long long)d->k * ((d->c_in + ws_hgemm_bkc(d) - 1) / ws_hgemm_bkc(d));
    return cc_major == 9 && cc_minor == 0 && ws_hgemm_emits(d) && kt >= WS_HGEMM_MIN_STAGES &&
           d->c_out >= WS_HGEMM_MIN_COUT &&
           !(d->math == WS_MATH_TF32 && d->x_layout == WS_NCL && (kt < 6 || d->c_out <= 64));
}

int ws_hgemm_emits(const ws_conv_desc *d)
{
    /* ws_gemm_mma: the plan packs the tensor-core weights this kernel reads */
    return WS_HGEMM && ws_gemm_mma(d) && d->c_in % 16 == 0 && ws_gemm_mma_kmajor(d) && d->stride <= 8;
}

int ws_hgemm_bkc(const ws_conv_desc *d)
{
    return 128 / ws_hgemm_xbytes(d);
}

int ws_hgemm_xbytes(const ws_conv_desc *d)
{
    return d->math == WS_MATH_TF32 ? 4 : 2;
}

/* the staged x's type: the math type, TF32 kept in float32 (rounded) */
static ws_dtype math_type(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? WS_BF16 : d->math == WS_MATH_F16 ? WS_F16 : WS_F32;
}

static const char *math_name(const ws_conv_desc *d)
{
    return d->math == WS_MATH_BF16 ? "bf16" : d->math == WS_MATH_F16 ? "f16" : "tf32";
}

int ws_hgemm_staged(const ws_conv_desc *d)
{
    /* TF32: the staging rounds x to TF32 as every TF32 kernel does (cvt.rna); read in place
     * by the kernel's own entry, the tensor cores would truncate it. A call that takes the
     * "_mn" entry (NCL x read in place, rounded in its transpose) is not staged: the plan's
     * call test (gpu_conv.c) overrides this */
    return d->math == WS_MATH_TF32 || d->x_layout != WS_NLC || d->x_type != math_type(d) ||
           d->pre != WS_ACT_NONE;
}

int ws_hgemm_mn(const ws_conv_desc *d)
{
    /* every tap's first time D*k - P_L (plus t0, a multiple of the block's times) a multiple
     * of 16 bytes of elements (8 16-bit, 4 float32): the copy engine takes a box whose
     * innermost start is 16-byte aligned, and only such */
    const int m = 16 / ws_hgemm_xbytes(d);
    return (d->math == WS_MATH_BF16 || d->math == WS_MATH_F16 || d->math == WS_MATH_TF32) &&
           d->x_layout == WS_NCL && d->x_type == math_type(d) && d->pre == WS_ACT_NONE && d->stride == 1 &&
           d->pad_l % m == 0 && (d->k == 1 || d->dilation % m == 0);
}

int ws_hgemm_mn_call(const ws_conv_desc *d, int lgtb, long long t_in, uint64_t x)
{
    /* TB at least a block's times (ws_hgemm_bkc: 64, or 32 float32), rows of x 16-byte aligned */
    return ws_hgemm_mn(d) && (1 << lgtb) >= ws_hgemm_bkc(d) && x % 16 == 0 && t_in % (16 / ws_hgemm_xbytes(d)) == 0;
}

int ws_hgemm_lgtb(const ws_conv_desc *d, int t_out)
{
    ws_hgemm_cfg q;
    ws_hgemm_cfg_of(d, &q);
    int lg = q.lgbn;
    while (lg > 3 && (1 << (lg - 1)) >= t_out)
        lg--;
    while ((1 << lg) * d->stride > 256)
        lg--;
    return lg;
}

void ws_hgemm_name(const ws_conv_desc *d, char name[WS_HGEMM_NAME_MAX])
{
    snprintf(name, WS_HGEMM_NAME_MAX, "ws_hgemm_%s_c%d_%d_k%d_s%d_d%d_p%d_%s_%s_%s_%s_%s_%s",
             math_name(d), d->c_in, d->c_out, d->k, d->stride,
             d->dilation, d->pad_l, d->x_layout == WS_NCL ? "ncl" : "nlc",
             d->y_layout == WS_NCL ? "ncl" : "nlc", ws_ptx_type_name(d->x_type),
             ws_ptx_type_name(d->y_type), ws_ptx_act_name(d->pre), ws_ptx_act_name(d->act));
}

void ws_hgemm_wait(ptx_buf *b, preg bar, preg parity, int cluster)
{
    preg done = ws_ptx_reg(b, PTX_PRED);
    plabel l = ws_ptx_label_new(b, "wait");
    ws_ptx_label(b, l);
    I("mbarrier.try_wait.parity%s.shared::cta.b64 %s, [%s], %s", cluster ? ".acquire.cluster" : "", done.n, bar.n,
      parity.n);
    I("@!%s bra %s", done.n, l.n);
}

static void emit_wait(ptx_buf *b, preg bar, preg parity)
{
    ws_hgemm_wait(b, bar, parity, 0);
}

/* a shared-memory matrix descriptor at addr: start >> 4 (bits 0-13), leading byte offset lbo
 * >> 4 (bits 16-29), stride byte offset sbo >> 4 (bits 32-45), the layout (bits 62-63) */
static void emit_desc_at(ptx_buf *b, preg desc, preg addr, unsigned lbo, unsigned sbo, unsigned layout)
{
    preg lo = ws_ptx_reg(b, PTX_B32), hi = ws_ptx_reg(b, PTX_B32);
    I("shr.u32 %s, %s, 4", lo.n, addr.n);
    I("and.b32 %s, %s, 16383", lo.n, lo.n);
    I("or.b32 %s, %s, %u", lo.n, lo.n, (lbo >> 4) << 16);
    I("mov.u32 %s, %u", hi.n, (sbo >> 4) | (layout << 30));
    I("mov.b64 %s, {%s, %s}", desc.n, lo.n, hi.n);
}

void ws_hgemm_desc(ptx_buf *b, preg desc, preg addr, int row_bytes)
{
    /* leading byte offset 16 (field 1: unused with a swizzle) */
    emit_desc_at(b, desc, addr, 16, 8u * (unsigned)row_bytes, row_bytes == 128 ? 1u : 2u);
}

static void emit_desc(ptx_buf *b, preg desc, preg addr)
{
    ws_hgemm_desc(b, desc, addr, 128);
}

/* the MN-major descriptor of channel-first x's B (q->mn): rows of 64 positions (128 bytes,
 * the 128-byte swizzle) for each channel; leading byte offset 8192 (the next 64 positions:
 * the next block), stride byte offset 1024 (the next 8 channels) */
static void emit_desc_mn(ptx_buf *b, preg desc, preg addr)
{
    emit_desc_at(b, desc, addr, 8192, 1024, 1);
}

/* the ring's next stage: s = (s + 1) % ST, u += (s wrapped) (u named), it += 1; back to top while
 * it < KT (the producer's and the consumers' loops step alike); wrap a scratch predicate */
static void emit_ring_next(ptx_buf *b, const ws_hgemm_cfg *q, preg wrap, preg s, preg u, preg it, const char *KT,
                           plabel top)
{
    preg more = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, 1", s.n, s.n);
    I("setp.eq.u32 %s, %s, %d", wrap.n, s.n, ST);
    I("@%s mov.u32 %s, 0", wrap.n, s.n);
    if (u.n[0])
        I("@%s add.u32 %s, %s, 1", wrap.n, u.n, u.n);
    I("add.u32 %s, %s, 1", it.n, it.n);
    I("setp.lt.u32 %s, %s, %s", more.n, it.n, KT);
    I("@%s bra %s", more.n, top.n);
}

/* tid, the ring's base sbase (the dynamic shared memory aligned to 1024 bytes) and its
 * mbarriers bars after the stages and the epilogue's Ys (q->yend) */
static void emit_ring_base(ptx_buf *b, const ws_hgemm_cfg *q, preg *tid, preg *sbase, preg *bars)
{
    *tid = ws_ptx_reg(b, PTX_B32), *sbase = ws_ptx_reg(b, PTX_B32), *bars = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%tid.x", tid->n);
    I("mov.u32 %s, smem", sbase->n);
    I("add.u32 %s, %s, 1023", sbase->n, sbase->n);
    I("and.b32 %s, %s, -1024", sbase->n, sbase->n);
    I("add.u32 %s, %s, %d", bars->n, sbase->n, q->yend);
}

/* the ring's mbarriers initialised by the producer's thread, the block synchronised, wg = tid / 128 */
static void emit_ring_init(ptx_buf *b, const ws_hgemm_cfg *q, preg tid, preg bars, preg wg)
{
    {
        preg not0 = ws_ptx_reg(b, PTX_PRED);
        plabel skip = ws_ptx_label_new(b, "init_done");
        I("setp.ne.u32 %s, %s, %d", not0.n, tid.n, 128 * q->pwg);
        I("@%s bra %s", not0.n, skip.n);
        ws_ptx_comment(b, "full[s]: one arrival (the producer's, with the stage's bytes); empty[s] and epi "
                          "(a tile's epilogue done with Ys): %d (every consumer)", NCT);
        for (int s = 0; s < ST; s++) {
            I("mbarrier.init.shared::cta.b64 [%s+%d], 1", bars.n, 8 * s);
            I("mbarrier.init.shared::cta.b64 [%s+%d], %d", bars.n, 8 * (ST + s), NCT);
        }
        I("mbarrier.init.shared::cta.b64 [%s+%d], %d", bars.n, 16 * ST, NCT);
        ws_ptx_comment(b, "the tile queue: tfull[j] one arrival (the producer's), tempty[j] %d", NCT);
        for (int j = 0; j < WS_HGEMM_TQ; j++) {
            I("mbarrier.init.shared::cta.b64 [%s+%d], 1", bars.n, TQ_FULL + 8 * j);
            I("mbarrier.init.shared::cta.b64 [%s+%d], %d", bars.n, TQ_EMPTY + 8 * j, NCT);
        }
        I("fence.mbarrier_init.release.cluster");
        ws_ptx_label(b, skip);
    }
    I("bar.sync 0");
    I("shr.u32 %s, %s, 7", wg.n, tid.n);
}

/* the producer's slot s for its use u: waits until the consumers released its use u - 1
 * (not on the first round), then arms full[s] with a stage's bytes; *full, *sa, *sbb: the
 * barrier and the stage's A and B addresses */
static void emit_slot(ptx_buf *b, const ws_hgemm_cfg *q, preg s, preg u, preg bars, preg sbase, plabel nowait, preg *fullp,
                      preg *sap, preg *sbbp)
{
    preg full = ws_ptx_reg(b, PTX_B32), empty = ws_ptx_reg(b, PTX_B32), first = ws_ptx_reg(b, PTX_PRED);
    preg sa = ws_ptx_reg(b, PTX_B32), sbb = ws_ptx_reg(b, PTX_B32), par = ws_ptx_reg(b, PTX_B32);
    I("mad.lo.u32 %s, %s, 8, %s", full.n, s.n, bars.n);
    I("add.u32 %s, %s, %d", empty.n, full.n, 8 * ST);
    I("setp.eq.u32 %s, %s, 0", first.n, u.n);
    I("@%s bra %s", first.n, nowait.n);
    ws_ptx_comment(b, "slot s free: its use u - 1 released by both consumers");
    I("add.u32 %s, %s, 1", par.n, u.n);
    I("and.b32 %s, %s, 1", par.n, par.n);
    emit_wait(b, empty, par);
    ws_ptx_label(b, nowait);
    I("mad.lo.u32 %s, %s, %d, %s", sa.n, s.n, SB, sbase.n);
    I("add.u32 %s, %s, %d", sbb.n, sa.n, A_BYTES);
    I("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %d", full.n, SB);
    *fullp = full, *sap = sa, *sbbp = sbb;
}

/* a producer's start: the section title, setmaxnreg where the tile has it, every thread but
 * the producer's to out; the tensor maps p_ta, p_tb into *ta, *tb */
static void emit_producer_head(ptx_buf *b, const ws_hgemm_cfg *q, preg tid, const char *title, plabel out, preg *ta,
                               preg *tb)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_HGEMM);
    preg not0 = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_section(b, title);
    if (q->preg)
        I("setmaxnreg.dec.sync.aligned.u32 %d", q->preg);
    I("setp.ne.u32 %s, %s, %d", not0.n, tid.n, 128 * q->pwg);
    I("@%s bra %s", not0.n, out.n);
    *ta = ws_ptx_reg(b, PTX_B64), *tb = ws_ptx_reg(b, PTX_B64);
    ws_ptx_param_tmap(b, *ta, pt, WS_HG_TA);
    ws_ptx_param_tmap(b, *tb, pt, WS_HG_TB);
}

/* a tile's first stage in the producer: c0 = 0, k = klo (or 0), tk = S*t0 - P_L + D*k; for
 * channel-first x read in place (q->mn), B's BN / BK blocks of BK positions x BK channels (BK =
 * ws_hgemm_bkc: 64, or 32 in TF32), block j item n0 + nj[j] and times t0 + dtj[j] (TB >= BK) */
static void emit_tile_start(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg t0, preg n0, preg lgtb,
                            preg klo, preg c0, preg k, preg tk, preg *dtj, preg *nj)
{
    I("mov.u32 %s, 0", c0.n);
    if (klo.n[0])
        I("mov.u32 %s, %s", k.n, klo.n);
    else
        I("mov.u32 %s, 0", k.n);
    ws_ptx_comment(b, "tk = S*t0 - P_L + D*k: the first input time of tap k");
    I("mul.lo.s32 %s, %s, %d", tk.n, t0.n, d->stride);
    I("sub.s32 %s, %s, %d", tk.n, tk.n, d->pad_l);
    if (klo.n[0])
        I("mad.lo.s32 %s, %s, %d, %s", tk.n, k.n, d->dilation, tk.n);
    /* channel-first x read in place (q->mn): B is BN / BK blocks of BK positions x BK
     * channels; block j is item n0 + (BK*j >> lgtb), times t0 + (BK*j & (TB - 1)) (TB >= BK) */
    const int bk = ws_hgemm_bkc(d), nch = BN / bk;
    if (q->mn) {
        preg msk = ws_ptx_reg(b, PTX_B32), one = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "channel-first x: block j of %d positions is item n0 + (%dj >> lgtb), time tk + (%dj & "
                          "(TB-1))", bk, bk, bk);
        I("mov.u32 %s, 1", one.n);
        I("shl.b32 %s, %s, %s", msk.n, one.n, lgtb.n);
        I("sub.u32 %s, %s, 1", msk.n, msk.n);
        for (int j = 0; j < nch; j++) {
            dtj[j] = ws_ptx_reg(b, PTX_B32), nj[j] = ws_ptx_reg(b, PTX_B32);
            I("mov.u32 %s, %d", nj[j].n, bk * j);
            I("and.b32 %s, %s, %s", dtj[j].n, nj[j].n, msk.n);
            I("shr.u32 %s, %s, %s", nj[j].n, nj[j].n, lgtb.n);
            I("add.u32 %s, %s, %s", nj[j].n, nj[j].n, n0.n);
        }
    }
}

/* a stage's operands and where they come from (the producers' copies) */
typedef struct {
    preg ta, tb, c0, k, tk, o0, n0;
    const preg *dtj, *nj;
} hg_stage;

/* the producers' copies of a stage into slot (sa, sbb), completing on full, then the next
 * stage's channels and tap; returns the scratch predicate it set (channels wrapped) */
static preg emit_stage_copies(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, const hg_stage *g, preg full,
                              preg sa, preg sbb)
{
    const preg ta = g->ta, tb = g->tb, c0 = g->c0, k = g->k, tk = g->tk, o0 = g->o0, n0 = g->n0;
    const preg *dtj = g->dtj, *nj = g->nj;
    const int bk = ws_hgemm_bkc(d), nch = BN / bk;
    I("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s]",
      sa.n, ta.n, c0.n, k.n, o0.n, full.n);
    if (q->mn) {
        preg tj = ws_ptx_reg(b, PTX_B32), bj = ws_ptx_reg(b, PTX_B32);
        for (int j = 0; j < nch; j++) {
            I("add.s32 %s, %s, %s", tj.n, tk.n, dtj[j].n);
            I("add.u32 %s, %s, %d", bj.n, sbb.n, 128 * bk * j);
            I("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, "
              "%s}], [%s]",
              bj.n, tb.n, tj.n, c0.n, nj[j].n, full.n);
        }
    } else {
        I("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], "
          "[%s]",
          sbb.n, tb.n, c0.n, tk.n, n0.n, full.n);
    }
    ws_ptx_comment(b, "next: channels c0 + 64, or tap k + 1 from channel 0");
    preg wrap = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, %d", c0.n, c0.n, ws_hgemm_bkc(d));
    I("setp.ge.u32 %s, %s, %d", wrap.n, c0.n, d->c_in);
    I("@%s mov.u32 %s, 0", wrap.n, c0.n);
    I("@%s add.u32 %s, %s, 1", wrap.n, k.n, k.n);
    I("@%s add.s32 %s, %s, %d", wrap.n, tk.n, tk.n, d->dilation);
    return wrap;
}

/* a producer's stage: its copies (emit_stage_copies), then the ring's next stage, back to top
 * while it < the tile's stages (kts where named, else KT; u named: the wraps counted) */
static void emit_stage(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, const hg_stage *g, preg full,
                       preg sa, preg sbb, preg s, preg u, preg it, preg kts, int KT, plabel top)
{
    preg wrap = emit_stage_copies(b, d, q, g, full, sa, sbb);
    char kt[16];
    snprintf(kt, sizeof kt, "%s", kts.n[0] ? kts.n : "");
    if (!kts.n[0])
        snprintf(kt, sizeof kt, "%d", KT);
    emit_ring_next(b, q, wrap, s, u, it, kt, top);
}

/* the producer of a block of one tile (the small and large tiles: ctaid.x is the tile): thread
 * 128 * q->pwg (the first of its warpgroup) fills the ring, KT stages */
static void emit_producer_tile(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg tid, preg sbase,
                               preg bars, preg o0, preg t0, preg n0, preg lgtb, int KT, preg klo, preg kts)
{
    plabel out = ws_ptx_label_new(b, "producer_done");
    char title[80];
    snprintf(title, sizeof title, "producer (warpgroup %d): thread %d issues every copy", q->pwg, 128 * q->pwg);
    preg ta, tb;
    emit_producer_head(b, q, tid, title, out, &ta, &tb);
    preg it = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
    preg c0 = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32), tk = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", it.n);
    I("mov.u32 %s, 0", s.n);
    I("mov.u32 %s, 0", u.n);
    preg dtj[WS_HGEMM_BN / 32], nj[WS_HGEMM_BN / 32];
    emit_tile_start(b, d, q, t0, n0, lgtb, klo, c0, k, tk, dtj, nj);
    plabel top = ws_ptx_label_new(b, "pstage"), nowait = ws_ptx_label_new(b, "pfirst");
    ws_ptx_label(b, top);
    preg full, sa, sbb;
    emit_slot(b, q, s, u, bars, sbase, nowait, &full, &sa, &sbb);
    const hg_stage st = { .ta = ta, .tb = tb, .c0 = c0, .k = k, .tk = tk, .o0 = o0, .n0 = n0, .dtj = dtj, .nj = nj };
    emit_stage(b, d, q, &st, full, sa, sbb, s, u, it, kts, KT, top);
    ws_ptx_label(b, out);
    I("ret");
}

/* THE TILE LOOP (ptx_hgemm.h): a block runs tile ctaid.x, then the tiles its producer asks
 * for, below ntiles; the producer and the consumers each walk them, the consumers through the
 * tile queue */
typedef struct {
    int nrow, phase;    /* row tiles; the phased form's phases where its taps are given */
    const int *lo, *hi; /* those taps (ws_gbwd_dx_taps), or NULL */
} hg_sched;

/* tile's coordinates o0, t0, n0 and log2 TB lgtb (and, with taps, the first tap klo and the
 * stages kts of its phase r = o0 / (C_out / phases)); to ex when tile >= ntiles = ceil(N / NB)
 * * ntt * rows, NB = 2^lgnb items a tile (into ntiles where named). From the parameters each
 * time: nothing of it stays in registers across a tile */
static void emit_tile(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, const hg_sched *sc, preg tile,
                      preg o0, preg t0, preg n0, preg lgtb, preg klo, preg kts, plabel ex, preg ntiles)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_HGEMM);
    preg cx = ws_ptx_reg(b, PTX_B32), end = ws_ptx_reg(b, PTX_PRED), ntt = ws_ptx_reg(b, PTX_B32);
    preg lgnb = ws_ptx_reg(b, PTX_B32), nb = ws_ptx_reg(b, PTX_B32), n32 = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, ntt, pt, WS_HG_NTT);
    ws_ptx_ld_param(b, lgtb, pt, WS_HG_LGTB);
    ws_ptx_ld_param(b, n32, pt, WS_HG_N);
    I("sub.u32 %s, %d, %s", lgnb.n, q->lgbn, lgtb.n);
    I("shl.b32 %s, 1, %s", nb.n, lgnb.n);
    I("add.u32 %s, %s, %s", nb.n, nb.n, n32.n);
    I("sub.u32 %s, %s, 1", nb.n, nb.n);
    I("shr.u32 %s, %s, %s", nb.n, nb.n, lgnb.n);
    I("mul.lo.u32 %s, %s, %s", nb.n, nb.n, ntt.n);
    I("mul.lo.u32 %s, %s, %d", nb.n, nb.n, sc->nrow);
    if (ntiles.n[0])
        I("mov.u32 %s, %s", ntiles.n, nb.n);
    I("setp.ge.u32 %s, %s, %s", end.n, tile.n, nb.n);
    I("@%s bra %s", end.n, ex.n);
    I("rem.u32 %s, %s, %d", o0.n, tile.n, sc->nrow);
    I("shl.b32 %s, %s, %d", o0.n, o0.n, BMQ == 128 ? 7 : 6);
    I("div.u32 %s, %s, %d", cx.n, tile.n, sc->nrow);
    I("rem.u32 %s, %s, %s", t0.n, cx.n, ntt.n);
    I("shl.b32 %s, %s, %s", t0.n, t0.n, lgtb.n);
    I("div.u32 %s, %s, %s", n0.n, cx.n, ntt.n);
    I("shl.b32 %s, %s, %s", n0.n, n0.n, lgnb.n);
    if (sc->lo) { /* each row tile is one phase: only the taps its rows of W' have */
        const int C = d->c_out / sc->phase, cb = (d->c_in + ws_hgemm_bkc(d) - 1) / ws_hgemm_bkc(d);
        preg r = ws_ptx_reg(b, PTX_B32), pp = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "phase r = o0 / %d: taps lo_r..hi_r of W' (the others are zero for its rows), "
                          "%d stages a tap", C, cb);
        I("div.u32 %s, %s, %d", r.n, o0.n, C);
        I("mov.u32 %s, %d", klo.n, sc->lo[0]);
        I("mov.u32 %s, %d", kts.n, (sc->hi[0] - sc->lo[0] + 1) * cb);
        for (int p = 1; p < sc->phase; p++) {
            I("setp.eq.u32 %s, %s, %d", pp.n, r.n, p);
            I("@%s mov.u32 %s, %d", pp.n, klo.n, sc->lo[p]);
            I("@%s mov.u32 %s, %d", pp.n, kts.n, (sc->hi[p] - sc->lo[p] + 1) * cb);
        }
    }
}

/* the tile queue's slot qs = j % TQ for a block's j-th tile: waits its mbarrier at bars + off
 * (TQ_FULL: the producer's arrival, phase j / TQ; TQ_EMPTY: the consumers' release of tile
 * j - TQ, the phase before, so a fresh slot passes), then qa = the slot's tile address - TQ_TILE */
static void emit_queue_wait(ptx_buf *b, const ws_hgemm_cfg *q, preg qj, preg bars, preg qs, preg qa, preg qp, int off)
{
    I("and.b32 %s, %s, %d", qs.n, qj.n, WS_HGEMM_TQ - 1);
    I("shr.u32 %s, %s, 2", qp.n, qj.n);
    I("and.b32 %s, %s, 1", qp.n, qp.n);
    if (off == TQ_EMPTY)
        I("xor.b32 %s, %s, 1", qp.n, qp.n);
    I("mad.lo.u32 %s, %s, 8, %s", qa.n, qs.n, bars.n);
    I("add.u32 %s, %s, %d", qa.n, qa.n, off);
    emit_wait(b, qa, qp);
    I("mad.lo.u32 %s, %s, 4, %s", qa.n, qs.n, bars.n);
}

/* the producer: thread 128 * q->pwg (the first of its warpgroup) fills the ring, KT stages a
 * tile, every tile from stage 0 (slot s's k-th use waits the consumers' release of its use
 * k - 1: parity bit s of pm, all ones at first, where the phase before a fresh mbarrier's
 * first counts as complete). From a block's second tile on, the stages past slot 0 hold the
 * last tile's Ys until its epilogue is done (epi): stage 0 is loaded while it runs. */
static void emit_producer(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg tid, preg sbase, preg bars,
                          const hg_sched *sc, int KT)
{
    plabel out = ws_ptx_label_new(b, "producer_done");
    char title[96];
    snprintf(title, sizeof title, "producer (warpgroup %d): thread %d issues every copy, tile after tile", q->pwg,
             128 * q->pwg);
    preg ta, tb;
    emit_producer_head(b, q, tid, title, out, &ta, &tb);
    preg it = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), pm = ws_ptx_reg(b, PTX_B32);
    preg c0 = ws_ptx_reg(b, PTX_B32), k = ws_ptx_reg(b, PTX_B32), tk = ws_ptx_reg(b, PTX_B32);
    preg tile = ws_ptx_reg(b, PTX_B32), epar = ws_ptx_reg(b, PTX_B32), need = ws_ptx_reg(b, PTX_B32);
    preg epi = ws_ptx_reg(b, PTX_B32), o0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32);
    preg n0 = ws_ptx_reg(b, PTX_B32), lgtb = ws_ptx_reg(b, PTX_B32), klo = {""}, kts = {""};
    if (sc->lo)
        klo = ws_ptx_reg(b, PTX_B32), kts = ws_ptx_reg(b, PTX_B32);
    preg ctr = ws_ptx_reg(b, PTX_B64), qj = ws_ptx_reg(b, PTX_B32), next = ws_ptx_reg(b, PTX_B32);
    plabel pfin = ws_ptx_label_new(b, "producer_fin");
    I("mov.u32 %s, -1", pm.n);
    I("mov.u32 %s, 0", epar.n);
    I("mov.u32 %s, 0", need.n);
    I("mov.u32 %s, 0", qj.n);
    I("add.u32 %s, %s, %d", epi.n, bars.n, 16 * ST);
    ws_ptx_ld_param(b, ctr, ws_params_of(WS_PARAMS_HGEMM), WS_HG_CTR);
    I("cvta.to.global.u64 %s, %s", ctr.n, ctr.n);
    ws_ptx_comment(b, "tile ctaid.x first, then G + p_ctr[0]++ (G = nctaid.x) while below ntiles: the tiles in "
                      "the order the blocks ask for them");
    preg G = ws_ptx_reg(b, PTX_B32), ntiles = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%ctaid.x", tile.n);
    I("mov.u32 %s, %%nctaid.x", G.n);
    plabel ptile = ws_ptx_label_new(b, "ptile");
    ws_ptx_label(b, ptile);
    {
        preg qs = ws_ptx_reg(b, PTX_B32), qa = ws_ptx_reg(b, PTX_B32), qp = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "the tile to the consumers: queue slot j %% %d, once its use j - %d is released", WS_HGEMM_TQ,
                       WS_HGEMM_TQ);
        emit_queue_wait(b, q, qj, bars, qs, qa, qp, TQ_EMPTY);
        I("st.shared.u32 [%s+%d], %s", qa.n, TQ_TILE, tile.n);
        I("mad.lo.u32 %s, %s, 8, %s", qa.n, qs.n, bars.n);
        I("mbarrier.arrive.shared::cta.b64 _, [%s+%d]", qa.n, TQ_FULL);
    }
    emit_tile(b, d, q, sc, tile, o0, t0, n0, lgtb, klo, kts, pfin, ntiles);
    ws_ptx_comment(b, "the next tile asked for now, used after this one's stages");
    I("atom.global.relaxed.gpu.add.u32 %s, [%s], 1", next.n, ctr.n);
    I("mov.u32 %s, 0", it.n);
    I("mov.u32 %s, 0", s.n);
    preg dtj[WS_HGEMM_BN / 32], nj[WS_HGEMM_BN / 32];
    emit_tile_start(b, d, q, t0, n0, lgtb, klo, c0, k, tk, dtj, nj);
    plabel top = ws_ptx_label_new(b, "pstage");
    ws_ptx_label(b, top);
    {
        preg early = ws_ptx_reg(b, PTX_PRED), p2 = ws_ptx_reg(b, PTX_PRED);
        plabel go = ws_ptx_label_new(b, "pgo");
        ws_ptx_comment(b, "past slot 0, the last tile's epilogue done with Ys first (once a tile)");
        I("setp.eq.u32 %s, %s, 0", early.n, need.n);
        /* stage 0 loads ahead only where every tile has a stage past it: a tile of one stage
         * would let the consumers finish it and complete two phases of epi before this wait */
        if (!sc->lo && KT >= 2) {
            I("setp.eq.u32 %s, %s, 0", p2.n, s.n);
            I("or.pred %s, %s, %s", early.n, early.n, p2.n);
        }
        I("@%s bra %s", early.n, go.n);
        emit_wait(b, epi, epar);
        I("xor.b32 %s, %s, 1", epar.n, epar.n);
        I("mov.u32 %s, 0", need.n);
        ws_ptx_label(b, go);
    }
    preg full = ws_ptx_reg(b, PTX_B32), sa = ws_ptx_reg(b, PTX_B32), sbb = ws_ptx_reg(b, PTX_B32);
    {
        preg empty = ws_ptx_reg(b, PTX_B32), par = ws_ptx_reg(b, PTX_B32), bit = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "slot s free: its last use released by every consumer (pm bit s)");
        I("mad.lo.u32 %s, %s, 8, %s", full.n, s.n, bars.n);
        I("add.u32 %s, %s, %d", empty.n, full.n, 8 * ST);
        I("shr.b32 %s, %s, %s", par.n, pm.n, s.n);
        I("and.b32 %s, %s, 1", par.n, par.n);
        emit_wait(b, empty, par);
        I("shl.b32 %s, 1, %s", bit.n, s.n);
        I("xor.b32 %s, %s, %s", pm.n, pm.n, bit.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, s.n, SB, sbase.n);
        I("add.u32 %s, %s, %d", sbb.n, sa.n, A_BYTES);
        I("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%s], %d", full.n, SB);
    }
    const hg_stage st = { .ta = ta, .tb = tb, .c0 = c0, .k = k, .tk = tk, .o0 = o0, .n0 = n0, .dtj = dtj, .nj = nj };
    emit_stage(b, d, q, &st, full, sa, sbb, s, (preg){""}, it, kts, KT, top);
    {
        preg none = ws_ptx_reg(b, PTX_PRED);
        plabel nx = ws_ptx_label_new(b, "pnext");
        ws_ptx_comment(b, "a tile of slot 0 alone still waits for the last epilogue; the next tile's turn");
        I("setp.eq.u32 %s, %s, 0", none.n, need.n);
        I("@%s bra %s", none.n, nx.n);
        emit_wait(b, epi, epar);
        I("xor.b32 %s, %s, 1", epar.n, epar.n);
        ws_ptx_label(b, nx);
        I("mov.u32 %s, 1", need.n);
        ws_ptx_comment(b, "the asked-for tile's number read only now: its atomic's latency under the stages");
        I("add.u32 %s, %s, %s", tile.n, next.n, G.n);
        I("add.u32 %s, %s, 1", qj.n, qj.n);
        I("bra %s", ptile.n);
    }
    ws_ptx_label(b, pfin);
    {
        preg last = ws_ptx_reg(b, PTX_PRED), v = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "no tiles left. A call's counter takes ntiles increments in all (ntiles - G tiles, and a "
                          "block's last ask each): the ask that read ntiles - 1, tile G + ntiles - 1, was the last, "
                          "and its block sets p_ctr[0] back to 0 for the next call");
        I("sub.u32 %s, %s, 1", v.n, ntiles.n);
        I("add.u32 %s, %s, %s", v.n, v.n, G.n);
        I("setp.ne.u32 %s, %s, %s", last.n, tile.n, v.n);
        I("@%s bra %s", last.n, out.n);
        I("st.relaxed.gpu.global.u32 [%s], 0", ctr.n);
    }
    ws_ptx_label(b, out);
    I("ret");
}

/* the add's raw element for one output: *(y_type *)(abase + off*ys) into r where p holds
 * (zero elsewhere), read early so that a group's reads are in flight together */
void ws_hgemm_add_read(ptx_buf *b, const ws_conv_desc *d, preg r, preg p, preg off, preg abase, int ys)
{
    preg aa = ws_ptx_reg(b, PTX_B64);
    I("mad.lo.u64 %s, %s, %d, %s", aa.n, off.n, ys, abase.n);
    if (d->y_type == WS_F32) {
        I("mov.f32 %s, 0f00000000", r.n);
        I("@%s ld.global.f32 %s, [%s]", p.n, r.n, aa.n);
    } else {
        I("mov.b16 %s, 0", r.n);
        I("@%s ld.global.b16 %s, [%s]", p.n, r.n, aa.n);
    }
}

/* one output element: v + bias, act, + the add read by ws_hgemm_add_read (raw r, where p holds),
 * stored (ptx_epi.h) at index off of ybase in y_type, where `in` holds (no branch) */
void ws_hgemm_elem(ptx_buf *b, const ws_conv_desc *d, preg v, preg bias, preg p, preg r, preg in,
                   preg off, preg ybase, int ys)
{
    preg ya = ws_ptx_reg(b, PTX_B64), av = r;
    if (!p.n[0]) { /* no add */
        const ws_ptx_epi ep = {
            .act = d->act, .y_type = d->y_type, .n = 1, .v = &v, .bias = &bias, .in = in,
            .y = {.at = ya, .index = off, .base = ybase, .scale = ys}};
        ws_ptx_epi_emit(b, &ep);
        return;
    }
    if (d->y_type == WS_F16) {
        av = ws_ptx_reg(b, PTX_F32);
        I("cvt.f32.f16 %s, %s", av.n, r.n);
    } else if (d->y_type == WS_BF16) {
        preg w = ws_ptx_reg(b, PTX_B32);
        av = ws_ptx_reg(b, PTX_F32);
        I("cvt.u32.u16 %s, %s", w.n, r.n);
        I("shl.b32 %s, %s, 16", w.n, w.n);
        I("mov.b32 %s, %s", av.n, w.n);
    }
    const ws_ptx_epi ep = {
        .act = d->act, .y_type = d->y_type, .n = 1, .v = &v, .bias = &bias, .in = in,
        .add_if = p, .add_v = &av,
        .y = {.at = ya, .index = off, .base = ybase, .scale = ys}};
    ws_ptx_epi_emit(b, &ep);
}

/* the epilogue's two variants, with the add (va 1, first) and without: before the first,
 * to the second unless the call has an add; before the second, the first's end */
static void emit_add_variant(ptx_buf *b, int va, preg hasa, plabel noadd, plabel done)
{
    if (va) {
        ws_ptx_comment(b, "without an add: the variant below, with no add reads");
        I("@!%s bra %s", hasa.n, noadd.n);
    } else {
        I("bra %s", done.n);
        ws_ptx_label(b, noadd);
    }
}

#define EG 16 /* epilogue elements whose reads are issued together */

/* the vector epilogues' test: on where y, and with an add (hasa) the add and add_bs, are
 * aligned to 4 elements of ys bytes (and, tout named, T_out % 4 == 0); else to scalar */
void ws_hgemm_vec_or(ptx_buf *b, preg py, preg pa, preg abs, preg hasa, preg tout, int ys, plabel scalar)
{
    preg al = ws_ptx_reg(b, PTX_B64), aal = ws_ptx_reg(b, PTX_B64), bal = ws_ptx_reg(b, PTX_B64);
    preg vec = ws_ptx_reg(b, PTX_PRED), aok = ws_ptx_reg(b, PTX_PRED);
    preg t4 = tout.n[0] ? ws_ptx_reg(b, PTX_B32) : (preg){""};
    I("and.b64 %s, %s, %d", al.n, py.n, 4 * ys - 1);
    I("setp.eq.u64 %s, %s, 0", vec.n, al.n);
    if (tout.n[0]) {
        I("and.b32 %s, %s, 3", t4.n, tout.n);
        I("setp.eq.and.u32 %s, %s, 0, %s", vec.n, t4.n, vec.n);
    }
    I("and.b64 %s, %s, %d", aal.n, pa.n, 4 * ys - 1);
    I("and.b64 %s, %s, 3", bal.n, abs.n);
    I("or.b64 %s, %s, %s", aal.n, aal.n, bal.n);
    I("setp.eq.u64 %s, %s, 0", aok.n, aal.n);
    I("or.pred %s, %s, !%s", aok.n, aok.n, hasa.n);
    I("and.pred %s, %s, %s", vec.n, vec.n, aok.n);
    I("@!%s bra %s", vec.n, scalar.n);
}

/* a vector add read into a (4 elements, its registers zeroed first): one coherent load at addr
 * where p holds (the add may be y itself); af[j] the elements as float32 */
void ws_hgemm_vec_add(ptx_buf *b, const ws_ptx_vec *a, preg p, preg addr, preg af[4])
{
    char list[160];
    for (int j = 0; j < a->nr; j++)
        I("mov.b32 %s, 0", a->r[j].n);
    ws_ptx_vec_list(a, list, sizeof list);
    I("@%s ld.global.%s %s, [%s]", p.n, a->nr == 4 ? "v4.f32" : "v2.b32", list, addr.n);
    for (int j = 0; j < 4; j++)
        af[j] = ws_ptx_vec_elem(b, a, j);
}

#define EGV 4 /* the vector epilogue's vectors whose reads are issued together */

/* The NLC epilogue in vectors of 4 channels (C_out % 4 == 0; the forward): where y, and the
 * add with add_bs, are aligned to 4 elements (else on to the element form after it), thread c
 * takes rows 4(c % LP) .. + 3 (LP = BM / 4; b[o] once, one 16-byte read of Bs) at positions
 * c/LP + 8m: one 16-byte read of Ys[position], one vector add read and one vector store a
 * position, LP threads' stores one run of BM channels. Ends at done. */
static void emit_epi_nlc4(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg c, preg sbase, preg bs,
                          preg o0, preg t0, preg n0, preg lgtb, preg tbm, preg pa, preg py, preg abs, preg hasa,
                          preg n32, preg tout, plabel done)
{
    /* LP threads a position (its BM rows, 4 each); NCT / LP = 8 positions a round */
    const int ys = d->y_type == WS_F32 ? 4 : 2, LP = BMQ / 4;
    ws_ptx_comment(b, "NLC y in vectors: rows 4(c %% %d).. (b once), positions c/%d + 8m, where y and the add "
                      "are aligned to 4 elements", LP, LP);
    plabel scalar = ws_ptx_label_new(b, "epi_scalar"), noadd = ws_ptx_label_new(b, "epi4_noadd");
    ws_hgemm_vec_or(b, py, pa, abs, hasa, (preg){""}, ys, scalar);
    preg cg = ws_ptx_reg(b, PTX_B32), prow = ws_ptx_reg(b, PTX_B32), ov = ws_ptx_reg(b, PTX_B32);
    preg ook = ws_ptx_reg(b, PTX_PRED), ra = ws_ptx_reg(b, PTX_B32), ba = ws_ptx_reg(b, PTX_B32);
    preg ov64 = ws_ptx_reg(b, PTX_B64), yb0 = ws_ptx_reg(b, PTX_B64), ab0 = ws_ptx_reg(b, PTX_B64);
    preg absb = ws_ptx_reg(b, PTX_B64);
    preg bias[4];
    I("and.b32 %s, %s, %d", cg.n, c.n, LP - 1);
    I("shr.u32 %s, %s, %d", prow.n, c.n, LP == 32 ? 5 : 4);
    I("mad.lo.u32 %s, %s, 4, %s", ov.n, cg.n, o0.n);
    I("setp.lt.u32 %s, %s, %d", ook.n, ov.n, d->c_out);
    I("@!%s bra %s", ook.n, done.n);
    I("mad.lo.u32 %s, %s, 16, %s", ba.n, cg.n, bs.n);
    for (int j = 0; j < 4; j++)
        bias[j] = ws_ptx_reg(b, PTX_F32);
    I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s]", bias[0].n, bias[1].n, bias[2].n, bias[3].n, ba.n);
    I("mad.lo.u32 %s, %s, %d, %s", ra.n, prow.n, YS_NLC, ov.n);
    I("sub.u32 %s, %s, %s", ra.n, ra.n, o0.n);
    I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, sbase.n);
    I("cvt.u64.u32 %s, %s", ov64.n, ov.n);
    I("mad.lo.u64 %s, %s, %d, %s", yb0.n, ov64.n, ys, py.n);
    I("mad.lo.u64 %s, %s, %d, %s", ab0.n, ov64.n, ys, pa.n);
    I("mul.lo.u64 %s, %s, %d", absb.n, abs.n, ys);
    for (int va = 1; va >= 0; va--) {
        emit_add_variant(b, va, hasa, noadd, done);
        for (int m0 = 0; m0 < BN / 8; m0 += EGV) {
            preg v[EGV][4], ok[EGV], ya[EGV], af[EGV][4];
            ws_ptx_comment(b, "positions c/%d + 8(%d..%d): reads first, then the outputs", LP, m0, m0 + EGV - 1);
            for (int m = 0; m < EGV; m++) {
                preg i = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
                preg ok2 = ws_ptx_reg(b, PTX_PRED), pos = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64);
                ok[m] = ws_ptx_reg(b, PTX_PRED), ya[m] = ws_ptx_reg(b, PTX_B64);
                for (int j = 0; j < 4; j++)
                    v[m][j] = ws_ptx_reg(b, PTX_F32);
                I("add.u32 %s, %s, %d", i.n, prow.n, 8 * (m0 + m));
                I("shr.u32 %s, %s, %s", n.n, i.n, lgtb.n);
                I("add.u32 %s, %s, %s", n.n, n.n, n0.n);
                I("and.b32 %s, %s, %s", t.n, i.n, tbm.n);
                I("add.u32 %s, %s, %s", t.n, t.n, t0.n);
                I("setp.lt.u32 %s, %s, %s", ok[m].n, n.n, n32.n);
                I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
                I("and.pred %s, %s, %s", ok[m].n, ok[m].n, ok2.n);
                I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[m][0].n, v[m][1].n, v[m][2].n, v[m][3].n, ra.n,
                  8 * (m0 + m) * YS_NLC * 4);
                ws_ptx_comment(b, "y + ((n*T_out + t)*C_out + o)*%d, add + (n*add_bs + t*C_out + o)*%d", ys, ys);
                I("cvt.u64.u32 %s, %s", t64.n, t.n);
                I("mad.wide.u32 %s, %s, %s, %s", pos.n, n.n, tout.n, t64.n);
                I("mad.lo.u64 %s, %s, %lld, %s", ya[m].n, pos.n, (long long)d->c_out * ys, yb0.n);
                if (va) {
                    preg aa = ws_ptx_reg(b, PTX_B64), n64 = ws_ptx_reg(b, PTX_B64);
                    ws_ptx_vec a = ws_ptx_vec_new(b, d->y_type, 4);
                    I("cvt.u64.u32 %s, %s", n64.n, n.n);
                    I("mad.lo.u64 %s, %s, %lld, %s", aa.n, t64.n, (long long)d->c_out * ys, ab0.n);
                    I("mad.lo.u64 %s, %s, %s, %s", aa.n, n64.n, absb.n, aa.n);
                    ws_hgemm_vec_add(b, &a, ok[m], aa, af[m]);
                }
            }
            for (int m = 0; m < EGV; m++) {
                const ws_ptx_epi ep = {
                    .act = d->act, .y_type = d->y_type, .n = 4, .v = v[m], .bias = bias, .bias_stride = 1,
                    .add_if = va ? ok[m] : (preg){""}, .add_v = va ? af[m] : NULL, .in = ok[m],
                    .y = {.at = ya[m]}};
                ws_ptx_epi_emit(b, &ep);
            }
        }
    }
    I("bra %s", done.n);
    ws_ptx_label(b, scalar);
}

/* the small tile's SILU: its vector epilogues spill at the 96 registers ptxas gives that tile,
 * whatever y's type, so it keeps the element form; so does the narrow tile's (minb 3; its
 * 128 registers might hold the vectors, not measured) */
static int small_silu(const ws_conv_desc *d, const ws_hgemm_cfg *q)
{
    return q->minb > 1 && d->act == WS_ACT_SILU;
}

/* The NCL epilogue in vectors of 4 positions (the forward), where T_out % 4 == 0 and y and the
 * add (with add_bs) are aligned to 4 elements (else on to the element form after it): thread c
 * takes positions 4(c % (BN/4)) .. + 3 (n, t and their range once: TB >= 8 keeps the four in
 * one item) of rows c/(BN/4) + (4 NCT / BN)m, each one 16-byte read of Ys[row], one vector add
 * read and one vector store. Ends at done. */
static void emit_epi_ncl4(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg c, preg sbase, preg bs,
                          preg o0, preg t0, preg n0, preg lgtb, preg tbm, preg pa, preg py, preg abs, preg hasa,
                          preg n32, preg tout, plabel done)
{
    /* vectors whose reads come first: 2 on the small tile (ptxas gives it 96 registers a thread)
     * and the narrow one */
    const int ys = d->y_type == WS_F32 ? 4 : 2, NV = BN / 4, RS = NCT / NV, GV = q->minb > 1 ? 2 : EGV;
    ws_ptx_comment(b, "NCL y in vectors: positions 4(c %% %d).. (n, t once), rows c/%d + %dm, where T_out %% 4 == 0 "
                      "and y and the add are aligned to 4 elements", NV, NV, RS);
    plabel scalar = ws_ptx_label_new(b, "epi_scalar"), noadd = ws_ptx_label_new(b, "epi4_noadd");
    ws_hgemm_vec_or(b, py, pa, abs, hasa, tout, ys, scalar);
    preg p = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
    preg ok = ws_ptx_reg(b, PTX_PRED), ok2 = ws_ptx_reg(b, PTX_PRED), orow = ws_ptx_reg(b, PTX_B32);
    preg row = ws_ptx_reg(b, PTX_B32), t64 = ws_ptx_reg(b, PTX_B64), n64 = ws_ptx_reg(b, PTX_B64);
    preg ya = ws_ptx_reg(b, PTX_B64), aa = ws_ptx_reg(b, PTX_B64), rstep = ws_ptx_reg(b, PTX_B64);
    preg ra = ws_ptx_reg(b, PTX_B32), rb = ws_ptx_reg(b, PTX_B32), o64 = ws_ptx_reg(b, PTX_B64);
    preg tt = ws_ptx_reg(b, PTX_B64);
    I("and.b32 %s, %s, %d", p.n, c.n, NV - 1);
    I("shl.b32 %s, %s, 2", p.n, p.n);
    I("shr.u32 %s, %s, %d", row.n, c.n, q->lgbn - 2);
    I("shr.u32 %s, %s, %s", n.n, p.n, lgtb.n);
    I("add.u32 %s, %s, %s", n.n, n.n, n0.n);
    I("and.b32 %s, %s, %s", t.n, p.n, tbm.n);
    I("add.u32 %s, %s, %s", t.n, t.n, t0.n);
    I("setp.lt.u32 %s, %s, %s", ok.n, n.n, n32.n);
    I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
    I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
    I("@!%s bra %s", ok.n, done.n);
    ws_ptx_comment(b, "y + ((n*C_out + o)*T_out + t)*%d, add + (n*add_bs + o*T_out + t)*%d; rows %d apart", ys, ys, RS);
    I("add.u32 %s, %s, %s", orow.n, o0.n, row.n);
    I("cvt.u64.u32 %s, %s", t64.n, t.n);
    I("cvt.u64.u32 %s, %s", o64.n, orow.n);
    I("cvt.u64.u32 %s, %s", tt.n, tout.n);
    I("mul.wide.u32 %s, %s, %d", ya.n, n.n, d->c_out);
    I("add.u64 %s, %s, %s", ya.n, ya.n, o64.n);
    I("mul.lo.u64 %s, %s, %s", ya.n, ya.n, tt.n);
    I("add.u64 %s, %s, %s", ya.n, ya.n, t64.n);
    I("mad.lo.u64 %s, %s, %d, %s", ya.n, ya.n, ys, py.n);
    I("cvt.u64.u32 %s, %s", n64.n, n.n);
    I("mul.lo.u64 %s, %s, %s", aa.n, n64.n, abs.n);
    I("mad.lo.u64 %s, %s, %s, %s", o64.n, o64.n, tt.n, t64.n);
    I("add.u64 %s, %s, %s", aa.n, aa.n, o64.n);
    I("mad.lo.u64 %s, %s, %d, %s", aa.n, aa.n, ys, pa.n);
    I("mul.lo.u64 %s, %s, %d", rstep.n, tt.n, RS * ys);
    I("mad.lo.u32 %s, %s, %d, %s", ra.n, row.n, YS_ROW, p.n);
    I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, sbase.n);
    I("mad.lo.u32 %s, %s, 4, %s", rb.n, row.n, bs.n);
    for (int va = 1; va >= 0; va--) {
        emit_add_variant(b, va, hasa, noadd, done);
        for (int m0 = 0; m0 < BMQ / RS; m0 += GV) {
            preg v[EGV][4], bias[EGV], in[EGV], yv[EGV], af[EGV][4];
            ws_ptx_comment(b, "rows c/%d + %d(%d..%d): reads first, then the outputs", NV, RS, m0, m0 + GV - 1);
            for (int m = 0; m < GV; m++) {
                preg oo = ws_ptx_reg(b, PTX_B32);
                for (int j = 0; j < 4; j++)
                    v[m][j] = ws_ptx_reg(b, PTX_F32);
                bias[m] = ws_ptx_reg(b, PTX_F32), in[m] = ws_ptx_reg(b, PTX_PRED), yv[m] = ws_ptx_reg(b, PTX_B64);
                I("add.u32 %s, %s, %d", oo.n, orow.n, RS * (m0 + m));
                I("setp.lt.u32 %s, %s, %d", in[m].n, oo.n, d->c_out);
                I("and.pred %s, %s, %s", in[m].n, in[m].n, ok.n);
                I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[m][0].n, v[m][1].n, v[m][2].n, v[m][3].n, ra.n,
                  RS * (m0 + m) * YS_ROW * 4);
                I("ld.shared.f32 %s, [%s+%d]", bias[m].n, rb.n, RS * (m0 + m) * 4);
                I("mad.lo.u64 %s, %s, %d, %s", yv[m].n, rstep.n, m0 + m, ya.n);
                if (va) {
                    preg av = ws_ptx_reg(b, PTX_B64);
                    ws_ptx_vec a = ws_ptx_vec_new(b, d->y_type, 4);
                    I("mad.lo.u64 %s, %s, %d, %s", av.n, rstep.n, m0 + m, aa.n);
                    ws_hgemm_vec_add(b, &a, in[m], av, af[m]);
                }
            }
            for (int m = 0; m < GV; m++) {
                const ws_ptx_epi ep = {
                    .act = d->act, .y_type = d->y_type, .n = 4, .v = v[m], .bias = &bias[m], .bias_stride = 0,
                    .add_if = va ? in[m] : (preg){""}, .add_v = va ? af[m] : NULL, .in = in[m],
                    .y = {.at = yv[m]}};
                ws_ptx_epi_emit(b, &ep);
            }
        }
    }
    I("bra %s", done.n);
    ws_ptx_label(b, scalar);
}

/* TF32 CHANNEL-FIRST X (q->mn, TF32 math): the copy engine lands B as BN / 32 blocks of 32
 * channels x 32 positions (a channel's 32 positions one 128-byte row, the 128-byte swizzle);
 * the consumers turn each 4 KiB block in place into the K-major rows wgmma reads (a position's
 * 32 channels one 128-byte row, swizzled alike: the bytes the staging pass would have
 * written), rounding to TF32 as it does (cvt.rna). A 4x4 group of 16-byte chunks is location
 * (a, b): rows 4a.., logical chunk b. Block j's 64 locations go to 64 consumer threads: the
 * thread at L = j*64 + m*8 + a reads (a, b = a ^ m), rows 4a + i at chunk b ^ (4(a & 1) + i),
 * and writes them transposed at (b, a); eight lanes of one m touch eight different chunks on
 * either side (no bank conflicts). The group a thread overwrites, (b, a), is read by the lane
 * of the same m and block, so the reads and the writes are ordered within the warp
 * (bar.warp.sync); the writes reach the async proxy (fence.proxy.async) before the named
 * barrier of every consumer that frees wgmma (each consumer's wgmma reads all of B). */
typedef struct {
    int rounds;                             /* locations a thread: 2 * BN / consumer threads */
    preg rb[2], rc[2], wb[2], wc[2];        /* read and write bases, their chunks << 4 */
} hg_mt;

static void emit_mt_setup(ptx_buf *b, const ws_hgemm_cfg *q, preg tid, hg_mt *m)
{
    m->rounds = 2 * BN / NCT;
    if (2 * BN % NCT || m->rounds < 1 || m->rounds > 2) { /* the tiles of ptx_hgemm.h: 1 or 2 */
        ws_ptx_fail(b, "the TF32 in-place transpose takes 1 or 2 groups a consumer thread");
        m->rounds = 0;
        return;
    }
    preg c = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "TF32 channel-first x: this thread's %d location(s) of B's blocks, to be transposed in place",
                   m->rounds);
    I("sub.u32 %s, %s, %d", c.n, tid.n, q->pwg ? 0 : 128);
    for (int r = 0; r < m->rounds; r++) {
        preg L = ws_ptx_reg(b, PTX_B32), j = ws_ptx_reg(b, PTX_B32), a = ws_ptx_reg(b, PTX_B32);
        preg bb = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        m->rb[r] = ws_ptx_reg(b, PTX_B32), m->rc[r] = ws_ptx_reg(b, PTX_B32);
        m->wb[r] = ws_ptx_reg(b, PTX_B32), m->wc[r] = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", L.n, c.n, r * NCT);
        I("shr.u32 %s, %s, 6", j.n, L.n);
        I("shl.b32 %s, %s, 12", j.n, j.n);
        I("and.b32 %s, %s, 7", a.n, L.n);
        I("shr.u32 %s, %s, 3", bb.n, L.n);
        I("and.b32 %s, %s, 7", bb.n, bb.n);
        I("xor.b32 %s, %s, %s", bb.n, bb.n, a.n);
        I("mad.lo.u32 %s, %s, 512, %s", m->rb[r].n, a.n, j.n);
        I("mad.lo.u32 %s, %s, 512, %s", m->wb[r].n, bb.n, j.n);
        I("and.b32 %s, %s, 1", t.n, a.n);
        I("shl.b32 %s, %s, 2", t.n, t.n);
        I("xor.b32 %s, %s, %s", m->rc[r].n, bb.n, t.n);
        I("shl.b32 %s, %s, 4", m->rc[r].n, m->rc[r].n);
        I("and.b32 %s, %s, 1", t.n, bb.n);
        I("shl.b32 %s, %s, 2", t.n, t.n);
        I("xor.b32 %s, %s, %s", m->wc[r].n, a.n, t.n);
        I("shl.b32 %s, %s, 4", m->wc[r].n, m->wc[r].n);
    }
}

static void emit_mt_transpose(ptx_buf *b, const ws_hgemm_cfg *q, const hg_mt *m, preg sbb)
{
    preg v[2][4][4], ad = ws_ptx_reg(b, PTX_B32), base = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "B's blocks from channel rows to position rows, rounded to TF32 (the warp's reads before "
                      "its writes)");
    for (int r = 0; r < m->rounds; r++) {
        I("add.u32 %s, %s, %s", base.n, m->rb[r].n, sbb.n);
        for (int i = 0; i < 4; i++) {
            for (int e = 0; e < 4; e++)
                v[r][i][e] = ws_ptx_reg(b, PTX_F32);
            I("xor.b32 %s, %s, %d", ad.n, m->rc[r].n, 16 * i);
            I("add.u32 %s, %s, %s", ad.n, ad.n, base.n);
            I("ld.shared.v4.f32 {%s, %s, %s, %s}, [%s+%d]", v[r][i][0].n, v[r][i][1].n, v[r][i][2].n, v[r][i][3].n,
              ad.n, 128 * i);
        }
    }
    I("bar.warp.sync -1");
    for (int r = 0; r < m->rounds; r++) {
        I("add.u32 %s, %s, %s", base.n, m->wb[r].n, sbb.n);
        for (int i = 0; i < 4; i++) {
            preg w[4];
            for (int e = 0; e < 4; e++) {
                w[e] = ws_ptx_reg(b, PTX_B32);
                I("cvt.rna.tf32.f32 %s, %s", w[e].n, v[r][e][i].n);
            }
            I("xor.b32 %s, %s, %d", ad.n, m->wc[r].n, 16 * i);
            I("add.u32 %s, %s, %s", ad.n, ad.n, base.n);
            I("st.shared.v4.b32 [%s+%d], {%s, %s, %s, %s}", ad.n, 128 * i, w[0].n, w[1].n, w[2].n, w[3].n);
        }
    }
    I("fence.proxy.async.shared::cta");
    I("bar.sync 1, %d", NCT);
}

/* the consumers: the ring into 64 accumulators, then the epilogue through shared memory.
 * wg_ed: the weight gradient's kernel (its epilogue's descriptor: rows C_out, positions
 * C_in, float32 NCL, no bias, act or add; KT its p_kts; one tile, o0, t0, n0 given), else
 * NULL (the forward: d's epilogue, KT stages, tile after tile of sc; slot s's k-th use waits
 * full[s]'s phase k: parity bit s of cm; every stage released, and epi arrived on once the
 * epilogue is done with Ys) */
static void emit_consumer(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg tid, preg wg, preg sbase,
                          preg bars, preg o0, preg t0, preg n0, preg lgtb, int KT,
                          const ws_conv_desc *wg_ed, int phase, const hg_sched *sc, preg kts)
{
    const ws_params *pt = ws_params_of(wg_ed ? WS_PARAMS_HWG : WS_PARAMS_HGEMM);
    const char *mt = math_name(d);
    char ktop[16];
    snprintf(ktop, sizeof ktop, "%d", KT);
    char title[96];
    if (q->nc == 1)
        snprintf(title, sizeof title, "consumer (warpgroup 0): g = 0 owns the tile's 64 rows, all %d positions", BN);
    else
        snprintf(title, sizeof title, "consumers (warpgroups %d, %d): g = warpgroup - %d owns rows 64g.., all %d "
                                      "positions", q->pwg ? 0 : 1, q->pwg ? 1 : 2, q->pwg ? 0 : 1, BN);
    ws_ptx_section(b, title);
    if (q->creg)
        I("setmaxnreg.inc.sync.aligned.u32 %d", q->creg);
    preg g = ws_ptx_reg(b, PTX_B32), aoff = ws_ptx_reg(b, PTX_B32), one = ws_ptx_reg(b, PTX_PRED);
    if (!sc) {
        I("sub.u32 %s, %s, %d", g.n, wg.n, q->pwg ? 0 : 1);
        I("mad.lo.u32 %s, %s, %d, %s", aoff.n, g.n, 64 * 128, sbase.n);
    }
    const int NACC = BN / 2;
    preg acc[NACC_MAX];
    for (int i = 0; i < NACC; i++)
        acc[i] = ws_ptx_reg(b, PTX_F32);
    preg tile = {""}, cm = {""}, klo = {""}, qj = {""};
    plabel cexit = {""}, ctile = {""};
    if (sc) {
        tile = ws_ptx_reg(b, PTX_B32), cm = ws_ptx_reg(b, PTX_B32);
        o0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), n0 = ws_ptx_reg(b, PTX_B32);
        lgtb = ws_ptx_reg(b, PTX_B32);
        kts = (preg){""};
        if (sc->lo)
            klo = ws_ptx_reg(b, PTX_B32), kts = ws_ptx_reg(b, PTX_B32);
        cexit = ws_ptx_label_new(b, "consumers_done"), ctile = ws_ptx_label_new(b, "ctile");
        qj = ws_ptx_reg(b, PTX_B32);
        I("mov.u32 %s, 0", cm.n);
        I("mov.u32 %s, 0", qj.n);
        ws_ptx_label(b, ctile);
        {
            preg qs = ws_ptx_reg(b, PTX_B32), qa = ws_ptx_reg(b, PTX_B32), qp = ws_ptx_reg(b, PTX_B32);
            preg bq = ws_ptx_reg(b, PTX_B32), tq = ws_ptx_reg(b, PTX_B32), sq = ws_ptx_reg(b, PTX_B32);
            ws_ptx_comment(b, "the block's j-th tile from the producer's queue (slot j %% %d)", WS_HGEMM_TQ);
            emit_ring_base(b, q, &tq, &sq, &bq);
            emit_queue_wait(b, q, qj, bq, qs, qa, qp, TQ_FULL);
            I("ld.shared.u32 %s, [%s+%d]", tile.n, qa.n, TQ_TILE);
        }
        emit_tile(b, d, q, sc, tile, o0, t0, n0, lgtb, klo, kts, cexit, (preg){""});
        ws_ptx_comment(b, "tid, the ring's base, g and A's rows again a tile at a time: only tile and cm are "
                          "held across tiles");
        emit_ring_base(b, q, &tid, &sbase, &bars);
        I("shr.u32 %s, %s, 7", g.n, tid.n);
        I("sub.u32 %s, %s, %d", g.n, g.n, q->pwg ? 0 : 1);
        I("mad.lo.u32 %s, %s, %d, %s", aoff.n, g.n, 64 * 128, sbase.n);
    }
    I("setp.eq.u32 %s, 1, 1", one.n);
    const int mtx = q->mn && d->math == WS_MATH_TF32; /* TF32 channel-first x: transposed here */
    hg_mt mtr;
    if (mtx)
        emit_mt_setup(b, q, tid, &mtr);
    for (int i = 0; i < NACC; i++)
        I("mov.f32 %s, 0f00000000", acc[i].n);
    char regs[NACC_MAX * 8 + 8];
    int o = 0;
    for (int i = 0; i < NACC; i++)
        o += snprintf(regs + o, sizeof regs - (size_t)o, "%s%s", i ? ", " : "", acc[i].n);

    preg it = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
    preg prev = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, 0", it.n);
    I("mov.u32 %s, 0", s.n);
    I("mov.u32 %s, 0", u.n);
    I("mov.u32 %s, %d", prev.n, ST - 1);
    if (wg_ed) {
        preg kw = ws_ptx_reg(b, PTX_B32);
        ws_ptx_ld_param(b, kw, pt, WS_HW_KTS);
        snprintf(ktop, sizeof ktop, "%s", kw.n);
        ws_ptx_comment(b, "p_kts stages: item n, times t0..t0+%d", ws_hgemm_bkc(d) - 1);
    } else if (kts.n[0]) {
        snprintf(ktop, sizeof ktop, "%s", kts.n);
        ws_ptx_comment(b, "%s stages (this row tile's taps): tap k, channels c0..c0+%d", kts.n, ws_hgemm_bkc(d) - 1);
    } else {
        ws_ptx_comment(b, "%d stages: tap k, channels c0..c0+%d", KT, ws_hgemm_bkc(d) - 1);
    }
    plabel top = ws_ptx_label_new(b, "cstage"), norel = ws_ptx_label_new(b, "norelease");
    /* the last 128-row tile's rows 64.. (the narrow tile has none) */
    const int tail = d->c_out % 128, skip = !wg_ed && q->nc == 2 && tail && tail <= 64;
    preg idle = {""};
    if (skip) {
        preg r0 = ws_ptx_reg(b, PTX_B32);
        idle = ws_ptx_reg(b, PTX_PRED);
        ws_ptx_comment(b, "idle: rows 64g.. of this tile are past C_out (the stages are still waited and released)");
        I("mad.lo.u32 %s, %s, 64, %s", r0.n, g.n, o0.n);
        I("setp.ge.u32 %s, %s, %d", idle.n, r0.n, d->c_out);
    }
    ws_ptx_label(b, top);
    {
        preg full = ws_ptx_reg(b, PTX_B32), par = ws_ptx_reg(b, PTX_B32);
        preg sa = ws_ptx_reg(b, PTX_B32), sbb = ws_ptx_reg(b, PTX_B32);
        preg da = ws_ptx_reg(b, PTX_B64), db = ws_ptx_reg(b, PTX_B64);
        I("mad.lo.u32 %s, %s, 8, %s", full.n, s.n, bars.n);
        if (sc) {
            preg bit = ws_ptx_reg(b, PTX_B32);
            I("shr.b32 %s, %s, %s", par.n, cm.n, s.n);
            I("and.b32 %s, %s, 1", par.n, par.n);
            I("shl.b32 %s, 1, %s", bit.n, s.n);
            I("xor.b32 %s, %s, %s", cm.n, cm.n, bit.n);
        } else {
            I("and.b32 %s, %s, 1", par.n, u.n);
        }
        emit_wait(b, full, par);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, s.n, SB, aoff.n);
        I("mad.lo.u32 %s, %s, %d, %s", sbb.n, s.n, SB, sbase.n);
        I("add.u32 %s, %s, %d", sbb.n, sbb.n, A_BYTES);
        if (mtx)
            emit_mt_transpose(b, q, &mtr, sbb);
        plabel nomma = {""};
        if (skip) {
            nomma = ws_ptx_label_new(b, "nomma");
            I("@%s bra %s", idle.n, nomma.n);
        }
        I("wgmma.fence.sync.aligned");
        for (int ks = 0; ks < 4; ks++) {
            preg ak = ws_ptx_reg(b, PTX_B32), bk = ws_ptx_reg(b, PTX_B32);
            I("add.u32 %s, %s, %d", ak.n, sa.n, 32 * ks);
            I("add.u32 %s, %s, %d", bk.n, sbb.n, q->mn && !mtx ? 2048 * ks : 32 * ks);
            emit_desc(b, da, ak);
            if (q->mn && !mtx)
                emit_desc_mn(b, db, bk);
            else
                emit_desc(b, db, bk);
            if (d->math == WS_MATH_TF32) /* k8 of 4-byte elements: the same 32 bytes a step */
                I("wgmma.mma_async.sync.aligned.m64n%dk8.f32.tf32.tf32 {%s}, %s, %s, %s, 1, 1", BN, regs, da.n,
                  db.n, one.n);
            else
                I("wgmma.mma_async.sync.aligned.m64n%dk16.f32.%s.%s {%s}, %s, %s, %s, 1, 1, 0, %d", BN, mt, mt,
                  regs, da.n, db.n, one.n, q->mn);
        }
        I("wgmma.commit_group.sync.aligned");
        if (skip)
            ws_ptx_label(b, nomma);
        ws_ptx_comment(b, "the group before is done: release its slot");
        I("wgmma.wait_group.sync.aligned 1");
        preg isfirst = ws_ptx_reg(b, PTX_PRED), empty = ws_ptx_reg(b, PTX_B32);
        I("setp.eq.u32 %s, %s, 0", isfirst.n, it.n);
        I("@%s bra %s", isfirst.n, norel.n);
        I("mad.lo.u32 %s, %s, 8, %s", empty.n, prev.n, bars.n);
        I("add.u32 %s, %s, %d", empty.n, empty.n, 8 * ST);
        I("mbarrier.arrive.shared::cta.b64 _, [%s]", empty.n);
        ws_ptx_label(b, norel);
        preg wrap = ws_ptx_reg(b, PTX_PRED);
        I("mov.u32 %s, %s", prev.n, s.n);
        emit_ring_next(b, q, wrap, s, sc ? (preg){""} : u, it, ktop, top);
    }
    I("wgmma.wait_group.sync.aligned 0");
    if (sc) {
        preg empty = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "the last stage's slot released too: the producer is on the next tile");
        I("mad.lo.u32 %s, %s, 8, %s", empty.n, prev.n, bars.n);
        I("add.u32 %s, %s, %d", empty.n, empty.n, 8 * ST);
        I("mbarrier.arrive.shared::cta.b64 _, [%s]", empty.n);
        ws_ptx_comment(b, "the tile again from its queue slot, which is then released; its coordinates for the "
                          "epilogue (not held through the products)");
        {
            preg qa = ws_ptx_reg(b, PTX_B32);
            I("and.b32 %s, %s, %d", qa.n, qj.n, WS_HGEMM_TQ - 1);
            I("mad.lo.u32 %s, %s, 4, %s", qa.n, qa.n, bars.n);
            I("ld.shared.u32 %s, [%s+%d]", tile.n, qa.n, TQ_TILE);
            I("and.b32 %s, %s, %d", qa.n, qj.n, WS_HGEMM_TQ - 1);
            I("mad.lo.u32 %s, %s, 8, %s", qa.n, qa.n, bars.n);
            I("mbarrier.arrive.shared::cta.b64 _, [%s+%d]", qa.n, TQ_EMPTY);
        }
        emit_tile(b, d, q, sc, tile, o0, t0, n0, lgtb, klo, kts, cexit, (preg){""});
    }
    if (wg_ed)
        d = wg_ed; /* the epilogue's descriptor from here on */
    const int ys = d->y_type == WS_F32 ? 4 : 2;

    const int ncl = d->y_layout == WS_NCL, PSTEP = NCT / BN; /* NCL: a thread's rows step */
    {
        char t[200];
        snprintf(t, sizeof t, "epilogue: acc[4ni + 2h + e] is row 64g + 16(warp%%4) + 8h + lane/4, position 8ni + "
                              "2(lane%%4) + e; into Ys[%d][BN + 4] (NCL y) or Ys[BN][%d] (NLC y), b[o0..] into "
                              "Bs[%d] after it", BMQ, BMQ + 4, BMQ);
        ws_ptx_section(b, t);
    }
    preg pb = ws_ptx_reg(b, PTX_B64), pa = ws_ptx_reg(b, PTX_B64), py = ws_ptx_reg(b, PTX_B64);
    preg abs = ws_ptx_reg(b, PTX_B64), hasb = ws_ptx_reg(b, PTX_PRED), hasa = ws_ptx_reg(b, PTX_PRED);
    preg n32 = ws_ptx_reg(b, PTX_B32), tout = ws_ptx_reg(b, PTX_B32);
    if (wg_ed) { /* part[(s*K + k)][o][j]: items s*K + k (p_nsk), positions j < C_in */
        I("mov.u64 %s, 0", pb.n);
        I("mov.u64 %s, 0", pa.n);
        I("mov.u64 %s, 0", abs.n);
        ws_ptx_ld_param(b, py, pt, WS_HW_Y);
        ws_ptx_ld_param(b, n32, pt, WS_HW_NSK);
        I("mov.u32 %s, %d", tout.n, d->c_in);
    } else {
        ws_ptx_ld_param(b, pb, pt, WS_HG_B);
        ws_ptx_ld_param(b, pa, pt, WS_HG_ADD);
        ws_ptx_ld_param(b, py, pt, WS_HG_Y);
        ws_ptx_ld_param(b, abs, pt, WS_HG_ADD_BS);
        ws_ptx_ld_param(b, n32, pt, WS_HG_N);
        ws_ptx_ld_param(b, tout, pt, WS_HG_T_OUT);
    }
    I("setp.ne.u64 %s, %s, 0", hasb.n, pb.n);
    I("setp.ne.u64 %s, %s, 0", hasa.n, pa.n);
    I("cvta.to.global.u64 %s, %s", pb.n, pb.n);
    I("cvta.to.global.u64 %s, %s", pa.n, pa.n);
    I("cvta.to.global.u64 %s, %s", py.n, py.n);
    preg lane = ws_ptx_reg(b, PTX_B32), wq = ws_ptx_reg(b, PTX_B32), row = ws_ptx_reg(b, PTX_B32);
    preg tmp = ws_ptx_reg(b, PTX_B32), wa = ws_ptx_reg(b, PTX_B32), c = ws_ptx_reg(b, PTX_B32);
    preg bs = ws_ptx_reg(b, PTX_B32), ysb = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "Ys at the ring's base + %d, past stage 0 (the next tile's first stage loads meanwhile)",
                   q->yoff);
    I("add.u32 %s, %s, %d", ysb.n, sbase.n, q->yoff);
    I("add.u32 %s, %s, %d", bs.n, ysb.n, ncl ? BMQ * YS_ROW * 4 : BN * YS_NLC * 4);
    I("sub.u32 %s, %s, %d", c.n, tid.n, q->pwg ? 0 : 128);
    I("bar.sync 1, %d", NCT);
    {
        ws_ptx_comment(b, "Bs[c] = b[o0 + c] (0 past C_out or without bias), c < %d", BMQ);
        preg lb = ws_ptx_reg(b, PTX_PRED), ok = ws_ptx_reg(b, PTX_PRED), bv = ws_ptx_reg(b, PTX_F32);
        preg ba = ws_ptx_reg(b, PTX_B64), sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", tmp.n, o0.n, c.n);
        I("setp.lt.u32 %s, %s, %d", lb.n, tmp.n, d->c_out);
        I("setp.lt.u32 %s, %s, %d", ok.n, c.n, BMQ);
        I("and.pred %s, %s, %s", lb.n, lb.n, ok.n);
        I("and.pred %s, %s, %s", lb.n, lb.n, hasb.n);
        I("mul.wide.u32 %s, %s, 4", ba.n, tmp.n);
        I("add.u64 %s, %s, %s", ba.n, ba.n, pb.n);
        I("mov.f32 %s, 0f00000000", bv.n);
        I("@%s ld.global.nc.f32 %s, [%s]", lb.n, bv.n, ba.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, c.n, bs.n);
        I("@%s st.shared.f32 [%s], %s", ok.n, sa.n, bv.n);
    }
    I("and.b32 %s, %s, 31", lane.n, tid.n);
    I("shr.u32 %s, %s, 5", wq.n, tid.n);
    I("and.b32 %s, %s, 3", wq.n, wq.n);
    I("shr.u32 %s, %s, 2", row.n, lane.n);
    I("mad.lo.u32 %s, %s, 16, %s", row.n, wq.n, row.n);
    I("mad.lo.u32 %s, %s, 64, %s", row.n, g.n, row.n);
    I("and.b32 %s, %s, 3", tmp.n, lane.n);
    I("shl.b32 %s, %s, 1", tmp.n, tmp.n);
    if (ncl) { /* Ys[row][position] */
        I("mad.lo.u32 %s, %s, %d, %s", wa.n, row.n, YS_ROW, tmp.n);
        I("mad.lo.u32 %s, %s, 4, %s", wa.n, wa.n, ysb.n);
        for (int ni = 0; ni < BN / 8; ni++)
            for (int h = 0; h < 2; h++)
                for (int e = 0; e < 2; e++)
                    I("st.shared.f32 [%s+%d], %s", wa.n, ((8 * h) * YS_ROW + 8 * ni + e) * 4,
                      acc[4 * ni + 2 * h + e].n);
    } else { /* Ys[position][row]: a warp's store is 8 rows x 4 positions on 32 banks */
        I("mad.lo.u32 %s, %s, %d, %s", wa.n, tmp.n, YS_NLC, row.n);
        I("mad.lo.u32 %s, %s, 4, %s", wa.n, wa.n, ysb.n);
        for (int ni = 0; ni < BN / 8; ni++)
            for (int h = 0; h < 2; h++)
                for (int e = 0; e < 2; e++)
                    I("st.shared.f32 [%s+%d], %s", wa.n, ((8 * ni + e) * YS_NLC + 8 * h) * 4,
                      acc[4 * ni + 2 * h + e].n);
    }
    I("bar.sync 1, %d", NCT);

    preg tbm = ws_ptx_reg(b, PTX_B32), half = ws_ptx_reg(b, PTX_B32);
    preg col = ws_ptx_reg(b, PTX_B32), ra = ws_ptx_reg(b, PTX_B32);
    I("shl.b32 %s, 1, %s", tbm.n, lgtb.n);
    I("sub.u32 %s, %s, 1", tbm.n, tbm.n);
    if (ncl) { /* position col = c % BN, rows half + PSTEP*m */
        I("shr.u32 %s, %s, %d", half.n, c.n, q->lgbn);
        I("and.b32 %s, %s, %d", col.n, c.n, BN - 1);
    } else {   /* row col = c % BM, positions half + 2m (NCT / BM = 2) */
        I("shr.u32 %s, %s, %d", half.n, c.n, BMQ == 128 ? 7 : 6);
        I("and.b32 %s, %s, %d", col.n, c.n, BMQ - 1);
    }
    plabel done = ws_ptx_label_new(b, "epi_done"), noadd = ws_ptx_label_new(b, "epi_noadd");
    if (ncl) {
        if (!wg_ed && !phase && !small_silu(d, q))
            emit_epi_ncl4(b, d, q, c, ysb, bs, o0, t0, n0, lgtb, tbm, pa, py, abs, hasa, n32, tout, done);
        ws_ptx_comment(b, "NCL y: position i = c %% %d (n, t once), rows c/%d + %dm; no branch per element", BN, BN,
                       PSTEP);
        preg n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), t64 = ws_ptx_reg(b, PTX_B64), n64 = ws_ptx_reg(b, PTX_B64);
        preg ybase = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64), orow = ws_ptx_reg(b, PTX_B32);
        preg rb = ws_ptx_reg(b, PTX_B32);
        I("shr.u32 %s, %s, %s", n.n, col.n, lgtb.n);
        I("add.u32 %s, %s, %s", n.n, n.n, n0.n);
        I("and.b32 %s, %s, %s", t.n, col.n, tbm.n);
        I("add.u32 %s, %s, %s", t.n, t.n, t0.n);
        I("setp.lt.u32 %s, %s, %s", ok.n, n.n, n32.n);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("@!%s bra %s", ok.n, done.n);
        I("cvt.u64.u32 %s, %s", t64.n, t.n);
        preg tdx = {""}, st = {""};
        const int cph = phase ? d->c_out / phase : 0; /* dx's channels */
        if (phase) {
            preg tdx64 = ws_ptx_reg(b, PTX_B64);
            tdx = ws_ptx_reg(b, PTX_B32), st = ws_ptx_reg(b, PTX_B32);
            ws_ptx_comment(b, "phases: row o = r*%d + c is dx[n, c, %d*t + r], dx [N][%d][T] with T = p_add_bs; "
                              "dx + (n*%d*T + %d*t)*%d",
                           cph, phase, cph, cph, phase, ys);
            I("cvt.u32.u64 %s, %s", tdx.n, abs.n);
            I("mov.u64 %s, %s", tdx64.n, abs.n);
            I("mul.lo.u32 %s, %s, %d", st.n, t.n, phase);
            I("mul.wide.u32 %s, %s, %d", ybase.n, n.n, cph);
            I("mul.lo.u64 %s, %s, %s", ybase.n, ybase.n, tdx64.n);
            I("cvt.u64.u32 %s, %s", t64.n, st.n);
        } else {
            I("mul.wide.u32 %s, %s, %s", ybase.n, n.n, tout.n);
            I("mul.lo.u64 %s, %s, %d", ybase.n, ybase.n, d->c_out);
        }
        I("add.u64 %s, %s, %s", ybase.n, ybase.n, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", ybase.n, ybase.n, ys, py.n);
        I("cvt.u64.u32 %s, %s", n64.n, n.n);
        I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, abs.n);
        I("add.u64 %s, %s, %s", abase.n, abase.n, t64.n);
        I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, pa.n);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, half.n, YS_ROW, col.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, ysb.n);
        I("mad.lo.u32 %s, %s, 4, %s", rb.n, half.n, bs.n);
        I("add.u32 %s, %s, %s", orow.n, o0.n, half.n);
        for (int va = wg_ed || phase ? 0 : 1; va >= 0; va--) { /* the weight gradient, phases: no add */
        if (!wg_ed && !phase)
            emit_add_variant(b, va, hasa, noadd, done);
        /* the groups of EG rows as a loop, not unrolled: this code runs once a tile, and
         * straight through it waits on instruction fetch (ncu: "no instruction" stalls were a
         * third of a one-wave NCL conv's samples, with the rows unrolled) */
        {
            preg oi = ws_ptx_reg(b, PTX_B32), ri = ws_ptx_reg(b, PTX_B32), bi = ws_ptx_reg(b, PTX_B32);
            preg gi = ws_ptx_reg(b, PTX_B32), gmore = ws_ptx_reg(b, PTX_PRED);
            plabel gtop = ws_ptx_label_new(b, "epi_rows");
            ws_ptx_comment(b, "rows c/%d + %d(g*%d ..): %d groups of %d, reads first, then the outputs", BN, PSTEP,
                           EG, BMQ / PSTEP / EG, EG);
            I("mov.u32 %s, %s", oi.n, orow.n);
            I("mov.u32 %s, %s", ri.n, ra.n);
            I("mov.u32 %s, %s", bi.n, rb.n);
            I("mov.u32 %s, 0", gi.n);
            ws_ptx_label(b, gtop);
            preg ook[EG], v[EG], bias[EG], off[EG], p[EG], r[EG];
            for (int m = 0; m < EG; m++) {
                preg oo = ws_ptx_reg(b, PTX_B32);
                ook[m] = ws_ptx_reg(b, PTX_PRED), v[m] = ws_ptx_reg(b, PTX_F32), bias[m] = ws_ptx_reg(b, PTX_F32);
                off[m] = ws_ptx_reg(b, PTX_B64), p[m] = ws_ptx_reg(b, PTX_PRED);
                r[m] = ws_ptx_reg(b, d->y_type == WS_F32 ? PTX_F32 : PTX_B16);
                I("add.u32 %s, %s, %d", oo.n, oi.n, PSTEP * m);
                I("setp.lt.u32 %s, %s, %d", ook[m].n, oo.n, d->c_out);
                I("ld.shared.f32 %s, [%s+%d]", v[m].n, ri.n, PSTEP * m * YS_ROW * 4);
                I("ld.shared.f32 %s, [%s+%d]", bias[m].n, bi.n, PSTEP * m * 4);
                if (phase) { /* r = o / C, c = o - r*C: off = c*T + r, in range where P*t + r < T */
                    preg ph = ws_ptx_reg(b, PTX_B32), ch = ws_ptx_reg(b, PTX_B32), in = ws_ptx_reg(b, PTX_PRED);
                    preg ph64 = ws_ptx_reg(b, PTX_B64);
                    I("div.u32 %s, %s, %d", ph.n, oo.n, cph);
                    I("mul.lo.u32 %s, %s, %d", ch.n, ph.n, cph);
                    I("sub.u32 %s, %s, %s", ch.n, oo.n, ch.n);
                    I("add.u32 %s, %s, %s", tmp.n, st.n, ph.n);
                    I("setp.lt.u32 %s, %s, %s", in.n, tmp.n, tdx.n);
                    I("and.pred %s, %s, %s", ook[m].n, ook[m].n, in.n);
                    I("cvt.u64.u32 %s, %s", ph64.n, ph.n);
                    I("mad.wide.u32 %s, %s, %s, %s", off[m].n, ch.n, tdx.n, ph64.n);
                } else {
                    I("mul.wide.u32 %s, %s, %s", off[m].n, oo.n, tout.n);
                }
                if (va) {
                    I("and.pred %s, %s, %s", p[m].n, ook[m].n, hasa.n);
                    ws_hgemm_add_read(b, d, r[m], p[m], off[m], abase, ys);
                } else {
                    p[m] = (preg){""};
                }
            }
            for (int m = 0; m < EG; m++)
                ws_hgemm_elem(b, d, v[m], bias[m], p[m], r[m], ook[m], off[m], ybase, ys);
            I("add.u32 %s, %s, %d", oi.n, oi.n, PSTEP * EG);
            I("add.u32 %s, %s, %d", ri.n, ri.n, PSTEP * EG * YS_ROW * 4);
            I("add.u32 %s, %s, %d", bi.n, bi.n, PSTEP * EG * 4);
            I("add.u32 %s, %s, 1", gi.n, gi.n);
            I("setp.lt.u32 %s, %s, %d", gmore.n, gi.n, BMQ / PSTEP / EG);
            I("@%s bra %s", gmore.n, gtop.n);
        }
        }
    } else {
        if (!wg_ed && d->c_out % 4 == 0 && !small_silu(d, q))
            emit_epi_nlc4(b, d, q, c, ysb, bs, o0, t0, n0, lgtb, tbm, pa, py, abs, hasa, n32, tout, done);
        ws_ptx_comment(b, "NLC y: row c %% %d (o, b[o] once), positions c/%d + 2m; no branch per element", BMQ, BMQ);
        preg oo = ws_ptx_reg(b, PTX_B32), ook = ws_ptx_reg(b, PTX_PRED), bias = ws_ptx_reg(b, PTX_F32);
        preg off = ws_ptx_reg(b, PTX_B64), sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %s", oo.n, o0.n, col.n);
        I("setp.lt.u32 %s, %s, %d", ook.n, oo.n, d->c_out);
        I("@!%s bra %s", ook.n, done.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, col.n, bs.n);
        I("ld.shared.f32 %s, [%s]", bias.n, sa.n);
        I("cvt.u64.u32 %s, %s", off.n, oo.n);
        I("mad.lo.u32 %s, %s, %d, %s", ra.n, half.n, YS_NLC, col.n);
        I("mad.lo.u32 %s, %s, 4, %s", ra.n, ra.n, ysb.n);
        for (int va = wg_ed ? 0 : 1; va >= 0; va--) { /* the weight gradient: no add */
        if (!wg_ed)
            emit_add_variant(b, va, hasa, noadd, done);
        for (int m0 = 0; m0 < BN / 2; m0 += EG) {
            preg ok[EG], v[EG], ybase[EG], p[EG], r[EG];
            ws_ptx_comment(b, "positions c/%d + 2(%d..%d): reads first, then the outputs", BMQ, m0, m0 + EG - 1);
            for (int m = 0; m < EG; m++) {
                preg i = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
                preg ok2 = ws_ptx_reg(b, PTX_PRED), pos = ws_ptx_reg(b, PTX_B64), abase = ws_ptx_reg(b, PTX_B64);
                preg n64 = ws_ptx_reg(b, PTX_B64), t64 = ws_ptx_reg(b, PTX_B64);
                ok[m] = ws_ptx_reg(b, PTX_PRED), v[m] = ws_ptx_reg(b, PTX_F32), ybase[m] = ws_ptx_reg(b, PTX_B64);
                p[m] = ws_ptx_reg(b, PTX_PRED), r[m] = ws_ptx_reg(b, d->y_type == WS_F32 ? PTX_F32 : PTX_B16);
                I("add.u32 %s, %s, %d", i.n, half.n, 2 * (m0 + m));
                I("shr.u32 %s, %s, %s", n.n, i.n, lgtb.n);
                I("add.u32 %s, %s, %s", n.n, n.n, n0.n);
                I("and.b32 %s, %s, %s", t.n, i.n, tbm.n);
                I("add.u32 %s, %s, %s", t.n, t.n, t0.n);
                I("setp.lt.u32 %s, %s, %s", ok[m].n, n.n, n32.n);
                I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tout.n);
                I("and.pred %s, %s, %s", ok[m].n, ok[m].n, ok2.n);
                I("ld.shared.f32 %s, [%s+%d]", v[m].n, ra.n, 2 * (m0 + m) * YS_NLC * 4);
                ws_ptx_comment(b, "y + ((n*T_out + t)*C_out)*%d, add + (n*add_bs + t*C_out)*%d", ys, ys);
                I("cvt.u64.u32 %s, %s", t64.n, t.n);
                I("mad.wide.u32 %s, %s, %s, %s", pos.n, n.n, tout.n, t64.n);
                I("mul.lo.u64 %s, %s, %lld", ybase[m].n, pos.n, (long long)d->c_out * ys);
                I("add.u64 %s, %s, %s", ybase[m].n, ybase[m].n, py.n);
                if (va) {
                    I("and.pred %s, %s, %s", p[m].n, ok[m].n, hasa.n);
                    I("cvt.u64.u32 %s, %s", n64.n, n.n);
                    I("mul.lo.u64 %s, %s, %s", abase.n, n64.n, abs.n);
                    I("mad.lo.u64 %s, %s, %d, %s", abase.n, t64.n, d->c_out, abase.n);
                    I("mad.lo.u64 %s, %s, %d, %s", abase.n, abase.n, ys, pa.n);
                    ws_hgemm_add_read(b, d, r[m], p[m], off, abase, ys);
                } else {
                    p[m] = (preg){""};
                }
            }
            for (int m = 0; m < EG; m++)
                ws_hgemm_elem(b, d, v[m], bias, p[m], r[m], ok[m], off, ybase[m], ys);
        }
        }
    }
    ws_ptx_label(b, done);
    if (sc) {
        preg epi = ws_ptx_reg(b, PTX_B32);
        ws_ptx_comment(b, "done with Ys (its reads before the copies that reuse it): epi; the next tile");
        emit_ring_base(b, q, &tid, &sbase, &bars);
        I("fence.proxy.async.shared::cta");
        I("add.u32 %s, %s, %d", epi.n, bars.n, 16 * ST);
        I("mbarrier.arrive.shared::cta.b64 _, [%s]", epi.n);
        I("add.u32 %s, %s, 1", qj.n, qj.n);
        I("bra %s", ctile.n);
        ws_ptx_label(b, cexit);
    }
    I("ret");
}

static void emit_main(ptx_buf *mod, const ws_conv_desc *d, const char *name, int phase, const int *lo, const int *hi,
                      int mn)
{
    ws_hgemm_cfg qc;
    ws_hgemm_cfg_of(d, &qc);
    qc.mn = mn;
    const ws_hgemm_cfg *q = &qc;
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_HGEMM);
    const int KT = d->k * ((d->c_in + ws_hgemm_bkc(d) - 1) / ws_hgemm_bkc(d));
    ws_ptx_comment(b, "y[o, (n, t)] = act(b[o] + sum_k sum_j W[o, k, j] X[n, S*t + D*k - P_L, j]) + add");
    ws_ptx_comment(b, "C_in %d C_out %d K %d S %d D %d P_L %d; y %s %s, act %s; %s; tile %dx%d, %d stages of 128 "
                      "bytes of channels, %d in all",
                   d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l,
                   d->y_layout == WS_NCL ? "NCL" : "NLC", ws_ptx_type_name(d->y_type),
                   ws_ptx_act_name(d->act), math_name(d), BMQ, BN, ST, KT);
    {
        char t[140];
        snprintf(t, sizeof t, "tiles: ((n0/NB)*ntt + t0/TB)*rows + o0/%d, %s; the ring's base and mbarriers",
                 BMQ, q->loop ? "ctaid.x, then those the block asks for" : "ctaid.x");
        ws_ptx_section(b, t);
    }
    preg tid, sbase, bars;
    emit_ring_base(b, q, &tid, &sbase, &bars);
    hg_sched sc = { .nrow = (d->c_out + BMQ - 1) / BMQ, .phase = phase, .lo = lo, .hi = hi };
    preg wg = ws_ptx_reg(b, PTX_B32);
    ws_ptx_comment(b, "the %d row tiles of one position tile are consecutive tiles: they run together "
                      "and read its x once from memory", sc.nrow);
    if (q->loop) {
        emit_ring_init(b, q, tid, bars, wg);
        preg cons = ws_ptx_reg(b, PTX_PRED), none = {""};
        plabel lc = ws_ptx_label_new(b, "consumer");
        I("setp.ne.u32 %s, %s, %d", cons.n, wg.n, q->pwg);
        I("@%s bra %s", cons.n, lc.n);
        emit_producer(b, d, q, tid, sbase, bars, &sc, KT);
        ws_ptx_label(b, lc);
        emit_consumer(b, d, q, tid, wg, sbase, bars, none, none, none, none, KT, NULL, phase, &sc, none);
    } else { /* a block a tile: tile ctaid.x */
        preg o0 = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), n0 = ws_ptx_reg(b, PTX_B32);
        preg lgtb = ws_ptx_reg(b, PTX_B32), tile = ws_ptx_reg(b, PTX_B32), klo = {""}, kts = {""};
        preg cons = ws_ptx_reg(b, PTX_PRED);
        plabel lc = ws_ptx_label_new(b, "consumer"), past = ws_ptx_label_new(b, "past_the_tiles");
        if (lo)
            klo = ws_ptx_reg(b, PTX_B32), kts = ws_ptx_reg(b, PTX_B32);
        I("mov.u32 %s, %%ctaid.x", tile.n);
        emit_tile(b, d, q, &sc, tile, o0, t0, n0, lgtb, klo, kts, past, (preg){""});
        emit_ring_init(b, q, tid, bars, wg);
        I("setp.ne.u32 %s, %s, %d", cons.n, wg.n, q->pwg);
        I("@%s bra %s", cons.n, lc.n);
        emit_producer_tile(b, d, q, tid, sbase, bars, o0, t0, n0, lgtb, KT, klo, kts);
        ws_ptx_label(b, lc);
        emit_consumer(b, d, q, tid, wg, sbase, bars, o0, t0, n0, lgtb, KT, NULL, phase, NULL, kts);
        ws_ptx_label(b, past);
        I("ret");
    }
    ws_ptx_kernel_end_params(&kb, mod, name, pt, q->threads, q->minb, q->maxnreg);
}

/* the weight gradient's producer: thread 0 of warpgroup 0 fills the ring with p_kts stages of
 * the split's (n, t) range: A = G (T_out, C_out, N) box (BK, 128, 1) at (t, o0, n), B = Xs
 * (Tq, S*C_in, N) box (BK, 256, 1) at (t + qk, rk*C_in + j0, n), D*k - P_L = S*qk + rk */
static void emit_producer_wg(ptx_buf *b, const ws_conv_desc *d, const ws_hgemm_cfg *q, preg tid, preg sbase, preg bars,
                             preg o0, preg j0, preg k, preg split)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_HWG);
    const int BK = ws_hgemm_bkc(d);
    plabel out = ws_ptx_label_new(b, "producer_done");
    preg not0 = ws_ptx_reg(b, PTX_PRED);
    ws_ptx_section(b, "producer (warpgroup 0): thread 0 issues every copy");
    if (q->preg)
        I("setmaxnreg.dec.sync.aligned.u32 %d", q->preg);
    I("setp.ne.u32 %s, %s, %d", not0.n, tid.n, 128 * q->pwg);
    I("@%s bra %s", not0.n, out.n);
    preg ta = ws_ptx_reg(b, PTX_B64), tb = ws_ptx_reg(b, PTX_B64);
    ws_ptx_param_tmap(b, ta, pt, WS_HW_TA);
    ws_ptx_param_tmap(b, tb, pt, WS_HW_TB);
    preg kts = ws_ptx_reg(b, PTX_B32), tch = ws_ptx_reg(b, PTX_B32);
    ws_ptx_ld_param(b, kts, pt, WS_HW_KTS);
    ws_ptx_ld_param(b, tch, pt, WS_HW_TCH);
    preg it = ws_ptx_reg(b, PTX_B32), s = ws_ptx_reg(b, PTX_B32), u = ws_ptx_reg(b, PTX_B32);
    preg n = ws_ptx_reg(b, PTX_B32), tc = ws_ptx_reg(b, PTX_B32), ta_t = ws_ptx_reg(b, PTX_B32);
    preg tb_t = ws_ptx_reg(b, PTX_B32), qk = ws_ptx_reg(b, PTX_B32), rk = ws_ptx_reg(b, PTX_B32);
    preg g0 = ws_ptx_reg(b, PTX_B32), neg = ws_ptx_reg(b, PTX_PRED);
    I("mov.u32 %s, 0", it.n);
    I("mov.u32 %s, 0", s.n);
    I("mov.u32 %s, 0", u.n);
    ws_gbwd_cls cl;
    ws_hgemm_wgrad_classes(d, &cl);
    ws_ptx_comment(b, "tap k reads class cls[k] of Xs at t + off[k] (%d classes; off a multiple of %d)", cl.n,
                   cl.align);
    I("mov.u32 %s, 0", rk.n);
    I("mov.u32 %s, 0", qk.n);
    for (int kk = 0; kk < d->k; kk++) {
        I("setp.eq.u32 %s, %s, %d", neg.n, k.n, kk);
        I("@%s mov.u32 %s, %d", neg.n, rk.n, cl.cls[kk]);
        I("@%s mov.u32 %s, %d", neg.n, qk.n, cl.off[kk]);
    }
    ws_ptx_comment(b, "the split's first stage g0 = split * p_kts: item g0 / p_tch, chunk g0 %% p_tch");
    I("mul.lo.u32 %s, %s, %s", g0.n, split.n, kts.n);
    I("div.u32 %s, %s, %s", n.n, g0.n, tch.n);
    I("rem.u32 %s, %s, %s", tc.n, g0.n, tch.n);
    I("mul.lo.u32 %s, %s, %d", ta_t.n, tc.n, BK);
    I("add.s32 %s, %s, %s", tb_t.n, ta_t.n, qk.n);
    ws_ptx_comment(b, "Xs's row of (cls, j0): cls*C_in + j0");
    I("mad.lo.u32 %s, %s, %d, %s", rk.n, rk.n, d->c_in, j0.n);
    plabel top = ws_ptx_label_new(b, "pstage"), nowait = ws_ptx_label_new(b, "pfirst");
    ws_ptx_label(b, top);
    preg full, sa, sbb;
    emit_slot(b, q, s, u, bars, sbase, nowait, &full, &sa, &sbb);
    I("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s]",
      sa.n, ta.n, ta_t.n, o0.n, n.n, full.n);
    I("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%s], [%s, {%s, %s, %s}], [%s]",
      sbb.n, tb.n, tb_t.n, rk.n, n.n, full.n);
    ws_ptx_comment(b, "next: times t + %d, or the next item from time 0", BK);
    preg wrap = ws_ptx_reg(b, PTX_PRED);
    I("add.u32 %s, %s, 1", tc.n, tc.n);
    I("add.u32 %s, %s, %d", ta_t.n, ta_t.n, BK);
    I("add.s32 %s, %s, %d", tb_t.n, tb_t.n, BK);
    I("setp.ge.u32 %s, %s, %s", wrap.n, tc.n, tch.n);
    I("@%s mov.u32 %s, 0", wrap.n, tc.n);
    I("@%s mov.u32 %s, 0", wrap.n, ta_t.n);
    I("@%s mov.u32 %s, %s", wrap.n, tb_t.n, qk.n);
    I("@%s add.u32 %s, %s, 1", wrap.n, n.n, n.n);
    emit_ring_next(b, q, wrap, s, u, it, kts.n, top);
    ws_ptx_label(b, out);
    I("ret");
}

/* the weight gradient's kernel (ptx_hgemm.h): a block is (split, tap k, j0, o0), ctaid.x =
 * ((split*K + k)*jt + j0/256)*rows + o0/128 */
static void emit_main_wg(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ws_hgemm_cfg qc;
    ws_hgemm_cfg_large(&qc);
    const ws_hgemm_cfg *q = &qc;
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const int rows = (d->c_out + WS_HGEMM_BM - 1) / WS_HGEMM_BM, jt = (d->c_in + BN - 1) / BN;
    ws_conv_desc ed = *d; /* the epilogue: part[s*K + k][o][j], float32 */
    ed.y_layout = WS_NCL, ed.y_type = WS_F32, ed.act = WS_ACT_NONE;
    ws_ptx_comment(b, "part[s][k][o][j] = sum over split s's (n, t) of G[n][o][t] Xs[n][j][rk][t + qk]");
    ws_ptx_comment(b, "C_in %d C_out %d K %d S %d D %d P_L %d; %s; tile 128x%d, %d stages of 128 bytes of times",
                   d->c_in, d->c_out, d->k, d->stride, d->dilation, d->pad_l, math_name(d), BN, ST);
    ws_ptx_section(b, "block: ctaid.x = ((split*K + k)*jt + j0/256)*rows + o0/128; the ring's base and mbarriers");
    preg tid, sbase, bars;
    emit_ring_base(b, q, &tid, &sbase, &bars);
    preg o0 = ws_ptx_reg(b, PTX_B32), j0 = ws_ptx_reg(b, PTX_B32), sk = ws_ptx_reg(b, PTX_B32);
    preg k = ws_ptx_reg(b, PTX_B32), split = ws_ptx_reg(b, PTX_B32), cx = ws_ptx_reg(b, PTX_B32);
    preg lgtb = ws_ptx_reg(b, PTX_B32), wg = ws_ptx_reg(b, PTX_B32);
    I("mov.u32 %s, %%ctaid.x", cx.n);
    I("rem.u32 %s, %s, %d", o0.n, cx.n, rows);
    I("shl.b32 %s, %s, 7", o0.n, o0.n);
    I("div.u32 %s, %s, %d", cx.n, cx.n, rows);
    I("rem.u32 %s, %s, %d", j0.n, cx.n, jt);
    I("shl.b32 %s, %s, %d", j0.n, j0.n, WS_HGEMM_LGBN);
    I("div.u32 %s, %s, %d", sk.n, cx.n, jt);
    I("rem.u32 %s, %s, %d", k.n, sk.n, d->k);
    I("div.u32 %s, %s, %d", split.n, sk.n, d->k);
    I("mov.u32 %s, %d", lgtb.n, WS_HGEMM_LGBN);
    emit_ring_init(b, q, tid, bars, wg);
    {
        preg cons = ws_ptx_reg(b, PTX_PRED);
        plabel lc = ws_ptx_label_new(b, "consumer");
        I("setp.ne.u32 %s, %s, %d", cons.n, wg.n, q->pwg);
        I("@%s bra %s", cons.n, lc.n);
        emit_producer_wg(b, d, q, tid, sbase, bars, o0, j0, k, split);
        ws_ptx_label(b, lc);
        emit_consumer(b, d, q, tid, wg, sbase, bars, o0, j0, sk, lgtb, 0, &ed, 0, NULL, (preg){""});
    }
    ws_ptx_kernel_end_params(&kb, mod, name, ws_params_of(WS_PARAMS_HWG), q->threads, q->minb, q->maxnreg);
}

/* a staging kernel's parameters, the same in "_prep" and "_prep8": x and X (global
 * addresses), T_in; tid */
static void emit_prep_params(ptx_buf *b, preg px, preg pxp, preg tin, preg tid)
{
    const ws_params *pt = ws_params_of(WS_PARAMS_HPREP);
    ws_ptx_ld_param(b, px, pt, WS_HP_X);
    ws_ptx_ld_param(b, pxp, pt, WS_HP_XP);
    ws_ptx_ld_param(b, tin, pt, WS_HP_T_IN);
    I("cvta.to.global.u64 %s, %s", px.n, px.n);
    I("cvta.to.global.u64 %s, %s", pxp.n, pxp.n);
    I("mov.u32 %s, %%tid.x", tid.n);
}

/* a staging block's place, the same in "_prep" and "_prep8": t0 = ctaid.x << lgt (its first
 * time), c0 = 64 ctaid.y (its first channel), item n = ctaid.z, sb = the tile, item = n *
 * C_in * T_in (the item's first element in x and X) */
static void emit_prep_block(ptx_buf *b, int C, int lgt, preg tin, preg t0, preg c0, preg n, preg sb, preg item)
{
    I("mov.u32 %s, %%ctaid.x", t0.n);
    I("shl.b32 %s, %s, %d", t0.n, t0.n, lgt);
    I("mov.u32 %s, %%ctaid.y", c0.n);
    I("shl.b32 %s, %s, 6", c0.n, c0.n);
    I("mov.u32 %s, %%ctaid.z", n.n);
    I("mov.u32 %s, tile", sb.n);
    ws_ptx_comment(b, "item n: n * C_in * T_in elements in x and X");
    I("mul.wide.u32 %s, %s, %s", item.n, n.n, tin.n);
    I("mul.lo.u64 %s, %s, %d", item.n, item.n, C);
}

/* the staging kernel: X[n][t][j] = round(pre(x[n, j, t])) in the math type. A block: 32
 * times x 64 channels through Ts[64][33] float32; reads are predicated (no branch) and
 * coalesced along x's contiguous axis, writes are 16 bytes (8 channels) a thread */
static void emit_prep(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_HPREP);
    const int xs = d->x_type == WS_F32 ? 4 : 2, ncl = d->x_layout == WS_NCL, C = d->c_in;
    const ws_dtype mtype = math_type(d);
    ws_ptx_comment(b, "X[n][t][j] = %s(pre(x[n, j, t])), x %s %s, pre %s; a block: 32 times x 64 channels",
                   math_name(d), ncl ? "NCL" : "NLC", ws_ptx_type_name(d->x_type),
                   ws_ptx_act_name(d->pre));
    ws_ptx_raw(b, "\t.shared .align 16 .b8 tile[%d];\n", 64 * (PREP_TILE + 1) * 4);
    preg px = ws_ptx_reg(b, PTX_B64), pxp = ws_ptx_reg(b, PTX_B64), tin = ws_ptx_reg(b, PTX_B32);
    preg tid = ws_ptx_reg(b, PTX_B32), tx = ws_ptx_reg(b, PTX_B32), ty = ws_ptx_reg(b, PTX_B32);
    preg t0 = ws_ptx_reg(b, PTX_B32), c0 = ws_ptx_reg(b, PTX_B32), n = ws_ptx_reg(b, PTX_B32);
    preg sb = ws_ptx_reg(b, PTX_B32), item = ws_ptx_reg(b, PTX_B64);
    emit_prep_params(b, px, pxp, tin, tid);
    I("and.b32 %s, %s, 31", tx.n, tid.n);
    I("shr.u32 %s, %s, 5", ty.n, tid.n);
    emit_prep_block(b, C, 5, tin, t0, c0, n, sb, item);
    ws_ptx_section(b, ncl ? "read: Ts[cl][tl] = x[n, c0 + ty + 8i, t0 + tx], i < 8"
                          : "read: Ts[cl][tl] = x[n, t0 + ty + 8(i%4), c0 + tx + 32(i/4)], i < 8");
    preg v[8];
    for (int i = 0; i < 8; i++) {
        preg c = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
        v[i] = ws_ptx_reg(b, PTX_F32);
        if (ncl) {
            I("add.u32 %s, %s, %d", c.n, ty.n, 8 * i);
            I("add.u32 %s, %s, %s", c.n, c.n, c0.n);
            I("add.u32 %s, %s, %s", t.n, t0.n, tx.n);
        } else {
            I("add.u32 %s, %s, %d", t.n, ty.n, 8 * (i % 4));
            I("add.u32 %s, %s, %s", t.n, t.n, t0.n);
            I("add.u32 %s, %s, %d", c.n, tx.n, 32 * (i / 4));
            I("add.u32 %s, %s, %s", c.n, c.n, c0.n);
        }
        I("setp.lt.u32 %s, %s, %d", ok.n, c.n, C);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tin.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        if (ncl)
            I("mad.wide.u32 %s, %s, %s, %s", e.n, c.n, tin.n, item.n);
        else
            I("mad.wide.u32 %s, %s, %d, %s", e.n, t.n, C, item.n);
        I("cvt.u64.u32 %s, %s", a.n, ncl ? t.n : c.n);
        I("add.u64 %s, %s, %s", e.n, e.n, a.n);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, xs, px.n);
        I("mov.f32 %s, 0f00000000", v[i].n);
        if (d->x_type == WS_F32) {
            I("@%s ld.global.nc.f32 %s, [%s]", ok.n, v[i].n, a.n);
        } else {
            preg h = ws_ptx_reg(b, PTX_B16);
            I("mov.b16 %s, 0", h.n);
            I("@%s ld.global.nc.b16 %s, [%s]", ok.n, h.n, a.n);
            if (d->x_type == WS_F16) {
                I("cvt.f32.f16 %s, %s", v[i].n, h.n);
            } else {
                preg w = ws_ptx_reg(b, PTX_B32);
                I("cvt.u32.u16 %s, %s", w.n, h.n);
                I("shl.b32 %s, %s, 16", w.n, w.n);
                I("mov.b32 %s, %s", v[i].n, w.n);
            }
        }
    }
    for (int i = 0; i < 8; i++) {
        preg sa = ws_ptx_reg(b, PTX_B32);
        ws_ptx_act(b, v[i], d->pre); /* pre(0) = 0 for every act: the padding stays zero */
        if (ncl) { /* Ts[ty + 8i][tx] */
            I("add.u32 %s, %s, %d", sa.n, ty.n, 8 * i);
            I("mad.lo.u32 %s, %s, %d, %s", sa.n, sa.n, PREP_TILE + 1, tx.n);
        } else {   /* Ts[tx + 32(i/4)][ty + 8(i%4)] */
            I("add.u32 %s, %s, %d", sa.n, tx.n, 32 * (i / 4));
            I("mad.lo.u32 %s, %s, %d, %s", sa.n, sa.n, PREP_TILE + 1, ty.n);
            I("add.u32 %s, %s, %d", sa.n, sa.n, 8 * (i % 4));
        }
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        I("st.shared.f32 [%s], %s", sa.n, v[i].n);
    }
    I("bar.sync 0");
    ws_ptx_section(b, "write: X[n][t0 + tid/8][c0 + 8(tid%8) .. +7], 16 bytes");
    {
        preg tl = ws_ptx_reg(b, PTX_B32), k8 = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32);
        preg c = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED), ok2 = ws_ptx_reg(b, PTX_PRED);
        preg sa = ws_ptx_reg(b, PTX_B32), e = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
        I("shr.u32 %s, %s, 3", tl.n, tid.n);
        I("and.b32 %s, %s, 7", k8.n, tid.n);
        I("shl.b32 %s, %s, 3", k8.n, k8.n);
        I("add.u32 %s, %s, %s", t.n, t0.n, tl.n);
        I("add.u32 %s, %s, %s", c.n, c0.n, k8.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, c.n, C);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tin.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, k8.n, PREP_TILE + 1, tl.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        preg f[8], w[4];
        for (int j = 0; j < 8; j++) {
            f[j] = ws_ptx_reg(b, PTX_F32);
            I("ld.shared.f32 %s, [%s+%d]", f[j].n, sa.n, j * (PREP_TILE + 1) * 4);
        }
        I("mad.wide.u32 %s, %s, %d, %s", e.n, t.n, C, item.n);
        I("cvt.u64.u32 %s, %s", a.n, c.n);
        I("add.u64 %s, %s, %s", e.n, e.n, a.n);
        if (mtype == WS_F32) { /* TF32: rounded to nearest, ties away (cvt.rna), kept in float32 */
            preg r[8];
            for (int j = 0; j < 8; j++) {
                r[j] = ws_ptx_reg(b, PTX_B32);
                I("cvt.rna.tf32.f32 %s, %s", r[j].n, f[j].n);
            }
            I("mad.lo.u64 %s, %s, 4, %s", a.n, e.n, pxp.n);
            I("@%s st.global.v4.b32 [%s], {%s, %s, %s, %s}", ok.n, a.n, r[0].n, r[1].n, r[2].n, r[3].n);
            I("@%s st.global.v4.b32 [%s+16], {%s, %s, %s, %s}", ok.n, a.n, r[4].n, r[5].n, r[6].n, r[7].n);
        } else {
            for (int j = 0; j < 4; j++) {
                w[j] = ws_ptx_reg(b, PTX_B32);
                I("cvt.rn.%s.f32 %s, %s, %s", mtype == WS_BF16 ? "bf16x2" : "f16x2", w[j].n, f[2 * j + 1].n,
                  f[2 * j].n);
            }
            I("mad.lo.u64 %s, %s, 2, %s", a.n, e.n, pxp.n);
            I("@%s st.global.v4.b32 [%s], {%s, %s, %s, %s}", ok.n, a.n, w[0].n, w[1].n, w[2].n, w[3].n);
        }
    }
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, WS_HPREP_THREADS, 0, 0);
}

int ws_hgemm_prep8(const ws_conv_desc *d)
{
    return d->x_layout == WS_NCL && d->x_type == math_type(d) && d->pre == WS_ACT_NONE;
}

int ws_hgemm_prep8_t(const ws_conv_desc *d)
{
    return d->x_type == WS_F32 ? 64 : 128;
}

int ws_hgemm_prep8_call(const ws_conv_desc *d, long long t_in, uint64_t x)
{
    const long long es = d->x_type == WS_F32 ? 4 : 2;
    return ws_hgemm_prep8(d) && x % 16 == 0 && t_in * es % 16 == 0 && t_in >= ws_hgemm_prep8_t(d);
}

/* the staging kernel's "_prep8" entry (ptx_hgemm.h, ws_hgemm_prep8_call): X[n][t][j] =
 * x[n, j, t] (TF32: rounded as cvt.rna), a block TB = 128 (16-bit) or 64 (float32) times x 64
 * channels, 16 KiB. Reads: 16 bytes (E = 8 or 4 times) a load, four a thread, a warp's 32
 * two rows of 256 bytes, into Ts[64][TB + 2 or + 1] (rows of 65 words: a warp's stores and
 * reads 2-way conflicted at most); writes: E channels of one time, 16 bytes, four a thread,
 * 64 / E lanes a run of 128 or 256 bytes */
static void emit_prep8(ptx_buf *mod, const ws_conv_desc *d, const char *name)
{
    ptx_buf kb;
    ws_ptx_init(&kb);
    ptx_buf *b = &kb;
    const ws_params *pt = ws_params_of(WS_PARAMS_HPREP);
    const int es = d->x_type == WS_F32 ? 4 : 2, E = 16 / es, TB = ws_hgemm_prep8_t(d);
    const int LGT = TB == 128 ? 7 : 6, ROWE = TB + 4 / es, G = 64 / E, LGG = G == 8 ? 3 : 4;
    const int C = d->c_in, RW = ROWE * es / 4; /* a row's 32-bit words (65) */
    _Static_assert(PREP8_CPR == 16 && PREP8_NL == 4, "the _prep8 block: 16 chunks a row, 4 a thread");
    ws_ptx_comment(b, "X[n][t][j] = %sx[n, j, t], %s, 16-byte copies; a block: %d times x 64 channels",
                   es == 4 ? "tf32 " : "", ws_ptx_type_name(d->x_type), TB);
    ws_ptx_raw(b, "\t.shared .align 16 .b8 tile[%d];\n", 64 * RW * 4);
    preg px = ws_ptx_reg(b, PTX_B64), pxp = ws_ptx_reg(b, PTX_B64), tin = ws_ptx_reg(b, PTX_B32);
    preg tid = ws_ptx_reg(b, PTX_B32), t0 = ws_ptx_reg(b, PTX_B32), c0 = ws_ptx_reg(b, PTX_B32);
    preg n = ws_ptx_reg(b, PTX_B32), sb = ws_ptx_reg(b, PTX_B32), item = ws_ptx_reg(b, PTX_B64);
    emit_prep_params(b, px, pxp, tin, tid);
    emit_prep_block(b, C, LGT, tin, t0, c0, n, sb, item);
    {
        char title[128];
        snprintf(title, sizeof title, "read: chunk q = tid + 256m (m < %d): row q / %d (channel c0 + row), times t0 + "
                                      "%d(q %% %d) .. + %d", PREP8_NL, PREP8_CPR, E, PREP8_CPR, E - 1);
        ws_ptx_section(b, title);
    }
    for (int m = 0; m < PREP8_NL; m++) {
        preg q = ws_ptx_reg(b, PTX_B32), r = ws_ptx_reg(b, PTX_B32), ch = ws_ptx_reg(b, PTX_B32);
        preg c = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
        preg w[4], sa = ws_ptx_reg(b, PTX_B32);
        I("add.u32 %s, %s, %d", q.n, tid.n, 256 * m);
        I("shr.u32 %s, %s, 4", r.n, q.n);
        I("and.b32 %s, %s, 15", ch.n, q.n);
        I("add.u32 %s, %s, %s", c.n, c0.n, r.n);
        I("mad.lo.u32 %s, %s, %d, %s", t.n, ch.n, E, t0.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, c.n, C);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tin.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        I("mad.wide.u32 %s, %s, %s, %s", e.n, c.n, tin.n, item.n);
        I("cvt.u64.u32 %s, %s", a.n, t.n);
        I("add.u64 %s, %s, %s", e.n, e.n, a.n);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, es, px.n);
        for (int i = 0; i < 4; i++) {
            w[i] = ws_ptx_reg(b, PTX_B32);
            I("mov.b32 %s, 0", w[i].n);
        }
        I("@%s ld.global.nc.v4.b32 {%s, %s, %s, %s}, [%s]", ok.n, w[0].n, w[1].n, w[2].n, w[3].n, a.n);
        ws_ptx_comment(b, "Ts[row][%d chunk ..]: word row * %d + 4 chunk", E, RW);
        I("mul.lo.u32 %s, %s, %d", sa.n, r.n, RW);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, ch.n, sa.n);
        I("mad.lo.u32 %s, %s, 4, %s", sa.n, sa.n, sb.n);
        for (int i = 0; i < 4; i++)
            I("st.shared.b32 [%s+%d], %s", sa.n, 4 * i, w[i].n);
    }
    I("bar.sync 0");
    {
        char title[128];
        snprintf(title, sizeof title, "write: output q = tid + 256m: channels c0 + %d(q %% %d) .. + %d at time t0 + "
                                      "q / %d, 16 bytes", E, G, E - 1, G);
        ws_ptx_section(b, title);
    }
    for (int m = 0; m < PREP8_NL; m++) {
        preg q = ws_ptx_reg(b, PTX_B32), g = ws_ptx_reg(b, PTX_B32), tl = ws_ptx_reg(b, PTX_B32);
        preg c = ws_ptx_reg(b, PTX_B32), t = ws_ptx_reg(b, PTX_B32), ok = ws_ptx_reg(b, PTX_PRED);
        preg ok2 = ws_ptx_reg(b, PTX_PRED), e = ws_ptx_reg(b, PTX_B64), a = ws_ptx_reg(b, PTX_B64);
        preg sa = ws_ptx_reg(b, PTX_B32), w[4];
        I("add.u32 %s, %s, %d", q.n, tid.n, 256 * m);
        I("and.b32 %s, %s, %d", g.n, q.n, G - 1);
        I("shr.u32 %s, %s, %d", tl.n, q.n, LGG);
        I("mad.lo.u32 %s, %s, %d, %s", c.n, g.n, E, c0.n);
        I("add.u32 %s, %s, %s", t.n, t0.n, tl.n);
        I("setp.lt.u32 %s, %s, %d", ok.n, c.n, C);
        I("setp.lt.u32 %s, %s, %s", ok2.n, t.n, tin.n);
        I("and.pred %s, %s, %s", ok.n, ok.n, ok2.n);
        ws_ptx_comment(b, "Ts[%dg + j][tl], j < %d: element (%dg + j) * %d + tl", E, E, E, ROWE);
        I("mul.lo.u32 %s, %s, %d", sa.n, g.n, E * ROWE);
        I("add.u32 %s, %s, %s", sa.n, sa.n, tl.n);
        I("mad.lo.u32 %s, %s, %d, %s", sa.n, sa.n, es, sb.n);
        if (es == 2) {
            preg h[8];
            for (int j = 0; j < 8; j++) {
                h[j] = ws_ptx_reg(b, PTX_B16);
                I("ld.shared.b16 %s, [%s+%d]", h[j].n, sa.n, 2 * j * ROWE);
            }
            for (int j = 0; j < 4; j++) {
                w[j] = ws_ptx_reg(b, PTX_B32);
                I("mov.b32 %s, {%s, %s}", w[j].n, h[2 * j].n, h[2 * j + 1].n);
            }
        } else { /* TF32: rounded to nearest, ties away (cvt.rna), kept in float32, as _prep */
            for (int j = 0; j < 4; j++) {
                preg f = ws_ptx_reg(b, PTX_F32);
                w[j] = ws_ptx_reg(b, PTX_B32);
                I("ld.shared.f32 %s, [%s+%d]", f.n, sa.n, 4 * j * ROWE);
                I("cvt.rna.tf32.f32 %s, %s", w[j].n, f.n);
            }
        }
        I("mad.wide.u32 %s, %s, %d, %s", e.n, t.n, C, item.n);
        I("cvt.u64.u32 %s, %s", a.n, c.n);
        I("add.u64 %s, %s, %s", e.n, e.n, a.n);
        I("mad.lo.u64 %s, %s, %d, %s", a.n, e.n, es, pxp.n);
        I("@%s st.global.v4.b32 [%s], {%s, %s, %s, %s}", ok.n, a.n, w[0].n, w[1].n, w[2].n, w[3].n);
    }
    I("ret");
    ws_ptx_kernel_end_params(&kb, mod, name, pt, WS_HPREP_THREADS, 0, 0);
}

char *ws_hgemm_emit(const ws_conv_desc *d, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_HGEMM_NAME_MAX], pname[WS_HGEMM_NAME_MAX + 8];
    ws_hgemm_name(d, name);
    if (!ws_hgemm_emits(d)) {
        ws_errf(err, "ws_hgemm_emit(%s): not a descriptor the Hopper GEMM takes", name);
        return NULL;
    }
    snprintf(pname, sizeof pname, "%s_prep", name);
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: dense forward on Hopper (TMA + wgmma)");
    ws_ptx_raw(&mod, ".extern .shared .align 1024 .b8 smem[];\n");
    emit_main(&mod, d, name, 0, NULL, NULL, 0);
    emit_prep(&mod, d, pname);
    if (ws_hgemm_prep8(d)) {
        snprintf(pname, sizeof pname, "%s_prep8", name);
        emit_prep8(&mod, d, pname);
    }
    if (ws_hgemm_mn(d)) {
        snprintf(pname, sizeof pname, "%s_mn", name);
        emit_main(&mod, d, pname, 0, NULL, NULL, 1);
    }
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_hgemm_emit(%s): %s", name, why);
    return text;
}

int ws_hgemm_phased_fits(const ws_conv_desc *d, int phases)
{
    return phases > 1 && d->y_layout == WS_NLC && d->c_out % phases == 0 && d->act == WS_ACT_NONE &&
           ws_hgemm_fits(d, 9, 0);
}

/* the taps a row tile of phase p runs, lo[p]..hi[p], where the tiles are phase-pure (C_in a
 * multiple of 128) and the caller gave them; else none (every tap) */
static int phase_taps(const ws_conv_desc *d, int phases, const int *lo, const int *hi)
{
    if (!lo || !hi || phases > WS_HGEMM_PHASES_MAX || (d->c_out / phases) % WS_HGEMM_BM)
        return 0;
    for (int p = 0; p < phases; p++)
        if (lo[p] < 0 || hi[p] < lo[p] || hi[p] >= d->k || hi[p] > 99)
            return 0;
    return 1;
}

void ws_hgemm_phased_name(const ws_conv_desc *d, int phases, const int *lo, const int *hi,
                          char name[WS_HGEMM_NAME_MAX])
{
    char base[WS_HGEMM_NAME_MAX], taps[WS_HGEMM_PHASES_MAX * 12 + 4] = "";
    ws_hgemm_name(d, base);
    if (phase_taps(d, phases, lo, hi)) { /* _t, then lo_hi_ of each phase */
        int o = snprintf(taps, sizeof taps, "_t");
        for (int p = 0; p < phases; p++)
            o += snprintf(taps + o, sizeof taps - (size_t)o, "%d_%d_", lo[p], hi[p]);
    }
    snprintf(name, WS_HGEMM_NAME_MAX, "%.100s_ph%d%s", base, phases, taps);
}

char *ws_hgemm_emit_phased(const ws_conv_desc *d, int phases, const int *lo, const int *hi, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_HGEMM_NAME_MAX];
    ws_hgemm_phased_name(d, phases, lo, hi, name);
    if (!ws_hgemm_phased_fits(d, phases)) {
        ws_errf(err, "ws_hgemm_emit_phased(%s): not a descriptor the phased Hopper GEMM takes", name);
        return NULL;
    }
    ws_conv_desc e = *d;
    e.y_layout = WS_NCL; /* the epilogue's rows along time, each to its phase's times */
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: dense backward dx on Hopper (TMA + wgmma), "
                                    "phases into NCL dx");
    ws_ptx_raw(&mod, ".extern .shared .align 1024 .b8 smem[];\n");
    const int tp = phase_taps(d, phases, lo, hi);
    emit_main(&mod, &e, name, phases, tp ? lo : NULL, tp ? hi : NULL, 0);
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_hgemm_emit_phased(%s): %s", name, why);
    return text;
}

void ws_hgemm_wgrad_classes(const ws_conv_desc *d, ws_gbwd_cls *c)
{
    const int S = d->stride, a = 16 / ws_hgemm_xbytes(d);
    c->n = 0, c->align = a;
    for (int k = 0; k < d->k && k < WS_GBWD_KMAX; k++) {
        const long long v = (long long)d->dilation * k - d->pad_l;
        const int r = (int)(((v % S) + S) % S), q = (int)((v - r) / S), m = ((q % a) + a) % a;
        int i = 0;
        while (i < c->n && (c->r[i] != r || c->m[i] != m))
            i++;
        if (i == c->n)
            c->r[i] = r, c->m[i] = m, c->n++;
        c->cls[k] = i;
        c->off[k] = q - m + a; /* Xs's q' = q + a: see ptx_hbwd.h */
    }
}

int ws_hgemm_wgrad_fits(const ws_conv_desc *d, int cc_major, int cc_minor)
{
    return WS_HGEMM && cc_major == 9 && cc_minor == 0 && ws_gbwd_has_dw(d) && d->math != WS_MATH_F32;
}

void ws_hgemm_wgrad_name(const ws_conv_desc *d, char name[WS_HGEMM_NAME_MAX])
{
    snprintf(name, WS_HGEMM_NAME_MAX, "ws_hgemm_wg_%s_c%d_%d_k%d_s%d_d%d_p%d", math_name(d), d->c_in,
             d->c_out, d->k, d->stride, d->dilation, d->pad_l);
}

char *ws_hgemm_wgrad_emit(const ws_conv_desc *d, ws_err *err)
{
    if (ws_conv_check(d, err))
        return NULL;
    char name[WS_HGEMM_NAME_MAX];
    ws_hgemm_wgrad_name(d, name);
    if (!ws_hgemm_wgrad_fits(d, 9, 0)) {
        ws_errf(err, "ws_hgemm_wgrad_emit(%s): not a descriptor the Hopper GEMM takes", name);
        return NULL;
    }
    ptx_buf mod;
    ws_ptx_init(&mod);
    ws_ptx_module_begin_sm90a(&mod, "whisper-stem conv engine: dense weight gradient on Hopper (TMA + wgmma)");
    ws_ptx_raw(&mod, ".extern .shared .align 1024 .b8 smem[];\n");
    emit_main_wg(&mod, d, name);
    char why[160];
    char *text = ws_ptx_take(&mod, why, sizeof why);
    if (!text)
        ws_errf(err, "ws_hgemm_wgrad_emit(%s): %s", name, why);
    return text;
}
