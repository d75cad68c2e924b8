package org.mpibuild.testkit;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.mpibuild.CommunicationException;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Request;

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
 */
public final class CommunicatorContract {
  /** How long a non-blocking request may take to complete before the contract says it never did. */
  static final long REQUEST_DEADLINE_NANOS = TimeUnit.SECONDS.toNanos(60);

  private final Communicator comm;
  private final int rank;
  private final int size;

  private CommunicatorContract(Communicator comm) {
    this.comm = comm;
    this.rank = comm.rank();
    this.size = comm.size();
  }

  /**
   * Checks {@code comm} against the contract. Collective: every rank of {@code comm} calls it at once.
   *
   * @param comm the communicator of this rank
   * @throws AssertionError naming this rank and the method, at the first violation
   */
  public static void check(Communicator comm) {
    new CommunicatorContract(comm).all();
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

  private void all() {
    rankAndSize();
    allReduce();
    allGather();
    broadcastFromEveryRoot();
    broadcastOfNothingAndOfAMebibyte();
    heapBuffersAreRefused();
    nonBlockingBroadcastsAndAllReduces();
    typedAllReducesOfEveryTypeAndOperation();
    blockingTypedAllReducesOfEveryTypeAndOperation();
    typedAllReducesRefuseWhatMpiWouldOverrun();
    aTypedAllReduceOverlapsABroadcast();
    persistentCollectives();
    requestsAreMatchedInTheOrderTheyWereStarted();
    aBlockingCollectiveAfterPendingOnes();
    pointToPoint();
    splitByColour();
    aSplitOfEveryoneIsADuplicate();
    nodeCommunicator();
    anErrorMpiReportsIsACommunicationExceptionOnEveryRank();
    threadLevelAndDescription();
  }

  // --- rank and size

  private void rankAndSize() {
    that(size >= 1, "size()", "is " + size + ", not at least 1");
    that(rank >= 0 && rank < size, "rank()", "is " + rank + ", not in 0.." + (size - 1));
    that(comm.rank() == rank && comm.size() == size, "rank()/size()", "changed between two calls");
    byte[][] ranks = comm.allGather(new byte[] {(byte) rank, (byte) (rank >> 8), (byte) size, (byte) (size >> 8)});
    that(ranks.length == size, "allGather", "returned " + ranks.length + " arrays for " + size + " ranks");
    for (int r = 0; r < size; r++) {
      int theirRank = (ranks[r][0] & 0xff) | (ranks[r][1] & 0xff) << 8;
      int theirSize = (ranks[r][2] & 0xff) | (ranks[r][3] & 0xff) << 8;
      that(theirRank == r, "rank()", "slot " + r + " of an all-gather holds rank " + theirRank);
      that(theirSize == size, "size()", "rank " + r + " says " + theirSize + ", this rank " + size);
    }
  }

  // --- all-reduce and all-gather

  private int[] reduceInput() {
    return new int[] {rank, -rank, 7, size - 1 - rank, Integer.MIN_VALUE + rank, rank == size - 1 ? Integer.MAX_VALUE : 0};
  }

  private int[] reduceExpected() {
    return new int[] {size - 1, 0, 7, size - 1, Integer.MIN_VALUE + size - 1, Integer.MAX_VALUE};
  }

  private void allReduce() {
    int[] in = reduceInput();
    int[] copy = in.clone();
    int[] out = comm.allReduceMax(in);
    that(Arrays.equals(out, reduceExpected()), "allReduceMax", "gave " + Arrays.toString(out) + ", not "
        + Arrays.toString(reduceExpected()));
    that(Arrays.equals(in, copy), "allReduceMax", "changed its input to " + Arrays.toString(in));
    int[] none = comm.allReduceMax(new int[0]);
    that(none != null && none.length == 0, "allReduceMax", "of no values gave " + Arrays.toString(none));
  }

  private static byte[] gathered(int r) {
    byte[] b = new byte[r * 3];
    for (int i = 0; i < b.length; i++) {
      b[i] = (byte) (r * 31 + i);
    }
    return b;
  }

  private void allGather() {
    byte[] mine = gathered(rank);
    byte[] copy = mine.clone();
    byte[][] all = comm.allGather(mine);
    that(all.length == size, "allGather", "returned " + all.length + " arrays for " + size + " ranks");
    for (int r = 0; r < size; r++) {
      that(Arrays.equals(all[r], gathered(r)), "allGather", "slot " + r + " holds " + Arrays.toString(all[r])
          + ", not rank " + r + "'s " + Arrays.toString(gathered(r)));
    }
    that(Arrays.equals(mine, copy), "allGather", "changed its input");
    byte[][] empty = comm.allGather(new byte[0]);
    that(empty.length == size && Arrays.stream(empty).allMatch(b -> b.length == 0), "allGather",
        "of empty arrays gave " + Arrays.deepToString(empty));
  }

  // --- broadcasts

  /** A direct buffer of 64 bytes whose window 5..45 is the broadcast, the rest a fence of this rank's own. */
  private ByteBuffer windowed(int root, int salt) {
    ByteBuffer b = ByteBuffer.allocateDirect(64);
    for (int i = 0; i < 64; i++) {
      b.put(i, (byte) (rank == root && i >= 5 && i < 45 ? payload(root, salt, i) : 0x70 + rank));
    }
    return b.position(5).limit(45);
  }

  private static byte payload(int root, int salt, int i) {
    return (byte) (root * 17 + salt * 5 + i);
  }

  private void checkWindow(ByteBuffer b, int root, int salt, String method) {
    that(b.position() == 5 && b.limit() == 45, method, "moved the buffer's position/limit to " + b.position()
        + "/" + b.limit() + " (root " + root + ")");
    ByteBuffer whole = b.duplicate().clear();
    for (int i = 0; i < 64; i++) {
      byte want = i >= 5 && i < 45 ? payload(root, salt, i) : (byte) (0x70 + rank);
      if (whole.get(i) != want) {
        that(false, method, "byte " + i + " is " + whole.get(i) + ", not " + want + " (root " + root + "; bytes 5..44 are "
            + "the broadcast, the others must stay as they were)");
      }
    }
  }

  private void broadcastFromEveryRoot() {
    for (int root = 0; root < size; root++) {
      ByteBuffer b = windowed(root, 1);
      comm.broadcast(b, root);
      checkWindow(b, root, 1, "broadcast");
    }
  }

  private void broadcastOfNothingAndOfAMebibyte() {
    ByteBuffer none = ByteBuffer.allocateDirect(8).position(3).limit(3);
    comm.broadcast(none, 0);
    that(none.position() == 3 && none.limit() == 3, "broadcast", "of no bytes moved the buffer");
    int root = size - 1;
    ByteBuffer big = ByteBuffer.allocateDirect(1 << 20);
    if (rank == root) {
      for (int i = 0; i < big.capacity(); i++) {
        big.put(i, (byte) (i * 7 + i / 4096));
      }
    }
    comm.broadcast(big, root);
    for (int i = 0; i < big.capacity(); i++) {
      if (big.get(i) != (byte) (i * 7 + i / 4096)) {
        that(false, "broadcast", "of 1 MiB from root " + root + ": byte " + i + " differs");
      }
    }
  }

  private void heapBuffersAreRefused() {
    ByteBuffer heap = ByteBuffer.allocate(16);
    try {
      comm.broadcast(heap, 0);
      that(false, "broadcast", "took a heap buffer (the SPI asks for a direct one, so that no copy is made)");
    } catch (IllegalArgumentException expected) {
      // refused on every rank, before any communication
    }
  }

  private void nonBlockingBroadcastsAndAllReduces() {
    ByteBuffer a = windowed(0, 2);
    ByteBuffer c = windowed(size - 1, 3);
    int[] result = new int[reduceInput().length];
    Request ra = comm.iBroadcast(a, 0);
    Request rb = comm.iAllReduceMax(reduceInput(), result);
    Request rc = comm.iBroadcast(c, size - 1);
    that(ra != null && rb != null && rc != null, "iBroadcast/iAllReduceMax", "returned a null request");
    // test() never blocks: poll with await(nanos) until it says complete, within a deadline.
    long deadline = System.nanoTime() + REQUEST_DEADLINE_NANOS;
    while (!rc.test()) {
      rc.await(TimeUnit.MILLISECONDS.toNanos(1));
      that(System.nanoTime() < deadline, "Request.test", "of an iBroadcast still false after "
          + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
    }
    that(rc.test(), "Request.test", "was false after it had been true");
    rc.await();
    that(rc.await(0), "Request.await(nanos)", "of a completed request returned false");
    ra.await();
    ra.await();
    rb.await();
    checkWindow(a, 0, 2, "iBroadcast");
    checkWindow(c, size - 1, 3, "iBroadcast");
    that(Arrays.equals(result, reduceExpected()), "iAllReduceMax", "wrote " + Arrays.toString(result) + ", not "
        + Arrays.toString(reduceExpected()));
    Request again = comm.iAllReduceMax(new int[] {rank}, result = new int[1]);
    long end = System.nanoTime() + REQUEST_DEADLINE_NANOS;
    while (!again.await(TimeUnit.MILLISECONDS.toNanos(5))) {
      that(System.nanoTime() < end, "Request.await(nanos)", "of an iAllReduceMax still false after "
          + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
    }
    that(result[0] == size - 1, "iAllReduceMax", "wrote " + result[0] + " once await(nanos) said complete, not "
        + (size - 1));
  }

  // --- typed all-reduces (iAllReduce) and persistent collectives

  /** Where the values of a typed all-reduce start in its buffers: not at 0, so that a position ignored shows. */
  private static final int AT = 8;
  /** The bytes after the values, inside the buffers' limits, that an all-reduce must leave alone. */
  private static final int FENCE = 16;

  /**
   * Rank {@code r}'s {@code count} values of {@code type} in round {@code round}, as bytes in native order:
   * different on every rank and at every index, positive and negative, so that the sum, the minimum and the
   * maximum differ from each other and from any one rank's values (with 2 ranks or more); longs beyond 32
   * bits; floats and doubles with fractions whose sums are exact in any order.
   */
  static byte[] typedValues(int r, int count, Communicator.Datatype type, int round) {
    ByteBuffer b = ByteBuffer.allocate(count * type.bytes()).order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      int sign = (i + r) % 2 == 0 ? 1 : -1;
      long v = sign * (3L * r + 11L * i + 5L * round + 1);
      switch (type) {
        case INT -> b.putInt(i * 4, (int) v);
        case LONG -> b.putLong(i * 8, v * (1L << 33) + r);
        case FLOAT -> b.putFloat(i * 4, v + 0.25f * r);
        case DOUBLE -> b.putDouble(i * 8, v * 1024.0 + 0.125 * r);
        default -> throw new IllegalArgumentException("type " + type);
      }
    }
    return b.array();
  }

  /** What {@code op} over every rank's {@link #typedValues} gives, by the kit's {@link Reductions}. */
  private byte[] typedExpected(int count, Communicator.Datatype type, Communicator.ReduceOp op, int round) {
    Object[] all = new Object[size];
    for (int r = 0; r < size; r++) {
      all[r] = typedValues(r, count, type, round);
    }
    return Reductions.reduce(all, count, type, op);
  }

  /** A direct buffer in native order holding {@code values} at {@link #AT}, fenced with this rank's bytes. */
  private ByteBuffer typedBuffer(byte[] values) {
    ByteBuffer b = ByteBuffer.allocateDirect(AT + values.length + FENCE + 8).order(ByteOrder.nativeOrder());
    for (int i = 0; i < b.capacity(); i++) {
      b.put(i, (byte) (0x50 + rank));
    }
    b.put(AT, values);
    return b.position(AT).limit(AT + values.length + FENCE);
  }

  /** Checks that {@code b} holds {@code values} at {@link #AT}, its fence untouched, position and limit kept. */
  private void checkTyped(ByteBuffer b, byte[] values, String method, String what) {
    that(b.position() == AT && b.limit() == AT + values.length + FENCE, method, what + ": moved the buffer's "
        + "position/limit to " + b.position() + "/" + b.limit());
    ByteBuffer whole = b.duplicate().clear();
    for (int i = 0; i < whole.capacity(); i++) {
      boolean inside = i >= AT && i < AT + values.length;
      byte want = inside ? values[i - AT] : (byte) (0x50 + rank);
      if (whole.get(i) != want) {
        that(false, method, what + ": byte " + i + " is " + whole.get(i) + ", not " + want + (inside ? " (bytes "
            + AT + ".." + (AT + values.length - 1) + " are the values)" : " (outside the values: must stay)"));
      }
    }
  }

  /**
   * Every type with every operation, all started before any is awaited, then awaited in the reverse order:
   * each result equals what {@link Reductions} computes from every rank's values, in the receive buffer's
   * window only, and the send buffer is left as it was.
   */
  private void typedAllReducesOfEveryTypeAndOperation() {
    int count = 5;
    List<Object[]> started = new ArrayList<>();
    for (Communicator.Datatype type : Communicator.Datatype.values()) {
      for (Communicator.ReduceOp op : Communicator.ReduceOp.values()) {
        byte[] mine = typedValues(rank, count, type, 0);
        ByteBuffer send = typedBuffer(mine);
        ByteBuffer receive = typedBuffer(new byte[mine.length]);
        Request r = comm.iAllReduce(send, receive, count, type, op);
        that(r != null, "iAllReduce", "returned a null request");
        started.add(new Object[] {type, op, send, receive, r, mine});
      }
    }
    for (int i = started.size() - 1; i >= 0; i--) {
      Object[] s = started.get(i);
      ((Request) s[4]).await();
    }
    for (Object[] s : started) {
      Communicator.Datatype type = (Communicator.Datatype) s[0];
      Communicator.ReduceOp op = (Communicator.ReduceOp) s[1];
      String what = op + " of " + count + " " + type;
      checkTyped((ByteBuffer) s[3], typedExpected(count, type, op, 0), "iAllReduce", what);
      checkTyped((ByteBuffer) s[2], (byte[]) s[5], "iAllReduce", what + " (the send buffer)");
    }
  }

  /**
   * The blocking all-reduce ({@code MPI_Allreduce}) of every type with every operation, on other values than
   * the non-blocking ones': each result right, in the receive buffer's window only, the send buffer as it was.
   */
  private void blockingTypedAllReducesOfEveryTypeAndOperation() {
    int count = 3;
    for (Communicator.Datatype type : Communicator.Datatype.values()) {
      for (Communicator.ReduceOp op : Communicator.ReduceOp.values()) {
        byte[] mine = typedValues(rank, count, type, 1);
        ByteBuffer send = typedBuffer(mine);
        ByteBuffer receive = typedBuffer(new byte[mine.length]);
        comm.allReduce(send, receive, count, type, op);
        String what = op + " of " + count + " " + type;
        checkTyped(receive, typedExpected(count, type, op, 1), "allReduce", what);
        checkTyped(send, mine, "allReduce", what + " (the send buffer)");
      }
    }
  }

  /** Heap buffers, and counts beyond a buffer's remaining bytes, are refused on every rank before any call. */
  private void typedAllReducesRefuseWhatMpiWouldOverrun() {
    ByteBuffer direct = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    ByteBuffer other = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    refused(() -> comm.iAllReduce(ByteBuffer.allocate(16), other, 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap send buffer");
    refused(() -> comm.iAllReduce(direct, ByteBuffer.allocate(16), 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap receive buffer");
    refused(() -> comm.iAllReduce(direct, other, 3, Communicator.Datatype.LONG, Communicator.ReduceOp.SUM),
        "3 longs in 16-byte buffers");
    refused(() -> comm.iAllReduce(direct, other.position(12), 2, Communicator.Datatype.INT,
        Communicator.ReduceOp.MAX), "2 ints into 4 remaining bytes");
    other.position(0);
    refused(() -> comm.allReduce(ByteBuffer.allocate(16), other, 2, Communicator.Datatype.LONG,
        Communicator.ReduceOp.SUM), "a heap send buffer (blocking)");
    refused(() -> comm.allReduce(direct, other, 3, Communicator.Datatype.LONG, Communicator.ReduceOp.SUM),
        "3 longs in 16-byte buffers (blocking)");
  }

  private void refused(Runnable call, String what) {
    try {
      call.run();
      that(false, "iAllReduce", "took " + what + " (IllegalArgumentException expected, before any communication)");
    } catch (IllegalArgumentException expected) {
      // refused on every rank alike
    }
  }

  /**
   * A typed all-reduce and a broadcast pending at once on one communicator, started in the same order on every
   * rank and awaited in the other order, then the other way round: neither takes the other's bytes.
   */
  private void aTypedAllReduceOverlapsABroadcast() {
    int count = 3;
    Communicator.Datatype type = Communicator.Datatype.DOUBLE;
    byte[] mine = typedValues(rank, count, type, 1);
    ByteBuffer send = typedBuffer(mine);
    ByteBuffer receive = typedBuffer(new byte[mine.length]);
    Request reduce = comm.iAllReduce(send, receive, count, type, Communicator.ReduceOp.SUM);
    ByteBuffer b = windowed(size - 1, 40);
    Request bcast = comm.iBroadcast(b, size - 1);
    bcast.await();
    reduce.await();
    checkWindow(b, size - 1, 40, "iBroadcast (pending with an iAllReduce)");
    checkTyped(receive, typedExpected(count, type, Communicator.ReduceOp.SUM, 1), "iAllReduce",
        "SUM of 3 DOUBLE pending with an iBroadcast");

    ByteBuffer first = windowed(0, 41);
    Request bcastFirst = comm.iBroadcast(first, 0);
    byte[] longs = typedValues(rank, count, Communicator.Datatype.LONG, 2);
    ByteBuffer in = typedBuffer(longs);
    ByteBuffer out = typedBuffer(new byte[longs.length]);
    Request then = comm.iAllReduce(in, out, count, Communicator.Datatype.LONG, Communicator.ReduceOp.MIN);
    then.await();
    bcastFirst.await();
    checkWindow(first, 0, 41, "iBroadcast (pending with an iAllReduce)");
    checkTyped(out, typedExpected(count, Communicator.Datatype.LONG, Communicator.ReduceOp.MIN, 2), "iAllReduce",
        "MIN of 3 LONG started after an iBroadcast");
  }

  /**
   * Where the binding offers persistent collectives (all ranks must agree on what {@link
   * Communicator#persistentCollectives} says): one all-reduce prepared once and started three times with new
   * values, a second start while one is in progress refused, a broadcast from the last rank started twice with
   * new bytes, and closing. Where it offers none, both {@code *Init} methods throw {@link
   * UnsupportedOperationException} and rank 0 prints what was skipped.
   */
  private void persistentCollectives() {
    String what = comm.persistentCollectives();
    that(what != null && !what.isBlank(), "persistentCollectives", "is empty");
    byte[][] all = comm.allGather(what.getBytes(StandardCharsets.UTF_8));
    for (int r = 0; r < size; r++) {
      String theirs = new String(all[r], StandardCharsets.UTF_8);
      that(theirs.equals(what), "persistentCollectives", "rank " + r + " says '" + theirs + "', this rank '" + what
          + "'");
    }
    if (what.startsWith("none")) {
      unsupported(() -> comm.broadcastInit(ByteBuffer.allocateDirect(8), 0), "broadcastInit", what);
      unsupported(() -> comm.allReduceInit(ByteBuffer.allocateDirect(8), ByteBuffer.allocateDirect(8), 1,
          Communicator.Datatype.LONG, Communicator.ReduceOp.SUM), "allReduceInit", what);
      if (rank == 0) {
        System.out.println(skippedLine("persistent collectives (broadcastInit, allReduceInit)", what + "; "
            + comm.description()));
        System.out.flush();
      }
      return;
    }
    persistentAllReduce();
    persistentBroadcast();
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

  private void unsupported(Runnable call, String method, String what) {
    try {
      call.run();
      that(false, method, "returned though persistentCollectives() says '" + what + "'");
    } catch (UnsupportedOperationException expected) {
      // as the SPI's default
    }
  }

  private void persistentAllReduce() {
    int count = 4;
    Communicator.Datatype type = Communicator.Datatype.LONG;
    Communicator.ReduceOp op = Communicator.ReduceOp.SUM;
    ByteBuffer send = typedBuffer(new byte[count * type.bytes()]);
    ByteBuffer receive = typedBuffer(new byte[count * type.bytes()]);
    try (Communicator.PersistentRequest p = comm.allReduceInit(send, receive, count, type, op)) {
      that(p != null, "allReduceInit", "returned null");
      for (int round = 0; round < 3; round++) {
        byte[] mine = typedValues(rank, count, type, 10 + round);
        send.put(AT, mine);
        Request r = p.start();
        that(r != null, "PersistentRequest.start", "returned null");
        if (round == 1) {
          try {
            p.start();
            that(false, "PersistentRequest.start", "started again while its previous start was in progress");
          } catch (IllegalStateException expected) {
            // one start at a time
          }
        }
        long deadline = System.nanoTime() + REQUEST_DEADLINE_NANOS;
        while (!r.await(TimeUnit.MILLISECONDS.toNanos(1))) {
          that(System.nanoTime() < deadline, "PersistentRequest.start", "round " + round + " still incomplete after "
              + TimeUnit.NANOSECONDS.toSeconds(REQUEST_DEADLINE_NANOS) + " s");
        }
        checkTyped(receive, typedExpected(count, type, op, 10 + round), "allReduceInit",
            op + " of " + count + " " + type + ", start " + (round + 1) + " of 3");
        checkTyped(send, mine, "allReduceInit", "start " + (round + 1) + " (the send buffer)");
      }
    }
  }

  private void persistentBroadcast() {
    int root = size - 1; // not rank 0 wherever there are 2 ranks or more
    ByteBuffer b = windowed(root, 50);
    try (Communicator.PersistentRequest p = comm.broadcastInit(b, root)) {
      for (int round = 0; round < 2; round++) {
        int salt = 50 + round;
        ByteBuffer whole = b.duplicate().clear(); // new bytes in the same buffer, whose window stays 5..45
        for (int i = 0; i < 64; i++) {
          whole.put(i, (byte) (rank == root && i >= 5 && i < 45 ? payload(root, salt, i) : 0x70 + rank));
        }
        Request r = p.start();
        r.await();
        that(r.test(), "PersistentRequest.start", "test() of a broadcast that await() completed is false");
        checkWindow(b, root, salt, "broadcastInit (start " + (round + 1) + ")");
      }
      p.close();
      p.close(); // twice: nothing
      try {
        p.start();
        that(false, "PersistentRequest.start", "started after close()");
      } catch (IllegalStateException expected) {
        // closed
      }
    }
    int[] max = comm.allReduceMax(new int[] {rank});
    that(max[0] == size - 1, "allReduceMax", "after persistent collectives gave " + max[0]);
  }

  /**
   * Requests are matched across ranks in the order they were started, whatever order they are waited for in.
   * MPI does not promise that one completes before a later one does (Open MPI 4.1 completed the fourth of
   * four broadcasts on 3 ranks before the second): each is awaited on its own.
   */
  private void requestsAreMatchedInTheOrderTheyWereStarted() {
    ByteBuffer[] buffers = new ByteBuffer[4];
    Request[] requests = new Request[4];
    for (int i = 0; i < 4; i++) {
      buffers[i] = windowed(i % size, 10 + i);
      requests[i] = comm.iBroadcast(buffers[i], i % size);
    }
    for (int i = 3; i >= 0; i--) {
      requests[i].await();
    }
    for (int i = 0; i < 4; i++) {
      that(requests[i].test(), "Request.test", "of iBroadcast " + i + " is false after await returned");
      checkWindow(buffers[i], i % size, 10 + i, "iBroadcast");
    }
  }

  private void aBlockingCollectiveAfterPendingOnes() {
    ByteBuffer first = windowed(0, 20);
    Request pending = comm.iBroadcast(first, 0);
    ByteBuffer second = windowed(size - 1, 21);
    comm.broadcast(second, size - 1);
    int[] max = comm.allReduceMax(new int[] {rank});
    pending.await();
    checkWindow(first, 0, 20, "iBroadcast");
    checkWindow(second, size - 1, 21, "broadcast");
    that(max[0] == size - 1, "allReduceMax", "after a pending iBroadcast gave " + max[0]);
  }

  // --- point-to-point

  private void pointToPoint() {
    int right = (rank + 1) % size;
    int left = (rank + size - 1) % size;
    ByteBuffer in = ByteBuffer.allocateDirect(24);
    Request received;
    boolean carried;
    try {
      received = comm.iReceive(in.position(2).limit(22), left, 5);
      carried = true;
    } catch (UnsupportedOperationException e) {
      received = null;
      carried = false;
    }
    int[] agree = comm.allReduceMax(new int[] {carried ? 1 : 0, carried ? 0 : 1});
    that(agree[0] + agree[1] == 1, "iReceive", "is carried on some ranks and not on others");
    if (!carried) {
      return;
    }
    ByteBuffer out = ByteBuffer.allocateDirect(24);
    for (int i = 0; i < 24; i++) {
      out.put(i, (byte) (rank * 11 + i));
    }
    Request sent = comm.iSend(out.position(4).limit(24), right, 5);
    sent.await();
    received.await();
    that(in.position() == 2 && in.limit() == 22 && out.position() == 4 && out.limit() == 24, "iSend/iReceive",
        "moved a buffer's position or limit");
    for (int i = 0; i < 20; i++) {
      that(in.get(2 + i) == (byte) (left * 11 + 4 + i), "iReceive", "byte " + i + " from rank " + left + " differs");
    }
    // Two messages with one tag arrive in the order they were sent; the blocking forms too.
    ByteBuffer one = ByteBuffer.allocateDirect(4);
    ByteBuffer two = ByteBuffer.allocateDirect(4);
    Request r1 = comm.iReceive(one, left, 6);
    Request r2 = comm.iReceive(two, left, 6);
    comm.send(ByteBuffer.allocateDirect(4).putInt(0, 1000 + rank), right, 6);
    comm.send(ByteBuffer.allocateDirect(4).putInt(0, 2000 + rank), right, 6);
    r1.await();
    r2.await();
    that(one.getInt(0) == 1000 + left && two.getInt(0) == 2000 + left, "send/iReceive", "messages with one tag "
        + "arrived as " + one.getInt(0) + ", " + two.getInt(0) + ", not in the order they were sent");
    ByteBuffer back = ByteBuffer.allocateDirect(4);
    Request s = comm.iSend(ByteBuffer.allocateDirect(4).putInt(0, 3000 + rank), left, 7);
    comm.receive(back, right, 7);
    s.await();
    that(back.getInt(0) == 3000 + right, "receive", "got " + back.getInt(0) + " from rank " + right);
  }

  // --- new communicators

  private void splitByColour() {
    int colour = rank % 2;
    try (Communicator half = comm.split(colour)) {
      int members = (size - colour + 1) / 2;
      that(half.size() == members, "split", "colour " + colour + " has " + half.size() + " ranks, not " + members);
      that(half.rank() == rank / 2, "split", "gave rank " + half.rank() + ", not " + rank / 2
          + " (ranks keep their order)");
      int[] max = half.allReduceMax(new int[] {rank});
      int highest = colour + 2 * (members - 1);
      that(max[0] == highest, "split", "an all-reduce over colour " + colour + " gave " + max[0] + ", not " + highest);
      ByteBuffer b = ByteBuffer.allocateDirect(4);
      if (half.rank() == 0) {
        b.putInt(0, 500 + rank);
      }
      half.broadcast(b, 0);
      that(b.getInt(0) == 500 + colour, "split", "a broadcast over colour " + colour + " gave " + b.getInt(0));
    }
    int[] after = comm.allReduceMax(new int[] {rank});
    that(after[0] == size - 1, "split", "closing the split broke the parent (all-reduce gave " + after[0] + ")");
  }

  private void aSplitOfEveryoneIsADuplicate() {
    try (Communicator dup = comm.split(0)) {
      that(dup.size() == size && dup.rank() == rank, "split", "of everyone gave rank " + dup.rank() + " of "
          + dup.size());
      // A broadcast pending on the parent and one on the duplicate, of one size, never exchange their bytes.
      ByteBuffer parent = windowed(0, 30);
      Request pending = comm.iBroadcast(parent, 0);
      ByteBuffer child = windowed(0, 31);
      dup.broadcast(child, 0);
      pending.await();
      checkWindow(parent, 0, 30, "split (the parent's iBroadcast)");
      checkWindow(child, 0, 31, "split (the duplicate's broadcast)");
    }
  }

  private void nodeCommunicator() {
    try (Communicator node = comm.splitByNode()) {
      that(node.size() >= 1 && node.size() <= size, "splitByNode", "gave size " + node.size());
      byte[][] members = node.allGather(new byte[] {(byte) rank, (byte) (rank >> 8)});
      int[] parentRanks = Arrays.stream(members).mapToInt(m -> (m[0] & 0xff) | (m[1] & 0xff) << 8).toArray();
      for (int i = 1; i < parentRanks.length; i++) {
        that(parentRanks[i - 1] < parentRanks[i], "splitByNode", "did not keep rank order: "
            + Arrays.toString(parentRanks));
      }
      that(parentRanks[node.rank()] == rank, "splitByNode", "rank " + node.rank() + " of the node holds rank "
          + parentRanks[node.rank()] + " of the parent");
      // Every rank of the parent is on exactly one node, and every rank of a node sees the same members.
      byte[] mine = new byte[parentRanks.length * 2];
      for (int i = 0; i < parentRanks.length; i++) {
        mine[2 * i] = (byte) parentRanks[i];
        mine[2 * i + 1] = (byte) (parentRanks[i] >> 8);
      }
      byte[][] all = comm.allGather(mine);
      for (int r = 0; r < size; r++) {
        for (int q = 0; q < size; q++) {
          boolean rHasQ = contains(all[r], q);
          that(rHasQ == contains(all[q], r), "splitByNode", "rank " + r + " counts rank " + q + " on its node, but "
              + "rank " + q + " does not agree");
          if (rHasQ) {
            that(Arrays.equals(all[r], all[q]), "splitByNode", "ranks " + r + " and " + q + " share a node but list "
                + "different members");
          }
        }
        that(contains(all[r], r), "splitByNode", "rank " + r + " is not on its own node");
      }
    }
  }

  private static boolean contains(byte[] members, int rank) {
    for (int i = 0; i < members.length; i += 2) {
      if (((members[i] & 0xff) | (members[i + 1] & 0xff) << 8) == rank) {
        return true;
      }
    }
    return false;
  }

  // --- errors

  private void anErrorMpiReportsIsACommunicationExceptionOnEveryRank() {
    ByteBuffer b = ByteBuffer.allocateDirect(8);
    try {
      comm.broadcast(b, size);
      that(false, "broadcast", "from root " + size + " of " + size + " ranks returned normally");
    } catch (CommunicationException expected) {
      that(expected.getMessage() != null && !expected.getMessage().isBlank(), "broadcast",
          "threw a CommunicationException without a message");
    } catch (RuntimeException other) {
      throw new AssertionError(where("broadcast") + "from root " + size + " of " + size + " ranks threw " + other
          + ", not a CommunicationException (the SPI's exception when MPI reports an error)", other);
    }
    int[] max = comm.allReduceMax(new int[] {rank});
    that(max[0] == size - 1, "allReduceMax", "after a refused broadcast gave " + max[0]);
  }

  private void threadLevelAndDescription() {
    that(comm.threadLevel() != null, "threadLevel", "is null");
    String d = comm.description();
    that(d != null && !d.isBlank(), "description", "is empty");
  }

  // --- reporting

  private String where(String method) {
    return "rank " + rank + " of " + size + ", " + method + ": ";
  }

  private void that(boolean holds, String method, String otherwise) {
    if (!holds) {
      throw new AssertionError(where(method) + otherwise);
    }
  }
}
