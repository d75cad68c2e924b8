package org.mpibuild.ffm;

import java.nio.file.Path;
import java.util.List;
import org.mpibuild.testkit.BindingContractTests;

/**
 * The FFM binding's communicator under a real mpirun, on the JDK 22+ these tests run on ({@code ffm.jdk}),
 * held to the SPI's contract on every rank: the same contract as the mpi.jar binding's.
 */
class FfmContractTest extends BindingContractTests {
  @Override
  protected List<String> java() {
    return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xmx128m");
  }

  @Override
  protected Class<?> mainClass() {
    return ContractMain.class;
  }

  @Override
  protected String bindingUnavailable() {
    String why = new FfmBinding().unavailable();
    return why == null ? null : "the FFM binding cannot run here: " + why;
  }
}
