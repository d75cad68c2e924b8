package org.mpibuild.testkit;

import java.util.List;
import org.mpibuild.KernelSource;
import org.mpibuild.spi.Backend;
import org.mpibuild.spi.Compilation;
import org.mpibuild.spi.LoadedProgram;

/** A real backend with one step replaced by a subclass: how the test programs inject faults. */
public class DelegatingBackend implements Backend {
  protected final Backend inner;

  public DelegatingBackend(Backend inner) {
    this.inner = inner;
  }

  @Override
  public String id() {
    return inner.id();
  }

  @Override
  public String target() {
    return inner.target();
  }

  @Override
  public String compilerIdentity() {
    return inner.compilerIdentity();
  }

  @Override
  public Compilation compile(KernelSource request) {
    return inner.compile(request);
  }

  @Override
  public LoadedProgram load(byte[] binary, List<String> kernelNames) {
    return inner.load(binary, kernelNames);
  }

  @Override
  public void close() {
    inner.close();
  }
}

