package org.mpibuild.opencl;

import static org.jocl.CL.CL_COMPLETE;
import static org.jocl.CL.CL_EVENT_COMMAND_EXECUTION_STATUS;
import static org.jocl.CL.CL_MAP_READ;
import static org.jocl.CL.CL_MAP_WRITE;
import static org.jocl.CL.CL_SUCCESS;
import static org.jocl.CL.clCreateUserEvent;
import static org.jocl.CL.clEnqueueMapBuffer;
import static org.jocl.CL.clFlush;
import static org.jocl.CL.clGetEventInfo;
import static org.jocl.CL.clReleaseEvent;
import static org.jocl.CL.clSetEventCallback;
import static org.jocl.CL.clSetUserEventStatus;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.jocl.CL;
import org.jocl.CLException;
import org.jocl.Pointer;
import org.jocl.Sizeof;
import org.jocl.cl_command_queue;
import org.jocl.cl_context;
import org.jocl.cl_event;
import org.jocl.cl_mem;
import org.mpibuild.streams.DeviceFailure;
import org.mpibuild.streams.DeviceStep;
import org.mpibuild.streams.Gate;
import org.mpibuild.streams.Refused;

/**
 * The OpenCL commands of a {@link QueueMessenger} whose operations go through the progress thread, as the
 * engine's {@link DeviceStep}s and {@link Gate}s: a read into a staging buffer, a write from one held back by a
 * user event, a map whose unmap is held back. Each enqueues on one in-order queue and never waits; a command
 * the device refuses throws a {@link DeviceFailure} and leaves nothing waiting behind a gate.
 */
final class QueueSteps {
  private final cl_command_queue queue;
  private final cl_context context;
  /** The reads, writes and unmaps, without a JOCL thread each. */
  private final HeldTransfers transfers = new HeldTransfers();

  QueueSteps(cl_command_queue queue, cl_context context) {
    this.queue = queue;
    this.context = context;
  }

  /** A write to the device held back by its gate. */
  record GatedWrite(UserEventGate gate, EventStep written) {}

  /** Mapped values the host may use between {@code mapped} and the gate's opening, then {@code unmapped}. */
  record MappedRegion(ByteBuffer values, EventStep mapped, UserEventGate gate, EventStep unmapped) {}

  /** Reads the first {@code bytes} of {@code buffer} into {@code into} behind the work already enqueued. */
  EventStep read(cl_mem buffer, long bytes, ByteBuffer into) {
    cl_event read = new cl_event();
    check(transfers.read(queue, buffer, bytes, into, read), "clEnqueueReadBuffer");
    return new EventStep(read);
  }

  /**
   * The read of a collective's input, or, when the device refuses to enqueue it (a size past the buffer's
   * end, say), a step that fails at once: the collective then carries the failure to every rank.
   */
  DeviceStep readOrRefusal(cl_mem buffer, long bytes, ByteBuffer into) {
    try {
      return read(buffer, bytes, into);
    } catch (DeviceFailure e) {
      return new Refused(e);
    }
  }

  /** Writes {@code from} to the start of {@code buffer} once the gate opens; submits it. */
  GatedWrite gatedWrite(cl_mem buffer, long bytes, ByteBuffer from) {
    int[] err = new int[1];
    cl_event gate = clCreateUserEvent(context, err);
    check(err[0], "clCreateUserEvent");
    cl_event write = new cl_event();
    try {
      check(transfers.write(queue, buffer, bytes, from, gate, write), "clEnqueueWriteBuffer");
    } catch (RuntimeException e) {
      clSetUserEventStatus(gate, -1);
      clReleaseEvent(gate);
      throw e;
    }
    flush();
    return new GatedWrite(new UserEventGate(gate, queue), new EventStep(write));
  }

