package org.mpibuild.internal.agreement;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.mpibuild.KernelSource;
import org.mpibuild.internal.wire.Payload;

/**
 * What one rank asked for, hashed field by field, so ranks can check they agree with two numbers per
 * byte pair and, only when they do not, find out who differs in what.
 */
public final class RequestFingerprint {
  /** The compared fields, in wire order. */
  static final List<String> FIELDS = List.of("source", "options", "kernels", "backend", "root", "chunk-size",
      "validity", "launch-shapes");
  private static final int FIELD_HASH_BYTES = 8;

  private final List<String> names;
  private final byte[][] fieldHashes;
  private final byte[] digest;
  private final String problem;

  private RequestFingerprint(List<String> names, byte[][] fieldHashes, byte[] digest, String problem) {
    this.names = names;
    this.fieldHashes = fieldHashes;
    this.digest = digest;
    this.problem = problem;
  }

  /**
   * The fingerprint of named values, for example the settings that decide which collectives a build runs;
   * {@code note} travels with it to explain a disagreement (the values as this rank has them).
   */
  public static RequestFingerprint of(Map<String, String> values, String note) {
    List<String> names = List.copyOf(values.keySet());
    byte[][] fields = new byte[names.size()][];
    int i = 0;
    for (String v : values.values()) {
      fields[i++] = hash(v);
    }
    return new RequestFingerprint(names, fields, digestOf(fields), note);
  }

  private static byte[] digestOf(byte[][] fields) {
    MessageDigest md = Payload.sha256Digest();
    for (byte[] f : fields) {
      md.update(f);
    }
    return md.digest();
  }

  /** The names of the compared fields, in wire order. */
  List<String> names() {
    return names;
  }

  /** The kind of build call: one request from a root, or a batch spread over the ranks. */
  public enum Shape {
    SINGLE, BATCH
  }

  /**
   * The fingerprint of a list of requests built together (one request for a single build). The shape and,
   * for a single build, the root are part of it, so that ranks making different kinds of build calls never
   * agree.
   */
  public static RequestFingerprint of(List<KernelSource> requests, String backendId, Shape shape, int root, int chunkBytes,
      String problem) {
    byte[][] fields = {
      hash(each(requests, KernelSource::source)),
      hash(each(requests, KernelSource::options)),
      hash(each(requests, r -> r.kernelNames() == null ? null
          : String.join("\u0000", r.kernelNames()) + "\u0000" + r.kernelNames().size())),
      hash(backendId),
      hash(shape == Shape.BATCH ? "batch" : "root " + root),
      hash(Integer.toString(chunkBytes)),
      hash(problem == null ? "ok" : "invalid"),
      hash(each(requests, r -> r.launchShapes() == null ? null : r.launchShapes().toString())),
    };
    return new RequestFingerprint(FIELDS, fields, digestOf(fields), problem);
  }

  /**
   * The vector whose element-wise maximum over all ranks shows agreement: the digest as 16 unsigned
   * 16-bit values x, followed by 65535 - x. The ranks agree exactly when, for every i, max(x) + max(65535 - x)
   * equals 65535, that is, when the maximum and minimum of each value coincide.
   */
  int[] agreementVector() {
    return agreementVector(digest);
  }

  /** {@link #agreementVector()} of {@code value}'s SHA-256 digest: whether every rank holds the same value. */
  public static int[] agreementVector(String value) {
    return agreementVector(Payload.sha256Digest().digest(value.getBytes(StandardCharsets.UTF_8)));
  }

  private static int[] agreementVector(byte[] digest) {
    int[] v = new int[AGREEMENT_INTS];
    for (int i = 0; i < 16; i++) {
      int x = ((digest[2 * i] & 0xff) << 8) | (digest[2 * i + 1] & 0xff);
      v[i] = x;
      v[16 + i] = 0xffff - x;
    }
    return v;
  }

  /** The length of an agreement vector. */
  public static final int AGREEMENT_INTS = 32;

  static boolean agreed(int[] maxima) {
    return agreed(maxima, 0);
  }

  /** Whether the agreement vector's maxima at {@code from} in {@code maxima} show that every rank had the same. */
  public static boolean agreed(int[] maxima, int from) {
    for (int i = 0; i < 16; i++) {
      if (maxima[from + i] + maxima[from + 16 + i] != 0xffff) {
        return false;
      }
    }
    return true;
  }

  /** Serialized for the gather that follows a disagreement: field hashes, then this rank's problem. */
  byte[] toBytes() {
    byte[] p = problem == null ? new byte[0] : problem.getBytes(StandardCharsets.UTF_8);
    ByteBuffer out = ByteBuffer.allocate(names.size() * FIELD_HASH_BYTES + p.length);
    for (byte[] f : fieldHashes) {
      out.put(f);
    }
    return out.put(p).array();
  }

  /** Decodes another rank's fingerprint, whose fields have the same {@code names} as this rank's. */
  static RequestFingerprint fromBytes(byte[] bytes, List<String> names) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    byte[][] fields = new byte[names.size()][FIELD_HASH_BYTES];
    for (byte[] f : fields) {
      in.get(f);
    }
    byte[] p = new byte[in.remaining()];
    in.get(p);
    return new RequestFingerprint(names, fields, null, p.length == 0 ? null : new String(p, StandardCharsets.UTF_8));
  }

  /** Names of the fields in which this fingerprint differs from {@code other}. */
  List<String> differences(RequestFingerprint other) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < names.size(); i++) {
      if (!Arrays.equals(fieldHashes[i], other.fieldHashes[i])) {
        out.add(names.get(i));
      }
    }
    return out;
  }

  boolean sameAs(RequestFingerprint other) {
    return differences(other).isEmpty();
  }

  String problem() {
    return problem;
  }

  /**
   * Picks the reference rank, the one whose request most ranks share (ties: the lowest rank), and returns
   * every other rank with the fields in which it differs. Deterministic: every rank computes the same.
   */
  static Map<Integer, List<String>> differingRanks(RequestFingerprint[] all, int[] referenceOut) {
    int best = 0;
    int bestCount = -1;
    for (int i = 0; i < all.length; i++) {
      int count = 0;
      for (RequestFingerprint f : all) {
        if (f.sameAs(all[i])) {
          count++;
        }
      }
      if (count > bestCount) {
        best = i;
        bestCount = count;
      }
    }
    referenceOut[0] = best;
    Map<Integer, List<String>> out = new LinkedHashMap<>();
    for (int r = 0; r < all.length; r++) {
      List<String> d = all[r].differences(all[best]);
      if (!d.isEmpty()) {
        out.put(r, d);
      }
    }
    return out;
  }

  /** The field of every request, joined unambiguously; null for a null list. */
  private static String each(List<KernelSource> requests, Function<KernelSource, String> field) {
    if (requests == null) {
      return null;
    }
    StringBuilder sb = new StringBuilder().append(requests.size());
    for (KernelSource r : requests) {
      String v = r == null ? null : field.apply(r);
      sb.append(v == null ? "\u0001" : "\u0002" + v.length() + ":" + v);
    }
    return sb.toString();
  }

  private static byte[] hash(String s) {
    MessageDigest md = Payload.sha256Digest();
    md.update(s == null ? new byte[] {1} : ("\u0000" + s).getBytes(StandardCharsets.UTF_8));
    return Arrays.copyOf(md.digest(), FIELD_HASH_BYTES);
  }
}
