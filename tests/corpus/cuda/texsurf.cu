// Texture and surface objects: tex1Dfetch on a linear buffer, tex2D with
// float and float4 texels, tex3D, tex2DLod, and surf2Dread/surf2Dwrite.

__global__ void tex1d_fetch(cudaTextureObject_t tex, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<float>(tex, i) + tex1Dfetch<float>(tex, i + 1);
}

__global__ void tex1d_fetch_int4(cudaTextureObject_t tex, int4* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex1Dfetch<int4>(tex, i);
}

// Bilinear resampling with normalised coordinates.
__global__ void tex2d_resample(cudaTextureObject_t tex, float* __restrict__ out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float u = (x + 0.5f) / w, v = (y + 0.5f) / h;
  out[y * w + x] = tex2D<float>(tex, u, v) + tex2DLod<float>(tex, u, v, 1.0f);
}

__global__ void tex2d_rgba(cudaTextureObject_t tex, float4* __restrict__ out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float4 c = tex2D<float4>(tex, x + 0.5f, y + 0.5f);
  out[y * w + x] = make_float4(c.z, c.y, c.x, c.w);
}

__global__ void tex3d_sample(cudaTextureObject_t tex, float* __restrict__ out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = tex3D<float>(tex, i * 0.25f, i * 0.5f, 0.5f);
}

// In-place 3x3 box filter through surfaces (sust/suld, clamp mode).
__global__ void surf_box3(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  float acc = 0.f;
  for (int dy = -1; dy <= 1; ++dy)
    for (int dx = -1; dx <= 1; ++dx)
      acc += surf2Dread<float>(src, (x + dx) * (int)sizeof(float), y + dy, cudaBoundaryModeClamp);
  surf2Dwrite(acc / 9.f, dst, x * (int)sizeof(float), y);
}

__global__ void surf_uchar4(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x;
  int y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= w || y >= h) return;
  uchar4 p;
  surf2Dread(&p, s, x * 4, y);
  p = make_uchar4(255 - p.x, 255 - p.y, 255 - p.z, p.w);
  surf2Dwrite(p, s, x * 4, y);
}
