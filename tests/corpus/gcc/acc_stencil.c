/* OpenACC stencils and reductions, compiled by GCC's nvptx offload compiler. */
#include <math.h>
#include <stdio.h>

#define NX 512
#define NY 256

static float grid_in[NY][NX], grid_out[NY][NX];

#pragma acc routine seq
static float weight(int i) { return 0.25f + 0.01f * (float)(i & 3); }

int main(void)
{
    double total = 0.0;
    float peak = 0.0f;
    for (int y = 0; y < NY; y++)
        for (int x = 0; x < NX; x++)
            grid_in[y][x] = (float)((x * 7 + y * 13) % 17);

#pragma acc data copyin(grid_in) copyout(grid_out)
    {
#pragma acc parallel loop gang collapse(2)
        for (int y = 1; y < NY - 1; y++)
            for (int x = 1; x < NX - 1; x++)
                grid_out[y][x] = weight(x) * (grid_in[y][x - 1] + grid_in[y][x + 1]
                                              + grid_in[y - 1][x] + grid_in[y + 1][x]);

#pragma acc parallel loop gang worker vector reduction(+ : total) reduction(max : peak)
        for (int y = 0; y < NY; y++)
            for (int x = 0; x < NX; x++) {
                total += grid_in[y][x];
                peak = fmaxf(peak, sqrtf(grid_in[y][x]));
            }
    }
    printf("%f %f %f\n", grid_out[10][10], total, peak);
    return 0;
}
