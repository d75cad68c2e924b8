package org.mpibuild.testkit;

import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The tests every MPI binding runs against the SPI's contract under a real mpirun: the contract on 1 to 4
 * ranks, and an abort that ends the whole job. A binding's test class names its JVM, its main class (which
 * runs {@link CommunicatorContract} on the binding's world) and why it cannot run here; each test skips,
 * printing the reason, where mpirun or the binding is absent.
 */
public abstract class BindingContractTests {
  private static final Duration TIMEOUT = Duration.ofSeconds(300);

  /** @return the java command and its options, as mpirun launches each rank */
  protected abstract List<String> java();

  /** @return the class whose main runs the contract on the binding's world */
  protected abstract Class<?> mainClass();

  /** @return why the binding cannot run here, or null */
  protected abstract String bindingUnavailable();

  @ParameterizedTest(name = "{0} ranks")
  @ValueSource(ints = {1, 2, 3, 4})
  public void theCommunicatorKeepsTheContract(int ranks) {
    skipWithoutMpi();
    CommunicatorContract.underMpirun(ranks, java(), mainClass().getName(), TIMEOUT);
  }

  @Test
  public void abortEndsTheWholeJobAtOnceWithANonZeroStatus() {
    skipWithoutMpi();
    Mpirun.Job job = CommunicatorContract.job(3, java(), mainClass().getName(), TIMEOUT, "abort");
    assertNotEquals(0, job.exitCode(), job.output());
    assertTrue(job.output().contains(CommunicatorContract.abortMessage(2)), job.output());
  }

  private void skipWithoutMpi() {
    Optional<String> why = Mpirun.unavailable().or(() -> Optional.ofNullable(bindingUnavailable()));
    if (why.isPresent()) {
      System.out.println(getClass().getSimpleName() + ": skipped: " + why.get());
      Assumptions.abort(why.get());
    }
  }
}
