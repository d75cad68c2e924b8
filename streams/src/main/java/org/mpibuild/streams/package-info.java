/**
 * Stream-ordered messages and collectives over a device queue: the MPI half that the backends' messengers share.
 * The public types are what a backend uses, each in a file of its own:
 *
 * <ul>
 *   <li>{@link org.mpibuild.streams.StreamOrderedMessages}, the engine: a backend asks it for sends, receives,
 *       broadcasts and all-reduces, ordered with the device work it describes through
 *   <li>the device contract: {@link org.mpibuild.streams.DeviceStep} (device work the engine polls),
 *       {@link org.mpibuild.streams.Gate} (device work it releases), {@link org.mpibuild.streams.Refused} and
 *       {@link org.mpibuild.streams.NothingQueued} (a rank whose device refused a collective still takes part),
 *       {@link org.mpibuild.streams.QueuedOperation} (an operation the device's queue runs itself), and
 *       {@link org.mpibuild.streams.DeviceFailure} (a failed device command, with its code);
 *   <li>{@link org.mpibuild.streams.DeviceMessenger}, the life cycle of a backend's messenger (the OpenCL
 *       backend's {@code QueueMessenger}, the CUDA backend's {@code StreamMessenger}): opened under the backend
 *       that owns the queue, closed once, by the program or by that backend.
 * </ul>
 *
 * <p>The engine's parts behind {@code StreamOrderedMessages} are package-private, one job each: the table of
 * operations and how each ends, the progress thread and its loop, the park policy, point-to-point and collective
 * steps, what the queue's own thread does, the takeover of failed commands, and the staging pool.
 */
package org.mpibuild.streams;
