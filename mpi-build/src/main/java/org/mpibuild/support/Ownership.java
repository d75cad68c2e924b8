package org.mpibuild.support;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;

/**
 * Who owns a file, by uid: the one test of "is this mine" that the cache, the signing key, the trust file and
 * the native-library directory share. Names are never compared: a process whose uid has no passwd entry (a
 * container started with {@code --user 54321}, Kubernetes' {@code runAsUser}, Apptainer) has the name
 * {@code ?} in {@code user.name}, while its files carry its uid.
 */
public final class Ownership {
  private static volatile Integer processUid;

  private Ownership() {}

  /**
   * This process's effective uid: the owner of {@code /proc/self}, else of a file it creates.
   *
   * @return the uid
   * @throws IOException if neither can be read
   */
  public static int processUid() throws IOException {
    Integer uid = processUid;
    if (uid == null) {
      uid = readProcessUid();
      processUid = uid;
    }
    return uid;
  }

  private static int readProcessUid() throws IOException {
    try {
      return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
    } catch (IOException | UnsupportedOperationException | IllegalArgumentException e) {
      Path probe = Files.createTempFile("mpi-build-uid", ".probe");
      try {
        return uid(probe);
      } finally {
        Files.deleteIfExists(probe);
      }
    }
  }

  /**
   * The uid that owns {@code p} itself (a link is not followed).
   *
   * @param p the file
   * @return its owner's uid
   * @throws IOException if its attributes cannot be read
   */
  public static int uid(Path p) throws IOException {
    return (Integer) Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
  }

  /**
   * Whether {@code p} itself (a link is not followed) belongs to this process's uid.
   *
   * @param p the file
   * @return true if this process's uid owns it
   * @throws IOException if its attributes cannot be read
   */
  public static boolean mine(Path p) throws IOException {
    return uid(p) == processUid();
  }

  /**
   * {@code p}'s owner for a message: {@code uid 54321}, with its name when it has one ({@code alice (uid 1000)}).
   *
   * @param p the file
   * @return the owner, for a person
   */
  public static String owner(Path p) {
    try {
      int uid = uid(p);
      String name = Files.getOwner(p, LinkOption.NOFOLLOW_LINKS).getName();
      return name.equals(Integer.toString(uid)) ? "uid " + uid : name + " (uid " + uid + ")";
    } catch (IOException | RuntimeException e) {
      return "an unknown owner";
    }
  }

  /**
   * This process's user for a message: {@code uid 54321}, with its name when it has one.
   *
   * @return the user, for a person
   */
  public static String me() {
    try {
      String name = System.getProperty("user.name", "?");
      int uid = processUid();
      return name.isEmpty() || name.equals("?") ? "uid " + uid : name + " (uid " + uid + ")";
    } catch (IOException e) {
      return "you";
    }
  }
}
