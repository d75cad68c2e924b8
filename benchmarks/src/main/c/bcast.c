/* The limit for broadcasting a binary: plain MPI_Bcast of N bytes from rank 0, timed with MPI_Wtime.
 * usage: mpirun -np N bcast BYTES REPS   prints "bcast bytes=B ranks=N median_us=M min_us=L max_us=H" on rank 0
 * Each repetition is a barrier, then the broadcast; its time is the slowest rank's (MPI_MAX reduce). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3) {
    if (rank == 0) fprintf(stderr, "usage: bcast BYTES REPS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long long bytes = atoll(argv[1]);
  int reps = atoi(argv[2]);
  char *buf = malloc(bytes > 0 ? (size_t)bytes : 1);
  memset(buf, rank == 0 ? 7 : 0, bytes > 0 ? (size_t)bytes : 1);
  double *times = malloc(sizeof(double) * (size_t)reps);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long long off = 0; off < bytes; off += 1LL << 30) {
      long long n = bytes - off < (1LL << 30) ? bytes - off : (1LL << 30);
      MPI_Bcast(buf + off, (int)n, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    double mine = MPI_Wtime() - t0, slowest;
    MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    times[r] = slowest;
  }
  if (rank == 0) {
    qsort(times, (size_t)reps, sizeof(double), cmp);
    printf("bcast bytes=%lld ranks=%d median_us=%.1f min_us=%.1f max_us=%.1f\n", bytes, size,
           times[reps / 2] * 1e6, times[0] * 1e6, times[reps - 1] * 1e6);
  }
  free(times);
  free(buf);
  MPI_Finalize();
  return 0;
}
