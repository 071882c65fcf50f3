/* ptx_emit.c - see ptx_emit.h. A growable text buffer with a sticky error
 * flag, register counters and numbered labels. Tested by tests/test_ptx.c. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ptx_emit.h"

static const char *const REG_PREFIX[PTX_NCLASS] = { "%p", "%h", "%r", "%rd", "%f", "%fd" };
static const char *const REG_TYPE[PTX_NCLASS] = { ".pred", ".b16", ".b32", ".b64", ".f32", ".f64" };

void ws_ptx_init(ptx_buf *b)
{
    memset(b, 0, sizeof *b);
}

void ws_ptx_free(ptx_buf *b)
{
    if (!b)
        return;
    free(b->text);
    memset(b, 0, sizeof *b);
}

void ws_ptx_fail(ptx_buf *b, const char *why)
{
    if (!b->err)
        snprintf(b->why, sizeof b->why, "%s", why);
    b->err = 1;
}

static void vappend(ptx_buf *b, const char *fmt, va_list ap)
{
    if (b->err)
        return;
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        ws_ptx_fail(b, "format error");
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *t = realloc(b->text, cap);
        if (!t) {
            ws_ptx_fail(b, "out of memory");
            return;
        }
        b->text = t;
        b->cap = cap;
    }
    vsnprintf(b->text + b->len, (size_t)n + 1, fmt, ap);
    b->len += (size_t)n;
}

static void append(ptx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
}

void ws_ptx_raw(ptx_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
}

void ws_ptx_ins(ptx_buf *b, const char *fmt, ...)
{
    append(b, "\t");
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
    append(b, ";\n");
}

void ws_ptx_comment(ptx_buf *b, const char *fmt, ...)
{
    append(b, "\t// ");
    va_list ap;
    va_start(ap, fmt);
    vappend(b, fmt, ap);
    va_end(ap);
    append(b, "\n");
}

void ws_ptx_section(ptx_buf *b, const char *title)
{
    append(b, "\n\t// ---- %s ----\n", title);
}

preg ws_ptx_reg(ptx_buf *b, ptx_rclass c)
{
    preg r;
    if ((unsigned)c >= PTX_NCLASS) {
        ws_ptx_fail(b, "bad register class");
        snprintf(r.n, sizeof r.n, "%%bad");
        return r;
    }
    snprintf(r.n, sizeof r.n, "%s%d", REG_PREFIX[c], b->nreg[c]++);
    return r;
}

plabel ws_ptx_label_new(ptx_buf *b, const char *stem)
{
    plabel l;
    snprintf(l.n, sizeof l.n, "$L%s_%d", stem, b->nlabel++);
    return l;
}

void ws_ptx_label(ptx_buf *b, plabel l)
{
    append(b, "%s:\n", l.n);
}

pimm ws_ptx_f32(float v)
{
    pimm p;
    unsigned u;
    memcpy(&u, &v, sizeof u);
    snprintf(p.s, sizeof p.s, "0f%08X", u);
    return p;
}

int ws_ptx_target_for(int cc_major, int cc_minor, char version[8], char target[16])
{
    /* PTX ISA versions that introduced each target (PTX ISA manual,
     * "Release notes"): sm_80 7.0, sm_86 7.1, sm_87 7.4, sm_89 7.8, sm_90 7.8. */
    static const struct { int cc; const char *ver, *tgt; } tab[] = {
        { 80, "7.0", "sm_80" }, { 86, "7.1", "sm_86" }, { 87, "7.4", "sm_87" },
        { 89, "7.8", "sm_89" }, { 90, "7.8", "sm_90" },
    };
    int cc = cc_major * 10 + cc_minor;
    if (cc < 80)
        return -1;
    int pick = 0;
    for (int i = 0; i < (int)(sizeof tab / sizeof tab[0]); i++)
        if (tab[i].cc <= cc && (cc / 10 == tab[i].cc / 10 || tab[i].cc == 90))
            pick = i;
    snprintf(version, 8, "%s", tab[pick].ver);
    snprintf(target, 16, "%s", tab[pick].tgt);
    return 0;
}

void ws_ptx_module_begin(ptx_buf *mod, int cc_major, int cc_minor, const char *title)
{
    char ver[8], tgt[16];
    if (ws_ptx_target_for(cc_major, cc_minor, ver, tgt)) {
        ws_ptx_fail(mod, "compute capability below 8.0 (mma.sync, cp.async and ldmatrix need sm_80)");
        return;
    }
    append(mod, "// %s\n// Emitted by whisper-stem " "for compute capability %d.%d.\n", title, cc_major,
           cc_minor);
    append(mod, ".version %s\n.target %s\n.address_size 64\n", ver, tgt);
}

void ws_ptx_module_begin_sm90a(ptx_buf *mod, const char *title)
{
    /* wgmma and setmaxnreg: PTX ISA 8.0, sm_90a (no forward compatibility: compute capability
     * 9.0 alone) */
    append(mod, "// %s\n// Emitted by whisper-stem " "for compute capability 9.0 (sm_90a).\n", title);
    append(mod, ".version 8.0\n.target sm_90a\n.address_size 64\n");
}

void ws_ptx_kernel_end(ptx_buf *k, ptx_buf *mod, const char *name, const char *params, int maxntid,
                    int min_blocks)
{
    ws_ptx_kernel_end_regs(k, mod, name, params, maxntid, min_blocks, 0);
}

void ws_ptx_kernel_end_regs(ptx_buf *k, ptx_buf *mod, const char *name, const char *params,
                         int maxntid, int min_blocks, int max_regs)
{
    ws_ptx_kernel_end_cl(k, mod, name, params, maxntid, min_blocks, max_regs, 1);
}

void ws_ptx_kernel_end_cl(ptx_buf *k, ptx_buf *mod, const char *name, const char *params, int maxntid,
                          int min_blocks, int max_regs, int cluster)
{
    if (k->err) {
        ws_ptx_fail(mod, k->why);
        ws_ptx_free(k);
        return;
    }
    append(mod, "\n.visible .entry %s(\n%s\n)\n.maxntid %d, 1, 1\n", name, params, maxntid);
    if (min_blocks > 0)
        append(mod, ".minnctapersm %d\n", min_blocks);
    if (max_regs > 0)
        append(mod, ".maxnreg %d\n", max_regs);
    if (cluster > 1)
        append(mod, ".reqnctapercluster %d, 1, 1\n", cluster);
    append(mod, "{\n");
    for (int c = 0; c < PTX_NCLASS; c++)
        if (k->nreg[c])
            append(mod, "\t.reg %s %s<%d>;\n", REG_TYPE[c], REG_PREFIX[c], k->nreg[c]);
    if (k->text)
        append(mod, "%s", k->text);
    append(mod, "}\n");
    ws_ptx_free(k);
}

char *ws_ptx_take(ptx_buf *b, char *why, size_t why_len)
{
    if (b->err) {
        if (why && why_len)
            snprintf(why, why_len, "%s", b->why);
        ws_ptx_free(b);
        return NULL;
    }
    char *t = b->text;
    if (!t)
        t = calloc(1, 1);
    b->text = NULL;
    ws_ptx_free(b);
    return t;
}
