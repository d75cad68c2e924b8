/**
 * The manifest of kernel requests a run records for {@code mpi-build precompile} ({@link ManifestWriter}),
 * and the little JSON it is written in ({@link JsonWriter}).
 */
package org.mpibuild.internal.manifest;
