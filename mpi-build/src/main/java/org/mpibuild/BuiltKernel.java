package org.mpibuild;

import java.util.List;
import java.util.function.UnaryOperator;
import org.mpibuild.internal.wire.Envelope;
import org.mpibuild.spi.LoadedProgram;
import org.mpibuild.spi.NamedKernels;
import org.mpibuild.spi.UseGuard;

/**
 * The kernel a build returns: the backend's loaded program, with the envelope and the statistics. It is a
 * dependent of its {@link MpiBuild}, which closes it (before the backend) if the program did not.
 */
final class BuiltKernel implements Kernel, UseGuard.Dependent {
  private final LoadedProgram program;
  private final Envelope envelope;
  private final BuildStats stats;
  private final UseGuard guard;
  private final UseGuard owner;
  /** Gives the complete envelope of a pending one ({@link Envelope#pending}), as a call of the MpiBuild. */
  private final UnaryOperator<Envelope> completer;

  /**
   * @param owner the kernels of the MpiBuild that made it
   * @throws IllegalStateException if that MpiBuild was closed meanwhile (the program is closed then)
   */
  BuiltKernel(LoadedProgram program, Envelope envelope, BuildStats stats, UseGuard owner) {
    this(program, envelope, stats, owner, UnaryOperator.identity());
  }

  /**
   * @param completer gives the complete envelope of a pending one: a call of the MpiBuild that made the
   *     kernel, so that its close cannot release the backend while the binary is made
   */
  BuiltKernel(LoadedProgram program, Envelope envelope, BuildStats stats, UseGuard owner,
      UnaryOperator<Envelope> completer) {
    this.completer = completer;
    this.program = program;
    this.envelope = envelope;
    this.stats = stats;
    this.guard = new UseGuard(NamedKernels.describe(program.kernelNames()));
    this.owner = owner;
    owner.adopt(this);
  }

  @Override
  public List<String> kernelNames() {
    return program.kernelNames();
  }

  @Override
  public String backend() {
    return envelope.metadata().backend();
  }

  @Override
  public String target() {
    return envelope.metadata().target();
  }

  @Override
  public BinaryData binaryData() {
    Envelope complete = envelope;
    if (envelope.isPending()) {
      guard.check();
      // made after the program (a job of one rank): waited for, or made now, outside the kernel's use (it
      // may take as long as a compile) and inside a call of its MpiBuild; its payload is never lent
      complete = completer.apply(envelope);
    }
    // inside a use: a close on another thread waits before it gives a received binary's buffer back
    try (UseGuard.Use ignored = guard.enter()) {
      return new BinaryData(complete.detached());
    }
  }

  @Override
  public BuildStats stats() {
    return stats;
  }

  @Override
  public <T> T as(Class<T> type) {
    guard.check();
    if (!type.isInstance(program)) {
      throw new IllegalArgumentException("this kernel was built by backend '" + backend() + "' as a "
          + program.getClass().getName() + ", not a " + type.getName());
    }
    return type.cast(program);
  }

  @Override
  public void close() {
    close("it was closed");
  }

  @Override
  public void close(String why) {
    if (guard.closeAsDependent(owner, this, why)) {
      try {
        program.close(why);
      } finally {
        envelope.payload().release(); // a received binary's buffer goes back to the broadcast's pool
      }
    }
  }

  @Override
  public String toString() {
    return "Kernel" + kernelNames() + " [" + backend() + ", " + stats.binaryBytes() + " bytes]";
  }
}
