/* OpenMP target offloading: teams, atomics, a device function, double math. */
#include <math.h>
#include <stdio.h>

#define N 4096

#pragma omp declare target
static double smooth(double v) { return v < 0.0 ? -sqrt(-v) : sqrt(v); }
#pragma omp end declare target

int main(void)
{
    static double a[N], b[N];
    int histogram[8] = {0};
    long checksum = 0;
    for (int i = 0; i < N; i++)
        a[i] = (double)(i % 97) - 48.0;

#pragma omp target teams distribute parallel for map(to : a) map(from : b)
    for (int i = 1; i < N - 1; i++)
        b[i] = smooth(a[i - 1] + 2.0 * a[i] + a[i + 1]);

#pragma omp target teams distribute parallel for map(to : a) map(tofrom : histogram)
    for (int i = 0; i < N; i++) {
        int bin = ((int)a[i] + 48) & 7;
#pragma omp atomic
        histogram[bin]++;
    }

#pragma omp target teams distribute parallel for reduction(+ : checksum) map(to : a)
    for (int i = 0; i < N; i++)
        checksum += (long)a[i] * i;

    printf("%f %d %ld\n", b[5], histogram[3], checksum);
    return 0;
}
