/**
 * Stream-ordered messages and collectives over a device queue, the MPI half that the backends' helpers share
 * ({@link org.mpibuild.streams.StreamOrderedMessages}), and the failure of a device command they depend on
 * ({@link org.mpibuild.streams.DeviceFailure}). Each backend adds its device half (the OpenCL backend's
 * {@code QueueMessenger}, the CUDA backend's {@code StreamMessenger}); the engine's parts behind
 * {@code StreamOrderedMessages} are package-private.
 */
package org.mpibuild.streams;
