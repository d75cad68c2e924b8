package org.mpibuild.programs;

import org.mpibuild.Kernel;
import org.mpibuild.MpiBuild;
import org.mpibuild.examples.Saxpy;
import org.mpibuild.opencl.OpenClKernel;

/**
 * The drop-in call in a program started without MPI: plain {@code java}, with or without mpi.jar on the
 * class path. Prints {@code local: ranks=1 compiled=true verified=true communicator=...}. Under mpirun
 * without an MPI binding, it prints {@code unavailable: MESSAGE} instead and exits 0, so that mpirun lets
 * every rank report.
 */
public final class LocalBuild {
  private LocalBuild() {}

  public static void main(String[] args) {
    try {
      build();
    } catch (org.mpibuild.MpiUnavailableException e) {
      System.out.println("unavailable: " + e.getMessage());
    }
  }

  private static void build() {
    try (MpiBuild mpiBuild = MpiBuild.builder().backend("opencl").build(); Kernel kernel = mpiBuild.mpiBuildKernel(Saxpy.REQUEST, 0)) {
      boolean verified = Saxpy.runAndVerify(kernel.as(OpenClKernel.class), 0, 1 << 12);
      System.out.println("local: ranks=" + mpiBuild.size() + " compiled=" + kernel.stats().compiled()
          + " verified=" + verified + " communicator=" + mpiBuild.communicator());
      System.exit(verified ? 0 : 1);
    }
  }
}
