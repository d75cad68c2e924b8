/**
 * Helpers that backends and MPI bindings share, apart from the contracts they implement ({@link
 * org.mpibuild.spi}): a use guard for native handles ({@link org.mpibuild.spi.UseGuard}), native-library
 * loading ({@link org.mpibuild.support.NativeLibraries}, with {@link org.mpibuild.support.Ownership}, whether a
 * file is this process's own) and small file and message helpers ({@link org.mpibuild.support.BackendSupport}):
 * only what backends and bindings use; what only the core uses is internal. Stream-ordered messages over a device queue are a module of their
 * own, {@code mpi-build-streams} (package {@code org.mpibuild.streams}).
 */
package org.mpibuild.support;
