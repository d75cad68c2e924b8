package org.mpibuild.internal.cache;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.MessageDigest;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.Signature;
import java.security.spec.PKCS8EncodedKeySpec;
import java.security.spec.X509EncodedKeySpec;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.mpibuild.CorruptBinaryException;
import org.mpibuild.internal.base.EssentialWarning;
import org.mpibuild.support.Ownership;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Signatures on cache entries, so that a planted entry (a valid format, a correct checksum, another binary)
 * is never loaded. Each writer signs with an Ed25519 key of its own, created on first use in a private file;
 * a reader accepts an entry only when its signature verifies against a trusted key: the user's own, or one
 * listed in the user's own trust file ({@code MPI_BUILD_TRUSTED_KEYS}, default
 * {@code ~/.config/mpi-build/trusted-keys}). Trust is rooted in the user alone: nothing in a cache directory,
 * whoever owns it, makes a key trusted, since whoever creates a directory in {@code /tmp} first owns it.
 *
 * <p>A writer also seals the entry with HMAC-SHA256 under a secret of its key file. A reader that finds its
 * own public key in an entry checks that seal instead of the signature: only the holder of the secret can
 * make it, and it costs a keyed SHA-256 (about a millisecond) where a cold Ed25519 verification costs tens of
 * milliseconds, which a warm start would feel. Entries of other keys are checked by their signature.
 *
 * <pre>
 * signature trailer, after the envelope: 44 bytes  the signer's public key (X.509)
 *                                         64 bytes  Ed25519 signature of the entry's message
 *                                         32 bytes  HMAC-SHA256 of the message, the key and the signature, under
 *                                                   the signer's secret
 * </pre>
 *
 * <p>The message is what {@link EntryCodec} says for the entry's format: a digest of the entry header and the
 * envelope (format 3), or those bytes themselves (format 2).</p>
 */
public final class EntrySigning {
  private static final Logger log = LoggerFactory.getLogger(EntrySigning.class);
  static final int PUBLIC_KEY_BYTES = 44;
  static final int SIGNATURE_BYTES = 64;
  static final int MAC_BYTES = 32;
  static final int TRAILER_BYTES = PUBLIC_KEY_BYTES + SIGNATURE_BYTES + MAC_BYTES;
  private static final Set<PosixFilePermission> PRIVATE_FILE = PosixFilePermissions.fromString("rw-------");
  private static final Set<PosixFilePermission> PRIVATE_DIR = PosixFilePermissions.fromString("rwx------");

  private final String privateKeyText;
  private PrivateKey privateKey;
  private final byte[] publicKey;
  private final byte[] secret;
  private final Set<String> trusted;

  private EntrySigning(String privateKeyText, byte[] publicKey, byte[] secret, Set<String> trusted) {
    this.privateKeyText = privateKeyText;
    this.publicKey = publicKey;
    this.secret = secret;
    this.trusted = trusted;
  }

  /**
   * The user's key from {@code keyFile} (created, private, on first use) and the keys the user trusts besides,
   * listed in {@code trustFile} (the user's own, see {@link #trustFile}).
   *
   * @throws IllegalStateException if the key file exists but cannot be used (then nothing is signed or read);
   *     the message names the cause and what to run
   */
  public static EntrySigning open(Path keyFile, Path trustFile) {
    try {
      String[] key = readOrCreate(keyFile);
      byte[] pub = Base64.getDecoder().decode(key[1]);
      byte[] secret = Base64.getDecoder().decode(key[2]);
      if (pub.length != PUBLIC_KEY_BYTES || secret.length != MAC_BYTES) {
        throw new IOException(keyFile + " holds keys of the wrong size");
      }
      Set<String> trusted = new HashSet<>();
      trusted.add(key[1]);
      trusted.addAll(trustFile(trustFile));
      return new EntrySigning(key[0], pub, secret, trusted);
    } catch (UnusableKeyException e) {
      throw new IllegalStateException(e.getMessage(), e);
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      throw new IllegalStateException("the cache signing key " + keyFile + " cannot be used (" + e
          + "); remove it to make a new one, or set MPI_BUILD_SIGNING_KEY", e);
    }
  }

