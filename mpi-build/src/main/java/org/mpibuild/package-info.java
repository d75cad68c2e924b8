/**
 * mpi-build's public API: {@link org.mpibuild.MpiBuild} builds kernels collectively, once per job;
 * {@link org.mpibuild.Kernel} is what every rank gets back; {@link org.mpibuild.BinaryData} is the
 * self-describing binary; {@link org.mpibuild.KernelBuildException} and its subtypes say what failed.
 */
package org.mpibuild;
