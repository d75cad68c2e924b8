/**
 * Helpers that backends and MPI bindings share, apart from the contracts they implement ({@link
 * org.mpibuild.spi}): a use guard for native handles ({@link org.mpibuild.spi.UseGuard}), native-library
 * loading ({@link org.mpibuild.support.NativeLibraries}), warnings a user must see without an SLF4J provider
 * ({@link org.mpibuild.support.EssentialWarning}) and small file and message helpers ({@link
 * org.mpibuild.support.BackendSupport}). Stream-ordered messages over a device queue are a module of their
 * own, {@code mpi-build-streams} (package {@code org.mpibuild.streams}).
 */
package org.mpibuild.support;