  /**
   * Maps the first {@code bytes} of {@code buffer} behind the work already enqueued, and enqueues its unmap
   * behind a user event: the host may read and write the values between the map's completion and the gate's
   * opening, and the work enqueued afterwards sees what it wrote.
   */
  MappedRegion gatedMap(cl_mem buffer, long bytes) {
    int[] err = new int[1];
    cl_event map = new cl_event();
    ByteBuffer values = clEnqueueMapBuffer(queue, buffer, false, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, null, map,
        err);
    check(err[0], "clEnqueueMapBuffer");
    cl_event gate = null;
    cl_event unmap = null;
    try {
      gate = clCreateUserEvent(context, err);
      check(err[0], "clCreateUserEvent");
      cl_event queued = new cl_event();
      check(transfers.unmap(queue, buffer, values, new cl_event[] {gate}, queued), "clEnqueueUnmapMemObject");
      unmap = queued;
      flush();
    } catch (DeviceFailure e) {
      if (unmap == null) {
        transfers.unmap(queue, buffer, values, null, null); // leaves nothing mapped
      } else {
        clReleaseEvent(unmap);
      }
      if (gate != null && err[0] == CL_SUCCESS) {
        clSetUserEventStatus(gate, CL_COMPLETE); // nothing waits for ever behind a gate nobody will open
        clReleaseEvent(gate);
      }
      clReleaseEvent(map);
      throw e;
    }
    return new MappedRegion(values.order(ByteOrder.nativeOrder()), new EventStep(map), new UserEventGate(gate, queue),
        new EventStep(unmap));
  }

  /** Hands the buffers of commands still in flight to {@link HeldTransfers}' sweep: the messenger has closed. */
  void close() {
    transfers.close();
  }

  /**
   * Submits what is queued. Never throws: a command is queued whatever the flush says (a later flush or the
   * queue's finish submits it), and a throw after a gated command was queued would leave its gate closed, or a
   * rank out of a collective that the others wait for.
   */
  void flush() {
    clFlush(queue);
  }

  static void check(int rc, String what) {
    DeviceFailure.check(rc, what, CL::stringFor_errorCode);
  }

  /** An enqueued command, finished when its event is complete; a negative status is the device's error. */
  static final class EventStep implements DeviceStep {
    private final cl_event event;

    EventStep(cl_event event) {
      this.event = event;
    }

    @Override
    public boolean finished() {
      int[] status = new int[1];
      try {
        check(clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, Sizeof.cl_int, Pointer.to(status), null),
            "clGetEventInfo");
      } catch (CLException e) {
        throw new IllegalStateException("the command queue's event is no longer valid (queue released?): "
            + e.getMessage(), e);
      }
      if (status[0] < 0) {
        throw new DeviceFailure("the device command failed: " + CL.stringFor_errorCode(status[0]), status[0]);
      }
      return status[0] == CL_COMPLETE;
    }

    /** A driver callback that only unparks the progress thread; all the work stays on that thread. */
    @Override
    public boolean wakeWhenFinished(Runnable wake) {
      return clSetEventCallback(event, CL_COMPLETE, (e, status, data) -> wake.run(), null) == CL_SUCCESS;
    }

    @Override
    public void release() {
      clReleaseEvent(event);
    }
  }

  /** A user event that holds back the write behind it. */
  static final class UserEventGate implements Gate {
    private final cl_event event;
    private final cl_command_queue queue;
    private boolean set;

    UserEventGate(cl_event event, cl_command_queue queue) {
      this.event = event;
      this.queue = queue;
    }

    @Override
    public void open() {
      settle(CL_COMPLETE);
    }

    /**
     * Lets the write and the work behind it run rather than fail them: PoCL 3.1 aborts the process
     * ("PTHREAD ERROR in pocl_update_event_failed(): Invalid argument") when a user event with commands
     * waiting for it is set to an error status, and CUDA cannot fail a stream either. The future says the
     * operation failed; the engine has put back an all-reduce's own values into the staging buffer, so its
     * device buffer is unchanged; a receive's or broadcast receiver's is undefined.
     */
    @Override
    public void fail() {
      settle(CL_COMPLETE);
    }

    private void settle(int status) {
      if (!set) {
        set = true;
        check(clSetUserEventStatus(event, status), "clSetUserEventStatus");
        clReleaseEvent(event);
        clFlush(queue); // lets the driver schedule the commands that were waiting for the event now
      }
    }
  }
}
