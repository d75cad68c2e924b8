package org.mpibuild.mpijava;

import java.nio.file.Path;
import java.util.List;
import org.mpibuild.testkit.BindingContractTests;

/** The mpi.jar binding's communicator under a real mpirun, held to the SPI's contract on every rank. */
class MpiJavaContractTest extends BindingContractTests {
  /** Literally 'java': mpirun then adds Open MPI's library directory as java.library.path. */
  @Override
  protected List<String> java() {
    return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1", "-Xmx128m");
  }

  @Override
  protected Class<?> mainClass() {
    return ContractMain.class;
  }

  @Override
  protected String bindingUnavailable() {
    return MpiJavaBinding.mpiJarLocation() == null
        ? "mpi.jar is not on the test's class path (scripts/provision builds it and passes -Dmpi.version)" : null;
  }
}
