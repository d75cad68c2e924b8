package org.mpibuild.internal.agreement;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.mpibuild.BuildTimeoutException;
import org.mpibuild.CompileException;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.KernelBuildException;
import org.mpibuild.internal.wire.Envelope;

/**
 * Why one rank failed, as it travels in a failure agreement: a problem of this rank (a load it could not
 * do, a backend it could not open), or a failed build of its target group, which the ranks of the other
 * groups never received and must throw alike. Encoded as typed fields with explicit codes, never parsed
 * out of text.
 *
 * @param kind what failed
 * @param reason for a person: the problem, or the build failure's error
 * @param status the failed build's envelope status ({@link Envelope.Status#OK} for a problem)
 * @param builtOn the job rank that built it (-1 for a problem)
 * @param target the target the build was for ("" for a problem)
 * @param request which request of a batch, for example "request 3 of 32 (kernels [saxpy])"; "" for a single one
 * @param buildLog the compiler's log ("" for a problem)
 */
public record RankFailure(Kind kind, String reason, Envelope.Status status, int builtOn, String target, String request,
    String buildLog) {

  /** What failed, with its code on the wire. */
  public enum Kind {
    PROBLEM(1), BUILD(2);

    final int code;

    Kind(int code) {
      this.code = code;
    }

    static Kind of(int code) {
      for (Kind k : values()) {
        if (k.code == code) {
          return k;
        }
      }
      throw new CorruptBinaryException("unknown failure kind " + code);
    }
  }

  /** A problem of this rank, for example a binary its device refused. */
  public static RankFailure problem(String reason) {
    return new RankFailure(Kind.PROBLEM, reason.isEmpty() ? "(no reason given)" : reason, Envelope.Status.OK, -1, "",
        "", "");
  }

  /** A failed build of this rank's target group, for the ranks of the other groups. */
  public static RankFailure build(Envelope failed, String request, int builtOn) {
    Envelope.Metadata m = failed.metadata();
    return new RankFailure(Kind.BUILD, m.error(), failed.status(), builtOn, m.target(), request, m.buildLog());
  }

  /** The exception every rank throws for this build failure. */
  public RuntimeException toException() {
    String error = reason + " (" + (request.isEmpty() ? "" : request + ", ") + "for target [" + target + "])";
    Envelope.Metadata meta = Envelope.Metadata.failedFor(target, buildLog, error);
    return exceptionFor(status, meta, builtOn);
  }

  byte[] encode() {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream out = new DataOutputStream(bytes)) {
      out.writeByte(kind.code);
      out.writeByte(status.code());
      out.writeInt(builtOn);
      for (String s : new String[] {reason, target, request, buildLog}) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        out.writeInt(b.length);
        out.write(b);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return bytes.toByteArray();
  }

  static RankFailure decode(byte[] encoded) {
    try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(encoded))) {
      Kind kind = Kind.of(in.readUnsignedByte());
      Envelope.Status status = Envelope.Status.of(in.readUnsignedByte());
      int builtOn = in.readInt();
      String[] s = new String[4];
      for (int i = 0; i < s.length; i++) {
        int n = in.readInt();
        if (n < 0 || n > in.available()) {
          throw new CorruptBinaryException("failure report field of " + n + " bytes exceeds the report");
        }
        s[i] = new String(in.readNBytes(n), StandardCharsets.UTF_8);
      }
      return new RankFailure(kind, s[0], status, builtOn, s[1], s[2], s[3]);
    } catch (IOException e) {
      throw new CorruptBinaryException("truncated failure report: " + e.getMessage());
    }
  }

  /**
   * The exception a failed build is on every rank: the same class and message wherever it is thrown.
   *
   * @param meta the failure's report, or null if it arrived corrupt
   * @param root the rank that built
   */
  public static RuntimeException exceptionFor(Envelope.Status status, Envelope.Metadata meta, int root) {
    if (meta == null) {
      return new KernelBuildException("the build failed on root " + root
          + " and its error report arrived corrupt on this rank");
    }
    String where = " (on root " + root + ")";
    switch (status) {
      case COMPILE_FAILED:
        return new CompileException(meta.error() + where, meta.buildLog());
      case INVALID_REQUEST:
        return new IllegalArgumentException(meta.error());
      case COMPILE_TIMED_OUT:
        return new BuildTimeoutException(meta.error() + where);
      default:
        return new KernelBuildException(meta.error() + where);
    }
  }

  /** "IOException: disk full": an exception as a failure reason. */
  public static String describe(Throwable e) {
    String m = e.getMessage();
    return e.getClass().getSimpleName() + (m == null || m.isBlank() ? "" : ": " + m);
  }
}
