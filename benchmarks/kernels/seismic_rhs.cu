// seismic_rhs: the right-hand side of the isotropic elastic wave equation with
// variable Lame parameters, rho u_tt = div(sigma), sigma = la div(u) I + mu (grad u +
// grad u^T), expanded pointwise and discretised with 4th-order central differences
// (radius 2, mixed derivatives on the 5x5 cross-plane corners), as the SW4
// rhs4th3fort kernel does. Three displacement components, mu, la and rho in; the
// acceleration (rhs / rho) out, on the interior. About 160 loads per thread.

// 4th-order first difference of array A at flat index p with stride s (times 12 h).
#define D1AT(A, p, s) (A[(p) - 2 * (s)] - 8.0f * A[(p) - (s)] + 8.0f * A[(p) + (s)] - A[(p) + 2 * (s)])
// 4th-order second difference of A at idx with stride s (times 12 h^2).
#define D2AT(A, s)                                                                             \
    (-A[idx - 2 * (s)] + 16.0f * A[idx - (s)] - 30.0f * A[idx] + 16.0f * A[idx + (s)] -          \
     A[idx + 2 * (s)])
// Mixed derivative d/ds1 d/ds2 of A at idx (times 144 h^2).
#define DDAT(A, s1, s2)                                                                        \
    (D1AT(A, idx - 2 * (s1), s2) - 8.0f * D1AT(A, idx - (s1), s2) +                            \
     8.0f * D1AT(A, idx + (s1), s2) - D1AT(A, idx + 2 * (s1), s2))

extern "C" __global__ void seismic_rhs(const float *__restrict__ ux, const float *__restrict__ uy,
                                       const float *__restrict__ uz, const float *__restrict__ mu,
                                       const float *__restrict__ la, const float *__restrict__ rho,
                                       float *__restrict__ ax, float *__restrict__ ay,
                                       float *__restrict__ az, float h, int nx, int ny, int nz) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    int k = blockIdx.z * blockDim.z + threadIdx.z;
    if (i >= 2 && i < nx - 2 && j >= 2 && j < ny - 2 && k >= 2 && k < nz - 2) {
        int sx = 1, sy = nx, sz = nx * ny;
        int idx = k * sz + j * sy + i;
        float r12h = 1.0f / (12.0f * h);
        float r12h2 = 1.0f / (12.0f * h * h);
        float r144h2 = 1.0f / (144.0f * h * h);
        float m = mu[idx], l = la[idx];
        float dmu_x = D1AT(mu, idx, sx) * r12h, dmu_y = D1AT(mu, idx, sy) * r12h;
        float dmu_z = D1AT(mu, idx, sz) * r12h;
        float dla_x = D1AT(la, idx, sx) * r12h, dla_y = D1AT(la, idx, sy) * r12h;
        float dla_z = D1AT(la, idx, sz) * r12h;
        float dux_x = D1AT(ux, idx, sx) * r12h, dux_y = D1AT(ux, idx, sy) * r12h;
        float dux_z = D1AT(ux, idx, sz) * r12h;
        float duy_x = D1AT(uy, idx, sx) * r12h, duy_y = D1AT(uy, idx, sy) * r12h;
        float duy_z = D1AT(uy, idx, sz) * r12h;
        float duz_x = D1AT(uz, idx, sx) * r12h, duz_y = D1AT(uz, idx, sy) * r12h;
        float duz_z = D1AT(uz, idx, sz) * r12h;
        float divu = dux_x + duy_y + duz_z;
        float rx = (l + 2.0f * m) * D2AT(ux, sx) * r12h2 + m * (D2AT(ux, sy) + D2AT(ux, sz)) * r12h2 +
                   (l + m) * (DDAT(uy, sx, sy) + DDAT(uz, sx, sz)) * r144h2 + dla_x * divu +
                   dmu_x * (2.0f * dux_x) + dmu_y * (dux_y + duy_x) + dmu_z * (dux_z + duz_x);
        float ry = (l + 2.0f * m) * D2AT(uy, sy) * r12h2 + m * (D2AT(uy, sx) + D2AT(uy, sz)) * r12h2 +
                   (l + m) * (DDAT(ux, sy, sx) + DDAT(uz, sy, sz)) * r144h2 + dla_y * divu +
                   dmu_x * (duy_x + dux_y) + dmu_y * (2.0f * duy_y) + dmu_z * (duy_z + duz_y);
        float rz = (l + 2.0f * m) * D2AT(uz, sz) * r12h2 + m * (D2AT(uz, sx) + D2AT(uz, sy)) * r12h2 +
                   (l + m) * (DDAT(ux, sz, sx) + DDAT(uy, sz, sy)) * r144h2 + dla_z * divu +
                   dmu_x * (duz_x + dux_z) + dmu_y * (duz_y + duy_z) + dmu_z * (2.0f * duz_z);
        float rr = 1.0f / rho[idx];
        ax[idx] = rx * rr;
        ay[idx] = ry * rr;
        az[idx] = rz * rr;
    }
}
