package org.mpibuild.ffm;

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

/**
 * The FFM binding's communicator under a real mpirun, on the JDK 22+ these tests run on ({@code ffm.jdk}),
 * held to the SPI's contract on every rank: the same contract as the mpi.jar binding's.
 */
class FfmContractTest {
  static final List<String> JAVA = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
      "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m");

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
    Mpirun.unavailable().ifPresent(FfmContractTest::skip);
    String why = new FfmBinding().unavailable();
    if (why != null) {
      skip("the FFM binding cannot run here: " + why);
    }
  }

  static void skip(String why) {
    System.out.println("FfmContractTest: skipped: " + why);
    Assumptions.abort(why);
  }
}
