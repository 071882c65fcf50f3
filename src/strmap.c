/* strmap.c - see strmap.h. */
#include "strmap.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *key; /* NULL: empty slot */
    size_t len;
    size_t value;
    uint64_t hash;
} slot;

struct ws_strmap {
    slot *s;
    size_t cap; /* a power of two */
    size_t n;
};

#define FIRST_CAP 64

static uint64_t fnv1a(const void *key, size_t len)
{
    const unsigned char *p = key;
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

ws_strmap *ws_strmap_new(void)
{
    ws_strmap *m = calloc(1, sizeof *m);
    if (m && !(m->s = calloc(FIRST_CAP, sizeof *m->s))) {
        free(m);
        return NULL;
    }
    if (m)
        m->cap = FIRST_CAP;
    return m;
}

void ws_strmap_free(ws_strmap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        free(m->s[i].key);
    free(m->s);
    free(m);
}

/* The slot holding key, or the empty slot where it would go. */
static slot *find(const ws_strmap *m, const void *key, size_t len, uint64_t h)
{
    size_t i = (size_t)h & (m->cap - 1);
    for (;;) {
        slot *s = &m->s[i];
        if (!s->key || (s->hash == h && s->len == len && !memcmp(s->key, key, len)))
            return s;
        i = (i + 1) & (m->cap - 1);
    }
}

static int grow(ws_strmap *m)
{
    if (m->cap > SIZE_MAX / 2 / sizeof *m->s)
        return -1;
    ws_strmap n = {calloc(2 * m->cap, sizeof *m->s), 2 * m->cap, m->n};
    if (!n.s)
        return -1;
    for (size_t i = 0; i < m->cap; i++)
        if (m->s[i].key)
            *find(&n, m->s[i].key, m->s[i].len, m->s[i].hash) = m->s[i];
    free(m->s);
    *m = n;
    return 0;
}

int ws_strmap_put(ws_strmap *m, const void *key, size_t len, size_t value, size_t *prev)
{
    uint64_t h = fnv1a(key, len);
    slot *s = find(m, key, len, h);
    if (s->key) {
        if (prev)
            *prev = s->value;
        return 1;
    }
    if (2 * (m->n + 1) > m->cap) {
        if (grow(m))
            return -1;
        s = find(m, key, len, h);
    }
    char *k = malloc(len + 1);
    if (!k)
        return -1;
    memcpy(k, key, len);
    k[len] = 0;
    *s = (slot){k, len, value, h};
    m->n++;
    return 0;
}

int ws_strmap_get(const ws_strmap *m, const void *key, size_t len, size_t *value)
{
    const slot *s = find(m, key, len, fnv1a(key, len));
    if (!s->key)
        return 0;
    if (value)
        *value = s->value;
    return 1;
}

size_t ws_strmap_size(const ws_strmap *m)
{
    return m->n;
}
