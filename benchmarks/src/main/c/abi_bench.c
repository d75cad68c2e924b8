/* The C reference for the FFM binding's benchmark on one MPI (BenchReport's ffm-abi mode, make bench-ffm):
 * the same measurements as org.mpibuild.bench.FfmAbiBench, in C, in one job of 2 ranks.
 * usage: mpirun -np 2 abi_bench REPS BYTES...
 *   for each BYTES: REPS broadcasts from rank 0, each after a barrier, the slowest rank's time (MPI_MAX);
 *     prints "bcast bytes=B median_us=M"
 *   then an 8-byte ping-pong between ranks 0 and 1: 10^4 round trips of warm-up (as the Java side has), then
 *     REPS batches of 1000 round trips; prints "pingpong bytes=8 median_half_rtt_us=M" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void pingpong(int rank, int rounds, char *msg) {
  for (int i = 0; i < rounds; i++) {
    if (rank == 0) {
      MPI_Send(msg, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD);
      MPI_Recv(msg, 8, MPI_BYTE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(msg, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(msg, 8, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
    }
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 3 || size < 2) {
    if (rank == 0) fprintf(stderr, "usage: mpirun -np 2 abi_bench REPS BYTES...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int reps = atoi(argv[1]);
  double *times = malloc(sizeof(double) * (size_t)reps);
  for (int a = 2; a < argc; a++) {
    long long bytes = atoll(argv[a]);
    char *buf = malloc((size_t)bytes);
    memset(buf, rank == 0 ? 7 : 0, (size_t)bytes);
    MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int r = 0; r < reps; r++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      MPI_Bcast(buf, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
      double mine = MPI_Wtime() - t0, slowest;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times[r] = slowest;
    }
    if (rank == 0) printf("bcast bytes=%lld median_us=%.2f\n", bytes, median(times, reps) * 1e6);
    free(buf);
  }
  char msg[8] = {0};
  pingpong(rank, 10000, msg);
  for (int r = 0; r < reps; r++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pingpong(rank, 1000, msg);
    times[r] = (MPI_Wtime() - t0) / 2000;
  }
  if (rank == 0) printf("pingpong bytes=8 median_half_rtt_us=%.3f\n", median(times, reps) * 1e6);
  fflush(stdout);
  free(times);
  MPI_Finalize();
  return 0;
}
