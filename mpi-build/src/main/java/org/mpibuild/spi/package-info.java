/**
 * What plugs into mpi-build: backends ({@link org.mpibuild.spi.BackendProvider},
 * {@link org.mpibuild.spi.Backend}) and MPI bindings ({@link org.mpibuild.spi.Communicator}).
 */
package org.mpibuild.spi;
