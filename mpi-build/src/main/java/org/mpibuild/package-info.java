/**
 * mpi-build's public API: {@link org.mpibuild.MpiBuild} builds kernels collectively, once per job;
 * {@link org.mpibuild.Kernel} is what every rank gets back; {@link org.mpibuild.BinaryData} is the
 * self-describing binary; {@link org.mpibuild.MpiBuildException} and its subtypes say what failed; {@link org.mpibuild.CacheAdmin}
 * inspects and maintains a kernel cache.
 */
package org.mpibuild;
