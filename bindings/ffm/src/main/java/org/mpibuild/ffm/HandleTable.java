package org.mpibuild.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.ToLongFunction;
import org.mpibuild.spi.Communicator;

/**
 * One implementation's (or the standard's) handles and constants, as the binding uses them: {@code MPI_INT},
 * {@code MPI_INT64_T}, {@code MPI_FLOAT}, {@code MPI_DOUBLE}; {@code MPI_SUM}, {@code MPI_MIN},
 * {@code MPI_MAX}.
 */
record HandleTable(ValueLayout handle, long commWorld, long byteType, long intType, long int64Type, long floatType,
    long doubleType, long opSum, long opMin, long opMax, long infoNull, long errorsReturn, int commTypeShared,
    MemorySegment statusIgnore, int[] threadLevels) {
  /**
   * The version of the standard ABI whose constants {@link #STANDARD} holds, and where they come from: the MPI
   * 5.0 standard's Appendix A as written in the MPI Forum's mpi-abi-stubs ({@code mpi.h}, commit e5f65c7 of
   * 2026-07-20: {@code MPI_ABI_VERSION 1}, {@code MPI_ABI_SUBVERSION 0}) and MPICH 5.0's
   * {@code src/binding/abi/mpi_abi.h}, which agree on every value used here.
   */
  static final String STANDARD_ABI = "MPI 5.0 standard ABI 1.0";

  /** The major version of the standard ABI that {@link #STANDARD} follows; another major is refused. */
  static final int STANDARD_ABI_MAJOR = 1;

  /** {@code MPI_THREAD_SINGLE} to {@code MPI_THREAD_MULTIPLE} in Open MPI's and MPICH's own ABIs. */
  static final int[] IMPLEMENTATION_THREAD_LEVELS = {0, 1, 2, 3};

  /**
   * The standard ABI's table (mpi-abi-stubs' {@code mpi.h}; see {@link #STANDARD_ABI}). The reduction types and
   * operations were read in that {@code mpi.h} at commit e5f65c7 ({@code MPI_INT64_T 0x258}, {@code MPI_FLOAT
   * 0x210}, {@code MPI_DOUBLE 0x214}, {@code MPI_SUM 0x21}, {@code MPI_MIN 0x22}, {@code MPI_MAX 0x23}), and
   * are the same in MPICH's {@code src/binding/abi/mpi_abi.h} (commit 6a79bf6 of 2026-08-20).
   */
  static final HandleTable STANDARD = new HandleTable(ADDRESS, 0x101, 0x247,
      0x209, 0x258, 0x210, 0x214, // MPI_INT, MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE
      0x21, 0x22, 0x23, // MPI_SUM, MPI_MIN, MPI_MAX
      0x130, 0x143, 221, MemorySegment.NULL, new int[] {0, 1024, 2048, 4096});

  /**
   * MPICH's own table ({@code mpi.h} of MPICH 3 to 5: integer handles). A basic datatype's handle is {@code
   * 0x4c000000 | size << 8 | index}; MPICH 3.0 and 4.0.2 compute them at configure time ({@code configure.ac};
   * in 4.0.2 {@code PAC_SET_MPI_TYPE}: index 05 {@code MPI_INT}, 0a {@code MPI_FLOAT}, 0b {@code MPI_DOUBLE}, 3a
   * {@code MPI_INT64_T}, always 8 bytes), and {@code src/include/mpi.h.in} of MPICH 5 (commit 6a79bf6) writes
   * the same values out. The operations are fixed in {@code mpi.h.in} from v3.0 to that commit:
   * {@code MPI_MAX 0x58000001}, {@code MPI_MIN 0x58000002}, {@code MPI_SUM 0x58000003}.
   */
  static final HandleTable MPICH = new HandleTable(JAVA_INT, 0x44000000, 0x4c00010d,
      0x4c000405, 0x4c00083a, 0x4c00040a, 0x4c00080b, // MPI_INT, MPI_INT64_T, MPI_FLOAT, MPI_DOUBLE (x86-64 sizes)
      0x58000003, 0x58000002, 0x58000001, // MPI_SUM, MPI_MIN, MPI_MAX
      0x1c000000, 0x54000001, 1, MemorySegment.ofAddress(1), IMPLEMENTATION_THREAD_LEVELS);

  /**
   * Open MPI's own table: handles are the addresses of the objects {@code libmpi.so.40} exports, looked up by
   * {@code symbol}. Open MPI's mpi.h: {@code MPI_INT64_T} is {@code &ompi_mpi_int64_t}, {@code MPI_SUM}
   * {@code &ompi_mpi_op_sum}, and so on ({@code OMPI_PREDEFINED_GLOBAL}); every symbol below is exported by
   * libmpi.so.40 of Open MPI 4.1.4 (nm -D).
   */
  static HandleTable openMpi(ToLongFunction<String> symbol) {
    return new HandleTable(ADDRESS, symbol.applyAsLong("ompi_mpi_comm_world"), symbol.applyAsLong("ompi_mpi_byte"),
        symbol.applyAsLong("ompi_mpi_int"), symbol.applyAsLong("ompi_mpi_int64_t"),
        symbol.applyAsLong("ompi_mpi_float"), symbol.applyAsLong("ompi_mpi_double"),
        symbol.applyAsLong("ompi_mpi_op_sum"), symbol.applyAsLong("ompi_mpi_op_min"),
        symbol.applyAsLong("ompi_mpi_op_max"), symbol.applyAsLong("ompi_mpi_info_null"),
        symbol.applyAsLong("ompi_mpi_errors_return"), 0, MemorySegment.NULL, IMPLEMENTATION_THREAD_LEVELS);
  }

  /** The datatype handle of the SPI's element type. */
  long datatype(Communicator.Datatype type) {
    return switch (type) {
      case INT -> intType;
      case LONG -> int64Type;
      case FLOAT -> floatType;
      case DOUBLE -> doubleType;
    };
  }

  /** The operation handle of the SPI's reduction. */
  long op(Communicator.ReduceOp op) {
    return switch (op) {
      case SUM -> opSum;
      case MIN -> opMin;
      case MAX -> opMax;
    };
  }

  /** {@code MPI_THREAD_SINGLE} to {@code MPI_THREAD_MULTIPLE} as this table numbers them. */
  int threadLevel(int ordinal) {
    return threadLevels[ordinal];
  }

  /** The ordinal (0 single to 3 multiple) of a thread level that MPI returned. */
  int ordinalOf(int level) {
    for (int i = threadLevels.length - 1; i >= 0; i--) {
      if (level >= threadLevels[i]) {
        return i;
      }
    }
    return 0;
  }
}
