package org.mpibuild.testkit;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;

/**
 * What every {@link Communicator} promises, checked on one rank of a job: every rank of the communicator
 * calls {@link #check} at once (a real job under mpirun, or one thread per rank of an in-process job). The
 * first violation throws an {@link AssertionError} that names the rank and the method; nothing else is
 * caught, so a binding's own exception comes through as it is.
 *
 * <p>Checked: rank and size; broadcasts from every root, blocking and not, of only the bytes between
 * position and limit (which stay where they were); all-reduces, blocking and not; all-gathers of unequal
 * lengths; a request's {@code test}, {@code await} and {@code await(nanos)}, and requests matched in the order
 * they were started, though awaited in another; a blocking collective after pending non-blocking ones; point-to-point messages,
 * where the binding carries them (all ranks agree whether it does); splits by colour, a split of everyone (a
 * duplicate, whose messages never meet the parent's), the node communicator; an error that MPI reports (a
 * broadcast from a root that does not exist) as a {@link CommunicationException} on every rank, after which
 * the communicator still works; typed all-reduces of every type and operation, checked against {@link
 * Reductions}, started together and awaited in reverse, with buffers that MPI would overrun refused, and one
 * pending with a broadcast; persistent collectives where the binding has them (an all-reduce started three times
 * with new values, a broadcast from the last rank), else a printed {@link #skippedLine}. Not checked: {@link Communicator#abort}, which ends the job ({@link
 * #runOrAbort} uses it to end a job whose contract failed).
 *
 * <p>The checks live in groups, a class each: {@code CollectiveChecks}, {@code RequestChecks}, {@code
 * TypedAllReduceChecks}, {@code PersistentCollectiveChecks}, {@code PointToPointChecks} and {@code SplitChecks},
 * on the rank and test data of {@code ContractCheck}.
 */
public final class CommunicatorContract {
  private CommunicatorContract() {
  }

  /**
   * Checks {@code comm} against the contract. Collective: every rank of {@code comm} calls it at once.
   *
   * @param comm the communicator of this rank
   * @throws AssertionError naming this rank and the method, at the first violation
   */
  public static void check(Communicator comm) {
    CollectiveChecks collectives = new CollectiveChecks(comm);
    RequestChecks requests = new RequestChecks(comm);
    TypedAllReduceChecks typed = new TypedAllReduceChecks(comm);
    SplitChecks splits = new SplitChecks(comm);
    collectives.rankAndSize();
    collectives.allReduce();
    collectives.allGather();
    collectives.broadcastFromEveryRoot();
    collectives.broadcastOfNothingAndOfAMebibyte();
    collectives.heapBuffersAreRefused();
    requests.nonBlockingBroadcastsAndAllReduces();
    typed.typedAllReducesOfEveryTypeAndOperation();
    typed.blockingTypedAllReducesOfEveryTypeAndOperation();
    typed.typedAllReducesRefuseWhatMpiWouldOverrun();
    typed.aTypedAllReduceOverlapsABroadcast();
    new PersistentCollectiveChecks(comm).persistentCollectives();
    requests.requestsAreMatchedInTheOrderTheyWereStarted();
    requests.aBlockingCollectiveAfterPendingOnes();
    new PointToPointChecks(comm).pointToPoint();
    splits.splitByColour();
    splits.aSplitOfEveryoneIsADuplicate();
    splits.nodeCommunicator();
    collectives.anErrorMpiReportsIsACommunicationExceptionOnEveryRank();
    collectives.threadLevelAndDescription();
  }

  /**
   * For the {@code main} of a program that mpirun launches: checks {@code comm}, then prints one line
   * {@code contract ok: rank R of N (DESCRIPTION)}. On a violation or any other exception it prints it on
   * standard error and ends the whole job through {@link Communicator#abort} with status 1, so that no rank is
   * left waiting in a collective that the failed rank will never join.
   *
   * @param comm the communicator of this rank
   */
  public static void runOrAbort(Communicator comm) {
    try {
      check(comm);
    } catch (Throwable t) {
      StringWriter trace = new StringWriter();
      t.printStackTrace(new PrintWriter(trace));
      comm.abort("contract FAILED on rank " + comm.rank() + " of " + comm.size() + ": " + trace, 1);
    }
    System.out.println(okLine(comm.rank(), comm.size()) + " (" + comm.description() + ")");
    System.out.flush();
  }

  /**
   * The line {@link #runOrAbort} prints for a rank that passed, without the description that follows it.
   *
   * @param rank the rank
   * @param size the communicator's size
   * @return the line's start
   */
  public static String okLine(int rank, int size) {
    return "contract ok: rank " + rank + " of " + size;
  }

