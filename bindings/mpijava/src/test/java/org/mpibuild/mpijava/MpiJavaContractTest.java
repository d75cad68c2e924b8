package org.mpibuild.mpijava;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.mpibuild.testkit.CommunicatorContract;
import org.mpibuild.testkit.Mpirun;

/** The mpi.jar binding's communicator under a real mpirun, held to the SPI's contract on every rank. */
class MpiJavaContractTest {
  /** Literally 'java': mpirun then adds Open MPI's library directory as java.library.path. */
  static final List<String> JAVA = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
      "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m");

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  void theCommunicatorKeepsTheContract(int ranks) {
    skipWithoutMpi();
    CommunicatorContract.underMpirun(ranks, JAVA, ContractMain.class.getName(), Duration.ofSeconds(300));
  }

  @Test
  void abortEndsTheWholeJobAtOnceWithANonZeroStatus() {
    skipWithoutMpi();
    Mpirun.Job job = CommunicatorContract.job(3, JAVA, ContractMain.class.getName(), Duration.ofSeconds(300), "abort");
    assertNotEquals(0, job.exitCode(), job.output());
    assertTrue(job.output().contains(CommunicatorContract.abortMessage(2)), job.output());
  }

  static void skipWithoutMpi() {
    Mpirun.unavailable().ifPresent(MpiJavaContractTest::skip);
    if (MpiJavaBinding.mpiJarLocation() == null) {
      skip("mpi.jar is not on the test's class path (scripts/provision builds it and passes -Dmpi.version)");
    }
  }

  static void skip(String why) {
    System.out.println("MpiJavaContractTest: skipped: " + why);
    Assumptions.abort(why);
  }
}
