package org.mpibuild.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import org.mpibuild.CacheAdmin;
import org.mpibuild.spi.Setting;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code mpi-build cache ...}: inspect and maintain the persistent kernel cache. */
@Command(name = "cache", mixinStandardHelpOptions = true,
    description = "Inspect and maintain the persistent kernel cache.",
    subcommands = {CacheCommand.Stats.class, CacheCommand.Ls.class, CacheCommand.Verify.class, CacheCommand.Gc.class,
        CacheCommand.Clear.class, CacheCommand.Trust.class})
final class CacheCommand implements Runnable {
  @Spec
  picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  /** The --dir option every cache command takes. */
  static final class DirOption {
    @Option(names = "--dir", paramLabel = "DIR",
        description = "cache directory (default: MPI_BUILD_CACHE_DIR, else ~/.cache/mpi-build)")
    Path dir;

    /** Opens an existing cache, read-only or for writing; fails, saying why, if it cannot. */
    CacheAdmin open(boolean write) {
      return CacheAdmin.open(dir, write);
    }
  }

  @Command(name = "stats", mixinStandardHelpOptions = true, description = "Show entry count, size, limit and locks.")
  static final class Stats implements Callable<Integer> {
    @Mixin
    DirOption dir;

    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() throws IOException {
      CacheAdmin cache = dir.open(false);
      List<CacheAdmin.Entry> all = cache.list();
      long bytes = all.stream().mapToLong(CacheAdmin.Entry::bytes).sum();
      long negative = all.stream().filter(l -> !l.status().equals("ok") && l.problem().isEmpty()).count();
      long corrupt = all.stream().filter(l -> l.problem().isPresent()).count();
      List<String> locks = cache.locks();
      Instant newest = all.isEmpty() ? null : seconds(all.get(0).lastUse());
      Instant oldest = all.isEmpty() ? null : seconds(all.get(all.size() - 1).lastUse());
      String refusal = CacheAdmin.unsafeReason(cache.directory()).orElse(null);
      if (json) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("dir", cache.directory().toString());
        o.put("entries", all.size());
        o.put("bytes", bytes);
        o.put("max_bytes", cache.maxBytes());
        o.put("negative_entries", negative);
        o.put("corrupt_entries", corrupt);
        o.put("quarantined", cache.quarantined());
        o.put("locks", locks);
        o.put("oldest_use", oldest == null ? null : oldest.toString());
        o.put("newest_use", newest == null ? null : newest.toString());
        o.put("writable", refusal == null);
        System.out.println(Json.write(o));
      } else {
        System.out.println("directory:   " + cache.directory());
        System.out.println("entries:     " + all.size() + (negative > 0 ? " (" + negative + " failed compiles)" : ""));
        System.out.printf(Locale.ROOT, "size:        %s of %s%n", human(bytes), human(cache.maxBytes()));
        System.out.println("corrupt:     " + corrupt + " (quarantined: " + cache.quarantined() + ")");
        System.out.println("last use:    " + (newest == null ? "-" : oldest + " .. " + newest));
        System.out.println("locks:       " + (locks.isEmpty() ? "none" : String.join("; ", locks)));
        if (refusal != null) {
          System.out.println("writes:      refused: " + refusal);
        }
      }
      return 0;
    }
  }

  @Command(name = "ls", mixinStandardHelpOptions = true,
      description = "List entries: key, backend, target, kernel names, size, last use (most recent first).")
  static final class Ls implements Callable<Integer> {
    @Mixin
    DirOption dir;

    @Option(names = "--json", description = "print one JSON object per line")
    boolean json;

    @Override
    public Integer call() throws IOException {
      for (CacheAdmin.Entry l : dir.open(false).list()) {
        if (json) {
          Map<String, Object> o = new LinkedHashMap<>();
          o.put("key", l.key());
          o.put("backend", l.backend());
          o.put("target", l.target());
          o.put("kernels", l.kernelNames());
          o.put("bytes", l.bytes());
          o.put("last_use", l.lastUse().toString());
          o.put("status", l.status());
          System.out.println(Json.write(o));
        } else {
          String key = l.key().length() > 16 ? l.key().substring(0, 16) : l.key();
          System.out.printf(Locale.ROOT, "%-16s  %-7s  %-8s  %9s  %s  %s  [%s]%n", key, l.backend(),
              l.status(), human(l.bytes()), seconds(l.lastUse()), String.join(",", l.kernelNames()), l.target());
        }
      }
      return 0;
    }
  }

  @Command(name = "verify", mixinStandardHelpOptions = true,
      description = "Check every entry's header, metadata, length and SHA-256; exit 1 if any is bad.")
  static final class Verify implements Callable<Integer> {
    @Mixin
    DirOption dir;

    @Option(names = "--remove", description = "move bad entries aside (they will be rebuilt)")
    boolean remove;

    @Override
    public Integer call() throws IOException {
      CacheAdmin cache = dir.open(remove);
      int total = cache.list().size();
      List<CacheAdmin.Entry> bad = cache.verify(remove);
      for (CacheAdmin.Entry l : bad) {
        System.out.println("bad " + l.key() + ": " + l.problem().orElse("") + (remove ? " (moved aside)" : ""));
      }
      System.out.println("verified " + total + " entries: " + (total - bad.size()) + " ok, " + bad.size() + " bad");
      return bad.isEmpty() || remove ? 0 : 1;
    }
  }

  @Command(name = "gc", mixinStandardHelpOptions = true,
      description = "Remove least recently used entries down to a size, and entries unused for an age.")
  static final class Gc implements Callable<Integer> {
    @Mixin
    DirOption dir;

    @Option(names = "--max-size", paramLabel = "BYTES",
        description = "keep at most this much, e.g. 500m (default: the cache's limit)")
    String maxSize;

    @Option(names = "--max-age", paramLabel = "AGE", description = "remove entries unused for longer, e.g. 30d, 12h, 90m")
    String maxAge;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
      CacheAdmin cache = dir.open(true);
      long limit = cache.maxBytes();
      if (maxSize != null) {
        try {
          limit = Setting.parseSize(maxSize.trim());
        } catch (NumberFormatException | ArithmeticException | StringIndexOutOfBoundsException e) {
          limit = -1;
        }
        if (limit < 0) {
          throw new ParameterException(spec.commandLine(), "--max-size '" + maxSize
              + "' is not a size such as 500m (0 or more, at most 8 EiB)");
        }
      }
      Duration age = maxAge == null ? null : parseAge(maxAge);
      List<Path> removed = cache.gc(limit, age);
      System.out.println("removed " + removed.size() + " files; " + cache.list().size() + " entries left");
      return 0;
    }

    private Duration parseAge(String s) {
      try {
        Duration age = org.mpibuild.spi.Setting.parseDuration(s);
        if (age.compareTo(MAX_AGE) <= 0) {
          return age;
        }
      } catch (IllegalArgumentException e) {
        // a usage error, below
      }
      throw new ParameterException(spec.commandLine(), "--max-age '" + s + "' is not an age such as 30d, 12h, 90m, "
          + "45s or plain seconds (0 or more, at most " + MAX_AGE.toDays() + "d)");
    }

    /** Longer than any cache lives; keeps the cut-off instant within range. */
    private static final Duration MAX_AGE = Duration.ofDays(100 * 366);
  }

  @Command(name = "clear", mixinStandardHelpOptions = true, description = "Remove every entry, lock and quarantined file.")
  static final class Clear implements Callable<Integer> {
    @Mixin
    DirOption dir;

    @Override
    public Integer call() throws IOException {
      int n = dir.open(true).clear();
      System.out.println("removed " + n + " files");
      return 0;
    }
  }

  @Command(name = "trust", mixinStandardHelpOptions = true,
      description = "Trust the public keys in FILE (a group's key list, or a member's key file, of which only the "
          + "'public' line is read): add them to your own trust file (MPI_BUILD_TRUSTED_KEYS, else "
          + "~/.config/mpi-build/trusted-keys). Entries signed by them load from then on.")
  static final class Trust implements Callable<Integer> {
    @picocli.CommandLine.Parameters(paramLabel = "FILE", arity = "1..*", description = "files of public keys")
    List<Path> files;

    @Override
    public Integer call() throws IOException {
      for (Path f : files) {
        List<String> added = CacheAdmin.trust(f);
        System.out.println("trusted " + added.size() + " new key" + (added.size() == 1 ? "" : "s") + " from " + f
            + " in " + CacheAdmin.trustedKeys());
      }
      return 0;
    }
  }

  static Instant seconds(Instant t) {
    return t.truncatedTo(ChronoUnit.SECONDS);
  }

  static String human(long bytes) {
    return Setting.formatSize(bytes);
  }

}
