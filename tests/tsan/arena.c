/* arena.c - linked into the test runner of `make tsan` only (BUILD=build-tsan SAN=thread).
 *
 * Criterion's sandbox (BoxFort) maps a shared arena at a random address in
 * 0x2000'0000'0000 .. 0x7f00'0000'0000, the one draw per try being rand_r() & 0x3fffff
 * (16 MiB steps from 0x2000'0000'0000). ThreadSanitizer's x86-64 layout leaves the
 * program only 0x5500'0000'0000 .. 0x5680'0000'0000 of that span, so all ten tries fail
 * ("criterion: Could not initialize inheritable arena", Snaipe/Criterion#274). This
 * rand_r, interposed by the executable, draws in 0x5660'0000'0000 .. 0x5680'0000'0000:
 * application memory under TSan, above where a PIE binary can be placed with
 * vm.mmap_rnd_bits <= 28 (which TSan needs anyway), so the child that re-maps the arena
 * at the same address finds it free too. Nothing of the product calls rand_r. */
#include <stdlib.h>

int rand_r(unsigned int *seed)
{
    *seed = *seed * 1103515245u + 12345u;
    return (int)(0x366000u + ((*seed >> 16) & 0x1fffu));
}
