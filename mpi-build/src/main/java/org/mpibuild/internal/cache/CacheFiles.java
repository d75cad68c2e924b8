package org.mpibuild.internal.cache;

import java.util.regex.Pattern;

/**
 * The one place that names the cache's files, and the pattern {@link #OWN} of the names that are the cache's
 * own, derived from the same parts, so that the two cannot drift apart. A command that deletes touches only
 * what is provably its own: a regular file in one of the three sub-directories whose name {@link #own} accepts.
 *
 * <pre>
 * DIR/CACHEDIR.TAG                       {@link #TAG}
 * DIR/.CACHEDIR.TAG.N.tmp                {@link #temporaryPrefix}(TAG): the tag being written (not in a sub-directory)
 * DIR/entries/KEY.kbin                   {@link #entry}
 * DIR/entries/.KEY.N.tmp                 {@link #temporaryPrefix}(KEY): an entry being written
 * DIR/locks/KEY.lock                     {@link #lock}
 * DIR/locks/.KEY.lock.N.tmp              {@link #temporaryPrefix}(lock(KEY)): a lock being written
 * DIR/locks/KEY.lock.PID.NANOS.stale     {@link #staleLock}: a lock being taken over
 * DIR/quarantine/KEY.TIME.PID.NANOS.bad  {@link #quarantined}: an entry found corrupt, moved aside
 * </pre>
 *
 * <p>N is the number {@code Files.createTempFile} puts between the prefix and the suffix (decimal digits).
 * Next to the user's signing key and trust file (outside the cache, named by the settings) the temporary files
 * are {@code .signing-key.N.tmp} and {@code .trusted-keys.N.tmp} ({@link #SIGNING_KEY_STEM},
 * {@link #TRUSTED_KEYS_STEM}).
 */
final class CacheFiles {
  /** Marks the directory as a cache for backup tools; the library's own text in it makes it a cache. */
  static final String TAG = "CACHEDIR.TAG";
  static final String ENTRIES = "entries";
  static final String LOCKS = "locks";
  static final String QUARANTINE = "quarantine";
  static final String ENTRY_SUFFIX = ".kbin";
  static final String LOCK_SUFFIX = ".lock";
  static final String TEMPORARY_SUFFIX = ".tmp";
  static final String STALE_SUFFIX = ".stale";
  static final String QUARANTINED_SUFFIX = ".bad";
  /** The stem of the temporary file a new signing key is written to, beside it. */
  static final String SIGNING_KEY_STEM = "signing-key";
  /** The stem of the temporary file the trust file is rewritten to, beside it. */
  static final String TRUSTED_KEYS_STEM = "trusted-keys";

  // Each name's pattern is made from the same constants as the name, next to the method that makes it.
  private static final String KEY_RE = "[0-9a-f]{64}";
  private static final String NUMBER_RE = "\\d+";
  private static final String SIGNED_RE = "-?\\d+"; // System.nanoTime() may be negative
  private static final String ENTRY_RE = KEY_RE + literal(ENTRY_SUFFIX);
  private static final String LOCK_RE = KEY_RE + literal(LOCK_SUFFIX);
  private static final String TEMPORARY_RE = temporaryRe(KEY_RE + "(" + literal(LOCK_SUFFIX) + ")?");
  private static final String STALE_TAIL_RE = literal(".") + NUMBER_RE + literal(".") + SIGNED_RE
      + literal(STALE_SUFFIX);
  private static final String QUARANTINED_RE = KEY_RE + literal(".") + NUMBER_RE + literal(".") + NUMBER_RE
      + literal(".") + SIGNED_RE + literal(QUARANTINED_SUFFIX);

  static final Pattern KEY = Pattern.compile(KEY_RE);
  private static final Pattern ENTRY = Pattern.compile(ENTRY_RE);
  private static final Pattern TEMPORARY = Pattern.compile(TEMPORARY_RE);
  /**
   * The names of the files the cache writes in its three sub-directories (entries, temporary entries and locks,
   * locks, locks being taken over, quarantined entries); nothing else is its own.
   */
  static final Pattern OWN = Pattern.compile(ENTRY_RE + "|" + TEMPORARY_RE + "|" + LOCK_RE + "(" + STALE_TAIL_RE + ")?"
      + "|" + QUARANTINED_RE);

  private CacheFiles() {}

  /** An entry's name: {@code KEY.kbin}. */
  static String entry(String key) {
    return key + ENTRY_SUFFIX;
  }

  /** The key of an entry's name ({@link #entry}). */
  static String keyOfEntry(String entryName) {
    return entryName.substring(0, entryName.length() - ENTRY_SUFFIX.length());
  }

  /** A compile lock's name: {@code KEY.lock}. */
  static String lock(String key) {
    return key + LOCK_SUFFIX;
  }

  /** The glob of the lock files' names, for a directory listing (which {@link #own} then checks). */
  static String lockGlob() {
    return "*" + LOCK_SUFFIX;
  }

  /**
   * The start of a temporary file's name, {@code .STEM.}; {@code Files.createTempFile} adds a number and
   * {@link #TEMPORARY_SUFFIX}. The stem is the key for an entry, the lock's name for a lock, the file's name for
   * the tag, {@link #SIGNING_KEY_STEM} or {@link #TRUSTED_KEYS_STEM} for the user's key files.
   */
  static String temporaryPrefix(String stem) {
    return "." + stem + ".";
  }

  /** The name of the temporary file of {@code stem} numbered {@code n}, as {@code Files.createTempFile} makes it. */
  static String temporary(String stem, long n) {
    return temporaryPrefix(stem) + Long.toUnsignedString(n) + TEMPORARY_SUFFIX;
  }

  private static String temporaryRe(String stemRe) {
    return literal(".") + stemRe + literal(".") + NUMBER_RE + literal(TEMPORARY_SUFFIX);
  }

  /** The name a lock is renamed to by the process {@code pid} that takes it over, at {@code nanos} (its nano time). */
  static String staleLock(String key, long pid, long nanos) {
    return lock(key) + "." + pid + "." + nanos + STALE_SUFFIX;
  }

  /** The name a corrupt entry is moved aside to in the quarantine by {@code pid} at {@code millis}, {@code nanos}. */
  static String quarantined(String key, long millis, long pid, long nanos) {
    return key + "." + millis + "." + pid + "." + nanos + QUARANTINED_SUFFIX;
  }

  /** Whether {@code name} is a key: 64 lowercase hex digits. */
  static boolean isKey(String name) {
    return KEY.matcher(name).matches();
  }

  /** Whether {@code name} is an entry's name ({@link #entry}). */
  static boolean isEntry(String name) {
    return ENTRY.matcher(name).matches();
  }

  /** Whether {@code name} is the name of an entry's or a lock's temporary file. */
  static boolean isTemporary(String name) {
    return TEMPORARY.matcher(name).matches();
  }

  /** Whether {@code name} is one the cache writes in its sub-directories ({@link #OWN}). */
  static boolean own(String name) {
    return OWN.matcher(name).matches();
  }

  /** {@code s} as a pattern that matches it alone; the names' constant parts hold no special character but the dot. */
  private static String literal(String s) {
    if (!s.matches("[A-Za-z0-9.-]*")) {
      throw new IllegalArgumentException("not a plain name part: " + s);
    }
    return s.replace(".", "\\.");
  }
}
