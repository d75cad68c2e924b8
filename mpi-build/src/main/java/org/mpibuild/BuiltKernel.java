package org.mpibuild;

import java.util.List;
import org.mpibuild.internal.Envelope;
import org.mpibuild.spi.LoadedProgram;

/** The kernel a build returns: the backend's loaded program, with the envelope and the statistics. */
final class BuiltKernel implements Kernel {
  private final LoadedProgram program;
  private final Envelope envelope;
  private final BuildStats stats;
  private volatile boolean closed;

  BuiltKernel(LoadedProgram program, Envelope envelope, BuildStats stats) {
    this.program = program;
    this.envelope = envelope;
    this.stats = stats;
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
    if (closed) {
      throw new IllegalStateException("kernel " + kernelNames() + " is closed: its binary is gone");
    }
    return new BinaryData(envelope.detached());
  }

  @Override
  public BuildStats stats() {
    return stats;
  }

  @Override
  public <T> T as(Class<T> type) {
    if (!type.isInstance(program)) {
      throw new IllegalArgumentException("this kernel was built by backend '" + backend() + "' as a "
          + program.getClass().getName() + ", not a " + type.getName());
    }
    return type.cast(program);
  }

  @Override
  public void close() {
    closed = true;
    program.close();
    envelope.payload().release(); // a received binary's buffer goes back to the broadcast's pool
  }

  @Override
  public String toString() {
    return "Kernel" + kernelNames() + " [" + backend() + ", " + stats.binaryBytes() + " bytes]";
  }
}
