/**
 * Helpers that backends and MPI bindings share, apart from the contracts they implement ({@link
 * org.mpibuild.spi}): stream-ordered messages over a device queue ({@link
 * org.mpibuild.support.StreamOrderedMessages}), a use guard for native handles ({@link
 * org.mpibuild.spi.UseGuard}), native-library loading ({@link org.mpibuild.support.NativeLibraries}),
 * warnings a user must see without an SLF4J provider ({@link org.mpibuild.support.EssentialWarning}) and
 * small file and message helpers ({@link org.mpibuild.support.BackendSupport}).
 */
package org.mpibuild.support;
