package org.mpibuild.streams;

import java.time.Duration;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.Communicator.Datatype;
import org.mpibuild.spi.UseGuard;

/**
 * The life of a backend's stream-ordered messenger, written once for every backend (the OpenCL backend's
 * {@code QueueMessenger}, the CUDA backend's {@code StreamMessenger}): opened on a communicator and a device
 * queue or stream with its engine ({@link StreamOrderedMessages}); adopted by the backend that owns the queue or
 * stream, if one does, which closes it before it releases them; closed once, by the program or by that backend,
 * after which every call throws {@code IllegalStateException} naming the messenger and why, and makes no
 * device call. A backend adds the device half: each of its calls that enqueues runs inside {@link #use()}, and
 * {@link #closeDevice()} releases what it holds once the engine has stopped.
 */
public abstract class DeviceMessenger implements AutoCloseable {
  private final Communicator comm;
  private final StreamOrderedMessages messages;
  private final UseGuard guard;
  /** The guard of the backend that owns the queue or stream, which closes the messenger first; or null. */
  private final UseGuard owner;
  private final UseGuard.Dependent dependent = this::close;

  /**
   * Starts the engine's progress thread. A backend's {@code open} makes the messenger through
   * {@link #openUnder(UseGuard, Supplier)}.
   *
   * @param comm the communicator the messages travel on; the caller keeps and closes it. Collectives are
   *     ordered with those of every other messenger on the same object
   * @param what the messenger, for the messages of calls after the close, for example "messenger on queue Q"
   * @param name the engine's, for its thread's name, for example the queue
   * @param deadline how long a collective waits, once this rank has started it, for every rank to start it
   *     before rank 0 names the absent ranks and aborts the job; {@link Duration#ZERO} waits for ever
   * @param deviceCodes names a device error code ({@link DeviceFailure#code()}), the same on every rank
   * @param owner the guard of the backend that owns the queue or stream, the same as given to
   *     {@code openUnder}; or null where the program made them
   * @throws IllegalStateException if MPI does not provide MPI_THREAD_MULTIPLE
   */
  protected DeviceMessenger(Communicator comm, String what, String name, Duration deadline,
      IntFunction<String> deviceCodes, UseGuard owner) {
    this.comm = comm;
    this.messages = new StreamOrderedMessages(comm, name, deadline, deviceCodes);
    this.guard = new UseGuard(what);
    this.owner = owner;
  }

  /**
   * Makes a messenger inside a use of {@code owner}, so that the owner's close waits until the messenger is
   * registered and the queue or stream stays valid meanwhile; then the owner adopts it, and closes it before it
   * releases them.
   *
   * @param <M> the backend's messenger
   * @param owner the guard of the backend that owns the queue or stream, or null where the program made them
   * @param make makes the messenger with the same {@code owner}
   * @return the messenger
   * @throws IllegalStateException if the owner is closed (the messenger is then closed too)
   * @throws IllegalArgumentException if the messenger was made with another owner
   */
  protected static <M extends DeviceMessenger> M openUnder(UseGuard owner, Supplier<M> make) {
    try (UseGuard.Use ignored = owner == null ? null : owner.enter()) {
      M messenger = make.get();
      DeviceMessenger made = messenger; // a type variable has no private members
      if (made.owner != owner) {
        made.close();
        throw new IllegalArgumentException(made.guard + " was made with another owner than " + owner);
      }
      if (owner != null) {
        owner.adopt(made.dependent);
      }
      return messenger;
    }
  }

  /**
   * Starts a use of the messenger: every call that enqueues device work or hands the engine an operation runs
   * inside one, so that a close on another thread waits for it.
   *
   * @return the use, to close when the call returns
   * @throws IllegalStateException naming the messenger and why, once it or its owner was closed
   */
  protected final UseGuard.Use use() {
    return guard.enter();
  }

  /**
   * Returns the engine.
   *
   * @return the engine that orders this messenger's operations with MPI
   */
  protected final StreamOrderedMessages messages() {
    return messages;
  }

  /**
   * Returns the communicator.
   *
   * @return the communicator the messages travel on
   */
  protected final Communicator comm() {
    return comm;
  }

  /**
   * Returns whether a backend owns the queue or stream, and closes the messenger before it releases them.
   *
   * @return true where the messenger was opened with an owner
   */
  protected final boolean owned() {
    return owner != null;
  }

  /**
   * Checks a broadcast before anything is enqueued: the root is a rank, and the header and data fit one staging
   * buffer.
   *
   * @param bytes the broadcast's data bytes
   * @param root the rank whose bytes are sent
   * @return the data bytes as an int
   * @throws IllegalArgumentException if the root is not a rank of the communicator, or the size does not fit
   */
  protected final int broadcastBytes(long bytes, int root) {
    messages.checkRoot(root);
    int n = StreamOrderedMessages.messageBytes(bytes);
    if (n > Integer.MAX_VALUE - StreamOrderedMessages.BROADCAST_HEADER) {
      throw new IllegalArgumentException("a broadcast of " + bytes + " bytes is too large for one staging buffer");
    }
    return n;
  }

  /**
   * Checks an all-reduce before anything is enqueued.
   *
   * @param count how many values
   * @param type their type
   * @return the bytes they take
   * @throws IllegalArgumentException if the count is not 1 or more, or the values do not fit one staging buffer
   */
  protected static int allReduceBytes(int count, Datatype type) {
    if (count <= 0) {
      throw new IllegalArgumentException("count " + count + " must be 1 or more");
    }
    return StreamOrderedMessages.messageBytes((long) count * type.bytes());
  }

  /**
   * Returns how many of this messenger's collectives ran as persistent collectives. Where the communicator
   * offers them ({@link Communicator#persistentCollectives}; {@code mpi-build doctor} prints it), a broadcast
   * or all-reduce whose signature (size, type, reduction, root) was already used on the communicator prepares
   * one at its second use and starts it again at later uses; the first use, and every use where the
   * communicator has none, is a non-blocking collective. The decision depends only on what is the same on
   * every rank, so ranks never mix the two (see {@link StreamOrderedMessages}).
   *
   * @return the count, 0 where the communicator has no persistent collectives
   */
  public long persistentCollectivesUsed() {
    return messages.persistentStarts();
  }

  /**
   * Returns the number of operations not yet complete.
   *
   * @return the count
   */
  public int inFlight() {
    return messages.inFlight();
  }

  /**
   * Stops the progress thread; sends and receives still in flight fail, and the device work waiting for them is
   * released (see the backend's messenger). Collectives left end alike on every rank, and the close waits for them,
   * at most about the deadline: one started goes on to its end; one not yet started fails on every rank with one
   * message naming this rank ({@link StreamOrderedMessages#close}). Idempotent; after it, every call throws
   * {@code IllegalStateException}.
   */
  @Override
  public final void close() {
    close("it was closed");
  }

  /** Closes, with the reason later calls are told: by the program, or by the owner as its dependent. */
  private void close(String why) {
    if (guard.closeAsDependent(owner, dependent, why)) {
      messages.close();
      closeDevice();
    }
  }

  /**
   * Releases what the backend holds for this messenger, once, after the engine has stopped: no operation is in
   * flight any more, though device work enqueued for failed ones may still run.
   */
  protected abstract void closeDevice();
}
