/* test_strmap.c - the string map behind the near-linear duplicate checks. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "common.h"
#include "strmap.h"

Test(strmap, finds_what_was_put_and_reports_duplicates)
{
    ws_strmap *m = ws_strmap_new();
    cr_assert(m);
    char k[32];
    enum { N = 20000 };
    for (size_t i = 0; i < N; i++) {
        int n = snprintf(k, sizeof k, "out/%zu.npy", i);
        cr_assert_eq(ws_strmap_put(m, k, (size_t)n, i, NULL), 0, "key %s", k);
    }
    cr_assert_eq(ws_strmap_size(m), N);
    for (size_t i = 0; i < N; i++) {
        int n = snprintf(k, sizeof k, "out/%zu.npy", i);
        size_t v = 0, prev = 0;
        cr_assert(ws_strmap_get(m, k, (size_t)n, &v) && v == i, "key %s -> %zu", k, v);
        cr_assert_eq(ws_strmap_put(m, k, (size_t)n, 7, &prev), 1);
        cr_assert_eq(prev, i, "the first value is kept");
    }
    cr_assert_not(ws_strmap_get(m, "out/20000.npy", 13, NULL));
    cr_assert_not(ws_strmap_get(m, "out/1.np", 8, NULL), "a prefix is not the key");
    ws_strmap_free(m);
    ws_strmap_free(NULL);
}

Test(strmap, binary_keys_with_zero_bytes_differ_by_length_and_content)
{
    ws_strmap *m = ws_strmap_new();
    const char a[4] = {1, 0, 2, 0}, b[4] = {1, 0, 3, 0};
    cr_assert_eq(ws_strmap_put(m, a, 4, 1, NULL), 0);
    cr_assert_eq(ws_strmap_put(m, b, 4, 2, NULL), 0);
    cr_assert_eq(ws_strmap_put(m, a, 3, 3, NULL), 0);
    size_t v;
    cr_assert(ws_strmap_get(m, b, 4, &v) && v == 2);
    cr_assert(ws_strmap_get(m, a, 3, &v) && v == 3);
    ws_strmap_free(m);
}