  /**
   * Runs {@code mainClass} (whose {@code main} calls {@link #runOrAbort}) on {@code ranks} ranks under
   * mpirun, with this JVM's class path, and checks that the job ended with status 0 and a line
   * {@link #okLine} from every rank. The caller skips, saying why, where {@link Mpirun#unavailable} says so.
   *
   * @param ranks how many ranks
   * @param java the JVM and its options, for example {@code [JAVA_HOME/bin/java]}
   * @param mainClass the program
   * @param timeout the deadline of the job
   * @return the finished job
   * @throws AssertionError if the job failed, timed out or a rank printed no line, with the job's output
   */
  public static Mpirun.Job underMpirun(int ranks, List<String> java, String mainClass, Duration timeout) {
    Mpirun.Job job = job(ranks, java, mainClass, timeout);
    String what = ranks + " rank" + (ranks == 1 ? "" : "s") + " of " + mainClass + ", mpirun exit " + job.exitCode()
        + " after " + job.millis() + " ms:\n" + job.output();
    if (job.exitCode() != 0) {
      throw new AssertionError("the contract failed on " + what);
    }
    // What a binding could not be checked on is said in the test's output, not only in the job's.
    job.output().lines().filter(l -> l.startsWith(SKIPPED)).distinct()
        .forEach(l -> System.out.println(mainClass + " on " + ranks + " rank" + (ranks == 1 ? "" : "s") + ": " + l));
    for (int r = 0; r < ranks; r++) {
      String line = okLine(r, ranks) + " (";
      if (job.output().lines().noneMatch(l -> l.startsWith(line))) {
        throw new AssertionError("rank " + r + " printed no '" + line + "...' line: " + what);
      }
    }
    return job;
  }

  /**
   * Runs {@code mainClass} with {@code args} on {@code ranks} ranks under mpirun, with this JVM's class path,
   * and returns the finished job, whatever its status.
   *
   * @param ranks how many ranks
   * @param java the JVM and its options
   * @param mainClass the program
   * @param timeout the deadline of the job
   * @param args the program's arguments
   * @return the finished job
   * @throws AssertionError if it did not finish in time
   */
  public static Mpirun.Job job(int ranks, List<String> java, String mainClass, Duration timeout, String... args) {
    Path dir;
    try {
      dir = Files.createTempDirectory("mpi-build-contract");
      Files.createDirectories(dir.resolve("session"));
    } catch (IOException e) {
      throw new AssertionError("cannot make a directory for the job: " + e.getMessage(), e);
    }
    try {
      List<String> cmd = new ArrayList<>(Mpirun.command(ranks, dir.resolve("session")));
      cmd.addAll(java);
      cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass));
      cmd.addAll(List.of(args));
      return Mpirun.run(cmd, dir, timeout);
    } finally {
      delete(dir);
    }
  }

  /**
   * For the {@code main} of a program that checks {@link Communicator#abort}: the last rank aborts with
   * {@link #ABORT_STATUS} and the message {@link #abortMessage} while every other rank waits in a broadcast
   * that it will never join. The job must end at once with a status other than 0. Does not return.
   *
   * @param comm the communicator of this rank
   */
  public static void abortFromTheLastRank(Communicator comm) {
    int last = comm.size() - 1;
    comm.allReduceMax(new int[] {comm.rank()}); // every rank is here
    if (comm.rank() == last) {
      comm.abort(abortMessage(last), ABORT_STATUS);
      throw new AssertionError("rank " + last + ": abort returned");
    }
    comm.broadcast(ByteBuffer.allocateDirect(8), last);
    throw new AssertionError("rank " + comm.rank() + ": a broadcast from rank " + last + ", which aborted, returned");
  }

  /** The status {@link #abortFromTheLastRank} aborts with. */
  public static final int ABORT_STATUS = 3;

  /**
   * The message {@link #abortFromTheLastRank} aborts with.
   *
   * @param rank the rank that aborts
   * @return the message
   */
  public static String abortMessage(int rank) {
    return "contract: rank " + rank + " aborts the job";
  }

  private static void delete(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
    } catch (IOException e) {
      // a temporary directory: best effort
    }
  }

  /**
   * The line the contract prints for a part it could not check, so that a binding without a feature is seen
   * to skip it and does not pass silently.
   *
   * @param part what was not checked
   * @param why why not
   * @return the line
   */
  public static String skippedLine(String part, String why) {
    return SKIPPED + part + ": " + why;
  }

  /** How every line of {@link #skippedLine} starts. */
  public static final String SKIPPED = "contract skipped: ";
}
