package org.mpibuild.mpijava;

import java.security.CodeSource;
import java.util.ServiceLoader;
import org.mpibuild.spi.Communicator;
import org.mpibuild.spi.MpiBinding;

/**
 * The binding over Open MPI's Java bindings ({@code mpi.jar}), found through {@link ServiceLoader}.
 * Creating it loads no native code: {@code mpi.jar} is probed by name first.
 */
public final class MpiJavaBinding implements MpiBinding {
  /** The binding's id, as {@code MPI_BUILD_BINDING} names it. */
  public static final String ID = "mpijava";

  @Override
  public String id() {
    return ID;
  }

  @Override
  public String unavailable() {
    return mpiJarLocation() == null ? "mpi.jar is not on the class path (launch with 'mpirun ... java', which adds "
        + "Open MPI's mpi.jar, or add it with -cp)" : null;
  }

  @Override
  public Communicator openWorld(boolean mayInitialize) {
    return MpiJavaWorld.open(mayInitialize);
  }

  @Override
  public String describe() {
    return "mpi.jar (" + mpiJarLocation() + "); persistent collectives: " + MpiJavaCommunicator.PERSISTENT_COLLECTIVES;
  }

  /** Where mpi.jar's classes come from, or null if mpi.jar is not on the class path. Loads no native code. */
  static String mpiJarLocation() {
    try {
      Class<?> c = Class.forName("mpi.MPI", false, MpiJavaBinding.class.getClassLoader());
      CodeSource src = c.getProtectionDomain().getCodeSource();
      return src == null ? "(unknown location)" : src.getLocation().getPath();
    } catch (ClassNotFoundException | LinkageError e) {
      return null;
    }
  }
}