  /** This user's public key, as the trust file lists keys (base64 of X.509). */
  String publicKey() {
    return Base64.getEncoder().encodeToString(publicKey);
  }

  /**
   * Gets ready to sign, where a build's entry will be written: decodes the private key and signs once (a message
   * of one byte, kept nowhere), so that the first entry's signature (on the path of a one-rank job's close) finds the
   * key and Java's Ed25519 ready, about 25 ms of a new JVM's time. Never throws: a key that cannot be used is
   * reported when an entry is signed.
   */
  synchronized void prepare() {
    if (privateKey == null) {
      try {
        sign(new byte[1], 1);
      } catch (RuntimeException e) {
        // reported by the entry's own signing
      }
    }
  }

  /**
   * The trailer for {@code message[0, length)} (what the entry's format signs): the public key, the signature, the
   * seal.
   *
   * @throws IllegalStateException if the key cannot sign (the message says why)
   */
  synchronized byte[] sign(byte[] message, int length) {
    try {
      if (privateKey == null) { // decoded on first write only: a warm start never needs it
        privateKey = KeyFactory.getInstance("Ed25519").generatePrivate(new PKCS8EncodedKeySpec(
            Base64.getDecoder().decode(privateKeyText)));
      }
      Signature s = Signature.getInstance("Ed25519");
      s.initSign(privateKey);
      s.update(message, 0, length);
      byte[] out = Arrays.copyOf(publicKey, TRAILER_BYTES);
      System.arraycopy(s.sign(), 0, out, PUBLIC_KEY_BYTES, SIGNATURE_BYTES);
      // The seal covers the message, the key and the signature, so that no byte of an entry of yours can change
      // unnoticed.
      byte[] seal = hmac(secret, message, length, Arrays.copyOf(out, PUBLIC_KEY_BYTES + SIGNATURE_BYTES));
      System.arraycopy(seal, 0, out, PUBLIC_KEY_BYTES + SIGNATURE_BYTES, MAC_BYTES);
      return out;
    } catch (GeneralSecurityException | IllegalArgumentException e) { // the latter: a private key line not base64
      throw new IllegalStateException("signing a cache entry failed: " + e, e);
    }
  }

