package org.mpibuild.opencl;

import static org.jocl.CL.CL_DEVICE_EXECUTION_CAPABILITIES;
import static org.jocl.CL.CL_DEVICE_MAX_COMPUTE_UNITS;
import static org.jocl.CL.CL_EXEC_NATIVE_KERNEL;
import static org.jocl.CL.CL_QUEUE_DEVICE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clGetCommandQueueInfo;
import static org.jocl.CL.clGetDeviceInfo;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.function.Consumer;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_device_id;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.spi.Setting;
import org.mpibuild.spi.SettingSource;

/**
 * Java code run by an OpenCL queue itself, as a command in its order: a native kernel
 * ({@code clEnqueueNativeKernel}) whose function is a Java upcall. It lets {@link QueueMessenger} run a
 * collective on the thread that runs the queue's commands, between the work queued before and after it, with
 * no progress thread, callback or user event in between (see {@code docs/streams.md}).
 *
 * <p>JOCL's own {@code clEnqueueNativeKernel} waits for the command to finish, and its callbacks attach and
 * detach the driver's thread for every call; this goes through Java's FFM API instead (an upcall stays
 * attached), so it exists from Java 22 on: the implementation, {@code NativeQueueCommands}, is compiled for
 * Java 22 and loaded only there. CPU devices run native kernels (PoCL's does); GPUs do not.
 */
interface QueueCommands {
  /** Whether collectives may run on the queue's own thread where the JDK and the device allow. */
  Setting<Boolean> ON_QUEUE = Setting.flag("MPI_BUILD_OPENCL_ON_QUEUE", "mpibuild.opencl.onQueue", true,
      "run stream-ordered messages and collectives as native kernels on the OpenCL queue itself (Java 22+ with native access "
          + "enabled, a device with native kernels such as PoCL's CPU device); `false`: on the helper's progress "
          + "thread");

  /**
   * Enqueues, behind the work already on {@code queue}, a command that calls {@code body} on the thread that
   * runs the queue's commands, with the memory of {@code bytes} of {@code buffer} from {@code offset}. Never
   * waits.
   *
   * @param queue the in-order queue
   * @param buffer the device buffer (not a sub-buffer: its parent, with the sub-buffer's offset)
   * @param offset where in it {@code body}'s memory starts
   * @param bytes how many bytes {@code body} sees
   * @param body what the command runs; it must not throw (what it throws is logged and dropped)
   * @return the command's event, which the caller releases, and its id for {@link #forget}
   * @throws org.mpibuild.streams.DeviceFailure if the device refuses the command
   */
  Enqueued enqueue(cl_command_queue queue, cl_mem buffer, long offset, int bytes, Consumer<ByteBuffer> body);

  /**
   * Drops what a command would run, once its operation has ended (a command that never ran keeps nothing).
   * Called for every command; one that ran has dropped it already.
   *
   * @param id the command's id
   */
  void forget(long id);

  /** An enqueued command: its event and its id. */
  record Enqueued(cl_event event, long id) {}

  /**
   * Whether a messenger on {@code queue} runs its collectives on it, and why (for logs and doctor); one that does
   * holds one of its device's threads until {@link #release}.
   */
  record Choice(QueueCommands commands, String why, cl_device_id device) {
    Choice(QueueCommands commands, String why) {
      this(commands, why, null);
    }

    /** Gives back the device thread this choice holds, if any: once, when its messenger closes. */
    void release() {
      if (commands != null) {
        synchronized (ON_DEVICE) {
          ON_DEVICE.merge(device, -1, Integer::sum);
        }
      }
    }
  }

  /**
   * How many open messengers of this process run collectives on queues of each device. A collective that waits for
   * other ranks holds the thread that runs it, and a device runs the commands of all its queues on as many threads
   * as it has compute units (PoCL: {@code POCL_MAX_PTHREAD_COUNT}, by default the cores); one must stay free for
   * the other commands, which the other ranks may be waiting for (a send on another queue, a kernel), or the
   * process could deadlock. So at most compute units less one messengers per device run collectives on the
   * queue; the others run them on the progress thread, which mixes freely with it.
   */
  Map<cl_device_id, Integer> ON_DEVICE = new HashMap<>();

  /**
   * The queue commands a messenger on {@code queue} uses, or none, with the reason.
   *
   * @param queue the messenger's queue
   * @return the choice; {@code commands} is null where collectives stay on the progress thread
   */
  static Choice forQueue(cl_command_queue queue) {
    if (!ON_QUEUE.read(SettingSource.ofProcess())) {
      return new Choice(null, "on the progress thread: " + ON_QUEUE.variable() + " is false");
    }
    cl_device_id device = new cl_device_id();
    long[] capabilities = new long[1];
    int[] units = new int[1];
    if (clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, Sizeof.cl_device_id, Pointer.to(device), null) != CL_SUCCESS
        || clGetDeviceInfo(device, CL_DEVICE_EXECUTION_CAPABILITIES, Sizeof.cl_long, Pointer.to(capabilities), null)
            != CL_SUCCESS
        || (capabilities[0] & CL_EXEC_NATIVE_KERNEL) == 0
        || clGetDeviceInfo(device, CL_DEVICE_MAX_COMPUTE_UNITS, Sizeof.cl_uint, Pointer.to(units), null)
            != CL_SUCCESS) {
      return new Choice(null, "on the progress thread: the device runs no native kernels");
    }
    Choice loaded = Loader.CHOICE;
    if (loaded.commands() == null) {
      return loaded;
    }
    synchronized (ON_DEVICE) {
      int used = ON_DEVICE.getOrDefault(device, 0);
      if (used >= units[0] - 1) {
        return new Choice(null, "on the progress thread: " + used + " messenger(s) of this process already run "
            + "collectives on queues of this device, which runs them on " + units[0] + " thread(s); one must stay "
            + "free for the queues' other work");
      }
      ON_DEVICE.put(device, used + 1);
    }
    return new Choice(loaded.commands(), loaded.why(), device);
  }

  /** Loads the Java 22 implementation once, where it can run. */
  final class Loader {
    static final Choice CHOICE = load();

    private Loader() {}

    private static Choice load() {
      Object o = Java22Classes.open("NativeQueueCommands");
      return o instanceof QueueCommands c ? new Choice(c, "on the device's queue (native kernels through the FFM API)")
          : new Choice(null, "on the progress thread: " + o);
    }
  }
}
