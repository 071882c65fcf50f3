/* test_common.c - error messages: long ones keep their reason, printed ones
 * cannot forge lines or reach the terminal as escape codes. */
#include <criterion/criterion.h>
#include <string.h>

#include "common.h"

Test(common, overlong_error_keeps_its_start_and_its_reason)
{
    char path[5000];
    memset(path, 'd', sizeof path - 1);
    path[0] = '/';
    path[sizeof path - 1] = 0;
    ws_err e;
    cr_assert_eq(ws_errf(&e, "%s: cannot open: %s", path, "No such file or directory"), -1);
    size_t n = strlen(e.msg);
    cr_assert_lt(n, sizeof e.msg);
    cr_assert(n > sizeof e.msg - 8, "the buffer is used, got %zu bytes", n);
    cr_assert(!strncmp(e.msg, "/ddd", 4), "%s", e.msg);
    cr_assert(strstr(e.msg, "..."), "the cut is marked");
    const char *tail = ": cannot open: No such file or directory";
    cr_assert(!strcmp(e.msg + n - strlen(tail), tail), "the reason survives: ...%s", e.msg + n - 60);
}

Test(common, short_error_is_kept_whole)
{
    ws_err e;
    ws_errf(&e, "%s: %d", "a.wav", 42);
    cr_assert_str_eq(e.msg, "a.wav: 42");
    cr_assert_eq(ws_errf(NULL, "x"), -1);
}

Test(common, escape_makes_control_bytes_visible_like_ls_b)
{
    char out[128];
    size_t n = ws_escape(out, sizeof out, "a\nb\tc\rd\033[31me\\f\x7fg\xc3\xa9");
    cr_assert_str_eq(out, "a\\nb\\tc\\rd\\033[31me\\\\f\\177g\xc3\xa9");
    cr_assert_eq(n, strlen(out));
    char small[6];
    ws_escape(small, sizeof small, "ab\ncd");
    cr_assert_str_eq(small, "ab\\nc", "cut at the buffer, never inside an escape: %s", small);
    ws_escape(small, 4, "ab\ncd");
    cr_assert_str_eq(small, "ab", "%s", small);
}
