/**
 * mpi-build's core. It exports the API ({@code org.mpibuild}), the SPI ({@code org.mpibuild.spi}: the
 * contracts a backend or an MPI binding implements) and the helpers that backends and bindings share
 * ({@code org.mpibuild.support}). The protocol and the cache ({@code org.mpibuild.internal...}) stay
 * invisible to modular programs, even where they are public inside the module. Backends and MPI bindings plug in through {@link
 * java.util.ServiceLoader}.
 */
module org.mpibuild {
  requires org.slf4j;

  exports org.mpibuild;
  exports org.mpibuild.spi;
  exports org.mpibuild.support;

  uses org.mpibuild.spi.BackendProvider;
  uses org.mpibuild.spi.MpiBinding;
}