  /**
   * Checks the trailer at the end of {@code entry} (which holds one): {@code message[0, length)}, what the entry's
   * format signs, signed by a trusted key.
   *
   * @throws UntrustedEntryException if the signer is not trusted or the signature does not verify
   */
  void verify(byte[] entry, byte[] message, int length) {
    int trailer = entry.length - TRAILER_BYTES;
    byte[] pub = Arrays.copyOfRange(entry, trailer, trailer + PUBLIC_KEY_BYTES);
    if (MessageDigest.isEqual(pub, publicKey)) {
      byte[] seal = Arrays.copyOfRange(entry, entry.length - MAC_BYTES, entry.length);
      byte[] signed = Arrays.copyOfRange(entry, trailer, trailer + PUBLIC_KEY_BYTES + SIGNATURE_BYTES);
      if (!MessageDigest.isEqual(seal, hmac(secret, message, length, signed))) {
        throw new UntrustedEntryException("bad seal: it names your key but was not sealed with it");
      }
      return;
    }
    String id = Base64.getEncoder().encodeToString(pub);
    if (!trusted.contains(id)) {
      throw new UntrustedEntryException("signed by key " + id.substring(0, 16) + "..., which is not trusted here "
          + "(not yours, not in your trusted keys, MPI_BUILD_TRUSTED_KEYS)");
    }
    try {
      Signature s = Signature.getInstance("Ed25519");
      s.initVerify(KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(pub)));
      s.update(message, 0, length);
      if (!s.verify(entry, trailer + PUBLIC_KEY_BYTES, SIGNATURE_BYTES)) {
        throw new UntrustedEntryException("bad signature: the entry was changed after it was signed");
      }
    } catch (GeneralSecurityException e) {
      throw new UntrustedEntryException("bad signature: " + e.getMessage());
    }
  }

  /**
   * HMAC-SHA256 (RFC 2104) of {@code data[0, length)} followed by {@code more} under {@code key} (at most 64
   * bytes), with {@link MessageDigest}, so that a warm start does not pay for initializing {@code javax.crypto}.
   */
  static byte[] hmac(byte[] key, byte[] data, int length, byte[] more) {
    MessageDigest inner = hmacInner(key);
    inner.update(data, 0, length);
    inner.update(more);
    return hmacOuter(key, inner.digest());
  }

  /** SHA-256 started with the key XOR ipad: feed it the message, then pass its digest to {@link #hmacOuter}. */
  private static MessageDigest hmacInner(byte[] key) {
    if (key.length > 64) {
      throw new IllegalArgumentException("an HMAC key of " + key.length + " bytes; at most 64");
    }
    MessageDigest sha = org.mpibuild.internal.wire.Payload.sha256Digest();
    sha.update(pad(key, 0x36));
    return sha;
  }

  private static byte[] hmacOuter(byte[] key, byte[] innerDigest) {
    MessageDigest sha = org.mpibuild.internal.wire.Payload.sha256Digest();
    sha.update(pad(key, 0x5c));
    sha.update(innerDigest);
    return sha.digest();
  }

  private static byte[] pad(byte[] key, int with) {
    byte[] p = new byte[64];
    for (int i = 0; i < 64; i++) {
      p[i] = (byte) ((i < key.length ? key[i] : 0) ^ with);
    }
    return p;
  }

  /** An entry that is not loaded because no trusted key vouches for it; rebuilt, and reported by verify. */
  static final class UntrustedEntryException extends CorruptBinaryException {
    private static final long serialVersionUID = 1L;

    UntrustedEntryException(String message) {
      super("untrusted entry: " + message);
    }
  }

  /** Reads the key file (private, public), creating it privately, without a race, when absent. */
  private static String[] readOrCreate(Path keyFile) throws IOException, GeneralSecurityException {
    if (!Files.exists(keyFile, LinkOption.NOFOLLOW_LINKS)) {
      Path dir = keyFile.toAbsolutePath().getParent();
      Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
      KeyPair kp = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
      byte[] secret = new byte[MAC_BYTES];
      new SecureRandom().nextBytes(secret);
      String text = "private " + Base64.getEncoder().encodeToString(kp.getPrivate().getEncoded()) + "\npublic "
          + Base64.getEncoder().encodeToString(kp.getPublic().getEncoded()) + "\nseal "
          + Base64.getEncoder().encodeToString(secret) + "\n";
      AtomicFile tmp = AtomicFile.create(keyFile, CacheFiles.SIGNING_KEY_STEM, PRIVATE_FILE, AtomicFile.UNCOUNTED);
      try {
        // The link fails if another process made the key first: then that one is used.
        tmp.write(text, StandardCharsets.UTF_8).link();
        log.info("created the cache signing key {}", keyFile);
      } catch (FileAlreadyExistsException e) {
        // another rank or job was first
      } finally {
        tmp.close();
      }
    }
    PosixFileAttributes a = Files.readAttributes(keyFile, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    if (a.isSymbolicLink()) {
      throw new UnusableKeyException("the cache signing key " + keyFile + " is a symbolic link (to "
          + Files.readSymbolicLink(keyFile) + "); a private key is read only from a regular file, never through a "
          + "link that someone could point elsewhere. Put the file itself there (cp --remove-destination \"$(readlink -f "
          + keyFile + ")\" " + keyFile + " && chmod 600 " + keyFile + ") or set MPI_BUILD_SIGNING_KEY to it");
    }
    if (!a.isRegularFile()) {
      throw new UnusableKeyException("the cache signing key " + keyFile + " is not a regular file; remove it (a new "
          + "key is made on the next write) or set MPI_BUILD_SIGNING_KEY");
    }
    if (!Ownership.mine(keyFile)) {
      throw new UnusableKeyException("the cache signing key " + keyFile + " belongs to " + Ownership.owner(keyFile)
          + ", not to you (" + Ownership.me() + "); set MPI_BUILD_SIGNING_KEY to a key file of yours");
    }
    if (!PRIVATE_FILE.containsAll(a.permissions())) {
      String mode = PosixFilePermissions.toString(a.permissions());
      throw new UnusableKeyException("the cache signing key " + keyFile + " has mode " + mode + " (" + octal(a)
          + "): others can read your private key. Run: chmod 600 " + keyFile + " (and if others may have read it, "
          + "remove it instead: a new key is made, and your entries are rebuilt)");
    }
    String priv = null;
    String pub = null;
    String seal = null;
    for (String line : Files.readAllLines(keyFile, StandardCharsets.US_ASCII)) {
      if (line.startsWith("private ")) {
        priv = line.substring(8).trim();
      } else if (line.startsWith("public ")) {
        pub = line.substring(7).trim();
      } else if (line.startsWith("seal ")) {
        seal = line.substring(5).trim();
      }
    }
    if (priv == null || pub == null || seal == null) {
      throw new IOException(keyFile + " holds no complete key (private, public, seal)");
    }
    return new String[] {priv, pub, seal};
  }

  /**
   * The keys listed in the user's trust file {@code f}: one base64 key per line, {@code #} comments. The file
   * counts only if it is a regular file (not a link) of this user's that nobody else can write; otherwise it is
   * ignored, with a warning that says why, and only the user's own key is trusted.
   */
  static List<String> trustFile(Path f) throws IOException {
    if (f == null || !Files.exists(f, LinkOption.NOFOLLOW_LINKS)) {
      return List.of();
    }
    String why = trustFileProblem(f);
    if (why != null) {
      EssentialWarning.print("ignoring your trusted keys " + f + ": " + why + ". Only your own key is trusted "
          + "until it is mended");
      return List.of();
    }
    return publicKeys(Files.readAllLines(f, StandardCharsets.US_ASCII));
  }

  /** Why {@code f} cannot be the user's trust file (a link, not a file, someone else's, writable by others), or null. */
  private static String trustFileProblem(Path f) throws IOException {
    PosixFileAttributes a = Files.readAttributes(f, PosixFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
    boolean othersWrite = a.permissions().contains(PosixFilePermission.GROUP_WRITE)
        || a.permissions().contains(PosixFilePermission.OTHERS_WRITE);
    return a.isSymbolicLink() ? "it is a symbolic link; put the file itself there"
        : !a.isRegularFile() ? "it is not a regular file"
        : !Ownership.mine(f) ? "it belongs to " + Ownership.owner(f) + ", not to you (" + Ownership.me() + ")"
        : othersWrite ? "others can write it (mode " + PosixFilePermissions.toString(a.permissions()) + "); run: chmod "
            + "go-w " + f
        : null;
  }

  /** The largest file of keys {@link #trust} reads: 16,000 keys of one 44-character line each, about. */
  static final int MAX_KEY_FILE_BYTES = 1 << 20;

  /**
   * The lines of a file of keys to trust, refused, with its name and the problem, where it is not a regular
   * file (a directory, {@code /dev/zero}), is larger than {@link #MAX_KEY_FILE_BYTES}, or is not ASCII text.
   */
  static List<String> keyFileLines(Path from) throws IOException {
    java.nio.file.attribute.BasicFileAttributes a;
    try {
      a = Files.readAttributes(from, java.nio.file.attribute.BasicFileAttributes.class);
    } catch (java.nio.file.NoSuchFileException e) {
      throw new IOException(from + ": no such file");
    }
    if (!a.isRegularFile()) {
      throw new IOException(from + " is not a file of keys: it is " + (a.isDirectory() ? "a directory"
          : "not a regular file (a device, a pipe or a socket)"));
    }
    if (a.size() > MAX_KEY_FILE_BYTES) {
      throw new IOException(from + " is not a file of keys: it has " + a.size() + " bytes, more than the "
          + MAX_KEY_FILE_BYTES + " of about 16,000 keys");
    }
    byte[] bytes = Files.readAllBytes(from);
    for (int i = 0; i < bytes.length && i <= MAX_KEY_FILE_BYTES; i++) {
      int b = bytes[i] & 0xff;
      if (b > 0x7e || (b < 0x20 && b != '\n' && b != '\r' && b != '\t')) {
        throw new IOException(from + " is not a file of keys: byte 0x" + String.format("%02x", b) + " at offset " + i
            + " is not text (keys are base64 lines)");
      }
    }
    return new String(bytes, StandardCharsets.US_ASCII).lines().toList();
  }

  /**
   * The public keys in {@code lines}: a trust file's (one base64 key per line, {@code #} comments, words after
   * the key ignored) or a signing key file's {@code public} line. Lines that hold no Ed25519 public key are
   * skipped.
   */
  static List<String> publicKeys(List<String> lines) {
    List<String> keys = new ArrayList<>();
    for (String line : lines) {
      String l = line.replaceAll("#.*", "").trim();
      if (l.startsWith("private ") || l.startsWith("seal ")) {
        continue;
      }
      if (l.startsWith("public ")) {
        l = l.substring(7).trim();
      }
      if (!l.isEmpty() && isPublicKey(l.split("\\s+")[0])) {
        keys.add(l.split("\\s+")[0]);
      }
    }
    return keys;
  }

  private static boolean isPublicKey(String base64) {
    try {
      byte[] b = Base64.getDecoder().decode(base64);
      return b.length == PUBLIC_KEY_BYTES
          && KeyFactory.getInstance("Ed25519").generatePublic(new X509EncodedKeySpec(b)) != null;
    } catch (IllegalArgumentException | GeneralSecurityException e) {
      return false;
    }
  }

  /**
   * Adds the public keys found in {@code from} (a trust file of keys, or someone's signing key file, of which
   * only the {@code public} line is read) to the user's trust file {@code trustFile}, creating it (mode 600, in
   * a directory of mode 700) if absent. The file is replaced whole, atomically.
   *
   * @return the keys added (those already trusted are not repeated)
   * @throws IOException if {@code from} holds no public key, or the trust file cannot be written
   */
  public static List<String> trust(Path trustFile, Path from) throws IOException {
    List<String> offered = publicKeys(keyFileLines(from));
    if (offered.isEmpty()) {
      throw new IOException(from + " holds no Ed25519 public key (a base64 line, or a key file's 'public' line)");
    }
    Path dir = trustFile.toAbsolutePath().getParent();
    Files.createDirectories(dir, PosixFilePermissions.asFileAttribute(PRIVATE_DIR));
    boolean exists = Files.exists(trustFile, LinkOption.NOFOLLOW_LINKS);
    String problem = exists ? trustFileProblem(trustFile) : null;
    if (problem != null) {
      throw new IOException("cannot add to your trusted keys " + trustFile + ": " + problem);
    }
    List<String> old = exists ? trustFile(trustFile) : List.of();
    StringBuilder text = new StringBuilder(exists
        ? Files.readString(trustFile, StandardCharsets.US_ASCII) : "# public keys whose mpi-build cache entries you load\n");
    if (text.length() > 0 && text.charAt(text.length() - 1) != '\n') {
      text.append('\n');
    }
    List<String> added = new ArrayList<>();
    for (String k : offered) {
      if (!old.contains(k) && !added.contains(k)) {
        added.add(k);
        text.append(k).append("  # from ").append(from.toAbsolutePath()).append('\n');
      }
    }
    try (AtomicFile tmp = AtomicFile.create(trustFile, CacheFiles.TRUSTED_KEYS_STEM, PRIVATE_FILE,
        AtomicFile.UNCOUNTED)) {
      tmp.write(text, StandardCharsets.US_ASCII).replace();
    }
    return added;
  }

  private static String octal(PosixFileAttributes a) {
    int m = 0;
    for (PosixFilePermission p : a.permissions()) {
      m |= 1 << (8 - p.ordinal());
    }
    return String.format("%03o", m);
  }

  /** A signing key file that exists but cannot be used; its message says why and what to run. */
  private static final class UnusableKeyException extends IOException {
    private static final long serialVersionUID = 1L;

    UnusableKeyException(String message) {
      super(message);
    }
  }
}
