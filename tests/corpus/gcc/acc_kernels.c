/* OpenACC kernels regions, private arrays and integer work. */
#include <stdio.h>
#include <stdint.h>

#define N 2048

int main(void)
{
    static uint32_t hash[N];
    static int32_t counts[N];
#pragma acc kernels copyout(hash, counts)
    {
        for (int i = 0; i < N; i++) {
            uint32_t h = 2166136261u ^ (uint32_t)i;
            for (int r = 0; r < 4; r++)
                h = (h ^ (h >> 13)) * 16777619u;
            hash[i] = h;
        }
#pragma acc loop independent
        for (int i = 0; i < N; i++) {
            int local[4] = {i, i >> 1, i >> 2, i >> 3};
            int c = 0;
            for (int k = 0; k < 4; k++)
                c += __builtin_popcount((unsigned)local[k]);
            counts[i] = c;
        }
    }
    printf("%u %d\n", hash[7], counts[255]);
    return 0;
}
