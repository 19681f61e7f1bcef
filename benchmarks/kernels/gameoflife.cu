// gameoflife: one generation of Conway's Game of Life on the interior of a 2-D
// board of 0/1 ints: a cell lives with 3 neighbours, or with 2 if already alive.
// Nine int loads, three per row (idx-1, idx, idx+1).
extern "C" __global__ void gameoflife(const int *board, int *next, int nx, int ny) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int j = blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= 1 && i < nx - 1 && j >= 1 && j < ny - 1) {
        int idx = j * nx + i;
        int n = board[idx - nx - 1] + board[idx - nx] + board[idx - nx + 1] + board[idx - 1] +
                board[idx + 1] + board[idx + nx - 1] + board[idx + nx] + board[idx + nx + 1];
        int alive = board[idx];
        next[idx] = (n == 3 || (n == 2 && alive)) ? 1 : 0;
    }
}
